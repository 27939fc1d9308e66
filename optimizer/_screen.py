"""The screen: a race over growing batches of train tasks that decides which candidates reach the gate.

A fixed minibatch of five or six tasks cannot see a change that moves one task in ten, and it
scores a change that moved nothing as a loss only by luck. The race starts where a change can
matter (the incumbent's failing train tasks, then its passing ones as a no-harm check), doubles
the batch each round up to the whole train sample, and stops a candidate as soon as it falls
behind the incumbent or, having been seen, changed nothing at all. It reads train tasks only:
the val tasks the gate decides on stay unseen by the search.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from atoll.worlds.base.stats import TIE_TOLERANCE

Scores = Mapping[str, Sequence[float | None]]
# A repair goes to the gate only if it kept at least this share of its parent's train gain over the incumbent:
# the parent's gain is what it is meant to keep while it mends what the parent broke.
KEPT_GAIN = 0.5
Evaluate = Callable[[list[str]], Awaitable[Scores]]


class ScreenRound(BaseModel):
    """One round: the tasks it added, and both sides' mean over every task seen so far."""

    tasks: list[str]
    seen: int
    incumbent_mean: float
    candidate_mean: float
    wins: int
    losses: int
    incumbent_cost: float | None = Field(None, description="With an objective: its mean per task so far.")
    candidate_cost: float | None = None


@dataclass
class CostRace:
    """What the race reads when the run lowers cost, latency or tokens: each side's per-task values of
    the objective (the candidate's filled in by the caller's evaluate as each round runs), and how far
    quality may fall behind before the candidate is dropped."""

    objective: str
    incumbent: Scores
    tolerance: float
    candidate: dict[str, list[float | None]] = field(default_factory=dict)

    def means(self, tasks: Sequence[str]) -> tuple[float, float]:
        """Both sides' mean over `tasks` of the per-task mean value (an unmeasured episode counts 0)."""
        before = sum(_task_mean(self.incumbent[task]) for task in tasks) / len(tasks)
        after = sum(_task_mean(self.candidate[task]) for task in tasks) / len(tasks)
        return before, after


@dataclass
class Repair:
    """What a repair is raced with: its parent's (a vetoed winner's) train scores on the sample, and of the
    train tasks outside the sample that its parent broke, how many there are and how many it mended
    (played before the race)."""

    parent: Scores
    broken: int = 0
    mended: int = 0

    def elsewhere(self) -> str:
        """The mended count in words, for a reason line; empty when the parent broke nothing outside."""
        return (
            f"; mended {self.mended} of the {self.broken} it broke outside the sample" if self.broken else ""
        )


class ScreenRecord(BaseModel):
    """What the race saw and why it stopped: stored in the proposal's `screen` column."""

    passed: bool
    stopped: Literal["fell_behind", "no_change", "tied", "ahead", "no_tasks", "not_cheaper", "cheaper"]
    reason: str = Field(description="One line: why the candidate goes to the gate or not.")
    rounds: list[ScreenRound]
    tasks: list[str] = Field(description="Every train task the candidate ran, in race order.")
    incumbent: dict[str, list[float | None]]
    candidate: dict[str, list[float | None]]
    incumbent_mean: float
    candidate_mean: float


def race_order(
    failing: Sequence[str], passing: Sequence[str], rng: random.Random, targets: Sequence[str] = ()
) -> list[str]:
    """The failing train tasks the proposal aims at first (a change that does not move its own target
    in round one seldom moves another), then the other failing tasks (where a change can win), then
    passing ones (where it can only do harm), each group in a seeded shuffle so no task is always
    screened first. A change that fixes one task in ten is otherwise seen in a first round of three
    only about one time in four."""
    aimed = [task for task in dict.fromkeys(targets) if task in failing]
    first, then = sorted(set(failing) - set(aimed)), sorted(set(passing) - set(failing))
    rng.shuffle(first)
    rng.shuffle(then)
    return aimed + first + then


def round_sizes(first: int, total: int) -> list[int]:
    """Cumulative batch sizes: first, 2·first, 4·first, ... ending exactly at `total`."""
    sizes, size = [], max(1, first)
    while size < total:
        sizes.append(size)
        size *= 2
    return [*sizes, total] if total else []


def _task_mean(scores: Sequence[float | None]) -> float:
    return sum(score or 0.0 for score in scores) / len(scores) if scores else 0.0


def _same(seen: Scores, parent: Scores) -> bool:
    """Whether every task seen scored as `parent` scored it (within the tie tolerance)."""
    return all(
        abs(_task_mean(seen[task]) - _task_mean(parent.get(task, []))) <= TIE_TOLERANCE for task in seen
    )


def _lost_gain(seen: Scores, incumbent: Scores, parent: Scores) -> bool:
    """Whether a repair kept less than KEPT_GAIN of its parent's gain over the incumbent on the tasks seen."""
    before = sum(_task_mean(incumbent[task]) for task in seen)
    gained = sum(_task_mean(parent.get(task, [])) for task in seen) - before
    kept = sum(_task_mean(scores) for scores in seen.values()) - before
    return gained > TIE_TOLERANCE and kept < KEPT_GAIN * gained


def round_line(number: int, sizes: Sequence[int], first: int) -> str:
    """What round `number` (from 1) of a race with cumulative `sizes` says as it starts: which round of how
    many, the tasks it adds and how far into the train tasks that goes. When there are fewer train tasks
    than `first` (--screen-size) asks for, it says so, rather than print a number that seems to ignore
    the option."""
    total, seen = sizes[-1], sizes[number - 1]
    added = seen - (sizes[number - 2] if number > 1 else 0)
    where = f"screening round {number} of {len(sizes)}"
    if number > 1:
        return f"{where}: {added} more train tasks, {seen} of {total}"
    if total < first:
        return f"{where}: all {total} train tasks (--screen-size is {first}, but there are only {total})"
    return f"{where}: {added} of {total} train tasks"


