"""Operators: proposers that need no LLM, so the optimizer improves harnesses on the local model.

A small base model copies its demos more than it follows instructions, so the levers that
move it are which worked examples it sees, in what order, which tools it is offered, and
how it samples. Each operator makes one such change, names it in its rationale, and lets
the acceptance rule decide whether it helped.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ._proposal import Proposal, ProposalContext

HARNESS_FILE = "harness.yaml"
TOOLS_FILE = "tools.yaml"
AUTO_DEMO_PREFIX = "auto_"
_MAX_LIST_ITEMS = 3  # a demo shows the shape of a result, not all of it


def _yaml() -> YAML:
    yaml = YAML()  # round-trip: keeps comments, key order and flow-style lists
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _load(text: str) -> Any:
    return _yaml().load(text)


def _dump(data: Any) -> str:
    buffer = io.StringIO()
    _yaml().dump(data, buffer)
    return buffer.getvalue()


def _flow(items: list[str]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _compact(value: Any) -> Any:
    """Shorten long lists inside a tool result so a demo stays small in the prompt."""
    if isinstance(value, list):
        return [_compact(v) for v in value[:_MAX_LIST_ITEMS]]
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    return value


def _demo_name(task_id: str) -> str:
    return AUTO_DEMO_PREFIX + re.sub(r"[^a-z0-9]+", "_", task_id.lower()).strip("_")


def _proposal(
    operator: str, context: ProposalContext, files: dict[str, str], rationale: str
) -> Proposal | None:
    return Proposal.build(
        operator=operator,
        rationale=rationale,
        parent=context.files,
        files=files,
        parent_hash=context.harness_hash,
    )


def _agent_tools(context: ProposalContext) -> dict[str, set[str]]:
    return {agent: set(tools) for agent, tools in context.harness.tools.items()}


def _with_demo(
    context: ProposalContext, agent: str, name: str, demo: dict[str, Any], position: int
) -> dict[str, str]:
    files = dict(context.files)
    config = _load(files[HARNESS_FILE])
    settings = config["agents"][agent]
    demos = list(settings.get("demos") or [])
    demos.insert(min(position, len(demos)), name)
    settings["demos"] = _flow(demos)
    files[HARNESS_FILE] = _dump(config)
    files[f"demos/{name}.yaml"] = _dump(demo)
    return files


class AddDemo:
    """Add a worked example: from a passing train episode, else from a train task's reference solution.

    The new demo goes to a position drawn at random, because where a demo stands changes how
    much a base model copies it.
    """

    name = "add_demo"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        harness = context.harness
        taken = {name for agent in harness.agents.values() for name in agent.demos}
        candidates = [("episode", r) for r in context.passing_episodes if _demo_name(r.task_id) not in taken]
        if not candidates:
            candidates = [
                ("reference", t) for t in context.train_tasks if t.reference and _demo_name(t.id) not in taken
            ]
        context.rng.shuffle(candidates)
        for kind, source in candidates:
            built = (
                self._from_episode(context, source)
                if kind == "episode"
                else self._from_reference(context, source)
            )
            if built is None:
                continue
            agent, demo, task_id = built
            demos_now = harness.agents[agent].demos
            position = context.rng.randint(0, len(demos_now))
            name = _demo_name(task_id)
            files = _with_demo(context, agent, name, demo, position)
            where = (
                "last"
                if position >= len(demos_now)
                else f"at position {position + 1} of {len(demos_now) + 1}"
            )
            rationale = (
                f"Show agent {agent!r} a worked example of task {task_id!r} "
                f"({'a passing episode' if kind == 'episode' else 'its reference solution'}), placed {where}."
            )
            return _proposal(self.name, context, files, rationale)
        return None

    def _from_episode(self, context: ProposalContext, result: Any) -> tuple[str, dict, str] | None:
        episode = result.episode
        agent = context.harness.entry
        steps: list[dict[str, Any]] = []
        pending: dict[str, dict[str, Any]] = {}
        for event in episode.events:
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
                    step["result"] = _compact(event.result)
                else:
                    step["error"] = event.error or {"type": "error", "message": str(event.result)}
            elif event.kind == "assistant" and event.content:
                steps.append({"reply": event.content})
        if len(steps) < 2 or "user" not in steps[0] or any("call" in s and "args" not in s for s in steps):
            return None
        # Delegations are not demo material here: keep only steps the entry agent's tools can make.
        return agent, {"title": f"From a passing episode of {result.task_id}", "steps": steps}, result.task_id

    def _from_reference(self, context: ProposalContext, task: Any) -> tuple[str, dict, str] | None:
        from evals.graders._reference import ReferenceFailed, replay

        needed = {call.tool for call in task.reference}
        tools = _agent_tools(context)
        agents = [context.harness.entry] + [a for a in tools if a != context.harness.entry]
        agent = next((a for a in agents if needed <= tools[a]), None)
        if agent is None:
            return None
        try:
            log, _ = replay(context.harness.world, task.fixture, 0, task.clock, task.reference)
        except ReferenceFailed:
            return None
        steps: list[dict[str, Any]] = [{"user": task.user.message}]
        for record in log:
            steps.append(
                {"call": record.tool, "args": dict(record.arguments), "result": _compact(record.value)}
            )
        phrases = list(task.expect.reply_contains or [])
        reply = "Done. " + " ".join(f"{p[0].upper()}{p[1:]}." for p in phrases) if phrases else "Done."
        steps.append({"reply": reply.strip()})
        return agent, {"title": f"Reference solution of {task.id}", "steps": steps}, task.id


class DropDemo:
    """Remove one demo from an agent that has several: a misleading example can cost more than it teaches."""

    name = "drop_demo"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        choices = [
            (a, d) for a, cfg in context.harness.agents.items() if len(cfg.demos) > 1 for d in cfg.demos
        ]
        if not choices:
            return None
        agent, demo = context.rng.choice(choices)
        files = dict(context.files)
        config = _load(files[HARNESS_FILE])
        config["agents"][agent]["demos"] = _flow([d for d in config["agents"][agent]["demos"] if d != demo])
        files[HARNESS_FILE] = _dump(config)
        still_used = any(demo in (cfg.get("demos") or []) for cfg in config["agents"].values())
        if not still_used:
            files.pop(f"demos/{demo}.yaml", None)
        return _proposal(self.name, context, files, f"Drop demo {demo!r} from agent {agent!r}.")


class ReorderDemos:
    """Move one demo to the end: a base model imitates the last example it saw the most."""

    name = "reorder_demos"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        choices = [(a, cfg.demos) for a, cfg in context.harness.agents.items() if len(cfg.demos) > 1]
        if not choices:
            return None
        agent, demos = context.rng.choice(choices)
        demo = context.rng.choice(demos[:-1])
        order = [d for d in demos if d != demo] + [demo]
        files = dict(context.files)
        config = _load(files[HARNESS_FILE])
        config["agents"][agent]["demos"] = _flow(order)
        files[HARNESS_FILE] = _dump(config)
        return _proposal(
            self.name,
            context,
            files,
            f"Move demo {demo!r} last for agent {agent!r} (order now: {', '.join(order)}).",
        )


class ExposeTool:
    """Offer an agent a world tool that failing train tasks' reference solutions need but no agent sees."""

    name = "expose_tool"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        seen = set().union(*_agent_tools(context).values())
        failing = {f.task_id for f in context.failures}
        wanted = sorted(
            {call.tool for task in context.train_tasks if task.id in failing for call in task.reference}
            - seen
        )
        if not wanted:
            return None
        tool = context.rng.choice(wanted)
        agent = context.harness.entry
        files = dict(context.files)
        tools = _load(files.get(TOOLS_FILE, "{}\n")) or CommentedMap()
        entries = tools.get(agent)
        if isinstance(entries, list):
            entries.append(tool)
        else:
            entries = entries if entries is not None else CommentedMap()
            entries[tool] = None
            tools[agent] = entries
        files[TOOLS_FILE] = _dump(tools)
        return _proposal(
            self.name,
            context,
            files,
            f"Expose world tool {tool!r} to agent {agent!r}: reference solutions of failing train tasks use it.",
        )


