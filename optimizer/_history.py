"""`optimize history HARNESS`: the accepted variants in git, with the figures their commits carry.

The optimizer writes every accepted variant as a commit whose message holds the gate figures and
`Atoll-*` trailers (see `commit_message`); git is the record, so this reads the log and parses
those lines back rather than asking the runs store, which another machine may not have.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from . import _git as git

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
