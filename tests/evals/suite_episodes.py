"""Episodes made by hand for a shipped suite's tests: exact calls on a fresh instance, exact replies."""

from __future__ import annotations

from atoll.evals import ReferenceCall, Suite, Task
from atoll.harnesses import Episode, Event


def played(suite: Suite, task: Task, seed: int, calls: list[ReferenceCall], replies: list[str]) -> Episode:
    """An episode of `task` that made exactly `calls` on a fresh instance and said `replies`."""
    with suite.world.instance(task.fixture, seed=seed, clock=task.clock) as instance:
        for call in calls:
            result = instance.call(call.tool, **call.arguments)
            assert result.ok, f"{task.id}: {call.tool} failed: {result.error}"
        log, diff = list(instance.log), instance.diff()
    events = [Event(kind="user", agent="desk", content=task.user.message)]
    events += [Event(kind="assistant", agent="desk", content=reply) for reply in replies]
    return Episode(
        harness="test",
        harness_hash="",
        model="scripted",
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
