"""Checking a suite before any model runs: the traps that otherwise cost an optimization run to find.

A reference solution that fails its own task makes the task unwinnable. A task a do-nothing agent
passes (or scores well on: `no_other_writes`, `unchanged` and a `matches_reference` of a no-change
reference pass when nothing is written) cannot tell a useless prompt edit from a good one. A task
whose checks do not notice a stray write lets collateral damage through. A reference tool the
harness never shows its agents makes a task unsolvable. And a val split too small for the sign
test means `optimize run` can accept nothing, whatever it finds. `check_suite` reports all five.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from atoll.harnesses import Episode, Event, Harness, load_harness
from atoll.worlds import Diff
from atoll.worlds.base.stats import AcceptanceRule, SplitPower, acceptance_power

from ._graders import grade_episode, grade_state, reference_episode, replay_reference
from ._suite import Suite, SuiteError, Task, display_path, load_suite
from .graders._python import GraderError
from .graders._reference import ReferenceFailed, replay
from .graders._verdict import Grade

CHECK_VERSION = 1
DO_NOTHING_REPLY = "Thanks for reaching out! Let me look into that for you."
"""What the do-nothing agent says: polite, generic, and naming nothing the task asks to be said."""
_DONORS_TRIED = 8
"""How many other tasks' references the stray-write probe tries before it gives up on a task."""


class SeedResult(BaseModel):
    """The reference solution replayed at one seed and graded on the world's state."""

    seed: int
    passed: bool
    score: float | None = Field(description="None when a reference call failed.")
    feedback: str = Field(description="The failed checks, or the failed call; empty when it passed.")


class Probe(BaseModel):
    """How a careless agent fares on one task (at the task's first seed)."""

    status: Literal["graded", "skipped", "error"]
    detail: str = Field(description="What the agent did, why it was skipped, or the error.")
    grade: Grade | None = None

    @property
    def score(self) -> float | None:
        return self.grade.score if self.grade else None

    @property
    def passed(self) -> bool | None:
        return self.grade.passed if self.grade else None


class TaskCheck(BaseModel):
    """Everything `check_suite` found about one task."""

    task: str
    split: str
    file: str
    reference: list[SeedResult]
    do_nothing: Probe
    stray_write: Probe
    missing_tools: list[str] = Field(
        default_factory=list, description="Reference tools the harness shows none of its agents."
    )

    @computed_field
    @property
    def reference_ok(self) -> bool:
        return all(result.passed for result in self.reference)

    @property
    def failing_seeds(self) -> list[int]:
        return [result.seed for result in self.reference if not result.passed]


class CheckTally(BaseModel):
    """How many checks of one kind a do-nothing agent passes: the vacuous ones show here."""

    kind: str
    passed: int
    total: int


class SuiteCheck(BaseModel):
    """The report of `check_suite`; `ok` means every reference passes its task at every seed."""

    version: int = CHECK_VERSION
    suite: str
    path: str
    world: str
    harness: str | None = None
    tasks: list[TaskCheck]
    do_nothing_mean: float | None = Field(description="Mean score of the do-nothing agent over graded tasks.")
    do_nothing_checks: list[CheckTally] = Field(description="Per check kind, how many it passes.")
    power: SplitPower

    @computed_field
    @property
    def broken_references(self) -> list[str]:
        return [task.task for task in self.tasks if not task.reference_ok]

    @computed_field
    @property
    def do_nothing_passes(self) -> list[str]:
        return [task.task for task in self.tasks if task.do_nothing.passed]

    @computed_field
    @property
    def stray_write_passes(self) -> list[str]:
        return [task.task for task in self.tasks if task.stray_write.passed]

    @computed_field
    @property
    def unsolvable(self) -> list[str]:
        return [task.task for task in self.tasks if task.missing_tools]

    @computed_field
    @property
    def ok(self) -> bool:
        return not self.broken_references


def check_suite(
    suite: Suite | str | Path,
    *,
    harness: Harness | str | Path | None = None,
    k: int = 1,
    rule: AcceptanceRule | None = None,
) -> SuiteCheck:
    """Check `suite` without a model: references, blind spots, the harness's tools, the val split's power.

    - Every task's reference is replayed and graded at every seed it runs with (its own, and those
      `k` adds); a failing seed is named with the failed checks, or the failed call.
    - A do-nothing agent (no tool call, one generic reply) is graded in full at each task's first seed.
    - A stray-write agent, at the first seed: the task's reference followed by another task's reference
      on the same fixture (the first, in suite order after it, that runs and writes outside the audit
      tables), graded on the world's state only, as the reference is. It asks whether the task notices
      collateral damage, with no knowledge of the world: the borrowed writes are another task's correct
      ones, so they are wrong here. A suite with no other writing task on the fixture skips it, saying so.
    - With `harness`: the reference tools none of its agents (the entry and those it delegates to) sees.
    - The val split's power under `rule` at `k` seeds (default: the optimizer's k, 1, and rule).

    A failing reference or a crashing grader is reported on its task; only a suite that does not load
    raises (SuiteError).
    """
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    if isinstance(harness, str | Path):
        harness = load_harness(harness)
    if harness is not None and harness.world.name != suite.world.name:
        raise SuiteError(
            f"harness {harness.name!r} drives world {harness.world.name!r} but suite {suite.name!r} "
            f"tests {suite.world.name!r}; check the suite with a harness for its world"
        )
    shown = _shown_tools(harness) if harness is not None else None
    donors = _writers(suite)
    tasks = [_check_task(suite, task, k, shown, donors) for task in suite.tasks]
    scores = [task.do_nothing.score for task in tasks if task.do_nothing.score is not None]
    return SuiteCheck(
        suite=suite.name,
        path=display_path(suite.path),
        world=suite.world.name,
        harness=harness.name if harness is not None else None,
        tasks=tasks,
        do_nothing_mean=sum(scores) / len(scores) if scores else None,
        do_nothing_checks=_tally(task.do_nothing.grade for task in tasks),
        power=acceptance_power(len(suite.select(split="val")), k, rule or AcceptanceRule()),
    )


