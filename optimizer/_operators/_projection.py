"""Result projection: which fields of a tool's result an agent reads (tools.yaml `fields`).

A world tool often returns far more than a request needs (a whole order, with every payment,
shipment and note), and every field is prompt the model reads and a long result is cut at
limits.observation_chars, sometimes before the part that matters. The evidence is what passing
train episodes did with each result: a field is used when its value (a text or a number that is
not trivial) shows up later in that episode, in the arguments of a call or in a reply of the same
agent. The operator shows only the fields some passing episode used; it never hides one that was.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from atoll.harnesses import project_fields, tool_specs

from .._proposal import Proposal, ProposalContext
from ._common import Edit, Operator, flow

MIN_EPISODES = 2  # passing episodes that call the tool: fewer is no evidence of what it needs
_MIN_TEXT = 3  # shorter texts ("WI", "ok") turn up anywhere
_MIN_NUMBER = 10  # so do small numbers (a quantity of 1, a 0.0 fee), unless they have a fraction

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
        return [value.strip()]
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
    return evidence


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
    hidden: int  # leaf paths hidden
    saved: int  # result characters hidden, over every passing call
    counts: dict[str, int]  # field -> passing episodes that used it
    users: int  # passing episodes that used any of the fields


def options(context: ProposalContext) -> list[_Option]:
    """Every projection the evidence supports, the biggest saving first."""
    found = []
    for (agent, tool), evidence in sorted(gather(context).items()):
        if len(evidence.episodes) < MIN_EPISODES or not evidence.used:
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
                hidden=len(evidence.seen.keys() - _shown_paths(evidence.seen, fields)),
                saved=saved,
                counts=counts,
                users=len(set().union(*evidence.used.values())),
            )
        )
    return sorted(found, key=lambda o: -o.saved)


class ProjectResults(Operator):
    """Show an agent only the result fields of a tool that passing train episodes used (tools.yaml
    `fields`), for the tool where that hides the most characters; the world still returns all."""

    name = "project_results"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        if context.harness is None:
            return None
        found = options(context)
        if not found:
            return None
        best = found[0]
        edit = Edit(context)
        entries = edit._mapping(best.agent)
        if not isinstance(entries.get(best.tool), dict):
            entries[best.tool] = CommentedMap()
        entries[best.tool]["fields"] = flow(best.fields)
        per_field = ", ".join(f"{f} {best.counts[f]}" for f in best.fields)
        rationale = (
            f"{best.tool} for agent {best.agent!r}: show {', '.join(best.fields)} (used by {best.users} of "
            f"{best.episodes} passing train episodes that call it, in a later call or reply; per field: "
            f"{per_field}); hides {best.hidden} field{'s' if best.hidden != 1 else ''}, "
            f"~{round(best.saved / best.calls)} characters per call."
        )
        return edit.proposal(self.name, rationale)