class HideTool:
    """Hide a tool no passing episode and no train reference uses: fewer choices, fewer wrong calls."""

    name = "hide_tool"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        used = {call.tool for task in context.train_tasks for call in task.reference}
        used |= {e.tool for r in context.passing_episodes for e in r.episode.events if e.kind == "tool_call"}
        demo_calls = {s.call for demo in context.harness.demos.values() for s in demo.steps if s.call}
        stops = {t for cfg in context.harness.agents.values() for t in cfg.stop_tools}
        choices = [
            (agent, tool)
            for agent, tools in _agent_tools(context).items()
            for tool in sorted(tools)
            if tool not in used | demo_calls | stops
        ]
        if not choices:
            return None
        agent, tool = context.rng.choice(choices)
        files = dict(context.files)
        tools = _load(files[TOOLS_FILE])
        entries = tools[agent]
        if isinstance(entries, list):
            entries.remove(tool)
        else:
            del entries[tool]
        files[TOOLS_FILE] = _dump(tools)
        return _proposal(
            self.name,
            context,
            files,
            f"Hide tool {tool!r} from agent {agent!r}: no passing episode or train reference uses it.",
        )


class TuneSampling:
    """Change the temperature, the reply length or the turn limit: the cheapest knobs there are."""

    name = "tune_sampling"
    temperatures = (0.0, 0.2, 0.5, 0.8)

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        config = _load(files[HARNESS_FILE])
        params = config.setdefault("params", CommentedMap())
        limits = config.setdefault("limits", CommentedMap())
        knob = context.rng.choice(["temperature", "max_tokens", "turns"])
        if knob == "temperature":
            current = float(params.get("temperature") or 0.0)
            value: Any = context.rng.choice([t for t in self.temperatures if t != current])
            params["temperature"] = value
            change = f"temperature {current} -> {value}"
        elif knob == "max_tokens":
            current = int(params.get("max_tokens") or 256)
            value = max(32, int(current * context.rng.choice([0.5, 1.5])))
            params["max_tokens"] = value
            change = f"max_tokens {current} -> {value}"
        else:
            current = int(limits.get("turns") or 12)
            value = max(2, current + context.rng.choice([-4, 4]))
            limits["turns"] = value
            change = f"turn limit {current} -> {value}"
        files[HARNESS_FILE] = _dump(config)
        return _proposal(self.name, context, files, f"Sampling and limits: {change}.")


def default_operators() -> list[Any]:
    """The LLM-free operators, in the order the loop cycles through them."""
    return [AddDemo(), ReorderDemos(), DropDemo(), ExposeTool(), HideTool(), TuneSampling()]
