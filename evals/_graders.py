"""Grading an episode: every expectation of its task becomes checks, and the checks a Grade.

Graders are pure functions of the fixture, the episode's diff and its transcript; the only
state is the reference solution's replay, computed once per task (per seed when the solution's
changes depend on the seed) and kept on the suite.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from atoll.harnesses import Episode, Event
from atoll.worlds import Diff

from ._suite import Suite, Task, load_suite
from .graders._python import FixtureView, run_grader
from .graders._reference import check_matches_reference, compare, merge_ignore, replay
from .graders._replies import check_replies
from .graders._state import Accounted, check_no_other_writes, check_rows, check_unchanged, check_updated
from .graders._verdict import Check, Grade


def grade_episode(suite: Suite, task: Task, episode: Episode) -> Grade:
    """The grade of one episode of `task`: score, pass, and a verdict per check.

    An errored episode (model outage, world bug) scores 0 with the error as its one check.
    Raises GraderError when a Python grader of the suite fails, and ReferenceFailed when the
    task's reference solution fails on its fixture: both are bugs of the suite, not the agent's.
    """
    if episode.errored:
        return Grade.errored(f"the episode did not finish ({episode.stop_reason}): {episode.error}")
    return Grade.from_checks(
        _checks(suite, task, episode, state_only=False), pass_threshold=suite.pass_threshold
    )


def _checks(suite: Suite, task: Task, episode: Episode, *, state_only: bool) -> list[Check]:
    expect, diff, keys = task.expect, episode.diff, suite.primary_keys
    accounted = Accounted()
    checks = check_rows("inserted", expect.inserted, diff, keys, accounted)
    checks += check_updated(expect.updated, diff, keys, accounted)
    checks += check_rows("deleted", expect.deleted, diff, keys, accounted)
    checks += check_unchanged(expect.unchanged, diff, keys)
    # Audit tables log what the agent did; only explicit expectations look at them.
    state = _without(diff, suite.config.audit_tables)
    if task.reference and (expect.matches_reference or expect.no_other_writes):
        reference = suite.reference(task, episode.seed)
        reference = replace(reference, diff=_without(reference.diff, suite.config.audit_tables))
        ignore = suite.ignore_columns(task)
        if expect.matches_reference:
            check, agreed = check_matches_reference(reference, state, ignore, keys)
            checks.append(check)
        else:
            # Rows the reference solution also writes are expected rows too, listed or not.
            _, agreed = compare(reference.diff, state, merge_ignore(reference.volatile, ignore), keys)
        _merge(accounted, agreed)
    if expect.no_other_writes:
        checks.append(check_no_other_writes(state, accounted, keys))
    if state_only:
        return checks
    checks += check_replies(episode.replies, expect.reply_contains, expect.reply_excludes)
    if expect.graders:
        view = _FixtureOnce(suite, task, episode.seed)
        try:
            for spec in expect.graders:
                checks += run_grader(
                    suite.graders[spec.name], spec, task=task, episode=episode, fixture=view.get, diff=diff
                )
        finally:
            view.close()
    return checks


def _without(diff: Diff, tables: list[str]) -> Diff:
    if not tables or not set(tables) & diff.tables.keys():
        return diff
    return Diff(tables={name: changes for name, changes in diff.tables.items() if name not in tables})


def _merge(into: Accounted, other: Accounted) -> None:
    for op in ("inserted", "updated", "deleted"):
        for table, rows in getattr(other, op).items():
            getattr(into, op)[table] |= rows


class _FixtureOnce:
    """The fixture view, opened only if a grader asks for it."""

    def __init__(self, suite: Suite, task: Task, seed: int) -> None:
        self._args = (suite, task, seed)
        self._instance: Any = None

    def get(self) -> FixtureView:
        if self._instance is None:
            suite, task, seed = self._args
            self._instance = suite.world.instance(task.fixture, seed=seed, clock=task.clock)
        return FixtureView(self._instance)

    def close(self) -> None:
        if self._instance is not None:
            self._instance.close()


def replay_reference(suite: Suite | str | Path, task: Task | str, seed: int) -> Grade:
    """Grade the task's own reference solution, as if an agent had made exactly those calls.

    A test that every shipped task is consistent is then one line per task:
    `assert replay_reference(suite, task, seed).passed`. Only the checks about the world's state
    are graded (rows, unchanged tables, no_other_writes, matches_reference): the reference has no
    conversation, so reply checks and Python graders are left out.
    Raises ReferenceFailed when a reference call fails on the fixture.
    """
    suite = suite if isinstance(suite, Suite) else _load(str(suite))
    task = task if isinstance(task, Task) else suite.task(task)
    log, diff = replay(suite.world, task.fixture, seed, task.clock, task.reference)
    return grade_state(suite, task, reference_episode(suite, task, seed, log, diff))


def grade_state(suite: Suite, task: Task, episode: Episode) -> Grade:
    """`episode` graded on the world's state only (rows, unchanged tables, no_other_writes,
    matches_reference): for episodes with no conversation, such as a replayed reference."""
    return Grade.from_checks(
        _checks(suite, task, episode, state_only=True), pass_threshold=suite.pass_threshold
    )


@cache
def _load(path: str) -> Suite:
    return load_suite(path)


def reference_episode(suite: Suite, task: Task, seed: int, log: list, diff: Diff) -> Episode:
    """The reference solution as an Episode: its calls, as events, and its diff."""
    events: list[Event] = [Event(kind="user", agent="reference", content=task.user.message)]
    for record in log:
        events.append(
            Event(kind="tool_call", agent="reference", tool=record.tool, arguments=record.arguments)
        )
        events.append(
            Event(
                kind="tool_result",
                agent="reference",
                tool=record.tool,
                ok=record.ok,
                result=record.value,
                error=record.error.model_dump() if record.error else None,
            )
        )
    return Episode(
        harness="reference",
        harness_hash="",
        model="reference",
        world=suite.world.name,
        fixture=task.fixture,
        seed=seed,
        clock=task.clock,
        task_id=task.id,
        events=events,
        calls=log,
        diff=diff,
        stop_reason="reply",
    )
