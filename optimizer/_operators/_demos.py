"""Demo operators: which worked examples an agent sees, in what order, and whether they are retrieved.

A small model copies its demos more than it follows instructions, and copies the last one most, so
showing the examples most like the request at hand (a retrieved pool) moves it more than any fixed set.
Demos come from train tasks only: their reference solutions and their passing episodes.
"""

from __future__ import annotations

import re
from typing import Any

from atoll.harnesses import Demo, DemoStep, content_hash

from .._proposal import Proposal, ProposalContext
from ._common import (
    Edit,
    Operator,
    demo_calls,
    demo_name,
    episode_demo,
    failing_ids,
    fitting_agent,
    reference_demo,
    reference_tools,
    task_kind,
)

Kind = tuple[str, frozenset[str]]
SWAP_OPTIONS = 3  # calling_demos offers the three likest episodes per demo, one proposal at a time


class AddDemo(Operator):
    """Add a worked example: from a passing train episode, else from a train task's reference solution.

    The new demo goes to a position drawn at random, because where a demo stands changes how
    much a base model copies it (or to the agent's pool, if it retrieves).
    """

    name = "add_demo"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        harness = context.harness
        taken = {name for agent in harness.agents.values() for name in [*agent.demos, *agent.demo_pool]}
        candidates: list[tuple[str, Any]] = [
            ("episode", r) for r in context.passing_episodes if demo_name(r.task_id) not in taken
        ]
        if not candidates:
            candidates = [
                ("reference", t) for t in context.train_tasks if t.reference and demo_name(t.id) not in taken
            ]
        context.rng.shuffle(candidates)
        for kind, source in candidates:
            if kind == "episode":
                agent, task_id, demo = harness.entry, source.task_id, episode_demo(context, source)
            else:
                agent, task_id = fitting_agent(context, source), source.id
                demo = reference_demo(context, source) if agent else None
            if agent is None or demo is None:
                continue
            edit = Edit(context)
            where = edit.place_demo(agent, demo_name(task_id), demo)
            rationale = (
                f"Show agent {agent!r} a worked example of task {task_id!r} "
                f"({'a passing episode' if kind == 'episode' else 'its reference solution'}), {where}."
            )
            return edit.proposal(self.name, rationale)
        return None


class DropDemo(Operator):
    """Remove one demo, fixed or from a retrieval pool, of an agent that has several: a misleading
    example can cost more than it teaches."""

    name = "drop_demo"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        choices = [
            (agent, key, demo)
            for agent, cfg in context.harness.agents.items()
            for key, demos in (("demos", cfg.demos), ("demo_pool", cfg.demo_pool))
            if len(demos) > 1
            for demo in demos
        ]
        if not choices:
            return None
        agent, key, demo = context.rng.choice(choices)
        edit = Edit(context)
        settings = edit.agent(agent)
        edit.set_list(agent, key, [d for d in settings[key] if d != demo])
        # Retrieval may not show more demos than its pool holds beyond the fixed ones.
        available = len(set(settings.get("demo_pool") or []) - set(settings.get("demos") or []))
        k = int(settings.get("retrieve_demos") or 0)
        lowered = ""
        if k > available:
            settings["retrieve_demos"] = available
            lowered = f" retrieve_demos {k} -> {available}, as the pool shrank."
        edit.drop_unlisted_demo(demo)
        where = "its retrieval pool" if key == "demo_pool" else "its demos"
        return edit.proposal(self.name, f"Drop demo {demo!r} from {where} of agent {agent!r}.{lowered}")


class ReorderDemos(Operator):
    """Move one demo to the end: a base model imitates the last example it saw the most."""

    name = "reorder_demos"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        choices = [(a, cfg.demos) for a, cfg in context.harness.agents.items() if len(cfg.demos) > 1]
        if not choices:
            return None
        agent, demos = context.rng.choice(choices)
        demo = context.rng.choice(demos[:-1])
        order = [d for d in demos if d != demo] + [demo]
        edit = Edit(context)
        edit.set_list(agent, "demos", order)
        return edit.proposal(
            self.name, f"Move demo {demo!r} last for agent {agent!r} (order now: {', '.join(order)})."
        )


def _kinds(context: ProposalContext, names: list[str]) -> set[Kind]:
    """The kinds of request a pool covers: an auto demo's task kind, else ("", the tools it calls)."""
    tasks = {demo_name(task.id): task for task in context.train_tasks}
    return {
        task_kind(tasks[name]) if name in tasks else ("", demo_calls(context.harness.demos[name]))
        for name in names
    }


