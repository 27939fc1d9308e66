"""One served answer: an agent's next message in a conversation whose tools someone else runs.

Behind an OpenAI-compatible endpoint the client owns the loop: it sends the conversation so far
(its own messages, the agent's earlier answers and the tool results it got by running the calls),
and wants the agent's next message. `next_message` renders the agent's prompt, demos and tools exactly as
the runtime does, reads the client's messages into the runtime's turns (tool results shaped as
tools.yaml says: projected fields, `observation_chars`), asks the model in the agent's protocol, and
returns a reply or world tool calls. What only Atoll can answer stays inside: `load_skill` is run
here, and a call to an unknown tool or with unreadable arguments is answered with the same error
the runtime gives, so the model retries and the client only ever sees calls it can run. A
delegation (`delegate_to_<agent>`) is a call the client runs by asking the sub-agent (served as
`<harness>/<agent>`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from worlds import TIMESTAMP_FORMAT, ToolResult

from ._files import HarnessError
from ._harness import Harness
from ._prompt import example_messages, prompt_hash, sent_prompts, system_prompt
from ._protocols import (
    PROTOCOLS,
    AssistantTurn,
    Call,
    ErrorTurn,
    ResultTurn,
    Turn,
    UserTurn,
    choose_tools,
    succeeded,
    without_null_extras,
)
from ._runtime import cut_observation, skill_result, tool_failure
from ._tools import ToolSpec, tool_specs
from .models import Model, ModelUsage, ToolCall

ROLES = ("system", "developer", "user", "assistant", "tool")


class ConversationError(HarnessError):
    """The client's messages cannot be read as a conversation (the message says which and why)."""


class UnusableAnswer(HarnessError):
    """The model gave no reply or runnable call within the agent's turn limit."""


class StepAnswer(BaseModel):
    """The agent's next message, with what it cost to get."""

    content: str | None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: Literal["stop", "tool_calls"]
    model: str
    usage: ModelUsage
    prompt_hash: str = Field(description="Of the system messages sent (see `prompt_hash`).")
    model_calls: int = Field(description="Model calls it took: 1, more when a skill was loaded or a retry.")


async def next_message(
    harness: Harness,
    agent: str,
    model: Model,
    messages: list[Mapping[str, Any]],
    *,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    now: datetime,
) -> StepAnswer:
    """The agent's next message after `messages` (OpenAI chat format).

    Args:
        context: what the prompt template sees as `task` (an eval task's `context`).
        params: sampling parameters that override the harness's (temperature, max_tokens, ...).
        now: the time the prompt is rendered at (templates may show it).

    Raises ConversationError for messages that are not a conversation, UnusableAnswer when the
    model's answers stay unusable for the agent's turn limit, and ModelError when the model fails.
    """
    if agent not in harness.agents:
        raise ConversationError(f"{harness.name} has no agent {agent!r}; agents: {', '.join(harness.agents)}")
    protocol = PROTOCOLS[harness.protocol_for(agent, model.name)]
    specs = {spec.name: spec for spec in tool_specs(harness, agent)}
    turns, instructions = read_conversation(messages, specs, harness.config.limits.observation_chars)
    opening = next((turn.text for turn in turns if isinstance(turn, UserTurn)), None)
    _forget_old_prompts(harness)
    system = system_prompt(harness, agent, protocol, context or {}, now.strftime(TIMESTAMP_FORMAT))
    if instructions:
        system = f"{system.rstrip()}\n\n{instructions}\n"
    examples = example_messages(harness, agent, protocol, opening or None)
    sent = prompt_hash(sent_prompts(agent, protocol, system, examples))
    sampling = protocol.params(harness.params_for(agent).model_copy(update=dict(params or {})))
    tools = protocol.tools(list(specs.values()))
    usage, last_error = ModelUsage(), "no answer"
    for _ in range(harness.config.limits.turns):
        choice = choose_tools(sampling, harness.agent(agent).tool_choice, bool(tools), succeeded(turns))
        response = await model.complete(
            protocol.messages(system, turns, examples), tools=tools, params=choice
        )
        usage.add(response)
        parsed = protocol.parse(response, f"call_{secrets.token_hex(6)}")
        parsed.calls = without_null_extras(parsed.calls, specs)
        if parsed.error is not None:
            last_error = parsed.error
            turns += [AssistantTurn(raw=parsed.raw), ErrorTurn(parsed.error)]
            continue
        if parsed.reply is not None:
            return StepAnswer(
                content=parsed.reply,
                finish_reason="stop",
                model=response.model,
                usage=usage,
                prompt_hash=sent,
                model_calls=usage.model_calls,
            )
        inside = [(call, _answered_here(harness, agent, specs.get(call.name), call)) for call in parsed.calls]
        answered = [(call, result) for call, result in inside if result is not None]
        if len(answered) == len(inside):  # nothing for the client to run yet
            turns.append(AssistantTurn(text=parsed.thought, calls=parsed.calls))
            turns += [ResultTurn(call.id, call.name, result.for_model()) for call, result in answered]
            last_error = "; ".join(r.error.message for _, r in answered if r.error) or last_error
            continue
        runnable = [call for call, result in inside if result is None]
        return StepAnswer(
            content=parsed.thought,
            tool_calls=[ToolCall(id=call.id, name=call.name, arguments=call.raw) for call in runnable],
            finish_reason="tool_calls",
            model=response.model,
            usage=usage,
            prompt_hash=sent,
            model_calls=usage.model_calls,
        )
    raise UnusableAnswer(
        f"{model.name} gave no usable answer in {harness.config.limits.turns} tries "
        f"(the agent's limits.turns); the last problem: {last_error}"
    )


