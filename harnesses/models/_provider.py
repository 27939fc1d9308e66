"""The `local/…` litellm provider, so the embedded models are called like any other model string.

One provider serves every model in `_catalog`: the description says how the prompt is built and
how tool calls come back. A `native` model (Qwen2.5) takes OpenAI-style `tools`, which its chat
template shows it, and its written tool calls are returned as `tool_calls`, as a chat model's
would be; a `text` model (gemma's base model) refuses `tools` and completes text.

Imported only by `_litellm.load()`, after litellm itself: this module imports litellm at the top.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

from . import _chat, _local
from ._catalog import local_model
from ._types import ModelRequestError


class LocalProvider(CustomLLM):
    """Serves `local/<name>` from `_local.generate`; cost is 0, tokens are llama's counts."""

    def completion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        return self._complete(**kwargs)

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_local.executor, functools.partial(self._complete, **kwargs))

    def _complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        model_response: litellm.ModelResponse,
        optional_params: dict[str, Any],
        timeout: Any = None,
        **_: Any,
    ) -> litellm.ModelResponse:
        tools = optional_params.get("tools") or None
        try:
            description = local_model(model)
            if tools and description.tool_calls == "none":
                raise CustomLLMError(
                    400,
                    f"local/{model} is a base text completer without native tool calls: "
                    "give the harness the text protocol (one JSON action per line) instead",
                )
            out = _local.generate(
                model,
                messages,
                tools=tools,
                max_tokens=optional_params.get("max_tokens"),
                temperature=optional_params.get("temperature", 0.0),
                top_p=optional_params.get("top_p"),
                stop=_stops(optional_params.get("stop"), description.tool_calls if tools else "none"),
                seed=optional_params.get("seed") or 0,
                timeout_s=timeout if isinstance(timeout, int | float) else 600.0,
                opening=_chat.HERMES_CALL_OPENING
                if tools
                and description.tool_calls == "hermes"
                and optional_params.get("tool_choice") == "required"
                else "",
            )
        except _local.LocalTimeout as exc:
            raise CustomLLMError(408, str(exc)) from exc
        except (_local.LocalRequestError, ModelRequestError, ValueError) as exc:
            # Raised plainly, litellm would report a connection error, and callers would retry.
            raise CustomLLMError(400, str(exc)) from exc
        content: str | None = out.text
        calls: list[_chat.TextToolCall] = []
        if tools and description.tool_calls == "hermes":
            names = {(tool.get("function") or {}).get("name") for tool in tools}
            content, calls = _chat.parse_tool_calls(out.text, {n for n in names if n})
        model_response.model = f"local/{model}"
        model_response.choices[0].message = litellm.Message(
            role="assistant",
            content=content,
            tool_calls=[
                {
                    # Numbered by the conversation's length: unique within it, and the same on a rerun.
                    "id": f"call_{len(messages)}_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for i, call in enumerate(calls)
            ]
            or None,
        )
        model_response.choices[0].finish_reason = "tool_calls" if calls else out.finish_reason
        model_response.usage = litellm.Usage(
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            total_tokens=out.prompt_tokens + out.completion_tokens,
        )
        return model_response


def _stops(asked: list[str] | str | None, tool_calls: str) -> list[str] | None:
    """The caller's stop sequences, and for a hermes model offered tools the end of its first call:
    answered there, it cannot run on into a `Result:` it invents for its own call."""
    stops = [asked] if isinstance(asked, str) else list(asked or [])
    if tool_calls == "hermes" and "</tool_call>" not in stops:
        stops.append("</tool_call>")
    return stops or None
