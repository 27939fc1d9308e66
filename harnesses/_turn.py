"""One agent turn, the same code in evaluation and in serving.

The eval runtime (`harnesses/_runtime.py`) and the OpenAI-compatible endpoint (`harnesses/_step.py`)
differ only in who runs a world tool: the runtime runs it on its instance, a served client in its own
world. Everything else about a turn is here, so what the optimizer measured is what is served:

- `prepare_agent`: the agent's rendered prompt, demos, tools and sampling.
- `take_turn`: one model call under the agent's guards, read into the next action (a reply, calls to run,
  or nothing: the answer was refused, held back or not shown, and the caller asks again). It applies
  `reply_nudge`, `look_first`, `tool_choice` and the no-replay rules (a repeated unreadable answer, or
  calls that failed twice, are not shown again and the next answer is sampled afresh).
- `answer_inside`: what only the harness answers (an unknown tool, unreadable arguments, a guard's
  refusal: `repeat_notice`, `preconditions`, `grounded_args`; a skill load); None for a world call or a
  delegation.
- `observe` / `observe_text`: a result as the agent reads it (tools.yaml's projection, then the cut to
  `observation_chars`), and `Memory.record`, which is what the guards know of it.

`Memory` is everything the guards know: in evaluation it is kept over the episode; in serving it is
rebuilt from the client's messages (see `harnesses/_step.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from atoll.worlds import ToolFailure, ToolResult, compact_json

from ._episode import NOT_REMEMBERED, CallMemory, EventKind
from ._format import Guards, ToolChoice
from ._grounding import digit_runs, ungrounded
from ._harness import Harness
from ._prompt import PromptPart, example_messages, sent_prompts, system_prompt
from ._protocols import (
    MALFORMED,
    PROTOCOLS,
    AssistantTurn,
    Call,
    ErrorTurn,
    NativeProtocol,
    NoticeTurn,
    ResultTurn,
    TextProtocol,
    Turn,
    UserTurn,
    _one_line,
    choose_tools,
    without_null_extras,
)
from ._tools import ToolSpec, tool_specs
from .models import Model, ModelParams, ModelResponse, ScriptExhausted

REPEATED_FAILURE = (
    "The answer repeated one that already failed; it is not shown again and the next is sampled afresh"
)
LOOK_FIRST = "You have not looked anything up yet. Call a tool to check the facts, then reply."
# Warmer with each resample of one agent: a failure peaked enough to come back at 0.7 may not at 1.0.
_RESAMPLE_TEMPERATURES = (0.7, 1.0, 1.3)
_RESAMPLE_STRIDE = (
    1_000_003  # a resample's sample index: far from the episode's own, and from other episodes'
)


@dataclass
class Agent:
    """What one agent needs for every model call, prepared once per episode (or served request)."""

    name: str
    harness: Harness
    model: Model
    protocol: TextProtocol | NativeProtocol
    system: str
    examples: list[dict[str, Any]]  # demos sent after `system` (see `example_messages`)
    prompts: list[PromptPart]  # `system` and `examples` as the protocol sends them
    params: ModelParams
    specs: dict[str, ToolSpec]
    tools: list[dict[str, Any]] | None
    guards: Guards
    tool_choice: ToolChoice
    turn_limit: int  # limits.turns: the reply nudge and look_first read it
    told: str = ""  # the digit runs of its task context and a client's instructions, for grounded_args


def prepare_agent(
    harness: Harness,
    name: str,
    model: Model,
    *,
    task: Mapping[str, Any],
    now: str,
    opening: str | None,
    turn_limit: int,
    instructions: str = "",
    params: Mapping[str, Any] | None = None,
) -> Agent:
    """The agent as `model` answers it.

    Args:
        task: what the prompt template sees as `task`.
        now: the time the prompt is rendered at.
        opening: the message that opens its run; it picks retrieved demos (None: none retrieved).
        instructions: a served client's system messages, which follow the agent's own prompt.
        params: sampling parameters that override the harness's.
    """
    protocol = PROTOCOLS[harness.protocol_for(name, model.name)]
    specs = tool_specs(harness, name)
    system = system_prompt(harness, name, protocol, task, now)
    if instructions:
        system = f"{system.rstrip()}\n\n{instructions}\n"
    examples = example_messages(harness, name, protocol, opening)
    config = harness.agent(name)
    return Agent(
        name=name,
        harness=harness,
        model=model,
        protocol=protocol,
        system=system,
        examples=examples,
        prompts=sent_prompts(name, protocol, system, examples),
        params=protocol.params(harness.params_for(name).model_copy(update=dict(params or {}))),
        specs={spec.name: spec for spec in specs},
        tools=protocol.tools(specs),
        guards=config.guards,
        tool_choice=config.tool_choice,
        turn_limit=turn_limit,
        told=digit_runs([json.dumps(dict(task), default=str), instructions]),
    )


class Memory:
    """What an agent's guards know of the conversation so far.

    Kept per agent name, so the eval runtime keeps one for a whole episode (every agent of the graph)
    and serving rebuilds one per conversation. `model_calls` counts the turns taken (the reply nudge
    and look_first read it against the agent's turn limit).
    """

    def __init__(self) -> None:
        self.calls = CallMemory()  # for the repeat guard
        self.succeeded: set[str] = set()  # tools that succeeded, for the preconditions guard
        self.looked: set[str] = set()  # agents that called a tool or were told to, for look_first
        self.called: set[str] = set()  # agents with a successful call or a delegation, for tool_choice
        self.failed_answers: set[tuple[str, str]] = set()  # (agent, answer) that could not be read
        self.failed_calls: Counter[tuple[str, str, str]] = Counter()  # since the last success
        self.resamples: dict[str, int] = {}  # per agent: answers sampled afresh after a repeated failure
        self.heard: dict[str, str] = {}  # per agent: the digit runs it was told, for grounded_args
        self.model_calls = 0

    def copy(self) -> Memory:
        copied = Memory()
        copied.calls = self.calls.copy()
        copied.succeeded, copied.looked, copied.called = (
            set(self.succeeded),
            set(self.looked),
            set(self.called),
        )
        copied.failed_answers = set(self.failed_answers)
        copied.failed_calls = Counter(self.failed_calls)
        copied.resamples = dict(self.resamples)
        copied.heard = dict(self.heard)
        copied.model_calls = self.model_calls
        return copied

    def delegated(self, agent: str) -> None:
        """A delegation ran: it counts as a call for tool_choice, and is no call the guards remember."""
        self.called.add(agent)

    def record(self, agent: str, spec: ToolSpec | None, call: Call, seen: Observed, wrote: bool) -> None:
        """What the guards learn from one call's result (`wrote`: the world changed)."""
        kind = (seen.error or {}).get("type")
        if seen.ok:
            self.failed_calls.clear()
        elif call.arguments is not None and kind != "world_bug":
            self.failed_calls[_call_key(agent, call)] += 1
        if seen.ok and spec is not None and call.arguments is not None:
            self.calls.succeeded(agent, call.name, call.arguments, seen.shown, wrote)
            self.succeeded.add(call.name)
            self.called.add(agent)
        elif spec is not None and call.arguments is not None and seen.error and kind not in NOT_REMEMBERED:
            self.calls.failed(agent, call.name, call.arguments, seen.error)


@dataclass
class Note:
    """What a turn tells the transcript: the runtime keeps each as an event, serving has no transcript."""

    kind: EventKind
    content: str
    error: dict[str, Any] | None = None
    response: ModelResponse | None = None  # the model call whose cost the note carries, if any


@dataclass
class Step:
    """The next action a turn found: a reply, calls to run (with a thought), or neither (ask again)."""

    response: ModelResponse
    reply: str | None = None
    calls: list[Call] = field(default_factory=list)
    thought: str | None = None
    problem: str | None = None  # why there is nothing to do yet


class ModelFailed(Exception):
    """The model call of a turn failed; `cause` is what the model raised (cancellation is not caught)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


async def take_turn(
    agent: Agent,
    turns: list[Turn],
    memory: Memory,
    *,
    sample: int,
    call_id: str,
    emit: Callable[[Note], None],
) -> Step:
    """Ask the model once for the agent's next action after `turns`, under its guards.

    What the model must see next (its answer, an error, a guard's notice) is appended to `turns`, and
    `memory` learns what the answer did; results of the calls are the caller's to add.

    Args:
        sample: the sample index (episodes differ yet replay from the cache); a resample moves it.
        call_id: the id of a call the model gives none.
        emit: told each note as it happens.

    Raises ModelFailed when the model call fails (ScriptExhausted passes through: a test's bug).
    """
    name, guards = agent.name, agent.guards
    if guards.reply_nudge and memory.model_calls == agent.turn_limit - 1:
        notice = f"This is your last step. {_reply_now(agent)}"
        emit(Note("notice", notice))
        turns.append(NoticeTurn(notice))
    params = choose_tools(agent.params, agent.tool_choice, bool(agent.tools), name in memory.called)
    if resample := memory.resamples.get(name):
        params, sample = _resampled(params, sample, resample)
    try:
        response = await agent.model.complete(
            agent.protocol.messages(agent.system, turns, agent.examples),
            tools=agent.tools,
            params=params,
            sample=sample,
        )
    except ScriptExhausted:
        raise
    except Exception as exc:  # any model failure; cancellation still propagates
        raise ModelFailed(exc) from exc
    memory.model_calls += 1
    parsed = agent.protocol.parse(response, call_id)
    parsed.calls = without_null_extras(parsed.calls, agent.specs)
    if parsed.error is not None:
        message = parsed.error
        if guards.reply_nudge:
            message += f". {_reply_now(agent)}"
        emit(Note("error", parsed.raw, error={"type": MALFORMED, "message": message}, response=response))
        if (name, parsed.raw) in memory.failed_answers:
            # The same broken answer again: asked the same way, a model at temperature 0 gives it a third
            # time. It is not shown again (a small model copies itself), and the next is sampled afresh.
            emit(Note("notice", f"{REPEATED_FAILURE} (resample {_resample(memory, name)})"))
            return Step(response, problem=message)
        memory.failed_answers.add((name, parsed.raw))
        turns += [AssistantTurn(raw=parsed.raw), ErrorTurn(message)]
        return Step(response, problem=message)
    if parsed.read_as is not None:
        emit(Note("notice", f"{parsed.read_as} (as written: {_one_line(parsed.raw)[:200]})"))
    if (
        parsed.reply is not None
        and guards.look_first
        and name not in memory.looked
        and agent.specs  # an agent with no tools has nothing to look up
        and memory.model_calls < agent.turn_limit  # a turn is left to look, then reply
    ):
        # Held back, not shown again: a small model copies its own unfounded answer.
        memory.looked.add(name)
        held = f"{LOOK_FIRST} (held back: {_one_line(parsed.reply)[:200]})"
        emit(Note("notice", held, response=response))
        turns.append(NoticeTurn(LOOK_FIRST))
        return Step(response, problem="a reply made before any lookup was held back (look_first)")
    if parsed.reply is not None:
        turns.append(AssistantTurn(text=parsed.reply))
        return Step(response, reply=parsed.reply)
    if parsed.calls and all(memory.failed_calls[_call_key(name, call)] >= 2 for call in parsed.calls):
        # Calls that failed twice already, asked for a third time: answered again, a small model at
        # temperature 0 asks for them until the turn limit. Not run, not shown; the next is sampled afresh.
        calls = ", ".join(call.name for call in parsed.calls)
        emit(Note("notice", f"{REPEATED_FAILURE} ({calls}; resample {_resample(memory, name)})"))
        return Step(response, problem=f"{calls} failed twice already")
    if parsed.thought:
        emit(Note("thought", parsed.thought, response=response))
    memory.looked.add(name)
    if guards.grounded_args:
        memory.heard[name] = _heard(agent, turns)
    turns.append(AssistantTurn(text=parsed.thought, calls=parsed.calls))
    return Step(response, calls=parsed.calls, thought=parsed.thought)


def delegated_request(spec: ToolSpec | None, call: Call) -> str | None:
    """The request a call hands to a sub-agent, or None: not a delegation, or one with no request."""
    if spec is None or spec.kind != "delegate" or call.error is not None:
        return None
    request = (call.arguments or {}).get("request")
    return request if isinstance(request, str) and request.strip() else None


def answer_inside(agent: Agent, memory: Memory, call: Call) -> ToolResult | None:
    """The result of a call only the harness answers; None for a world call or a delegation (the caller
    runs those: the runtime on its instance, a served client in its world)."""
    spec = agent.specs.get(call.name)
    if spec is None:
        known = ", ".join([*agent.specs, *(["reply"] if agent.protocol.name == "text" else [])])
        return tool_failure(
            call.name, "unknown_tool", f"You have no tool {call.name!r}. Your tools: {known}."
        )
    if call.error is not None:
        return tool_failure(call.name, "invalid_arguments", call.error)
    if delegated_request(spec, call) is not None:
        return None
    refusal = _refusal(agent, memory, spec, call)
    if refusal is not None:
        return refusal
    if spec.kind == "delegate":
        return tool_failure(
            call.name, "invalid_arguments", 'request: give the request as {"request": "<text>"}'
        )
    if spec.kind == "skill":
        return skill_result(agent.harness, agent.name, call.name, call.arguments or {})
    return None


def _refusal(agent: Agent, memory: Memory, spec: ToolSpec, call: Call) -> ToolResult | None:
    """A guard's refusal of this call (nothing runs), or None: run it."""
    if agent.guards.repeat_notice and memory.calls.is_repeat(agent.name, call.name, call.arguments):
        ok, earlier = memory.calls.earlier(agent.name, call.name, call.arguments or {})
        if ok:
            message = (
                f"You already called {call.name} with these arguments; its result is below. "
                "Do not call it again: use that result, or reply."
            )
            details = {"result": earlier}
        else:
            message = (
                f"You already called {call.name} with these arguments and it failed; the error is below. "
                "Do not call it again as it was: do what the error says first, or reply."
            )
            details = {"error": earlier}
        failure = ToolFailure(type="repeat_call", message=message, details=details)
        return ToolResult(tool=call.name, ok=False, error=failure)
    if agent.guards.preconditions and spec.requires and memory.succeeded.isdisjoint(spec.requires):
        them = "it" if len(spec.requires) == 1 else "one of them"
        return tool_failure(
            call.name,
            "precondition_refused",
            f"{call.name} runs only after {' or '.join(spec.requires)} has succeeded. Call {them} first.",
        )
    if agent.guards.grounded_args and (
        unheard := ungrounded(call.arguments, memory.heard.get(agent.name, agent.told))
    ):
        # The value is not repeated: an error the agent reads would otherwise ground it for the next call.
        them = "it" if len(unheard) == 1 else "them"
        return tool_failure(
            call.name,
            "ungrounded_argument",
            f"Nobody gave you {' or '.join(unheard)}. Call {call.name} again without {them}, with only what "
            f"the user or a tool result said, or ask the user for {them}.",
        )
    return None


def _heard(agent: Agent, turns: list[Turn]) -> str:
    """The digit runs the agent was told before its answer: the user's (or its caller's) messages, tool
    results, its task context; not its own words, nor demos (whose values it must not copy)."""
    texts = [
        t.text if isinstance(t, UserTurn) else t.content
        for t in turns
        if isinstance(t, UserTurn | ResultTurn)
    ]
    return f"{agent.told} {digit_runs(texts)}"


@dataclass(frozen=True)
class Observed:
    """A call's result as the agent reads it (`content`) and as its guards remember it."""

    content: str
    ok: bool
    shown: Any = None  # what the agent read of a success: the projected value, before the cut
    error: dict[str, Any] | None = None


def observe(spec: ToolSpec | None, result: ToolResult, limit: int) -> Observed:
    """What the agent reads of `result`: the fields tools.yaml projects (an error whole), cut to `limit`
    (limits.observation_chars). The episode's events and the world's log keep the whole result."""
    shown = spec.shown(result.value) if result.ok and spec is not None else result.value
    content = cut_observation(result.model_copy(update={"value": shown}).for_model(), limit)
    error = result.error.model_dump(exclude_defaults=True) if result.error else None
    return Observed(content, result.ok, shown if result.ok else None, error)


def observe_text(spec: ToolSpec | None, text: str, limit: int) -> Observed:
    """What the agent reads of a result a served client sends as text, shaped as `observe` shapes a
    world's: JSON is read (and written back as the runtime writes it), `{"error": ...}` is a failure
    shown whole, and text that is no JSON is a success shown as it is."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return Observed(cut_observation(text, limit), True, text)
    if isinstance(value, dict) and "error" in value:
        error = value["error"] if isinstance(value["error"], dict) else {"message": value["error"]}
        return Observed(cut_observation(compact_json(value), limit), False, error=error)
    shown = spec.shown(value) if spec is not None else value
    return Observed(cut_observation(compact_json(shown), limit), True, shown)


def _resample(memory: Memory, agent: str) -> int:
    memory.resamples[agent] = memory.resamples.get(agent, 0) + 1
    return memory.resamples[agent]


def _call_key(agent: str, call: Call) -> tuple[str, str, str]:
    """What makes two calls of an agent the same call: the tool and its arguments."""
    return agent, call.name, json.dumps(call.arguments, sort_keys=True, default=str)


def _resampled(params: ModelParams, sample: int, resample: int) -> tuple[ModelParams, int]:
    """How an agent is sampled after `resample` repeated failures: warmer each time, with a seed of its
    own (still seeded, so the episode replays from the cache)."""
    seed = None if params.seed is None else params.seed + resample * _RESAMPLE_STRIDE
    temperature = _RESAMPLE_TEMPERATURES[min(resample, len(_RESAMPLE_TEMPERATURES)) - 1]
    warmer = params.model_copy(update={"temperature": max(params.temperature, temperature), "seed": seed})
    return warmer, sample + resample * _RESAMPLE_STRIDE


def _reply_now(agent: Agent) -> str:
    """The reply guard's words: a small model that keeps acting forgets it must answer."""
    return f"Reply now with what you have found, {agent.protocol.how_to_reply}."


def tool_failure(tool: str, kind: str, message: str) -> ToolResult:
    return ToolResult(tool=tool, ok=False, error=ToolFailure(type=kind, message=message))


def skill_result(harness: Harness, agent: str, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
    """What `load_skill` returns: the skill's text, or not_found naming the agent's skills."""
    skill, skills = arguments.get("name"), harness.agent(agent).skills
    if skill not in skills:
        return tool_failure(tool, "not_found", f"No skill {skill!r}. Skills: {', '.join(skills)}.")
    return ToolResult(tool=tool, ok=True, value={"skill": skill, "text": harness.skills[skill]})


def cut_observation(content: str, limit: int) -> str:
    """A tool result as the agent reads it: at most `limit` characters (limits.observation_chars)."""
    return content if len(content) <= limit else content[:limit] + " …(truncated)"
