"""Setting operators: runtime guards, tool choice, one-line rules, and sampling, each set by evidence.

The failure patterns of failing train episodes (a repeated call, no reply, an unknown tool...) say
which guard or rule may help; train reference solutions say which tool must come before which.
Nothing here knows a world: the rule texts are general and the preconditions are learned.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from ruamel.yaml.comments import CommentedMap

from atoll.harnesses import PATTERNS

from .._proposal import Proposal, ProposalContext
from ._common import Edit, Operator, agent_tools, pattern_counts

# One general rule per failure pattern: what a small model should have done instead.
RULES = {
    "no_reply": "Always end with a reply to the user.",
    "repeat_call": "Never repeat a tool call you already have the result of; use the result.",
    "unknown_tool": "Call only the tools listed.",
    "invalid_arguments": "Give every required argument, with the exact names shown.",
    "malformed_action": "Answer with one action in the format shown, or with your reply.",
    "precondition_refused": "Do what a tool requires first (for example verify identity) before calling it.",
    "turn_limit": "Reply as soon as you have what you need; do not keep calling tools.",
    "unlooked_reply": "Never answer from memory: look the facts up with a tool before you reply.",
    "ungrounded_argument": "Use only the ids, PINs and codes the user or a tool result gave; ask for what is missing.",
}
# Which patterns each guard addresses.
GUARD_PATTERNS = {
    "repeat_notice": ("repeat_call",),
    "reply_nudge": ("no_reply", "malformed_action", "turn_limit"),
    "preconditions": ("precondition_refused",),
    "look_first": ("unlooked_reply",),
    "grounded_args": ("ungrounded_argument",),
}
_MIN_SUPPORT = 2  # references a precondition is learned from


def learned_requires(tasks: Iterable[Any], tools: set[str]) -> dict[str, str]:
    """tool B -> tool A, both among `tools`: A comes before B's first call in every train reference that
    calls B (at least two). Of several such A the one most references call (a gate, like an identity
    check, precedes much), then the nearest to B, then by name."""
    prefixes: dict[str, list[list[str]]] = defaultdict(list)
    frequency: Counter[str] = Counter()
    for task in tasks:
        calls = [call.tool for call in task.reference]
        frequency.update(set(calls))
        for i, tool in enumerate(calls):
            if tool not in calls[:i]:
                prefixes[tool].append(calls[:i])
    learned = {}
    for tool, before in prefixes.items():
        if tool not in tools or len(before) < _MIN_SUPPORT:
            continue
        always = set(tools).intersection(*before) - {tool}
        if always:
            learned[tool] = _gate(always, before, frequency)
    return learned


def _gate(candidates: set[str], before: list[list[str]], frequency: Counter[str]) -> str:
    def rank(a: str) -> tuple[int, int, str]:
        distance = sum(len(p) - max(i for i, t in enumerate(p) if t == a) for p in before)
        return -frequency[a], distance, a

    return min(candidates, key=rank)


def _aimed(proposal: Proposal | None, context: ProposalContext, patterns: Iterable[str]) -> Proposal | None:
    """The proposal aimed at the failing train episodes that show `patterns`: the screen runs them first."""
    if proposal is not None:
        wanted = set(patterns)
        proposal.targets = [f.task_id for f in context.failures if any(f.patterns.get(p) for p in wanted)]
    return proposal


def _skipped_a_step(transcript: str, requires: dict[str, dict[str, str]]) -> bool:
    """Whether an agent in a failing transcript called a tool before the step it `requires` (agent ->
    tool -> the tool that must come first): the episodes a preconditions guard would have changed."""
    called: dict[str, set[str]] = {}
    for line in transcript.splitlines():
        match = re.match(r"^\[([^\]]+)\] call (\S+)", line)
        if not match:
            continue
        agent, tool = match.groups()
        first = requires.get(agent, {}).get(tool)
        if first is not None and first not in called.get(agent, set()):
            return True
        called.setdefault(agent, set()).add(tool)
    return False


def _set_guard(edit: Edit, agent: str, guard: str, on: bool) -> None:
    settings = edit.agent(agent)
    guards = settings.setdefault("guards", CommentedMap())
    if on:
        guards[guard] = True
    else:
        guards.pop(guard, None)
        if not guards:
            del settings["guards"]


class EnableGuard(Operator):
    """Turn a runtime guard on for every agent that lacks it, when failing train episodes show the
    failure it prevents: repeat_notice for repeated calls; reply_nudge for no reply, malformed answers
    or the turn limit; look_first for replies made before any lookup; grounded_args for calls quoting
    digits nobody gave; preconditions, with `requires` learned from train references, for writes made
    before the step every reference takes first."""

    name = "enable_guard"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        if not context.failures:
            return None
        counts = pattern_counts(context)
        harness = context.harness
        options = []
        for guard in ("repeat_notice", "reply_nudge", "look_first", "grounded_args"):
            seen = sum(counts.get(p, 0) for p in GUARD_PATTERNS[guard])
            agents = [a for a, cfg in harness.agents.items() if not getattr(cfg.guards, guard)]
            if seen and agents:
                shown = ", ".join(f"{counts[p]} {p}" for p in GUARD_PATTERNS[guard] if counts.get(p))
                options.append((guard, agents, {}, f"failing train episodes show {shown}"))
        tools = agent_tools(context)
        requires = {
            agent: {
                tool: first
                for tool, first in learned_requires(context.train_tasks, tools[agent]).items()
                if not harness.tools[agent][tool].requires
            }
            for agent, cfg in harness.agents.items()
            if not cfg.guards.preconditions
        }
        requires = {agent: learned for agent, learned in requires.items() if learned}
        if requires:
            pairs = "; ".join(
                f"{b} after {a}" for learned in requires.values() for b, a in sorted(learned.items())
            )
            evidence = f"every train reference calls {pairs}"
            options.append(("preconditions", sorted(requires), requires, evidence))
        if not options:
            return None
        guard, agents, requires, evidence = context.rng.choice(options)
        edit = Edit(context)
        for agent in agents:
            _set_guard(edit, agent, guard, True)
            for tool, first in sorted(requires.get(agent, {}).items()):
                edit.require(agent, tool, [first])
        proposal = edit.proposal(
            self.name, f"Turn on guard {guard} for agent(s) {', '.join(agents)}: {evidence}."
        )
        if guard == "preconditions" and proposal is not None:
            proposal.targets = [
                f.task_id for f in context.failures if _skipped_a_step(f.transcript, requires)
            ]
            return proposal
        return _aimed(proposal, context, GUARD_PATTERNS[guard])


class RequireFirstCall(Operator):
    """Make agents call a tool before they may answer (`tool_choice: first`), when failing train
    episodes show replies made before any lookup or none at all: a small model that narrates "I'll
    cancel it for you" instead of calling. Agents that already set tool_choice are left as they are."""

    name = "require_first_call"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        counts = pattern_counts(context)
        seen = {p: counts[p] for p in ("unlooked_reply", "no_reply") if counts.get(p)}
        agents = [
            agent
            for agent, cfg in context.harness.agents.items()
            if cfg.tool_choice == "auto" and context.harness.tools.get(agent)
        ]
        if not seen or not agents:
            return None
        edit = Edit(context)
        for agent in agents:
            edit.agent(agent)["tool_choice"] = "first"
        shown = ", ".join(f"{count} {pattern}" for pattern, count in seen.items())
        proposal = edit.proposal(
            self.name,
            f"Require a tool call before the first answer (tool_choice: first) for agent(s) {', '.join(agents)}: "
            f"failing train episodes show {shown}.",
        )
        return _aimed(proposal, context, seen)


