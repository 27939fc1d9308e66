"""Result projection: which fields of a tool's result an agent reads (tools.yaml `fields`).

A world tool often returns far more than a request needs (a whole order, with every payment,
shipment and note), and every field is prompt the model reads and a long result is cut at
limits.observation_chars, sometimes before the part that matters. The evidence is what passing
train episodes did with each result: a field is used when its value (a text or a number that is
not trivial) shows up later in that episode, in the arguments of a call or in a reply of the same
agent. Train tasks' reference solutions, replayed on their fixtures, are evidence too: a field is used
when a later reference call passes its value on, or the task expects it said (`reply_contains`, a
grader's arguments). On a model that passes few tasks the references are most of the evidence: on the
1.5B model a customer search's city and state, which no request needed, were read out to a caller
who had not proven who they were. The operator shows only the fields something used; it never hides
one that was.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from atoll.harnesses import content_hash, project_fields, tool_specs

from .._proposal import Proposal, ProposalContext
from ._common import Edit, Operator, flow, reference_log

MIN_EPISODES = 2  # passing episodes and references that call the tool: fewer is no evidence of what it needs
OPTIONS = 3  # the projections hiding the most that are offered, each once the run has tried those before
_MIN_TEXT = 3  # shorter texts ("WI", "ok") turn up anywhere
_MIN_NUMBER = 10  # so do small numbers (a quantity of 1, a 0.0 fee), unless they have a fraction
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})[T ]\d")

# Events after a result that may carry its values on: the same agent's calls and what it says.
_CALLS = ("tool_call", "delegate")
_SAYS = ("assistant", "return")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) for each plain value of a result; lists are walked through, so every
    element of `items` gives `items.<key>`. An empty list or mapping is a leaf of its own."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple) and value:
        for item in value:
            yield from leaves(item, path)
    elif path:  # a result that is a plain value has no field to keep or hide
        yield path, value


def _forms(value: Any) -> list[str]:
    """How a value may be written in a later call or reply; none when it is too trivial to tell."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        if abs(value) < _MIN_NUMBER and float(value).is_integer():
            return []
        if isinstance(value, int) or value.is_integer():
            return [str(int(value)), f"{value:.2f}"]
        return [repr(value), f"{value:.2f}"]
    if isinstance(value, str) and len(value.strip()) >= _MIN_TEXT:
        text = value.strip()
        spoken = text.replace("_", " ")  # a status `out_for_delivery` is said "out for delivery"
        day = _DAY.match(text)  # a timestamp is said by its date
        return list(dict.fromkeys([text, spoken, *([day.group(1)] if day else [])]))
    return []


def _appears(value: Any, text: str) -> bool:
    """Whether the value stands in `text` (casefolded) as a whole word or number."""
    for form in _forms(value):
        form = form.casefold()
        before = r"(?<![\w.])" if re.match(r"[\w.]", form) else ""
        after = r"(?!\.?\w)" if re.search(r"\w$", form) else ""
        if re.search(before + re.escape(form) + after, text):
            return True
    return False


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
    elif value is not None:
        yield str(value)


def _later(events: list[Any], agent: str) -> list[str]:
    """For each event, what the agent passed on after it (casefolded): its later calls' arguments
    and its later replies."""
    suffix: list[str] = [""] * (len(events) + 1)
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        said: list[str] = []
        if event.agent == agent and event.kind in _CALLS:
            said = list(_texts(event.arguments or {}))
        elif event.agent == agent and event.kind in _SAYS and event.content:
            said = [event.content]
        suffix[i] = "\n".join([*said, suffix[i + 1]]) if said else suffix[i + 1]
    return [text.casefold() for text in suffix[1:]]  # after event i: events i+1 and on


@dataclass
class _Evidence:
    """What the passing episodes did with one agent's results of one tool (as the agent saw them)."""

    shown: list[Any] = field(default_factory=list)  # each ok result, as the agent read it
    episodes: set[int] = field(default_factory=set)
    references: set[int] = field(default_factory=set)  # train tasks' references that call the tool
    unused_references: int = 0  # reference calls of it whose result nothing later used
    seen: dict[str, None] = field(default_factory=dict)  # every leaf path the results had, in order
    used: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))  # leaf -> episodes


