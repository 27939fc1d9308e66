"""What every operator shares: round-trip YAML edits of the harness files and demos built from train data.

Operators read the parent harness, the world's tools, train tasks (their references and tags) and
train episodes, never val or test tasks; `ProposalContext` refuses anything but train tasks.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from atoll.harnesses.models import ModelUsage

from .._proposal import Proposal, ProposalContext

HARNESS_FILE = "harness.yaml"
TOOLS_FILE = "tools.yaml"
AUTO_DEMO_PREFIX = "auto_"
_MAX_LIST_ITEMS = 3  # a demo shows the shape of a result, not all of it
_MAX_TEXT = 300  # nor every word of a long text field


class Operator:
    """Base of the LLM-free operators: each sets `name` and `propose`; none calls a model, so none spends."""

    name: str

    @property
    def usage(self) -> ModelUsage:
        return ModelUsage()


def _yaml() -> YAML:
    yaml = YAML()  # round-trip: keeps comments, key order and flow-style lists
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def load(text: str) -> Any:
    return _yaml().load(text)


def dump(data: Any) -> str:
    buffer = io.StringIO()
    _yaml().dump(data, buffer)
    return buffer.getvalue()


def flow(items: Iterable[str]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def compact(value: Any) -> Any:
    """Shorten long lists and texts and leave out empty fields of a tool result, so a demo stays small
    in the prompt (demos are shown whole; live results are cut to limits.observation_chars)."""
    if isinstance(value, list):
        return [compact(v) for v in value[:_MAX_LIST_ITEMS]]
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        return value[:_MAX_TEXT] + "..."
    return value


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def demo_name(task_id: str) -> str:
    return AUTO_DEMO_PREFIX + slug(task_id)


def agent_tools(context: ProposalContext) -> dict[str, set[str]]:
    return {agent: set(tools) for agent, tools in context.harness.tools.items()}


def demo_calls(demo: Any) -> frozenset[str]:
    return frozenset(step.call for step in demo.steps if step.call)


def reference_tools(task: Any) -> set[str]:
    return {call.tool for call in task.reference}


def task_kind(task: Any) -> tuple[str, frozenset[str]]:
    """What kind of request a train task is: its first tag and the tools its reference uses."""
    return (task.tags[0] if task.tags else "", frozenset(reference_tools(task)))


def failing_ids(context: ProposalContext) -> set[str]:
    return {failure.task_id for failure in context.failures}


def pattern_counts(context: ProposalContext) -> dict[str, int]:
    """Each failure pattern summed over the failing train episodes."""
    counts: dict[str, int] = {}
    for failure in context.failures:
        for pattern, count in failure.patterns.items():
            counts[pattern] = counts.get(pattern, 0) + count
    return counts


def fitting_agent(context: ProposalContext, task: Any) -> str | None:
    """The agent (the entry first) that has every tool a train task's reference uses."""
    needed = reference_tools(task)
    agents = [context.harness.entry, *(a for a in context.harness.agents if a != context.harness.entry)]
    return next((a for a in agents if needed <= set(context.harness.tools.get(a, {}))), None)


def reference_log(context: ProposalContext, task: Any) -> list[Any] | None:
    """A train task's reference solution replayed on its fixture: each call with its result (world
    CallRecords); None when a call fails (the suite check reports that, not a proposer). Kept per world and
    solution: every slot asks every operator, and several replay the same references."""
    calls = json.dumps([call.model_dump() for call in task.reference], sort_keys=True, default=str)
    log = _replayed(context.harness.world, task.fixture, task.clock, calls)
    return list(log) if log is not None else None


@functools.lru_cache(maxsize=512)
def _replayed(world: Any, fixture: str, clock: str, calls: str) -> tuple[Any, ...] | None:
    from atoll.evals import ReferenceCall, ReferenceFailed, replay_calls

    steps = [ReferenceCall.model_validate(call) for call in json.loads(calls)]
    try:
        log, _ = replay_calls(world, fixture, 0, clock, steps)
    except ReferenceFailed:
        return None
    return tuple(log)


def reference_demo(context: ProposalContext, task: Any) -> dict[str, Any] | None:
    """A train task's reference solution as a demo, replayed for its results; None if it fails to replay.
    The agent shown it must have every tool it calls (see `fitting_agent`)."""
    log = reference_log(context, task)
    if log is None:
        return None
    steps: list[dict[str, Any]] = [{"user": task.user.message}]
    for record in log:
        steps.append({"call": record.tool, "args": dict(record.arguments), "result": compact(record.value)})
    phrases = list(task.expect.reply_contains or [])
    reply = "Done. " + " ".join(f"{p[0].upper()}{p[1:]}." for p in phrases) if phrases else "Done."
    steps.append({"reply": reply.strip()})
    return {"title": f"Reference solution of {task.id}", "steps": steps}