class DisableGuard(Operator):
    """Turn one guard off again: a guard that interrupts a capable agent can cost more than it saves."""

    name = "disable_guard"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        options = [
            (agent, guard)
            for agent, cfg in context.harness.agents.items()
            for guard in GUARD_PATTERNS
            if getattr(cfg.guards, guard)
        ]
        if not options:
            return None
        agent, guard = context.rng.choice(options)
        counts = pattern_counts(context)
        seen = ", ".join(f"{counts.get(p, 0)} {p}" for p in GUARD_PATTERNS[guard])
        edit = Edit(context)
        _set_guard(edit, agent, guard, False)
        return edit.proposal(
            self.name,
            f"Turn off guard {guard} for agent {agent!r} (failing train episodes show {seen} with it on).",
        )


class AddRule(Operator):
    """Add the general rule for the most frequent failure pattern of failing train episodes to every
    agent that lacks it."""

    name = "add_rule"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        counts = pattern_counts(context)
        agents = context.harness.agents
        for pattern in sorted(RULES, key=lambda p: (-counts.get(p, 0), PATTERNS.index(p))):
            rule = RULES[pattern]
            missing = [agent for agent, cfg in agents.items() if rule not in cfg.rules]
            if counts.get(pattern, 0) and missing:
                edit = Edit(context)
                for agent in missing:
                    edit.set_list(agent, "rules", [*agents[agent].rules, rule])
                proposal = edit.proposal(
                    self.name,
                    f"Add rule {rule!r} to agent(s) {', '.join(missing)}: failing train episodes show "
                    f"{counts[pattern]} {pattern}, the most frequent failure without its rule.",
                )
                return _aimed(proposal, context, [pattern])
        return None


class DropRule(Operator):
    """Remove one rule, preferring a library rule whose failure no failing train episode shows any more:
    every line of prompt is one more thing a small model must weigh."""

    name = "drop_rule"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        counts = pattern_counts(context)
        pattern_of = {rule: pattern for pattern, rule in RULES.items()}
        options = [(agent, rule) for agent, cfg in context.harness.agents.items() for rule in cfg.rules]
        idle = [(a, r) for a, r in options if r in pattern_of and not counts.get(pattern_of[r])]
        if not options:
            return None
        agent, rule = context.rng.choice(idle or options)
        edit = Edit(context)
        edit.set_list(agent, "rules", [r for r in context.harness.agents[agent].rules if r != rule])
        why = f": no failing train episode shows {pattern_of[rule]}" if (agent, rule) in idle else ""
        return edit.proposal(self.name, f"Drop rule {rule!r} from agent {agent!r}{why}.")


class TuneSampling(Operator):
    """Change the temperature, the reply length or the turn limit: the cheapest knobs there are."""

    name = "tune_sampling"
    temperatures = (0.0, 0.2, 0.5, 0.8)

    async def propose(self, context: ProposalContext) -> Proposal | None:
        edit = Edit(context)
        params = edit.config.setdefault("params", CommentedMap())
        limits = edit.config.setdefault("limits", CommentedMap())
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
        return edit.proposal(self.name, f"Sampling and limits: {change}.")
