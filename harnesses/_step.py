"""One served answer: an agent's next message in a conversation whose tools someone else runs.

Behind an OpenAI-compatible endpoint the client owns the loop: it sends the conversation so far (its
own messages, the agent's earlier answers and the results it got by running the calls) and wants the
agent's next message. `next_message` takes the same turn the eval runtime takes (`harnesses/_turn.py`:
prompt, demos, tools, sampling, guards, call parsing, the answers only Atoll gives, result shaping), and
returns a reply or the world calls for the client to run; `load_skill`, an unknown tool, unreadable
arguments and a guard's refusal are answered here, so the model tries again and the client only ever
sees calls it can run. A delegation (`delegate_to_<agent>`) is a call the client runs by asking the
sub-agent (served as `<harness>/<agent>`).

What the guards know (calls that succeeded or failed, and with which result; whether the agent looked
anything up; how many turns it took) is rebuilt from the client's messages. What happened inside an
earlier answer leaves nothing in them (an unreadable answer and its error, a refused call, a skill
loaded, a reply held back, a resample), so this process remembers it with its answer, keyed by the
conversation up to that answer, and puts it back where the client's messages continue that
conversation: the model is sent what the eval runtime would have sent it. Another process, or one
restarted, knows only the client's messages.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from atoll.worlds import TIMESTAMP_FORMAT, compact_json

from ._files import HarnessError
from ._harness import Harness
from ._prompt import prompt_hash
from ._protocols import AssistantTurn, Call, ResultTurn, Turn, UserTurn
from ._tools import ToolSpec
from ._turn import (
    Agent,
    Memory,
    ModelFailed,
    Note,
    Observed,
    answer_inside,
    delegated_request,
    observe,
    observe_text,
    prepare_agent,
    take_turn,
)
from .models import Model, ModelUsage, ToolCall

ROLES = ("system", "developer", "user", "assistant", "tool")
KEPT_CONVERSATIONS = 1024  # per served harness version: the answers whose inside turns are remembered
_CONVERSATIONS = "served conversations"  # their key in `harness.memo`


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
    visible, instructions = read_conversation(messages)
    _forget_old_prompts(harness)
    limits = harness.config.limits
    served = prepare_agent(
        harness,
        agent,
        model,
        task=context or {},
        now=now.strftime(TIMESTAMP_FORMAT),
        opening=next(turn.text for turn in visible if isinstance(turn, UserTurn)),
        turn_limit=limits.turns,
        instructions=instructions,
        params=params,
    )
    thread = _Thread(served, context or {}, instructions, visible)
    turns, memory = thread.resume()
    sent = prompt_hash(served.prompts)
    usage, last_error = ModelUsage(), "no answer"
    for _ in range(limits.turns):
        try:
            step = await take_turn(
                served, turns, memory, sample=0, call_id=f"call_{secrets.token_hex(6)}", emit=_untold
            )
        except ModelFailed as failed:
            raise failed.cause from None
        usage.add(step.response)
        answer = {"model": step.response.model, "usage": usage, "prompt_hash": sent}
        if step.reply is not None:
            thread.remember(AssistantTurn(text=step.reply), _Answered(list(turns), memory.copy()))
            return StepAnswer(
                content=step.reply, finish_reason="stop", model_calls=usage.model_calls, **answer
            )
        before = memory.copy()  # what the guards knew before this answer's results, for the next request
        inside, runnable = _answer_inside(served, memory, step.calls)
        if not runnable:  # nothing for the client to run yet
            turns += [ResultTurn(call.id, call.name, inside[call.id].content) for call in step.calls]
            problems = [str(seen.error.get("message")) for seen in inside.values() if seen.error]
            last_error = "; ".join(problems) or step.problem or last_error
            continue
        answered = _Answered(list(turns), before, step.calls, inside)
        thread.remember(AssistantTurn(text=step.thought, calls=runnable), answered)
        return StepAnswer(
            content=step.thought,
            tool_calls=[ToolCall(id=call.id, name=call.name, arguments=call.raw) for call in runnable],
            finish_reason="tool_calls",
            model_calls=usage.model_calls,
            **answer,
        )
    raise UnusableAnswer(
        f"{model.name} gave no usable answer in {limits.turns} tries "
        f"(the agent's limits.turns); the last problem: {last_error}"
    )


def _untold(note: Note) -> None:
    """A served turn keeps no transcript: its record holds the request and the answer."""


def _answer_inside(agent: Agent, memory: Memory, calls: list[Call]) -> tuple[dict[str, Observed], list[Call]]:
    """The results Atoll gives calls itself, by id, and the calls left for the client to run. Each call is
    checked after the results before it, as the runtime checks them, up to the first the client runs:
    its result is not known yet, so later calls of the same answer are checked without it."""
    inside: dict[str, Observed] = {}
    runnable: list[Call] = []
    for call in calls:
        result = answer_inside(agent, memory, call)
        if result is None:
            runnable.append(call)
            continue
        spec = agent.specs.get(call.name)
        inside[call.id] = seen = observe(spec, result, agent.harness.config.limits.observation_chars)
        if not runnable:
            memory.record(agent.name, spec, call, seen, wrote=False)
    return inside, runnable


@dataclass(frozen=True)
class _Answered:
    """What a served answer leaves that the client's messages do not carry."""

    turns: list[Turn]  # the conversation as the model saw it, up to and including the answer
    memory: Memory  # what the guards knew then, before the results of the answer's calls
    calls: list[Call] = field(default_factory=list)  # the answer's every call, in order
    inside: dict[str, Observed] = field(default_factory=dict)  # the results Atoll gave them, by call id