def _forget_old_prompts(harness: Harness, keep: int = 32) -> None:
    """A served harness renders at the wall clock and for every client's context, and retrieves demos for
    every opening, so the prompts and demo messages it memoizes would grow without end: past `keep`, they
    are dropped (tool specs and demo indexes stay)."""
    rendered = [
        key for key in harness.memo if isinstance(key, tuple) and key[:1] in (("system",), ("examples",))
    ]
    if len(rendered) > keep:
        for key in rendered:
            del harness.memo[key]


def read_conversation(
    messages: list[Mapping[str, Any]], specs: Mapping[str, ToolSpec], observation_chars: int
) -> tuple[list[Turn], str]:
    """The client's messages as the runtime's turns, and the text of its system messages (which follow
    the agent's own prompt). Tool results are shaped as the runtime shapes what a tool returns."""
    turns: list[Turn] = []
    instructions: list[str] = []
    calls: dict[str, str] = {}
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role")
        if role not in ROLES:
            raise ConversationError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
        text = _text(message.get("content"), where)
        if role in ("system", "developer"):
            instructions.append(text)
        elif role == "user":
            turns.append(UserTurn(text))
        elif role == "assistant":
            listed = message.get("tool_calls") or []
            if not isinstance(listed, list):
                raise ConversationError(f"{where}.tool_calls: expected a list of tool calls")
            asked = [_call(call, f"{where}.tool_calls[{n}]") for n, call in enumerate(listed)]
            calls.update((call.id, call.name) for call in asked)
            if asked or text:
                turns.append(AssistantTurn(text=text or None, calls=asked))
        else:
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in calls:  # a list or object is unhashable
                raise ConversationError(
                    f"{where}.tool_call_id: {call_id!r} answers no tool call of an earlier assistant message"
                )
            turns.append(
                ResultTurn(
                    call_id, calls[call_id], _shaped(text, specs.get(calls[call_id]), observation_chars)
                )
            )
    if not any(isinstance(turn, UserTurn) for turn in turns):
        raise ConversationError("messages: the conversation has no user message to answer")
    return turns, "\n\n".join(part for part in instructions if part)


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for n, part in enumerate(content):
            if (
                not isinstance(part, Mapping)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise ConversationError(f"{where}.content[{n}]: only text parts are served")
            texts.append(part["text"])
        return "\n".join(texts)
    raise ConversationError(f"{where}.content: expected a string or a list of text parts")


def _call(call: Any, where: str) -> Call:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not call.get("id"):
        raise ConversationError(f"{where}: a tool call needs an id and a function with a name")
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = None
    return Call(
        id=str(call["id"]),
        name=function["name"],
        arguments=arguments if isinstance(arguments, dict) else None,
        raw=raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False),
    )


def _shaped(content: str, spec: ToolSpec | None, limit: int) -> str:
    """A tool result as the agent reads it: the fields tools.yaml projects (an error stays whole), cut to
    the agent's `observation_chars`."""
    if spec is not None and spec.fields is not None:
        try:
            value = json.loads(content)
        except json.JSONDecodeError:
            value = None
        if value is not None and not (isinstance(value, dict) and "error" in value):
            content = json.dumps(spec.shown(value), ensure_ascii=False, default=str)
    return cut_observation(content, limit)


def _answered_here(harness: Harness, agent: str, spec: ToolSpec | None, call: Call) -> ToolResult | None:
    """The result of a call only Atoll can answer (a skill load, or a call that cannot run: an unknown
    tool, unreadable arguments); None for a world tool or a delegation, which the client runs."""
    if spec is None:
        known = ", ".join(known_spec.name for known_spec in tool_specs(harness, agent))
        return tool_failure(
            call.name, "unknown_tool", f"You have no tool {call.name!r}. Your tools: {known}."
        )
    if call.error is not None or call.arguments is None:
        return tool_failure(
            call.name, "invalid_arguments", call.error or "the arguments must be a JSON object"
        )
    if spec.kind != "skill":
        return None
    return skill_result(harness, agent, call.name, call.arguments)