def pool_additions(context: ProposalContext, agent: str, pool: list[str]) -> list[tuple[str, dict, str]]:
    """One new demo for `agent` per kind of train task `pool` lacks, failing tasks first: the task's
    passing episode (entry agent only), else its reference solution. (name, demo, where from)."""
    covered = _kinds(context, pool)
    tools = set(context.harness.tools.get(agent, {}))
    passing = {r.task_id: r for r in context.passing_episodes}
    failing = failing_ids(context)
    additions = []
    for task in sorted(context.train_tasks, key=lambda t: (t.id not in failing, t.id)):
        kind, name = task_kind(task), demo_name(task.id)
        if kind in covered or ("", kind[1]) in covered or name in context.harness.demos:
            continue
        demo, source = None, ""
        if agent == context.harness.entry and task.id in passing:
            demo, source = episode_demo(context, passing[task.id]), "a passing episode"
        if demo is None and task.reference and reference_tools(task) <= tools:
            demo, source = reference_demo(context, task), "its reference solution"
        if demo is not None:
            covered.add(kind)
            additions.append((name, demo, f"{task.id} ({source})"))
    return additions


class EnableRetrieval(Operator):
    """Turn demo retrieval on for an agent: its demos become a pool, grown with one demo per kind of
    train task, and each episode shows the 1-2 most like its opening request, the most similar last."""

    name = "enable_retrieval"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        options = []
        for agent, cfg in context.harness.agents.items():
            if cfg.retrieve_demos:
                continue
            pool = list(dict.fromkeys([*cfg.demos, *cfg.demo_pool]))
            additions = pool_additions(context, agent, pool)
            if len(pool) + len(additions) >= 2:  # retrieval from one demo is a fixed demo
                options.append((agent, pool, additions))
        if not options:
            return None
        agent, pool, additions = context.rng.choice(options)
        size = len(pool) + len(additions)
        k = 1 if size < 4 else 2  # few: the closest example last, and a short prompt
        edit = Edit(context)
        edit.set_list(agent, "demos", [])
        edit.set_list(agent, "demo_pool", [*pool, *(name for name, _, _ in additions)])
        edit.agent(agent)["retrieve_demos"] = k
        for name, demo, _ in additions:
            edit.add_demo(name, demo)
        grown = f"; added from train tasks: {', '.join(w for _, _, w in additions)}" if additions else ""
        rationale = (
            f"Retrieve demos for agent {agent!r}: each episode shows the {k} of its {size} pool demos most "
            f"like the opening request, the most similar last, instead of the same fixed demos. "
            f"Pool: its {len(pool)} demo(s){grown}."
        )
        return edit.proposal(self.name, rationale)


class TuneRetrieval(Operator):
    """Show one retrieved demo more or fewer: fewer keeps the prompt short and the closest example
    last; more covers a request the closest one misses."""

    name = "tune_retrieval"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        options = [
            (agent, cfg.retrieve_demos, k)
            for agent, cfg in context.harness.agents.items()
            if cfg.retrieve_demos
            for k in (cfg.retrieve_demos - 1, cfg.retrieve_demos + 1)
            if 1 <= k <= len(set(cfg.demo_pool) - set(cfg.demos))
        ]
        if not options:
            return None
        agent, before, after = context.rng.choice(options)
        edit = Edit(context)
        edit.agent(agent)["retrieve_demos"] = after
        return edit.proposal(
            self.name, f"Agent {agent!r} retrieves {after} demo(s) per episode instead of {before}."
        )


class GrowPool(Operator):
    """Add to a retrieving agent's pool a demo for each kind of train task (first tag, tools its
    reference uses) the pool has no example of, so retrieval has a close example to show."""

    name = "grow_pool"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        options = [
            (agent, cfg.demo_pool, additions)
            for agent, cfg in context.harness.agents.items()
            if cfg.retrieve_demos and (additions := pool_additions(context, agent, cfg.demo_pool))
        ]
        if not options:
            return None
        agent, pool, additions = context.rng.choice(options)
        edit = Edit(context)
        edit.set_list(agent, "demo_pool", [*pool, *(name for name, _, _ in additions)])
        for name, demo, _ in additions:
            edit.add_demo(name, demo)
        rationale = (
            f"Grow agent {agent!r}'s demo pool with kinds of train request it had no example of: "
            f"{', '.join(w for _, _, w in additions)}."
        )
        return edit.proposal(self.name, rationale)


