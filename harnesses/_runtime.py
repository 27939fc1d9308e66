"""The agent loop: one episode of a harness on one world instance.

Take the agent's turns (`harnesses/_turn.py`: the prompt, the model call under the guards, the
answers only the harness gives; the OpenAI-compatible endpoint takes the same turns), run the world
calls on the instance, feed the results back, and stop on a final reply, a stop tool or a limit. A
sub-agent runs through its `delegate_to_<agent>` tool on the same instance, and its final answer comes
back to the caller as the tool's result. The system messages each agent was sent (see
`harnesses/_prompt.py`) are recorded on the episode, as `prompts` and their `prompt_hash`.

An observation is a result as compact JSON: a successful call's result keeps only the `fields`
tools.yaml lists for the tool (if any), then is cut to limits.observation_chars. The episode's
events and calls keep the whole result.

Nothing the model or the world does crashes an episode: a malformed action, an unknown tool or bad
arguments become an error observation the agent reads (a malformed answer identical to one that
already failed is not shown again: the next answer is sampled warmer, with a seed of its own, and a
notice records it); a model call that fails (a ModelError, or anything a custom model raises but
cancellation) ends the episode with stop_reason "model_error" and `error` set. A tool that crashes
inside the world (error type `world_bug`) is shown to the agent like any error, recorded as an
`error` event, and when the episode ends its stop_reason is "world_bug" with `error` set: the run is
the world author's bug, not the agent's, and graders skip it.

Stop reasons: "reply" (the entry agent answered and the user side returned None), "stop_tool"
(the entry agent's stop tool succeeded; a sub-agent's stop tool only ends that sub-agent),
"turn_limit" / "tool_limit" / "token_limit" (harness limits, counted over the whole episode),
"model_error" and "world_bug" (errored, see above). This loop never gives "user_done": a user
side can only end the conversation after a reply, and that is "reply".
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from atoll.worlds import TIMESTAMP_FORMAT, Instance, compact_json

from ._episode import Episode, Event, StopReason
from ._format import Limits
from ._harness import Harness
from ._prompt import prompt_hash
from ._protocols import Call, ResultTurn, Turn, UserTurn, error_json
from ._turn import (
    Agent,
    Memory,
    ModelFailed,
    Note,
    Step,
    answer_inside,
    delegated_request,
    observe,
    prepare_agent,
    take_turn,
)
from ._user import ScriptedUser, UserSide
from .models import Model, ModelError, ModelResponse, ModelUsage, ScriptExhausted, get_model


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
        self.agents: dict[str, Agent] = {}
        self.memory = Memory()  # what the guards know, over the whole episode
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

    def _agent(self, name: str, opening: str) -> Agent:
        """The agent as this episode runs it; `opening` (its first run's request) picks retrieved demos."""
        if name in self.agents:
            return self.agents[name]
        config = self.harness.agent(name)
        model = self.model
        if config.model is not None:
            model = self.models.get(config.model) or get_model(
                config.model, cache=getattr(self.model, "cache", None)
            )
            self.models[config.model] = model
        agent = prepare_agent(
            self.harness,
            name,
            model,
            task=self.task,
            now=self.now,
            opening=opening,
            turn_limit=self.limits.turns,
        )
        self.agents[name] = agent
        return agent

    async def _run_agent(self, name: str, turns: list[Turn], delegation: Call | None) -> _Outcome:
        """Take turns and act until the agent replies or calls a stop tool."""
        agent = self._agent(name, next((t.text for t in turns if isinstance(t, UserTurn)), ""))
        while True:
            step = await self._turn(agent, turns)
            cost = _cost(step.response)
            if step.reply is not None:
                if delegation is None:
                    self._event("assistant", name, content=step.reply, **cost)
                else:
                    self._event(
                        "return", name, tool=name, call_id=delegation.id, content=step.reply, ok=True, **cost
                    )
                return _Outcome(step.reply)
            if step.thought:
                cost = {}  # the thought's event carries it
            stopped = None
            for call in step.calls:
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

    async def _turn(self, agent: Agent, turns: list[Turn]) -> Step:
        """One turn of the agent (see `harnesses/_turn.py`), within the episode's limits."""
        limits = self.limits
        if self.usage.model_calls >= limits.turns:
            raise _Stop("turn_limit")
        if limits.tokens is not None and self.usage.total_tokens >= limits.tokens:
            raise _Stop("token_limit")
        try:
            step = await take_turn(
                agent,
                turns,
                self.memory,
                sample=self.sample,
                call_id=f"{agent.name}_{self.usage.model_calls + 1}",
                emit=lambda note: self._note(agent.name, note),
            )
        except ModelFailed as failed:  # any model failure errors this episode
            message = _model_failure(failed.cause)
            self._event(
                "error", agent.name, content=message, error={"type": "model_error", "message": message}
            )
            raise _Stop("model_error", f"{agent.model.name}: {message}") from None
        self.usage.add(step.response)
        return step

    # -- one tool call --------------------------------------------------------------------------

    async def _call(self, agent: Agent, call: Call, cost: dict[str, Any]) -> tuple[str, bool]:
        """Run one call; returns what the model reads next and whether it ends the agent's run."""
        if self.tool_calls >= self.limits.tool_calls:
            raise _Stop("tool_limit")
        self.tool_calls += 1
        spec = agent.specs.get(call.name)
        request = delegated_request(spec, call)
        if spec is not None and request is not None:
            self._event(
                "delegate",
                agent.name,
                tool=spec.target,
                call_id=call.id,
                arguments=call.arguments,
                content=request,
                **cost,
            )
            self.memory.delegated(agent.name)
            outcome = await self._run_agent(spec.target or "", [UserTurn(request)], delegation=call)
            return compact_json({"answer": outcome.text}), False
        arguments = call.arguments if call.arguments is not None else {"_raw": call.raw}
        self._event("tool_call", agent.name, tool=call.name, call_id=call.id, arguments=arguments, **cost)
        result = answer_inside(agent, self.memory, call) or self.instance.call(
            call.name, **(call.arguments or {})
        )
        seen = observe(spec, result, self.limits.observation_chars)
        self._event(
            "tool_result",
            agent.name,
            tool=call.name,
            call_id=call.id,
            ok=result.ok,
            result=result.value,
            error=seen.error,
        )
        if result.error is not None and result.error.type == "world_bug":
            self.world_bug = self.world_bug or result.error.message
            self._event(
                "error",
                agent.name,
                tool=call.name,
                call_id=call.id,
                content=result.error.message,
                error=seen.error,
            )
        # The agent reads the fields tools.yaml projects (errors whole); the event above and the
        # world's call log keep the whole result, for graders and the proposers.
        wrote = (
            result.ok and spec is not None and spec.kind == "world" and bool(self.instance.log[-1].changes)
        )
        self.memory.record(agent.name, spec, call, seen, wrote)
        return seen.content, bool(spec is not None and spec.stops and result.ok)

    def _note(self, agent: str, note: Note) -> None:
        self._event(note.kind, agent, content=note.content, error=note.error, **_cost(note.response))

    def _event(self, kind: str, agent: str, **fields: Any) -> None:
        self.events.append(
            Event(kind=kind, agent=agent, at=round(time.perf_counter() - self.started, 6), **fields)
        )


def _cost(response: ModelResponse | None) -> dict[str, Any]:
    """A model call's tokens and latency, as the first event it led to carries them."""
    if response is None:
        return {}
    return {
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
        "latency_s": response.latency_s,
    }