async def race(
    order: Sequence[str],
    incumbent: Scores,
    evaluate: Evaluate,
    *,
    first: int,
    announce: Callable[[str], None] | None = None,
    costs: CostRace | None = None,
    repair: Repair | None = None,
) -> ScreenRecord:
    """Race the candidate against the incumbent's stored train scores over `order`.

    Each round evaluates only the tasks it adds (`evaluate` returns the candidate's per-task
    scores for them). After a round the candidate is dropped if its mean over the tasks seen so
    far is below the incumbent's, or if no task's score differs at all; otherwise it advances, and
    after the last round (the whole train sample) it goes to the gate. A tie that changed outcomes
    goes too: on 16 tasks a real gain often ties, and only the gate decides
    (benchmarks/acceptance.py measures what that costs and buys). `announce` is given each round's
    `round_line` before it runs.

    A `repair` (of a vetoed winner) is not stopped for changing no outcome against the incumbent: its
    parent won on val, and its edit may touch one kind of request only (a demo swapped for a refusal's
    changed none of three refund tasks in round one, and was dropped before the race reached a refusal).
    Only having played every task exactly as its parent did, and mended none of the train tasks outside
    the sample that its parent broke, stops it so: it is its parent again, which the rule has refused.
    Nor does one that kept less than half of its parent's gain over the incumbent go on: a demo copied
    onto every kind of request gave back five of its parent's seven train wins (0.466 -> 0.542 for the
    parent, 0.489 for it) and then, on val, nearly all of its parent's gain, a 12-minute val pass spent
    to learn it.

    With `costs` (a run lowering cost, latency or tokens) the race asks instead: is quality within
    the tolerance of the incumbent's, and is the objective lower on the tasks seen? Unchanged
    outcomes are what such a candidate should have, so they do not stop it.
    """
    tasks = list(order)
    seen: dict[str, list[float | None]] = {}
    rounds: list[ScreenRound] = []
    sizes = round_sizes(first, len(tasks))
    stopped, reason = "no_tasks", "no train tasks to screen on"
    for number, size in enumerate(sizes, start=1):
        batch = tasks[len(seen) : size]
        if announce is not None:
            announce(round_line(number, sizes, first))
        scores = await evaluate(batch)
        seen.update({task: list(scores[task]) for task in batch})
        deltas = [_task_mean(seen[task]) - _task_mean(incumbent[task]) for task in seen]
        before = sum(_task_mean(incumbent[task]) for task in seen) / len(seen)
        after = sum(_task_mean(values) for values in seen.values()) / len(seen)
        wins = sum(delta > TIE_TOLERANCE for delta in deltas)
        losses = sum(delta < -TIE_TOLERANCE for delta in deltas)
        rounds.append(
            ScreenRound(
                tasks=batch,
                seen=len(seen),
                incumbent_mean=before,
                candidate_mean=after,
                wins=wins,
                losses=losses,
            )
        )
        figures = f"{before:.3f} -> {after:.3f} on {len(seen)} train tasks ({wins} better, {losses} worse)"
        if costs is not None:
            spent_before, spent_after = costs.means(list(seen))
            rounds[-1].incumbent_cost, rounds[-1].candidate_cost = spent_before, spent_after
            spent = f"{costs.objective} {spent_before:.4g} -> {spent_after:.4g}; quality {figures}"
            if after < before - costs.tolerance - TIE_TOLERANCE:
                stopped, reason = "fell_behind", f"quality fell behind in round {number}: {spent}"
                break
            if spent_after >= spent_before:
                stopped, reason = "not_cheaper", f"no lower {costs.objective} in round {number}: {spent}"
                break
            if size == len(tasks):
                stopped, reason = "cheaper", f"lower {costs.objective} after round {number}: {spent}"
            continue
        if after < before - TIE_TOLERANCE:
            stopped, reason = "fell_behind", f"fell behind in round {number}: {figures}"
            break
        if not wins and not losses and repair is None:
            stopped, reason = "no_change", f"changed no outcome in round {number}: {figures}"
            break
        if size < len(tasks):
            continue
        if repair is not None and _same(seen, repair.parent) and not repair.mended:
            stopped = "no_change"
            reason = f"played all {len(seen)} train tasks as its parent did{repair.elsewhere()}: {figures}"
        elif repair is not None and _lost_gain(seen, incumbent, repair.parent):
            stopped = "fell_behind"
            parent_mean = sum(_task_mean(repair.parent.get(task, [])) for task in seen) / len(seen)
            reason = (
                f"kept less than {KEPT_GAIN:.0%} of its parent's gain ({before:.3f} -> {parent_mean:.3f}) "
                f"after round {number}: {figures}"
            )
        else:
            ahead = after > before + TIE_TOLERANCE
            stopped = "ahead" if ahead else "tied"
            mended = repair.elsewhere() if repair is not None else ""
            reason = f"{'ahead' if ahead else 'tied, with outcomes changed,'} after round {number}: {figures}{mended}"
    incumbent_seen = {task: list(incumbent[task]) for task in seen}
    return ScreenRecord(
        passed=stopped in ("ahead", "tied", "cheaper"),
        stopped=stopped,
        reason=reason,
        rounds=rounds,
        tasks=list(seen),
        incumbent=incumbent_seen,
        candidate=seen,
        incumbent_mean=rounds[-1].incumbent_mean if rounds else 0.0,
        candidate_mean=rounds[-1].candidate_mean if rounds else 0.0,
    )