def episode_demo(context: ProposalContext, result: Any) -> dict[str, Any] | None:
    """A passing train episode as a demo for the entry agent: its user turns, the calls its own tools
    made with their results, and its replies (delegations are left out)."""
    agent = context.harness.entry
    steps: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    for event in result.episode.events:
        if event.agent != agent:
            continue
        if event.kind == "user" and event.content:
            steps.append({"user": event.content})
        elif event.kind == "tool_call" and event.tool in context.harness.tools.get(agent, {}):
            step = {"call": event.tool, "args": event.arguments or {}}
            pending[event.call_id or str(len(steps))] = step
            steps.append(step)
        elif event.kind == "tool_result" and (event.call_id or "") in pending:
            step = pending.pop(event.call_id or "")
            if event.ok:
                step["result"] = compact(event.result)
            else:
                step["error"] = event.error or {"type": "error", "message": str(event.result)}
        elif event.kind == "assistant" and event.content:
            steps.append({"reply": event.content})
    if len(steps) < 2 or "user" not in steps[0]:
        return None
    return {"title": f"From a passing episode of {result.task_id}", "steps": steps}


class Edit:
    """One proposal in the making: the parent's files, with harness.yaml and tools.yaml loaded round-trip."""

    def __init__(self, context: ProposalContext) -> None:
        self.context = context
        self.files = dict(context.files)
        self.config = load(self.files[HARNESS_FILE])
        self._tools: Any = None

    def agent(self, name: str) -> CommentedMap:
        return self.config["agents"][name]

    def set_list(self, agent: str, key: str, items: Iterable[str]) -> None:
        self.agent(agent)[key] = flow(items)

    def add_demo(self, name: str, demo: dict[str, Any]) -> None:
        self.files[f"demos/{name}.yaml"] = dump(demo)

    def place_demo(self, agent: str, name: str, demo: dict[str, Any]) -> str:
        """Show a new demo to an agent: in its pool if it retrieves, else among its demos at a position
        drawn at random (where a demo stands changes how much a base model copies it). Says where."""
        self.add_demo(name, demo)
        settings = self.agent(agent)
        if settings.get("retrieve_demos"):
            self.set_list(agent, "demo_pool", [*(settings.get("demo_pool") or []), name])
            return "in its retrieval pool"
        demos = list(settings.get("demos") or [])
        position = self.context.rng.randint(0, len(demos))
        self.set_list(agent, "demos", [*demos[:position], name, *demos[position:]])
        return "placed last" if position == len(demos) else f"at position {position + 1} of {len(demos) + 1}"

    def drop_unlisted_demo(self, name: str) -> None:
        """Delete a demo's file once no agent lists it in `demos` or `demo_pool`."""
        listed = any(
            name in (cfg.get("demos") or []) or name in (cfg.get("demo_pool") or [])
            for cfg in self.config["agents"].values()
        )
        if not listed:
            self.files.pop(f"demos/{name}.yaml", None)

    @property
    def tools(self) -> CommentedMap:
        if self._tools is None:
            self._tools = load(self.files.get(TOOLS_FILE, "{}\n")) or CommentedMap()
        return self._tools

    def _mapping(self, agent: str) -> CommentedMap:
        """An agent's tools.yaml entry as a mapping that can hold overrides (a plain list converted)."""
        entries = self.tools.get(agent)
        if not isinstance(entries, dict):
            entries = self.tools[agent] = CommentedMap((name, None) for name in entries or [])
        return entries

    def expose(self, agent: str, tool: str, override: Any = None) -> None:
        """Offer an agent a world tool, with the world's wording unless `override` (a tools.yaml entry)."""
        entries = self.tools.get(agent)
        if isinstance(entries, list) and override is None:
            entries.append(tool)
        else:
            self._mapping(agent)[tool] = override

    def describe(self, agent: str, tool: str, description: str) -> None:
        """Replace the description of a tool an agent is offered (its tools.yaml override)."""
        entries = self._mapping(agent)
        if entries[tool] is None:
            entries[tool] = CommentedMap()
        entries[tool]["description"] = description

    def hide(self, agent: str, tool: str) -> None:
        entries = self.tools[agent]
        if isinstance(entries, list):
            entries.remove(tool)
        else:
            del entries[tool]

    def require(self, agent: str, tool: str, required: list[str]) -> None:
        entries = self._mapping(agent)
        if entries[tool] is None:
            entries[tool] = CommentedMap()
        entries[tool]["requires"] = flow(required)

    def proposal(self, operator: str, rationale: str) -> Proposal | None:
        # A file is rewritten only where its content changed, so a file that does not round-trip
        # byte for byte is not reformatted by an edit of the other.
        for name, data in ((HARNESS_FILE, self.config), (TOOLS_FILE, self._tools)):
            if data is not None and dump(data) != dump(load(self.context.files.get(name, "{}\n")) or {}):
                self.files[name] = dump(data)
        return Proposal.build(
            operator=operator,
            rationale=rationale,
            parent=self.context.files,
            files=self.files,
            parent_hash=self.context.harness_hash,
        )
