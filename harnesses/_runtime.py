"""The agent loop: one episode of a harness on one world instance.

Render the agent's prompt, ask the model, run the tool calls it makes on the instance, feed
the results back, and stop on a final reply, a stop tool or a limit. A sub-agent runs through
its `delegate_to_<agent>` tool on the same instance, and its final answer comes back to the
caller as the tool's result. The system messages each agent was sent (see `harnesses/_prompt.py`)
are recorded on the episode, as `prompts` and their `prompt_hash`.

An observation is a result as compact JSON: a successful call's result keeps only the `fields`
tools.yaml lists for the tool (if any), then is cut to limits.observation_chars. The episode's
events and calls keep the whole result.

Nothing the model or the world does crashes an episode: a malformed action, an unknown tool
or bad arguments become an error observation the agent reads (a malformed answer identical to one
that already failed is not shown again: the next answer is sampled warmer, with a seed of its own,
and a notice records it); a model call that fails (a
ModelError, or anything a custom model raises but cancellation) ends the episode with
stop_reason "model_error" and `error` set. A tool
that crashes inside the world (error type `world_bug`) is shown to the agent like any error,
recorded as an `error` event, and when the episode ends its stop_reason is "world_bug" with
`error` set: the run is the world author's bug, not the agent's, and graders skip it.

Stop reasons: "reply" (the entry agent answered and the user side returned None), "stop_tool"
(the entry agent's stop tool succeeded; a sub-agent's stop tool only ends that sub-agent),
"turn_limit" / "tool_limit" / "token_limit" (harness limits, counted over the whole episode),
"model_error" and "world_bug" (errored, see above). This loop never gives "user_done": a user
side can only end the conversation after a reply, and that is "reply".
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from worlds import TIMESTAMP_FORMAT, Instance, ToolFailure, ToolResult

from ._episode import NOT_REMEMBERED, CallMemory, Episode, Event, StopReason
from ._format import Guards, Limits, ToolChoice
from ._harness import Harness
from ._prompt import PromptPart, example_messages, prompt_hash, sent_prompts, system_prompt
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
    error_json,
    without_null_extras,
)
from ._tools import ToolSpec, tool_specs
from ._user import ScriptedUser, UserSide
from .models import Model, ModelError, ModelParams, ModelResponse, ModelUsage, ScriptExhausted, get_model


def _model_failure(error: Exception) -> str:
    """What the episode records: a ModelError speaks for itself; anything else (a custom model's
    RuntimeError, a timeout) is named by its type so the author can find it."""
    if isinstance(error, ModelError):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class _Stop(Exception):
    """Ends the episode from anywhere in the agent graph."""

    def __init__(self, reason: StopReason, error: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


@dataclass
class _Outcome:
    text: str
    stopped: bool = False  # a stop tool ended the run


@dataclass
class _Agent:
    """What one agent needs for every model call of an episode, prepared once."""

    name: str
    model: Model
    protocol: TextProtocol | NativeProtocol
    system: str
    examples: list[dict[str, Any]]  # demos sent after `system` (see `example_messages`)
    prompts: list[PromptPart]  # `system` and `examples` as the protocol sends them, for the episode
    params: ModelParams
    specs: dict[str, ToolSpec]
    tools: list[dict[str, Any]] | None
    guards: Guards
    tool_choice: ToolChoice


async def run_episode(
    harness: Harness,
    instance: Instance,
    model: Model,
    user: UserSide | str,
    *,
    sample: int = 0,
    task_id: str | None = None,
    task_context: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
    models: Mapping[str, Model] | None = None,
) -> Episode:
    """Run the harness's entry agent against `user` on `instance`; never raises for model or world trouble.

    Args:
        model: answers every agent without its own `model` in harness.yaml.
        user: a UserSide, or a plain message (a ScriptedUser with no follow-ups).
        sample: passed to every model call, so samples differ yet replay from the cache.
        task_context: shown to prompt templates as `task`.
        limits: replace harness.yaml's limits.
        models: models for agents that name their own, by name; others are built with get_model.
    """
    run = _Run(harness, instance, model, user, sample, task_context, limits or harness.config.limits, models)
    return await run.episode(task_id)


class _Run:
    def __init__(
        self,
        harness: Harness,
        instance: Instance,
        model: Model,
        user: UserSide | str,
        sample: int,
        task_context: Mapping[str, Any] | None,
        limits: Limits,
        models: Mapping[str, Model] | None,
    ) -> None:
        self.harness = harness
        self.instance = instance
        self.model = model
        self.user = ScriptedUser(user) if isinstance(user, str) else user
        self.sample = sample
        self.task = dict(task_context or {})
        self.limits = limits
        self.models = dict(models or {})
        self.events: list[Event] = []
        self.usage = ModelUsage()
        self.tool_calls = 0
        self.world_bug: str | None = None
        self.agents: dict[str, _Agent] = {}
        self.memory = CallMemory()  # for the repeat guard
        self.succeeded: set[str] = set()  # tools that succeeded this episode, for the preconditions guard
        self.looked: set[str] = set()  # agents that called a tool or were told to, for the look_first guard
        self.called: set[str] = set()  # agents with a successful tool call, for tool_choice "first"
        self.failed: set[tuple[str, str]] = set()  # (agent, answer) that could not be read, never replayed
        self.resamples: dict[str, int] = {}  # per agent: answers sampled afresh after a repeated failure
        self.failed_calls: Counter[tuple[str, str, str]] = Counter()  # since the last success
        self.started = time.perf_counter()
        self.now = instance.now().strftime(TIMESTAMP_FORMAT)

    async def episode(self, task_id: str | None) -> Episode:
        log_start = len(self.instance.log)
        entry = self.harness.entry
        stop_reason: StopReason
        error = None
        try:
            message: str | None = self.user.opening
            turns: list[Turn] = []
            while message is not None:
                self._event("user", entry, content=message)
                turns.append(UserTurn(message))
                outcome = await self._run_agent(entry, turns, delegation=None)
                if outcome.stopped:
                    raise _Stop("stop_tool")
                try:
                    message = await self.user.respond(list(self.events))
                except ScriptExhausted:
                    raise
                except Exception as exc:
                    raise _Stop(
                        "model_error", f"the user side's model failed: {_model_failure(exc)}"
                    ) from None
            stop_reason = "reply"
        except _Stop as stop:
            stop_reason, error = stop.reason, stop.error
        if self.world_bug is not None and stop_reason != "model_error":
            stop_reason, error = "world_bug", self.world_bug
        clock = self.instance.clock
        # The entry agent first, then the others in harness.yaml's order: the same prompts hash the same
        # whatever order the agents happened to run in.
        order = [entry, *(name for name in self.harness.agents if name != entry)]
        prompts = [part for name in order if name in self.agents for part in self.agents[name].prompts]
        return Episode(
            harness=self.harness.name,
            harness_hash=self.harness.hash,
            model=self.model.name,
            world=self.instance.world.name,
            fixture=self.instance.fixture.name,
            seed=self.instance.seed,
            clock=clock.mode + (f"@{clock.start.strftime(TIMESTAMP_FORMAT)}" if clock.start else ""),
            task_id=task_id,
            prompt_hash=prompt_hash(prompts) if prompts else None,
            prompts=prompts,
            events=self.events,
            calls=self.instance.log[log_start:],
            diff=self.instance.diff(),
            stop_reason=stop_reason,
            error=error,
            usage=self.usage + self.user.usage,  # the agent's calls, and a simulated user's
            duration_s=round(time.perf_counter() - self.started, 6),
        )

    # -- one agent ------------------------------------------------------------------------------

    def _agent(self, name: str, opening: str) -> _Agent:
        """The agent as this episode runs it; `opening` (its first run's request) picks retrieved demos."""
        if name in self.agents:
            return self.agents[name]
        harness, config = self.harness, self.harness.agent(name)
        model = self.model
        if config.model is not None:
            model = self.models.get(config.model) or get_model(
                config.model, cache=getattr(self.model, "cache", None)
            )
            self.models[config.model] = model
        protocol = PROTOCOLS[harness.protocol_for(name, model.name)]
        specs = tool_specs(harness, name)
        system = system_prompt(harness, name, protocol, self.task, self.now)
        examples = example_messages(harness, name, protocol, opening)
        agent = _Agent(
            name=name,
            model=model,
            protocol=protocol,
            system=system,
            examples=examples,
            prompts=sent_prompts(name, protocol, system, examples),
            params=protocol.params(harness.params_for(name)),
            specs={spec.name: spec for spec in specs},
            tools=protocol.tools(specs),
            guards=config.guards,
            tool_choice=config.tool_choice,
        )
        self.agents[name] = agent
        return agent

    async def _run_agent(self, name: str, turns: list[Turn], delegation: Call | None) -> _Outcome:
        """Ask the model and act until the agent replies or calls a stop tool."""
        agent = self._agent(name, next((t.text for t in turns if isinstance(t, UserTurn)), ""))
        while True:
            if agent.guards.reply_nudge and self.usage.model_calls == self.limits.turns - 1:
                notice = f"This is your last step. {_reply_now(agent)}"
                self._event("notice", name, content=notice)
                turns.append(NoticeTurn(notice))
            response = await self._complete(agent, turns)
            cost = {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "latency_s": response.latency_s,
            }
            parsed = agent.protocol.parse(response, f"{name}_{self.usage.model_calls}")
            parsed.calls = without_null_extras(parsed.calls, agent.specs)
            if parsed.error is not None:
                message = parsed.error
                if agent.guards.reply_nudge:
                    message += f". {_reply_now(agent)}"
                self._event(
                    "error", name, content=parsed.raw, error={"type": MALFORMED, "message": message}, **cost
                )
                if (name, parsed.raw) in self.failed:
                    # The same broken answer again: asked the same way, a model at temperature 0 gives it
                    # a third time. It is not shown again (a small model copies itself), and the next
                    # answer is sampled afresh.
                    self.resamples[name] = self.resamples.get(name, 0) + 1
                    self._event(
                        "notice", name, content=f"{_REPEATED_FAILURE} (resample {self.resamples[name]})"
                    )
                    continue
                self.failed.add((name, parsed.raw))
                turns += [AssistantTurn(raw=parsed.raw), ErrorTurn(message)]
                continue
            if (
                parsed.reply is not None
                and agent.guards.look_first
                and name not in self.looked
                and agent.specs  # an agent with no tools has nothing to look up
                and self.usage.model_calls < self.limits.turns  # a turn is left to look, then reply
            ):
                # Held back, not shown again: a small model copies its own unfounded answer.
                self.looked.add(name)
                notice = "You have not looked anything up yet. Call a tool to check the facts, then reply."
                self._event(
                    "notice",
                    name,
                    content=f"{notice} (held back: {_one_line(parsed.reply)[:200]})",
                    **cost,
                )
                turns.append(NoticeTurn(notice))
                continue
            if parsed.reply is not None:
                turns.append(AssistantTurn(text=parsed.reply))
                if delegation is None:
                    self._event("assistant", name, content=parsed.reply, **cost)
                else:
                    self._event(
                        "return",
                        name,
                        tool=name,
                        call_id=delegation.id,
                        content=parsed.reply,
                        ok=True,
                        **cost,
                    )
                return _Outcome(parsed.reply)
            if parsed.calls and all(self.failed_calls[_call_key(name, call)] >= 2 for call in parsed.calls):
                # Calls that failed twice already, asked for a third time: answered again, a small model
                # at temperature 0 asks for them until the turn limit. Not run, not shown; the next
                # answer is sampled afresh.
                self.resamples[name] = self.resamples.get(name, 0) + 1
                calls = ", ".join(call.name for call in parsed.calls)
                self._event(
                    "notice", name, content=f"{_REPEATED_FAILURE} ({calls}; resample {self.resamples[name]})"
                )
                continue
            if parsed.thought:
                self._event("thought", name, content=parsed.thought, **cost)
                cost = {}
            turns.append(AssistantTurn(text=parsed.thought, calls=parsed.calls))
            stopped = None
            for call in parsed.calls:
                if stopped is not None:  # a stop tool ended the run: later calls of the reply never run
                    turns.append(ResultTurn(call.id, call.name, error_json("not_run", "the run had ended")))
                    continue
                content, stops = await self._call(agent, call, cost)
                cost = {}
                turns.append(ResultTurn(call.id, call.name, content))
                if stops:
                    stopped = content
            if stopped is not None:
                if delegation is not None:
                    self._event("return", name, tool=name, call_id=delegation.id, content=stopped, ok=True)
                return _Outcome(stopped, stopped=True)

    async def _complete(self, agent: _Agent, turns: list[Turn]) -> ModelResponse:
        limits = self.limits
        if self.usage.model_calls >= limits.turns:
            raise _Stop("turn_limit")
        if limits.tokens is not None and self.usage.total_tokens >= limits.tokens:
            raise _Stop("token_limit")
        params, sample = agent.params, self.sample
        params = choose_tools(params, agent.tool_choice, bool(agent.tools), agent.name in self.called)
        if resample := self.resamples.get(agent.name):
            params, sample = _resampled(params, sample, resample)
        try:
            response = await agent.model.complete(
                agent.protocol.messages(agent.system, turns, agent.examples),
                tools=agent.tools,
                params=params,
                sample=sample,
            )
        except ScriptExhausted:
            raise  # a test's script ran dry: a bug in the test, not a model failure
        except Exception as exc:  # any model failure errors this episode; cancellation still propagates
            message = _model_failure(exc)
            self._event(
                "error", agent.name, content=message, error={"type": "model_error", "message": message}
            )
            raise _Stop("model_error", f"{agent.model.name}: {message}") from None
        self.usage.add(response)
        return response

    # -- one tool call --------------------------------------------------------------------------

    async def _call(self, agent: _Agent, call: Call, cost: dict[str, Any]) -> tuple[str, bool]:
        """Run one call; returns what the model reads next and whether it ends the agent's run."""
        if self.tool_calls >= self.limits.tool_calls:
            raise _Stop("tool_limit")
        self.tool_calls += 1
        self.looked.add(agent.name)
        spec = agent.specs.get(call.name)
        if spec is not None and spec.kind == "delegate" and call.error is None:
            request = (call.arguments or {}).get("request")
            if isinstance(request, str) and request.strip():
                self._event(
                    "delegate",
                    agent.name,
                    tool=spec.target,
                    call_id=call.id,
                    arguments=call.arguments,
                    content=request,
                    **cost,
                )
                self.called.add(agent.name)
                outcome = await self._run_agent(spec.target or "", [UserTurn(request)], delegation=call)
                return json.dumps({"answer": outcome.text}, ensure_ascii=False), False
        arguments = call.arguments if call.arguments is not None else {"_raw": call.raw}
        self._event("tool_call", agent.name, tool=call.name, call_id=call.id, arguments=arguments, **cost)
        result = self._refusal(agent, spec, call) or self._execute(agent, spec, call)
        error = result.error.model_dump(exclude_defaults=True) if result.error else None
        self._event(
            "tool_result",
            agent.name,
            tool=call.name,
            call_id=call.id,
            ok=result.ok,
            result=result.value,
            error=error,
        )
        if result.error is not None and result.error.type == "world_bug":
            self.world_bug = self.world_bug or result.error.message
            self._event(
                "error",
                agent.name,
                tool=call.name,
                call_id=call.id,
                content=result.error.message,
                error=error,
            )
        # The agent reads the fields tools.yaml projects (errors whole); the event above and the
        # world's call log keep the whole result, for graders and the proposers.
        shown = spec.shown(result.value) if result.ok and spec is not None else result.value
        content = result.model_copy(update={"value": shown}).for_model()
        content = cut_observation(content, self.limits.observation_chars)
        if result.ok:
            self.failed_calls.clear()
        elif call.arguments is not None and (error or {}).get("type") != "world_bug":
            self.failed_calls[_call_key(agent.name, call)] += 1
        if result.ok and spec is not None and call.arguments is not None:
            wrote = spec.kind == "world" and bool(self.instance.log[-1].changes)
            self.memory.succeeded(agent.name, call.name, call.arguments, shown, wrote)
            self.succeeded.add(call.name)
            self.called.add(agent.name)
        elif (
            spec is not None and call.arguments is not None and error and error["type"] not in NOT_REMEMBERED
        ):
            self.memory.failed(agent.name, call.name, call.arguments, error)
        return content, bool(spec is not None and spec.stops and result.ok)

    def _refusal(self, agent: _Agent, spec: ToolSpec | None, call: Call) -> ToolResult | None:
        """A guard's refusal of this call (nothing runs), or None: run it."""
        if spec is None or call.error is not None:
            return None
        if agent.guards.repeat_notice and self.memory.is_repeat(agent.name, call.name, call.arguments):
            ok, earlier = self.memory.earlier(agent.name, call.name, call.arguments or {})
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
        if agent.guards.preconditions and spec.requires and self.succeeded.isdisjoint(spec.requires):
            them = "it" if len(spec.requires) == 1 else "one of them"
            return tool_failure(
                call.name,
                "precondition_refused",
                f"{call.name} runs only after {' or '.join(spec.requires)} has succeeded. Call {them} first.",
            )
        return None

    def _execute(self, agent: _Agent, spec: ToolSpec | None, call: Call) -> ToolResult:
        if spec is None:
            known = ", ".join([*agent.specs, *(["reply"] if agent.protocol.name == "text" else [])])
            return tool_failure(
                call.name, "unknown_tool", f"You have no tool {call.name!r}. Your tools: {known}."
            )
        if call.error is not None:
            return tool_failure(call.name, "invalid_arguments", call.error)
        arguments = call.arguments or {}
        if spec.kind == "delegate":
            return tool_failure(
                call.name, "invalid_arguments", 'request: give the request as {"request": "<text>"}'
            )
        if spec.kind == "skill":
            return skill_result(self.harness, agent.name, call.name, arguments)
        return self.instance.call(call.name, **arguments)

    def _event(self, kind: str, agent: str, **fields: Any) -> None:
        self.events.append(
            Event(kind=kind, agent=agent, at=round(time.perf_counter() - self.started, 6), **fields)
        )


_REPEATED_FAILURE = (
    "The answer repeated one that already failed; it is not shown again and the next is sampled afresh"
)
_RESAMPLE_TEMPERATURE = 0.7
_RESAMPLE_STRIDE = (
    1_000_003  # a resample's sample index: far from the episode's own, and from other episodes'
)


def _call_key(agent: str, call: Call) -> tuple[str, str, str]:
    """What makes two calls of an agent the same call: the tool and its arguments."""
    return agent, call.name, json.dumps(call.arguments, sort_keys=True, default=str)


def _resampled(params: ModelParams, sample: int, resample: int) -> tuple[ModelParams, int]:
    """How an agent is sampled after `resample` repeated failures: warmer, with a seed of its own (still
    seeded, so the episode replays from the cache)."""
    seed = None if params.seed is None else params.seed + resample * _RESAMPLE_STRIDE
    warmer = params.model_copy(
        update={"temperature": max(params.temperature, _RESAMPLE_TEMPERATURE), "seed": seed}
    )
    return warmer, sample + resample * _RESAMPLE_STRIDE


def _reply_now(agent: _Agent) -> str:
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
