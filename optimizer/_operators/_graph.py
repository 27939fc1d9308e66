"""Graph operators: split an agent into specialists behind a router, and merge a specialist back.

A small model does one kind of request well when its prompt is short, it has only the tools that
kind needs and it sees one worked example of it. The kinds are learned from train tasks (their
first tag, and the tools their references use); the screen and the gate decide whether a split pays.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, NamedTuple

from ruamel.yaml.comments import CommentedMap

from atoll.harnesses import DELEGATE_PREFIX

from .._proposal import Proposal, ProposalContext
from ._common import (
    Edit,
    Operator,
    demo_name,
    failing_ids,
    reference_demo,
    reference_tools,
    slug,
)

_MAX_SPECIALISTS = 3  # the most common kinds get one each; the router keeps the rest
# A jinja template like every prompt; the kind's name is a slug, so it cannot open a template tag.
_SPECIALIST_PROMPT = """\
You are {{ agent }}: you handle KIND requests for {{ harness }}. Today is {{ now }}. Look up what you need \
with your tools before you act, do only what the request asks, and end with a reply that says what you \
did, or why you could not.

Tools:
{{ tools }}

Example:
{{ demos }}
"""


class Specialist(NamedTuple):
    kind: str  # a slug of the first tag its train tasks share
    name: str
    tools: set[str]
    task: Any  # the train task its worked example solves
    demo: dict[str, Any]


def _specialists(context: ProposalContext, router: str) -> list[Specialist]:
    """One per most common kind of train request: the tools at least half its references use, and one
    worked example, the reference (of a failing task first) that needs no other tool."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for task in context.train_tasks:
        if task.tags and task.reference:
            groups[slug(task.tags[0])].append(task)
    failing = failing_ids(context)
    found = []
    for kind in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        tasks = groups[kind]
        name = f"{router}_{kind}"
        if name in context.harness.agents or f"prompts/{name}.md.j2" in context.files:
            continue
        uses = Counter(tool for task in tasks for tool in reference_tools(task))
        tools = {tool for tool, n in uses.items() if 2 * n >= len(tasks)}
        examples = sorted(tasks, key=lambda t: (t.id not in failing, t.id))
        for task in examples:
            names = {demo_name(task.id), demo_name(f"route {task.id}")}
            if reference_tools(task) <= tools and not names & set(context.harness.demos):
                demo = reference_demo(context, task)
                if demo is not None:
                    found.append(Specialist(kind, name, tools, task, demo))
                    break
        if len(found) == _MAX_SPECIALISTS:
            break
    return found


class SplitAgent(Operator):
    """Give the entry agent specialists for the most common kinds of train request, each with a short
    generated prompt, only the tools its kind's references use and one worked example; the entry agent
    becomes their router, shown one hand-off per specialist, and keeps everything else."""

    name = "split_agent"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        router = context.harness.entry
        specialists = _specialists(context, router)
        if len(specialists) < 2:  # one specialist is a rename, not a split
            return None
        edit = Edit(context)
        delegates = list(context.harness.agents[router].delegates)
        for kind, name, tools, task, demo in specialists:
            words = kind.replace("_", " ")
            example = demo_name(task.id)
            edit.add_demo(example, demo)
            edit.files[f"prompts/{name}.md.j2"] = _SPECIALIST_PROMPT.replace("KIND", words)
            edit.config["agents"][name] = CommentedMap(
                description=f"{words.capitalize()} requests.", prompt=f"prompts/{name}.md.j2"
            )
            edit.set_list(name, "demos", [example])
            for tool in sorted(tools):
                edit.expose(name, tool)
            reply = demo["steps"][-1]["reply"]
            handoff = {
                "title": f"Hand a {words} request to {name}",
                "steps": [
                    {"user": task.user.message},
                    {
                        "call": f"{DELEGATE_PREFIX}{name}",
                        "args": {"request": task.user.message},
                        "result": {"answer": reply},
                    },
                    {"reply": reply},
                ],
            }
            edit.place_demo(router, demo_name(f"route {task.id}"), handoff)
            delegates.append(name)
        edit.set_list(router, "delegates", delegates)
        made = "; ".join(f"{s.name} ({', '.join(sorted(s.tools))}; example {s.task.id})" for s in specialists)
        return edit.proposal(
            self.name,
            f"Split agent {router!r} into a router and specialists for the most common kinds of train "
            f"request: {made}. It hands each kind off and keeps the rest.",
        )


class MergeAgents(Operator):
    """Fold a specialist back into the agent that delegates to it: it gets the specialist's tools and
    demos, and loses its hand-off demos. A split that does not pay costs a hand-off on every request."""

    name = "merge_agents"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        agents = context.harness.agents
        callers = defaultdict(list)
        for agent, cfg in agents.items():
            for target in cfg.delegates:
                callers[target].append(agent)
        options = [
            (callers[name][0], name)
            for name, cfg in agents.items()
            if len(callers[name]) == 1 and not cfg.delegates and name != context.harness.entry
        ]
        if not options:
            return None
        router, specialist = context.rng.choice(options)
        edit = Edit(context)
        handoff = f"{DELEGATE_PREFIX}{specialist}"
        router_cfg, specialist_cfg = agents[router], agents[specialist]

        def calls_it(demo: str) -> bool:
            return any(step.call == handoff for step in context.harness.demos[demo].steps)

        # The router shows the specialist's demos (its pool too, if the router retrieves), not the hand-offs.
        demos = [d for d in router_cfg.demos if not calls_it(d)]
        edit.set_list(router, "demos", dict.fromkeys([*demos, *specialist_cfg.demos]))
        if router_cfg.demo_pool:
            pool = [d for d in router_cfg.demo_pool if not calls_it(d)]
            if router_cfg.retrieve_demos:
                pool += [d for d in specialist_cfg.demo_pool if d not in pool]
            edit.set_list(router, "demo_pool", pool)
            fixed = edit.agent(router)["demos"]
            k = min(router_cfg.retrieve_demos, len(set(pool) - set(fixed)))
            edit.agent(router)["retrieve_demos"] = k
        rest = [d for d in router_cfg.delegates if d != specialist]
        if rest:
            edit.set_list(router, "delegates", rest)
        else:
            del edit.agent(router)["delegates"]
        theirs = edit.tools.get(specialist) or []
        for tool in theirs:
            if tool not in context.harness.tools[router]:  # with the specialist's wording, if it had its own
                edit.expose(router, tool, theirs[tool] if isinstance(theirs, dict) else None)
        edit.tools.pop(specialist, None)
        del edit.config["agents"][specialist]
        for demo in [
            *router_cfg.demos,
            *router_cfg.demo_pool,
            *specialist_cfg.demos,
            *specialist_cfg.demo_pool,
        ]:
            edit.drop_unlisted_demo(demo)
        if all(cfg.prompt != specialist_cfg.prompt for name, cfg in agents.items() if name != specialist):
            edit.files.pop(specialist_cfg.prompt, None)
        return edit.proposal(
            self.name,
            f"Merge agent {specialist!r} back into {router!r}: {router!r} gets its tools and demos and "
            f"stops handing requests off.",
        )
