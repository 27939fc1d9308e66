"""The `local/…` litellm provider, so the embedded model is called like any other model string.

Imported only by `_litellm.load()`, after litellm itself: this module imports litellm at the top.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

from . import _local
from ._types import ModelRequestError


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):  # OpenAI-style content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None:
            parts.append(content)
    return parts


def prompt_of(messages: list[dict[str, Any]]) -> str:
    """The text a base model completes: the contents joined by newlines, no role markers added."""
    return "\n".join(_texts(messages))


def split_prompt(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """(prefix, rest): the first message (a system prompt and demos, shared by every call of an
    agent) and the others, joined as `prompt_of` joins them. The prefix's evaluation is reused."""
    parts = _texts(messages)
    if len(parts) < 2:
        return "", "\n".join(parts)
    return parts[0] + "\n", "\n".join(parts[1:])


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
        if optional_params.get("tools"):
            raise CustomLLMError(
                400,
                f"local/{model} is a base text completer without native tool calls: "
                "give the harness the text protocol (one JSON action per line) instead",
            )
        try:
            prefix, rest = split_prompt(messages)
            out = _local.generate(
                model,
                rest,
                prefix=prefix,
                max_tokens=optional_params.get("max_tokens"),
                temperature=optional_params.get("temperature", 0.0),
                top_p=optional_params.get("top_p"),
                stop=optional_params.get("stop"),
                seed=optional_params.get("seed") or 0,
                timeout_s=timeout if isinstance(timeout, int | float) else 600.0,
            )
        except _local.LocalTimeout as exc:
            raise CustomLLMError(408, str(exc)) from exc
        except (_local.LocalRequestError, ModelRequestError) as exc:
            # Raised plainly, litellm would report a connection error, and callers would retry.
            raise CustomLLMError(400, str(exc)) from exc
        model_response.model = f"local/{model}"
        model_response.choices[0].message.content = out.text
        model_response.choices[0].finish_reason = out.finish_reason
        model_response.usage = litellm.Usage(
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            total_tokens=out.prompt_tokens + out.completion_tokens,
        )
        return model_response
