"""Tool operators: which world tools each agent is offered.

A small model does best with the few tools its requests need: every extra tool is prompt it must
read and a wrong call it can make, and a missing one is a task it cannot do. The evidence is the
tools train reference solutions and passing train episodes use.
"""

from __future__ import annotations

from collections import defaultdict

from .._proposal import Proposal, ProposalContext
from ._common import (
    Edit,
    Operator,
    agent_tools,
    demo_calls,
    demo_name,
    failing_ids,
    fitting_agent,
    reference_demo,
    reference_tools,
)


def _required(context: ProposalContext, agent: str) -> set[str]:
    """The tools another of the agent's tools `requires`: hiding one would fail the load."""
    return {name for override in context.harness.tools.get(agent, {}).values() for name in override.requires}


class ExposeTool(Operator):
    """Offer an agent a world tool that failing train tasks' reference solutions need but no agent sees."""

    name = "expose_tool"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        seen = set().union(*agent_tools(context).values())
        failing = failing_ids(context)
        wanted = sorted(
            {t for task in context.train_tasks if task.id in failing for t in reference_tools(task)} - seen
        )
        if not wanted:
            return None
        tool = context.rng.choice(wanted)
        agent = context.harness.entry
        edit = Edit(context)
        edit.expose(agent, tool)
        return edit.proposal(
            self.name,
            f"Expose world tool {tool!r} to agent {agent!r}: "
            "reference solutions of failing train tasks use it.",
        )


class HideTool(Operator):
    """Hide a tool no passing episode and no train reference uses: fewer choices, fewer wrong calls."""

    name = "hide_tool"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        used = {t for task in context.train_tasks for t in reference_tools(task)}
        used |= {e.tool for r in context.passing_episodes for e in r.episode.events if e.kind == "tool_call"}
        demo_tools = set().union(*(demo_calls(demo) for demo in context.harness.demos.values()))
        stops = {t for cfg in context.harness.agents.values() for t in cfg.stop_tools}
        choices = [
            (agent, tool)
            for agent, tools in agent_tools(context).items()
            for tool in sorted(tools - used - demo_tools - stops - _required(context, agent))
        ]
        if not choices:
            return None
        agent, tool = context.rng.choice(choices)
        edit = Edit(context)
        edit.hide(agent, tool)
        return edit.proposal(
            self.name,
            f"Hide tool {tool!r} from agent {agent!r}: no passing episode or train reference uses it.",
        )


class ExposeToolWithDemo(Operator):
    """Expose the tools a failing train task's reference needs and, in the same proposal, show the agent
    that reference solution: a tool the model has never seen used moves it too little to tie-break alone."""

    name = "expose_tool_with_demo"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        tools = agent_tools(context)
        failing = failing_ids(context)
        # Failing tasks no agent has the tools for; those with a demo of their own were tried already.
        unsolvable = [
            task
            for task in context.train_tasks
            if task.id in failing
            and task.reference
            and fitting_agent(context, task) is None
            and demo_name(task.id) not in context.harness.demos
        ]
        options = [
            (sorted(reference_tools(task) - tools[agent]), agent, task)
            for task in unsolvable
            for agent in context.harness.agents
        ]
        if not options:
            return None
        fewest = min(len(missing) for missing, _, _ in options)  # the smallest change that makes it solvable
        missing, agent, task = context.rng.choice([o for o in options if len(o[0]) == fewest])
        demo = reference_demo(context, task)
        if demo is None:
            return None
        edit = Edit(context)
        for tool in missing:
            edit.expose(agent, tool)
        where = edit.place_demo(agent, demo_name(task.id), demo)
        rationale = (
            f"Expose {', '.join(missing)} to agent {agent!r} and show it the reference solution of failing "
            f"train task {task.id!r}, which uses {'it' if len(missing) == 1 else 'them'}, {where}."
        )
        return edit.proposal(self.name, rationale)


class HideUnusedTools(Operator):
    """Hide every tool of an agent that no passing train episode had it call, freeing prompt for the
    tools it does use; tools its demos call, that another tool requires, or that stop it are kept."""

    name = "hide_unused_tools"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        called: dict[str, set[str]] = defaultdict(set)
        for result in context.passing_episodes:
            for event in result.episode.events:
                if event.kind == "tool_call" and event.tool:
                    called[event.agent].add(event.tool)
        options = []
        for agent, tools in agent_tools(context).items():
            if not called[agent]:
                continue  # no passing episode shows what this agent needs
            cfg = context.harness.agents[agent]
            keep = called[agent] | set(cfg.stop_tools) | _required(context, agent)
            keep |= set().union(*(demo_calls(context.harness.demos[d]) for d in [*cfg.demos, *cfg.demo_pool]))
            if tools - keep:
                options.append((agent, sorted(tools - keep), sorted(called[agent])))
        if not options:
            return None
        agent, unused, used = context.rng.choice(options)
        edit = Edit(context)
        for tool in unused:
            edit.hide(agent, tool)
        rationale = (
            f"Hide {', '.join(unused)} from agent {agent!r}: in passing train episodes it called only "
            f"{', '.join(used)}, and no demo of it or precondition needs the rest."
        )
        return edit.proposal(self.name, rationale)
