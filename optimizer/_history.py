"""`optimize history HARNESS`: the accepted variants in git, with the figures their commits carry.

The optimizer writes every accepted variant as a commit whose message holds the gate figures and
`Atoll-*` trailers (see `commit_message`); git is the record, so this reads the log and parses
those lines back rather than asking the runs store, which another machine may not have.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import git
from ._config import StepRecord

_GATE = re.compile(
    r"Gate \((?P<split>\w+) split, (?P<tasks>\d+) tasks x (?P<seeds>\d+) seed\(s\), paired\): "
    r"(?P<before>[\d.]+) -> (?P<after>[\d.]+) \((?P<delta>[+-][\d.]+)\)"
)


_SIGN = re.compile(
    r"Sign test p=(?P<p>[\d.e+-]+) \((?P<wins>\d+) tasks better, (?P<losses>\d+) worse, (?P<ties>\d+) tied\)"
)


_BOUND = re.compile(r"lower bound (?P<bound>[+-][\d.]+)")


_TRAILER = re.compile(r"^Atoll-(?P<key>[\w-]+):\s*(?P<value>.+?)\s*$", re.MULTILINE)


class HistoryEntry(StepRecord):
    """One accepted variant as its commit records it: the proposal's `StepRecord` (its headline as the
    rationale, the gate's means as its scores) plus where it lives in git. A figure is None when its
    line is missing from the message, and so are the iteration and operator without their trailers."""

    iteration: int | None = None  # type: ignore[assignment]
    operator: str | None = None  # type: ignore[assignment]
    verdict: str = "accept"
    commit: str
    date: str
    run: str | None = None
    harness_hash: str | None = None
    split: str | None = None
    tasks: int | None = None
    seeds: int | None = None
    delta: float | None = None  # as the message printed it

    @property
    def title(self) -> str:
        return self.rationale

    @property
    def before(self) -> float | None:
        return self.incumbent_score

    @property
    def after(self) -> float | None:
        return self.candidate_score


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
    renamed = {
        "p": "p_value",
        "bound": "lower_bound",
        "before": "incumbent_score",
        "after": "candidate_score",
    }
    values = {renamed.get(key, key): value for key, value in values.items()}
    return HistoryEntry.model_validate(
        {"commit": commit, "date": date, "rationale": message.split("\n", 1)[0], **values}
    )


def history(path: Path, *, limit: int = 50) -> list[HistoryEntry]:
    """The accepted variants of the harness at `path` on the current branch, newest first."""
    return [parse_commit(*entry) for entry in git.log_of(path, limit=limit, grep="^Atoll-Run:")]
