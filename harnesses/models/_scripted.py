"""A model whose answers are written by the test: fast, deterministic, no network."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any

from ._types import ModelParams, ModelRequest, ModelResponse, ToolCall, Usage

Reply = str | dict[str, Any] | ModelResponse | Exception


class ScriptExhausted(RuntimeError):
    """A ScriptedModel was asked more often than it had answers: the test's script is too short."""


class ScriptedModel:
    """Answers from a list, in order, or from a function of the request.

    A reply is a str (the content), a dict `{"content": ..., "tool_calls": [{"name": ...,
    "arguments": {...}}]}`, a ModelResponse, or an Exception, which is raised (an outage).
    Every request is kept in `.requests`. Token counts are word counts: rough, but not zero,
    so reports built on a scripted run show the accounting.

    Args:
        responses: the replies, one per call.
        fn: instead of `responses`, a (sync or async) function from ModelRequest to a reply.
        name: the name responses carry.
        latency_s: how long each call sleeps, to benchmark concurrency without a model.
    """

    def __init__(
        self,
        responses: Iterable[Reply] | None = None,
        *,
        fn: Callable[[ModelRequest], Any] | None = None,
        name: str = "scripted",
        latency_s: float = 0.0,
    ) -> None:
        if (responses is None) == (fn is None):
            raise ValueError("ScriptedModel takes exactly one of responses=[...] or fn=callable")
        self.name = name
        self.latency_s = latency_s
        self.requests: list[ModelRequest] = []
        self._fn = fn
        self._responses = list(responses) if responses is not None else []
        self._next = 0

    def __repr__(self) -> str:
        return f"ScriptedModel({self.name!r}, {len(self.requests)} requests so far)"

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        params: ModelParams | None = None,
        sample: int = 0,
    ) -> ModelResponse:
        request = ModelRequest(messages=messages, tools=tools, params=params or ModelParams(), sample=sample)
        self.requests.append(request)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        reply = self._reply(request)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, Exception):
            raise reply
        return self._response(reply, request)

    def _reply(self, request: ModelRequest) -> Any:
        if self._fn is not None:
            return self._fn(request)
        if self._next >= len(self._responses):
            raise ScriptExhausted(
                f"{self.name} ran out of scripted responses: call {self._next + 1} got no answer "
                f"(the script has {len(self._responses)}); add replies to ScriptedModel(responses=[...])"
            )
        reply = self._responses[self._next]
        self._next += 1
        return reply

    def _response(self, reply: Reply, request: ModelRequest) -> ModelResponse:
        if isinstance(reply, ModelResponse):
            return reply
        if isinstance(reply, str):
            reply = {"content": reply}
        if not isinstance(reply, dict):
            raise TypeError(
                f"{self.name}: a scripted reply must be a str, dict, ModelResponse or Exception, "
                f"not {type(reply).__name__}"
            )
        calls = [
            ToolCall(
                id=call.get("id", f"call_{len(self.requests)}_{i}"),
                name=call["name"],
                arguments=_json_text(call.get("arguments", {})),
            )
            for i, call in enumerate(reply.get("tool_calls", []))
        ]
        content = reply.get("content")
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in request.messages)
        return ModelResponse(
            model=self.name,
            content=content,
            tool_calls=calls,
            finish_reason=reply.get("finish_reason", "tool_calls" if calls else "stop"),
            usage=Usage(
                prompt_tokens=prompt_words,
                completion_tokens=len(f"{content or ''} {' '.join(c.arguments for c in calls)}".split()),
            ),
            latency_s=self.latency_s,
            sample=request.sample,
        )


def _json_text(arguments: Any) -> str:
    """Tool arguments as the raw JSON text a model writes (a str is taken as already written)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
