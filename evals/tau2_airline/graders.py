"""The airline suite's Python graders: τ²'s COMMUNICATE check and its typed comparison (shared with the
retail suite), and the part of τ²'s DB check that Atoll's reference check leaves out on purpose.

Atoll's `matches_reference` treats the ids of new rows as interchangeable (an agent does not choose
them). τ² names new reservations HATHAT, HATHAU, HATHAV in booking order and compares its databases
by those names, so booking the same trips in another order fails τ². Where a task's reference books
more than one reservation, `reservations_as_reference` checks what each new id holds, as τ² does.
"""

import json
from functools import cache

from atoll.evals import Check, grader
from atoll.evals.tau2_retail.graders import communicates, stored_as_reference
from atoll.worlds import get_world

NEW_TABLES = ("reservations", "reservation_flights", "reservation_passengers", "reservation_payments")

__all__ = ["communicates", "reservations_as_reference", "stored_as_reference"]


@cache
def _reference_rows(fixture: str, seed: int, clock: str, calls: str) -> dict[str, list]:
    """The new rows the reference (`calls`, as JSON) writes: replayed once per fixture, seed and clock."""
    with get_world("tau2_airline").instance(fixture, seed=seed, clock=clock) as instance:
        for tool, arguments in json.loads(calls):
            instance.call(tool, **arguments)
        return _new_rows(instance.diff())


def _new_rows(diff) -> dict[str, list]:
    return {table: sorted(diff.table(table).inserted, key=repr) for table in NEW_TABLES}


@grader
def reservations_as_reference(task, episode):
    """Each new reservation id holds the trip, passengers and payments the reference gives it."""
    calls = json.dumps([(step.tool, step.arguments) for step in task.reference])
    expected = _reference_rows(task.fixture, episode.seed, task.clock, calls)
    actual = _new_rows(episode.diff)
    wrong = [table for table in NEW_TABLES if actual[table] != expected[table]]
    feedback = (
        f"the new reservations differ from the reference's, id by id, in {', '.join(wrong)}"
        if wrong
        else "each new reservation id holds what the reference's holds"
    )
    return Check(name="new reservations as in the reference", passed=not wrong, feedback=feedback)
