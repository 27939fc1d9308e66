"""Any litellm model string behind one `complete()`: retries, timeouts, accounting and replay."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import time
from typing import Any

from . import _litellm, _local
from ._cache import ResponseCache
from ._catalog import ENGINE_REVISION
from ._types import (
    ModelParams,
    ModelRequest,
    ModelRequestError,
    ModelResponse,
    ModelUnavailable,
    NetworkModelsDisabled,
    ToolCall,
    Usage,
)

NO_NETWORK_ENV = "ATOLL_NO_NETWORK_MODELS"
_MAX_BACKOFF_S = 60.0
# Statuses worth waiting out: request timeout, conflict, too early, rate limit, and server errors.
_TRANSIENT_STATUSES = {408, 409, 425, 429}
# litellm arguments that answer in-process, so the network guard lets the call through.
_MOCKS = {"mock_response", "mock_tool_calls"}


class LiteLLMModel:
    """A model reached through litellm: `openai/…`, `anthropic/…`, `ollama_chat/…`, `local/…`.

    Args:
        name: the litellm model string.
        cache: replay answers from (and store them in) this cache; None calls every time.
        retries: extra attempts after a rate limit, server error, connection error or timeout.
            Bad requests and auth errors are never retried, and neither is the local model,
            whose answers and speed do not change on a second try.
        backoff_s: the first wait between attempts; it doubles each time (with jitter), and a
            provider's Retry-After wins when it says more.
        litellm_kwargs: extra arguments for `litellm.acompletion` (`api_base`, `mock_response`
            in tests). They are part of the cache key, except `api_key`.
    """

    def __init__(
        self,
        name: str,
        *,
        cache: ResponseCache | None = None,
        retries: int = 4,
        backoff_s: float = 1.0,
        litellm_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.cache = cache
        self.retries = retries
        self.backoff_s = backoff_s
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self._local_name = name.removeprefix("local/") if name.startswith("local/") else None
        # The local model answers one request at a time; episodes interleaved on it only evict each
        # other's evaluated conversation, so a batch runs one episode at a time (see evals.in_flight).
        self.max_concurrency: int | None = 1 if self._local_name else None

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        params: ModelParams | None = None,
        sample: int = 0,
    ) -> ModelResponse:
        """One answer to `messages`; the same request and sample replay from the cache.

        Raises ModelUnavailable once retries are spent, ModelRequestError at once for a
        request the provider refuses.
        """
        request = ModelRequest(messages=messages, tools=tools, params=params or ModelParams(), sample=sample)
        key = ResponseCache.key(self.name, request, self.cache_options())
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        self._check_reachable()
        litellm = _litellm.load()
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                raw = await self._attempt(litellm, request)
                break
            except Exception as exc:
                transient = self._is_transient(litellm, exc)
                if transient and self._local_name is None and attempt < self.retries:
                    await asyncio.sleep(self._delay(attempt, exc))
                    attempt += 1
                    continue
                if transient:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise ModelUnavailable(f"{self.name} unavailable{tries}: {_reason(exc)}") from exc
                raise ModelRequestError(f"{self.name} refused the request: {_reason(exc)}") from exc
        try:
            response = self._response(litellm, raw, request, time.monotonic() - started)
        except (IndexError, KeyError, AttributeError, TypeError, ValueError) as exc:  # an odd provider reply
            raise ModelRequestError(f"{self.name} returned a response Atoll cannot read: {exc!r}") from exc
        if self.cache is not None:
            self.cache.put(key, self.name, request, response)
        return response

    def cache_options(self) -> dict[str, Any]:
        """What besides the request decides the answer: litellm's extra arguments, and for an embedded
        model the engine's revision (its answers to the same request change with it)."""
        if self._local_name is None:
            return self.litellm_kwargs
        return {**self.litellm_kwargs, "engine": ENGINE_REVISION}

    def _check_reachable(self) -> None:
        if self._local_name is not None:
            _local.check_available(self._local_name)
        elif os.environ.get(NO_NETWORK_ENV) == "1" and not _MOCKS.intersection(self.litellm_kwargs):
            raise NetworkModelsDisabled(
                f"{self.name} would reach the network, and {NO_NETWORK_ENV}=1 forbids it here: "
                f"use ScriptedModel, litellm_kwargs={{'mock_response': ...}} or local/gemma-3-270m"
            )

    async def _attempt(self, litellm: Any, request: ModelRequest) -> Any:
        params = request.params
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": request.messages,
            "temperature": params.temperature,
            "seed": request.seed,
            "timeout": params.timeout_s,
            "max_retries": 0,  # the retry loop is ours, so attempts are counted once
            "drop_params": True,  # a harness's params work on providers that lack some (seed, stop)
            **self.litellm_kwargs,
        }
        if request.tools:
            kwargs["tools"] = request.tools
            if params.tool_choice:
                kwargs["tool_choice"] = params.tool_choice
        for field in ("max_tokens", "top_p", "stop"):
            value = getattr(params, field)
            if value is not None:
                kwargs[field] = value
        if self._local_name is not None:
            # The local provider enforces the timeout itself, from when the model is free: time
            # spent queueing behind other episodes' calls must not count.
            return await litellm.acompletion(**kwargs)
        return await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=params.timeout_s)

    @staticmethod
    def _is_transient(litellm: Any, exc: Exception) -> bool:
        if isinstance(exc, TimeoutError):
            return True
        if isinstance(
            exc,
            litellm.RateLimitError
            | litellm.Timeout
            | litellm.APIConnectionError
            | litellm.InternalServerError
            | litellm.ServiceUnavailableError
            | litellm.BadGatewayError,
        ):
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(status, int) and (status in _TRANSIENT_STATUSES or status >= 500)

    def _delay(self, attempt: int, exc: Exception) -> float:
        delay = self.backoff_s * 2**attempt * random.uniform(0.5, 1.0)
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        # An HTTP-date Retry-After is not a number: then the exponential delay stands.
        with contextlib.suppress(TypeError, ValueError):
            delay = max(delay, float(headers.get("retry-after", 0)))
        return min(delay, _MAX_BACKOFF_S)

    def _response(self, litellm: Any, raw: Any, request: ModelRequest, latency_s: float) -> ModelResponse:
        choice = raw.choices[0]
        message = choice.message
        tool_calls = [
            ToolCall(
                id=call.id or f"call_{i}",
                name=call.function.name,
                arguments=(
                    call.function.arguments
                    if isinstance(call.function.arguments, str)
                    else json.dumps(call.function.arguments)
                ),
            )
            for i, call in enumerate(message.tool_calls or [])
        ]
        usage = getattr(raw, "usage", None)
        return ModelResponse(
            model=self.name,
            content=message.content,
            tool_calls=tool_calls,
            finish_reason=choice.finish_reason,
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            ),
            cost_usd=0.0 if self._local_name is not None else _cost(litellm, raw),
            latency_s=latency_s,
            sample=request.sample,
        )


def _reason(exc: Exception) -> str:
    """The provider's words without litellm's wrapping ("litellm.BadRequestError: LocalException - ")."""
    first_line = str(exc).split("\n", 1)[0]  # some litellm errors append a whole traceback
    return re.sub(r"^litellm\.\w+: (LocalException - )?", "", first_line) or type(exc).__name__


def _cost(litellm: Any, raw: Any) -> float:
    """litellm's price for the call; 0 for a model its price list doesn't know (a local server)."""
    try:
        return float(litellm.completion_cost(completion_response=raw) or 0.0)
    except Exception:
        return 0.0


def get_model(name: str, *, cache: ResponseCache | None = None) -> LiteLLMModel:
    """The model for a litellm model string (`local/gemma-3-270m`, `openai/gpt-4o-mini`, …).

    A scripted model has no string form: build `ScriptedModel(responses=[...])` in code.
    """
    if name == "scripted":
        raise ModelRequestError(
            "the scripted model is built in code, not named: ScriptedModel(responses=[...])"
        )
    return LiteLLMModel(name, cache=cache)