def gather(context: ProposalContext) -> dict[tuple[str, str], _Evidence]:
    """Per (agent, world tool) the passing train episodes called, what they saw and used."""
    evidence: dict[tuple[str, str], _Evidence] = defaultdict(_Evidence)
    specs = _specs(context)
    for number, result in enumerate(context.passing_episodes):
        events = result.episode.events
        later: dict[str, list[str]] = {}
        for i, event in enumerate(events):
            spec = specs.get((event.agent, event.tool or ""))
            if event.kind != "tool_result" or not event.ok or spec is None:
                continue
            if event.agent not in later:
                later[event.agent] = _later(events, event.agent)
            shown = spec.shown(event.result)  # a field the agent was not shown cannot be used
            found = evidence[(event.agent, spec.name)]
            found.shown.append(shown)
            found.episodes.add(number)
            for path, value in leaves(shown):
                found.seen.setdefault(path)
                if _appears(value, later[event.agent][i]):
                    found.used[path].add(number)
    _gather_references(context, specs, evidence, start=len(context.passing_episodes))
    return evidence


def _gather_references(
    context: ProposalContext,
    specs: dict[tuple[str, str], Any],
    evidence: dict[tuple[str, str], _Evidence],
    start: int,
) -> None:
    """What train tasks' reference solutions did with each lookup's result, for every agent offered it: a
    value a later reference call passes on, or the task expects said, is used, unless the call's own
    arguments or the user already gave it (then the result is not where it came from)."""
    offered: dict[str, list[Any]] = defaultdict(list)
    for (agent, tool), spec in specs.items():
        offered[tool].append((agent, spec))
    for number, task in enumerate(context.train_tasks, start=start):
        log = reference_log(context, task) if task.reference else None
        told = [task.user.message, *task.user.replies]
        for i, record in enumerate(log or []):
            # A write's result confirms what was done, which is said, and a reference never says it.
            if not record.ok or record.tool not in offered or context.harness.world.tools[record.tool].writes:
                continue
            later = [t for call in log[i + 1 :] for t in _texts(call.arguments)]
            passed_on = "\n".join([*later, *_expected(task)]).casefold()
            known = "\n".join([*_texts(record.arguments), *told]).casefold()
            for agent, spec in offered[record.tool]:
                shown = spec.shown(record.value)
                found = evidence[(agent, spec.name)]
                found.shown.append(shown)
                found.references.add(number)
                used = False
                for path, value in leaves(shown):
                    found.seen.setdefault(path)
                    if _appears(value, passed_on) and not _appears(value, known):
                        found.used[path].add(number)
                        used = True
                found.unused_references += not used


def _expected(task: Any) -> list[str]:
    """What a task expects the agent to say: its `reply_contains` and the texts its graders are given
    (not `reply_excludes`: what must not be said is no reason to show a field)."""
    return [*task.expect.reply_contains, *(t for grader in task.expect.graders for t in _texts(grader.args))]


def _specs(context: ProposalContext) -> dict[tuple[str, str], Any]:
    harness = context.harness
    return {
        (agent, spec.name): spec
        for agent in harness.tools
        for spec in tool_specs(harness, agent)
        if spec.kind == "world"
    }


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def choose_fields(seen: Iterable[str], used: Iterable[str], current: Iterable[str] | None) -> list[str]:
    """The fewest paths that show every used leaf: a mapping or list whose every leaf was used is
    named whole, unless the tool's current `fields` show only part of it (naming it whole would
    show the rest again)."""
    seen, used = list(dict.fromkeys(seen)), set(used)
    current = list(current) if current is not None else None

    def whole(prefix: str) -> bool:
        return current is None or any(_under(prefix, c) for c in current)

    def walk(prefix: str) -> list[str]:
        below = [p for p in seen if _under(p, prefix)]
        if not any(p in used for p in below):
            return []
        if whole(prefix) and all(p in used for p in below):
            return [prefix]
        if prefix in used:  # a plain value here in some result, a mapping in another: keep it
            return [prefix] if whole(prefix) else [c for c in current or [] if _under(c, prefix)]
        depth = prefix.count(".") + 1
        children = dict.fromkeys(".".join(p.split(".")[: depth + 1]) for p in below if p != prefix)
        return [f for child in children for f in walk(child)]

    tops = dict.fromkeys(p.split(".")[0] for p in seen)
    return [f for top in tops for f in walk(top)]


