"""`optimize history HARNESS`: the accepted variants in git, with the figures their commits carry.

The optimizer writes every accepted variant as a commit whose message holds the gate figures and
`Atoll-*` trailers (see `commit_message`); git is the record, so this reads the log and parses
those lines back rather than asking the runs store, which another machine may not have.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from . import _git as git
from ._reports import Responsive

_GATE = re.compile(
    r"Gate \((?P<split>\w+) split, (?P<tasks>\d+) tasks x (?P<seeds>\d+) seed\(s\), paired\): "
    r"(?P<before>[\d.]+) -> (?P<after>[\d.]+) \((?P<delta>[+-][\d.]+)\)"
)
_SIGN = re.compile(
    r"Sign test p=(?P<p>[\d.e+-]+) \((?P<wins>\d+) tasks better, (?P<losses>\d+) worse, (?P<ties>\d+) tied\)"
)
_BOUND = re.compile(r"lower bound (?P<bound>[+-][\d.]+)")
_TRAILER = re.compile(r"^Atoll-(?P<key>[\w-]+):\s*(?P<value>.+?)\s*$", re.MULTILINE)


class HistoryEntry(BaseModel):
    """One accepted variant; a figure is None when its line is missing from the message."""

    commit: str
    date: str
    title: str
    run: str | None = None
    iteration: int | None = None
    operator: str | None = None
    harness_hash: str | None = None
    split: str | None = None
    tasks: int | None = None
    seeds: int | None = None
    before: float | None = None
    after: float | None = None
    delta: float | None = None
    p_value: float | None = None
    wins: int | None = None
    losses: int | None = None
    ties: int | None = None
    lower_bound: float | None = None


def parse_commit(commit: str, date: str, message: str) -> HistoryEntry:
    """Read the figures and trailers `commit_message` wrote back out of a commit message."""
    trailers = {m["key"].lower(): m["value"] for m in _TRAILER.finditer(message)}
    values: dict[str, object] = {
        "run": trailers.get("run"),
        "operator": trailers.get("operator"),
        "harness_hash": trailers.get("harness"),
        "iteration": int(trailers["iteration"]) if trailers.get("iteration", "").isdigit() else None,
    }
    for pattern in (_GATE, _SIGN, _BOUND):
        found = pattern.search(message)
        if found:
            values.update(found.groupdict())
    if "p" in values:
        values["p_value"] = values.pop("p")
    if "bound" in values:
        values["lower_bound"] = values.pop("bound")
    return HistoryEntry.model_validate(
        {"commit": commit, "date": date, "title": message.split("\n", 1)[0], **values}
    )


def history(path: Path, *, limit: int = 50) -> list[HistoryEntry]:
    """The accepted variants of the harness at `path` on the current branch, newest first."""
    return [parse_commit(*entry) for entry in git.log_of(path, limit=limit, grep="^Atoll-Run:")]


def _figure(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def render_history(path: Path, *, limit: int = 50) -> RenderableType:
    """A table of the accepted variants: when, which operator, the gate figures, the run."""
    entries = history(path, limit=limit)
    if not entries:
        return Text(
            f"No accepted variants of {path} on this branch yet (no commits with Atoll trailers).",
            style="dim",
        )
    table = Table(
        "commit", "date", "operator", "gate", "Δ", "lower bound", "p", "tasks", "run", "title",
        title=f"Accepted variants of {path}", title_justify="left",
    )  # fmt: skip
    items: list[RenderableType] = [Text(f"Accepted variants of {path}", style="italic")]
    for entry in entries:
        gate = f"{_figure(entry.before, '.3f')} → {_figure(entry.after, '.3f')}"
        shape = (
            f"{entry.tasks}×{entry.seeds} {entry.split} (+{entry.wins}/−{entry.losses}/={entry.ties})"
            if entry.tasks is not None and entry.wins is not None
            else "–"
        )
        delta = Text(_figure(entry.delta, "+.3f"), style="green")
        table.add_row(
            entry.commit[:10],
            entry.date[:10],
            entry.operator or "–",
            gate,
            delta,
            _figure(entry.lower_bound, "+.3f"),
            _figure(entry.p_value, ".3g"),
            shape,
            entry.run or "–",
            entry.title,
        )
        items.append(
            Text.assemble(
                (entry.commit[:10], "yellow"),
                f" {entry.date[:10]} {entry.operator or '–'} {gate} (",
                delta,
                ")",
            )
        )
        figures = (
            f"lower bound {_figure(entry.lower_bound, '+.3f')} · p={_figure(entry.p_value, '.3g')} · "
            f"{shape} · run {entry.run or '–'}"
        )
        items.append(Padding(Text(figures), (0, 0, 0, 3)))
        items.append(Padding(Text(entry.title, style="dim"), (0, 0, 0, 3)))
    parts: list[RenderableType] = [Responsive(table, Group(*items), min_width=140)]
    first, last = entries[-1], entries[0]
    if first.before is not None and last.after is not None:
        parts.append(
            Text(
                f"{len(entries)} accepted: gate score {first.before:.3f} → {last.after:.3f} along this branch."
            )
        )
    return Group(*parts)
