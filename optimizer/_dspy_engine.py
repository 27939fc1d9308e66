"""dspy's engine contract over Atoll's model layer, so dspy programs call the project's `Model`.

Left to itself dspy 3.4 picks its own client, and its calls would skip Atoll's response cache
and its token and cost accounting. Through these engines every call is one `Model.complete`
with a fixed sample index: cached, replayed and counted like the agent's own calls. dspy's
cache and retries are turned off, since the model layer already does both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import dspy
from dspy.clients.engines.base import validate_request
from dspy.lm15 import FINISH_REASONS, Config, Message, Request, Response, TextPart, response_to_events
from dspy.lm15 import Usage as DspyUsage

from atoll.harnesses.models import Model, ModelParams, ModelUsage


class AsyncModelEngine:
    """dspy's AsyncEngine: one canonical request becomes one `Model.complete` at `sample`."""

    def __init__(
        self,
        model: Model,
        *,
        sample: int = 0,
        usage: ModelUsage | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.model = model
        self.sample = sample
        self.usage = usage if usage is not None else ModelUsage()
        self.timeout_s = timeout_s

    async def complete(self, request: Request) -> Response:
        validate_request(request)
        params = _params(request.config)
        if self.timeout_s is not None:
            params = params.model_copy(update={"timeout_s": self.timeout_s})
        response = await self.model.complete(_messages(request), params=params, sample=self.sample)
        self.usage.add(response)
        return Response(
            id=None,
            model=request.model,
            message=Message.assistant((TextPart(response.content or ""),)),
            finish_reason=response.finish_reason if response.finish_reason in FINISH_REASONS else "stop",
            usage=DspyUsage(
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
                total_tokens=response.usage.total_tokens,
            ),
        )

    async def stream(self, request: Request) -> AsyncIterator:
        for event in response_to_events(await self.complete(request)):
            yield event

    async def aclose(self) -> None:
        """The model is borrowed, not owned: nothing to close."""


class ModelEngine:
    """dspy's sync Engine (dspy.LM requires one): runs the async engine on a private event loop."""

    def __init__(self, engine: AsyncModelEngine) -> None:
        self.engine = engine

    def complete(self, request: Request) -> Response:
        # A worker thread has no running loop, so this works even when called from async code.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.engine.complete(request)).result()

    def stream(self, request: Request) -> Iterator:
        return iter(response_to_events(self.complete(request)))

    def close(self) -> None:
        """The model is borrowed, not owned: nothing to close."""


def dspy_lm(
    model: Model,
    *,
    sample: int = 0,
    usage: ModelUsage | None = None,
    timeout_s: float | None = None,
    **params: float,
) -> dspy.LM:
    """A dspy.LM whose calls all go to `model` at `sample`; `params` are temperature, max_tokens…;
    `timeout_s` replaces the model layer's per-call default (for calls that write long answers)."""
    engine = AsyncModelEngine(model, sample=sample, usage=usage, timeout_s=timeout_s)
    return dspy.LM(
        f"atoll/{model.name}",
        engine=ModelEngine(engine),
        async_engine=engine,
        cache=False,
        num_retries=0,
        **params,
    )


def _messages(request: Request) -> list[dict]:
    messages = []
    if request.system is not None:
        system = (
            request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
        )
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def _params(config: Config) -> ModelParams:
    return ModelParams(
        temperature=config.temperature if config.temperature is not None else 0.0,
        max_tokens=config.max_tokens,
        top_p=config.top_p,
        stop=list(config.stop) or None,
        seed=config.seed,
    )