class CallingDemos(Operator):
    """Swap the demos that answer without a call, of an agent made to call first (tool_choice: first),
    for passing train episodes like theirs (request and answer) that looked something up before answering.

    Such a demo shows what the agent may no longer do. Made to call, the 1.5B model shown a refusal
    given straight away called the lookup its request named and then read out what it found (a gift
    order's address, to someone who was not its holder): it had no example of what to do after a call
    on such a request. A passing episode of a request like the demo's, which called first and then
    answered, is one. The screen runs first the failing train requests most like the demos replaced."""

    name = "calling_demos"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        harness, agent = context.harness, context.harness.entry
        config = harness.agent(agent)
        if config.tool_choice != "first":
            return None
        silent = [name for name in config.demos if not any(step.call for step in harness.demos[name].steps)]
        calling = {
            demo_name(result.task_id): demo
            for result in context.passing_episodes
            if demo_name(result.task_id) not in harness.demos
            and (demo := episode_demo(context, result)) is not None
            and _calls_before_replying(demo)
        }
        ranked = {
            name: sorted(
                calling,
                key=lambda found: (-_likeness(_said(harness.demos[name]), _said(calling[found])), found),
            )
            for name in silent
        }
        # The likest episode first; the next when this run has tried that swap (its screen or the gate said
        # no): which refusal a small model copies only where it fits is learned by trying, not by likeness.
        for option in range(SWAP_OPTIONS):
            swaps = _swaps(ranked, option)
            if not swaps:
                return None
            proposal = self._swap(context, agent, swaps, calling)
            if proposal is not None and content_hash(proposal.files) not in context.tried:
                return proposal
        return None

    def _swap(
        self, context: ProposalContext, agent: str, swaps: dict[str, str], calling: dict[str, dict[str, Any]]
    ) -> Proposal | None:
        harness = context.harness
        edit = Edit(context)
        edit.set_list(agent, "demos", [swaps.get(name, name) for name in harness.agent(agent).demos])
        for old, new in swaps.items():
            edit.add_demo(new, calling[new])
            edit.drop_unlisted_demo(old)
        shown = ", ".join(f"{old} -> {new}" for old, new in swaps.items())
        proposal = edit.proposal(
            self.name,
            f"Agent {agent!r} must call a tool first but its demo(s) {', '.join(swaps)} answer without one: "
            f"swap them for passing train episodes like theirs that call first ({shown}).",
        )
        if proposal is not None:
            requests = [_request(harness.demos[name]) for name in swaps]
            ranked = sorted(
                context.failures,
                key=lambda f: (-max(_likeness(r, f.user_message) for r in requests), f.task_id),
            )
            proposal.targets = [f.task_id for f in ranked[:3]]
        return proposal


def _swaps(ranked: dict[str, list[str]], option: int) -> dict[str, str]:
    """Each silent demo's `option`-th likest episode not taken by a demo before it (none past its last)."""
    swaps: dict[str, str] = {}
    for name, choices in ranked.items():
        free = [found for found in choices if found not in swaps.values()]
        if option < len(free):
            swaps[name] = free[option]
    return swaps


def _steps(demo: Demo | dict[str, Any]) -> list[DemoStep]:
    """A demo's steps, loaded or as a proposal writes them."""
    return demo.steps if isinstance(demo, Demo) else [DemoStep.model_validate(step) for step in demo["steps"]]


def _request(demo: Demo | dict[str, Any]) -> str:
    """What the user says in a demo."""
    return " ".join(step.user for step in _steps(demo) if step.user)


def _said(demo: Demo | dict[str, Any]) -> str:
    """What the user and the agent say in a demo: a swap keeps the kind of answer as well as of request
    (matched on requests alone, a refusal of someone else's order was swapped for an order-status lookup
    of a request worded like it, which teaches the opposite)."""
    return " ".join(text for step in _steps(demo) for text in (step.user, step.reply) if text)


def _likeness(a: str, b: str) -> float:
    """The share of words two requests have in common (Jaccard)."""
    left, right = set(re.findall(r"[a-z0-9]+", a.lower())), set(re.findall(r"[a-z0-9]+", b.lower()))
    return len(left & right) / len(left | right) if left | right else 0.0


def _calls_before_replying(demo: dict[str, Any]) -> bool:
    acts = [step for step in demo["steps"] if "call" in step or "reply" in step]
    return bool(acts) and "call" in acts[0] and any("reply" in step for step in acts)
