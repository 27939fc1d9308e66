"""The τ² suites' Python graders: τ²-bench's COMMUNICATE check, exactly, and the part of its DB check
that compares types.

τ² counts a fact as told when the string appears in one of the agent's messages, case ignored and
commas removed from the message (so "1,093.34" tells "1093.34"); Atoll's `reply_contains` neither
drops commas nor looks at messages one by one, so the suites use `communicates` instead.

τ² hashes its database as JSON, so bags stored as "2" or 2.0 (the world stores what the agent gave, as
τ² does) fail a task whose gold stores 2; Atoll's `matches_reference` compares numbers as numbers, so
`stored_as_reference` checks that each row both changed holds the reference's values, types included.
"""

import json
from functools import cache

from atoll.evals import Check, grader
from atoll.worlds import get_world

__all__ = ["communicates", "stored_as_reference"]


@cache
def _reference_updates(world: str, fixture: str, seed: int, clock: str, calls: str) -> dict[str, dict]:
    """What the reference (`calls`, as JSON) writes into existing rows, by table and key, as JSON texts."""
    with get_world(world).instance(fixture, seed=seed, clock=clock) as instance:
        for tool, arguments in json.loads(calls):
            instance.call(tool, **arguments)
        return _updates(instance.diff())


def _updates(diff) -> dict[str, dict]:
    return {
        table: {
            json.dumps(u.key, sort_keys=True): json.dumps(u.after, sort_keys=True) for u in changes.updated
        }
        for table, changes in diff.tables.items()
    }


@grader
def stored_as_reference(task, episode):
    """Each existing row the episode and the reference both changed holds the reference's values with
    their types (τ²'s hash tells 2 from 2.0 and "2")."""
    calls = json.dumps([(step.tool, step.arguments) for step in task.reference])
    expected = _reference_updates(episode.world, task.fixture, episode.seed, task.clock, calls)
    actual = _updates(episode.diff)
    wrong = sorted(
        table
        for table, rows in actual.items()
        if any(
            key in expected.get(table, {}) and after != expected[table][key] for key, after in rows.items()
        )
    )
    feedback = (
        f"rows of {', '.join(wrong)} hold other values or types than the reference's"
        if wrong
        else "each row changed as in the reference holds the reference's values and types"
    )
    return Check(name="values stored as in the reference", passed=not wrong, feedback=feedback)


@grader
def communicates(task, episode, info: list[str]):
    """Each string of τ²'s `communicate_info` appears in one of the agent's messages to the user."""
    checks = []
    for text in info:
        said = next(
            (reply for reply in episode.replies if text.lower() in reply.lower().replace(",", "")), None
        )
        feedback = (
            f"said {text!r}"
            if said is not None
            else f"expected the agent to tell the user {text!r}; it did not"
        )
        checks.append(Check(name=f"communicates {text!r}", passed=said is not None, feedback=feedback))
    return checks