class _Thread:
    """One served conversation: its turns and guard memory rebuilt from the client's messages and from
    what this process remembers of its own answers in them (see the module docstring)."""

    def __init__(
        self, agent: Agent, context: Mapping[str, Any], instructions: str, visible: list[Turn]
    ) -> None:
        self.agent, self.visible = agent, visible
        self.kept: OrderedDict[str, _Answered] = agent.harness.memo.setdefault(_CONVERSATIONS, OrderedDict())
        base = [agent.name, json.dumps(dict(context), sort_keys=True, default=str), instructions]
        self.hash = hashlib.sha256(json.dumps(base, ensure_ascii=False).encode())
        self.answers: list[tuple[int, str]] = []  # (turns up to an earlier answer, their key)
        for i, turn in enumerate(visible):
            self.hash.update(_canonical(turn))
            if isinstance(turn, AssistantTurn):
                self.answers.append((i + 1, self.hash.hexdigest()))

    def resume(self) -> tuple[list[Turn], Memory]:
        """The turns the model is shown next and what the guards know: from the latest answer in the
        client's messages that this process gave, if any, then the client's messages after it."""
        for end, key in reversed(self.answers):
            answered = self.kept.get(key)
            if answered is not None:
                self.kept.move_to_end(key)
                turns, memory = list(answered.turns), answered.memory.copy()
                self._replay(self.visible[end:], turns, memory, answered)
                return turns, memory
        turns, memory = [], Memory()
        self._replay(self.visible, turns, memory, None)
        return turns, memory

    def remember(self, answer: AssistantTurn, answered: _Answered) -> None:
        """Keep what an answer leaves behind, under the conversation the client will send back with it
        (`answer`, the agent's message as the client sees it)."""
        final = self.hash.copy()
        final.update(_canonical(answer))
        self.kept[final.hexdigest()] = answered
        while len(self.kept) > KEPT_CONVERSATIONS:
            self.kept.popitem(last=False)

    def _replay(
        self, rest: list[Turn], turns: list[Turn], memory: Memory, answered: _Answered | None
    ) -> None:
        """`rest` of the client's messages added to `turns`, and what the guards learn from them to
        `memory`."""
        calls = {
            call.id: call for turn in self.visible if isinstance(turn, AssistantTurn) for call in turn.calls
        }
        if answered is not None and answered.inside:
            # The answer's results in the order of its calls, as the runtime adds them: Atoll's own and
            # the client's (which come first in `rest`).
            given = len(rest) - len(_after_results(rest))
            sent = {turn.call_id: turn for turn in rest[:given] if isinstance(turn, ResultTurn)}
            for call in answered.calls:
                if call.id in answered.inside:
                    self._settle(turns, memory, call, answered.inside[call.id])
                elif call.id in sent:
                    self._settle(turns, memory, call, self._observed(call, sent.pop(call.id).content))
            rest = [*sent.values(), *rest[given:]]
        for turn in rest:
            if isinstance(turn, ResultTurn):
                call = calls[turn.call_id]
                self._settle(turns, memory, call, self._observed(call, turn.content))
                continue
            if isinstance(turn, AssistantTurn):  # one of the agent's answers: a turn it took
                memory.model_calls += 1
                if turn.calls:
                    memory.looked.add(self.agent.name)
            turns.append(turn)

    def _observed(self, call: Call, content: str) -> Observed:
        """A result the client ran, as the agent reads it; a delegation's answer reads as the runtime's."""
        spec = self.agent.specs.get(call.name)
        if delegated_request(spec, call) is not None:
            return Observed(compact_json({"answer": content}), True)
        return observe_text(spec, content, self.agent.harness.config.limits.observation_chars)

    def _settle(self, turns: list[Turn], memory: Memory, call: Call, seen: Observed) -> None:
        """A call's result added to the conversation, and to what the guards know."""
        spec = self.agent.specs.get(call.name)
        if delegated_request(spec, call) is not None:
            memory.delegated(self.agent.name)
        else:
            memory.record(self.agent.name, spec, call, seen, wrote=_wrote(self.agent, spec, seen))
        turns.append(ResultTurn(call.id, call.name, seen.content))


def _wrote(agent: Agent, spec: ToolSpec | None, seen: Observed) -> bool:
    """Whether a call the client ran changed its world, as far as Atoll can tell: a write tool succeeded."""
    if not seen.ok or spec is None or spec.kind != "world":
        return False
    tool = agent.harness.world.tools.get(spec.name)
    return bool(tool is not None and tool.writes)


def _after_results(turns: list[Turn]) -> list[Turn]:
    """`turns` from the first that is not a tool result."""
    for i, turn in enumerate(turns):
        if not isinstance(turn, ResultTurn):
            return turns[i:]
    return []


def _canonical(turn: Turn) -> bytes:
    """A turn of the client's messages as its conversation's key reads it: each field length-prefixed,
    so no text can pass for two (cheaper than JSON, on every turn of every request)."""
    if isinstance(turn, UserTurn):
        fields = ["user", turn.text]
    elif isinstance(turn, AssistantTurn):
        fields = ["assistant", turn.text or "", *(f for c in turn.calls for f in (c.id, c.name, c.raw))]
    else:
        assert isinstance(turn, ResultTurn)
        fields = ["tool", turn.call_id, turn.content]
    return "".join(f"{len(field)}:{field}" for field in fields).encode()


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


def read_conversation(messages: list[Mapping[str, Any]]) -> tuple[list[Turn], str]:
    """The client's messages as the runtime's turns, and the text of its system messages (which follow
    the agent's own prompt). Tool results are as the client sent them (`_Thread` shapes them)."""
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
            turns.append(ResultTurn(call_id, calls[call_id], text))
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