def _shown_paths(seen: Iterable[str], fields: list[str]) -> set[str]:
    """The leaf paths a projection to `fields` still shows (an empty `items` shows with `items.sku`)."""
    return {p for p in seen if any(_under(p, f) or _under(f, p) for f in fields)}


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


@dataclass
class _Option:
    agent: str
    tool: str
    fields: list[str]
    calls: int
    episodes: int
    references: int
    hidden: int  # leaf paths hidden
    saved: int  # result characters hidden, over every passing call
    counts: dict[str, int]  # field -> passing episodes and references that used it
    users: int  # passing episodes and references that used any of the fields


def options(context: ProposalContext) -> list[_Option]:
    """Every projection the evidence supports, the biggest saving first."""
    found = []
    for (agent, tool), evidence in sorted(gather(context).items()):
        if len(evidence.episodes) + len(evidence.references) < MIN_EPISODES or not evidence.used:
            continue
        if len(evidence.episodes) < MIN_EPISODES and evidence.unused_references:
            # A reference shows the calls a task needs, never its reply: a result it leaves unused may have
            # been for saying. On references alone, only a tool whose every result is passed on is projected.
            continue
        current = context.harness.tools[agent][tool].fields
        fields = choose_fields(evidence.seen, evidence.used, current)
        saved = sum(_chars(shown) - _chars(project_fields(shown, fields)) for shown in evidence.shown)
        if saved <= 0:
            continue
        counts = {
            f: len(set().union(*(eps for path, eps in evidence.used.items() if _under(path, f))))
            for f in fields
        }
        found.append(
            _Option(
                agent=agent,
                tool=tool,
                fields=fields,
                calls=len(evidence.shown),
                episodes=len(evidence.episodes),
                references=len(evidence.references),
                hidden=len(evidence.seen.keys() - _shown_paths(evidence.seen, fields)),
                saved=saved,
                counts=counts,
                users=len(set().union(*evidence.used.values())),
            )
        )
    return sorted(found, key=lambda o: -o.saved)


class ProjectResults(Operator):
    """Show an agent only the result fields of a tool that passing train episodes or reference solutions
    used (tools.yaml `fields`); the world still returns all. Of the three projections that hide the most
    characters, those this run has not tried: for cost the biggest saving, for quality the one aimed at
    the most failing train tasks (those whose agent read the tool)."""

    name = "project_results"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        if context.harness is None:
            return None
        made = [_projection(context, option) for option in options(context)[:OPTIONS]]
        fresh = [p for p in made if p is not None and content_hash(p.files) not in context.tried]
        if context.objective != "quality":
            return fresh[0] if fresh else None
        # For quality, the projection that changes what the most failing episodes read: in a repair of a
        # winner that broke six identity tasks, all six read the customer search and none the tracking
        # lookup, whose projection would have hidden more characters.
        return max(fresh, key=lambda p: len(p.targets), default=None)


def _projection(context: ProposalContext, option: _Option) -> Proposal | None:
    edit = Edit(context)
    entries = edit._mapping(option.agent)
    if not isinstance(entries.get(option.tool), dict):
        entries[option.tool] = CommentedMap()
    entries[option.tool]["fields"] = flow(option.fields)
    per_field = ", ".join(f"{f} {option.counts[f]}" for f in option.fields)
    sources = " and ".join(
        what
        for count, what in (
            (option.episodes, "passing train episodes"),
            (option.references, "reference solutions"),
        )
        if count
    )
    rationale = (
        f"{option.tool} for agent {option.agent!r}: show {', '.join(option.fields)} (used by {option.users} "
        f"of the {option.episodes + option.references} {sources} that call it, in a later call or reply; "
        f"per field: {per_field}); hides {option.hidden} field{'s' if option.hidden != 1 else ''}, "
        f"~{round(option.saved / option.calls)} characters per call."
    )
    proposal = edit.proposal(ProjectResults.name, rationale)
    if proposal is not None:
        called = f"[{option.agent}] call {option.tool} "
        proposal.targets = [f.task_id for f in context.failures if called in f.transcript]
    return proposal