def _check_task(suite: Suite, task: Task, k: int, shown: set[str] | None, donors: list[Task]) -> TaskCheck:
    seeds = list(dict.fromkeys([*suite.seeds(task), *suite.seeds(task, k=k)]))
    reference = [_replay(suite, task, seed) for seed in seeds]
    first = seeds[0]
    needed = dict.fromkeys(call.tool for call in task.reference)
    return TaskCheck(
        task=task.id,
        split=task.split,
        file=display_path(suite.file_of(task.id)),
        reference=reference,
        do_nothing=_do_nothing(suite, task, first),
        stray_write=(
            _stray_write(suite, task, first, donors)
            if reference[0].passed
            else Probe(status="skipped", detail=f"the reference fails at seed {first}")
        ),
        missing_tools=[tool for tool in needed if shown is not None and tool not in shown],
    )


def _replay(suite: Suite, task: Task, seed: int) -> SeedResult:
    try:
        grade = replay_reference(suite, task, seed)
    except ReferenceFailed as error:
        return SeedResult(seed=seed, passed=False, score=None, feedback=str(error))
    return SeedResult(seed=seed, passed=grade.passed, score=grade.score, feedback=_failures(grade))


def _do_nothing(suite: Suite, task: Task, seed: int) -> Probe:
    episode = Episode(
        harness="do-nothing",
        harness_hash="",
        model="none",
        world=suite.world.name,
        fixture=task.fixture,
        seed=seed,
        clock=task.clock,
        task_id=task.id,
        events=[
            Event(kind="user", agent="agent", content=task.user.message),
            Event(kind="assistant", agent="agent", content=DO_NOTHING_REPLY),
        ],
        diff=Diff(),
        stop_reason="reply",
    )
    try:
        grade = grade_episode(suite, task, episode)
    except (ReferenceFailed, GraderError) as error:
        return Probe(status="error", detail=str(error))
    return Probe(status="graded", detail="no tool call, one generic reply", grade=grade)


def _writers(suite: Suite) -> list[Task]:
    """Tasks whose reference changes the world's state (audit tables aside): the stray writes' donors."""
    writers = []
    for task in suite.tasks:
        if not task.reference:
            continue
        try:
            diff = suite.reference(task, suite.seeds(task)[0]).diff
        except ReferenceFailed:
            continue
        if set(diff.tables) - set(suite.config.audit_tables):
            writers.append(task)
    return writers


def _stray_write(suite: Suite, task: Task, seed: int, donors: list[Task]) -> Probe:
    candidates = [d for d in donors if d.fixture == task.fixture and d.id != task.id]
    if not candidates:
        return Probe(
            status="skipped",
            detail=f"nothing to borrow: no other task on fixture {task.fixture!r} has a reference that writes",
        )
    ids = [other.id for other in suite.tasks]
    order = {other: (i - ids.index(task.id)) % len(ids) for i, other in enumerate(ids)}
    candidates.sort(key=lambda d: order[d.id])  # the tasks after this one first, so strays vary
    audit = set(suite.config.audit_tables)
    for donor in itertools.islice(candidates, _DONORS_TRIED):
        try:
            log, diff = replay(
                suite.world, task.fixture, seed, task.clock, [*task.reference, *donor.reference]
            )
        except ReferenceFailed:
            continue  # the two solutions conflict (the same order refunded twice): try another
        borrowed = log[len(task.reference) :]
        if not any(change.table not in audit for record in borrowed for change in record.changes):
            continue
        try:
            grade = grade_state(suite, task, reference_episode(suite, task, seed, log, diff))
        except ReferenceFailed as error:
            return Probe(status="error", detail=str(error))
        return Probe(status="graded", detail=f"its reference, then {donor.id}'s", grade=grade)
    return Probe(
        status="skipped",
        detail=f"none of {min(len(candidates), _DONORS_TRIED)} other references on fixture "
        f"{task.fixture!r} runs after this one and writes",
    )


def _shown_tools(harness: Harness) -> set[str]:
    """The world tools of the entry agent and every agent it can delegate to, directly or not."""
    reached, stack = set(), [harness.entry]
    while stack:
        agent = stack.pop()
        if agent not in reached:
            reached.add(agent)
            stack += harness.agent(agent).delegates
    return {tool for agent in reached for tool in harness.tools.get(agent, {})}


def _tally(grades: Iterable[Grade | None]) -> list[CheckTally]:
    counts: dict[str, list[int]] = {}
    for grade in grades:
        for check in grade.checks if grade is not None else []:
            passed, total = counts.setdefault(check.kind, [0, 0])
            counts[check.kind] = [passed + check.passed, total + 1]
    return [CheckTally(kind=kind, passed=p, total=t) for kind, (p, t) in counts.items()]


def _failures(grade: Grade) -> str:
    return "; ".join(check.line() for check in grade.checks if not check.passed)
