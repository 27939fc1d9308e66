"""The seam between the batch runner and where episodes are played, and the default: this process.

The batch runner plans, reuses, grades and stores; an executor only plays (task, seed) episodes and
hands each to the runner's `on_played` as it finishes, which grades and stores it before the episode's
slot is given to the next. So grading, the runs store and `--resume` behave the same whatever plays the
episodes, what finished is stored even when the batch is interrupted a moment later, and an executor
that loses a process loses at most the episodes in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel

from atoll.harnesses import Episode, Harness, run_episode
from atoll.harnesses.models import Model, ModelError
from atoll.worlds import AtollError, Instance, World

from .._suite import Task
from .._users import user_for

OnPlayed = Callable[[Task, int, Episode], None]


class ExecutorError(AtollError):
    """An executor cannot be set up: an unknown `--executor`, a missing extra, a model that cannot travel."""


@dataclass(frozen=True)
class BatchSetup:
    """What every episode of one batch shares; the executor decides where it is played.

    `world` is the suite's world (the harness drives the same one); `concurrency` is the most episodes
    in flight at once for the whole batch, wherever they run (see `in_flight` for one process's share).
    """

    harness: Harness
    world: World
    model: Model
    user_model: Model | None
    concurrency: int


@runtime_checkable
class Executor(Protocol):
    """Plays a batch's episodes, calling `on_played(task, seed, episode)` as each finishes.

    `on_played` grades and stores the episode; the executor calls it before it starts another episode
    in that one's place, and never after `play` has returned. When `play` is cancelled (an interrupt)
    or `on_played` or an episode raises (a harness or script error; a model outage is recorded by the
    episode), the episodes still in flight are stopped and the exception goes on.
    """

    name: str

    async def play(
        self, setup: BatchSetup, episodes: Sequence[tuple[Task, int]], on_played: OnPlayed
    ) -> None: ...


def in_flight(model: Model, concurrency: int) -> int:
    """How many episodes one process runs at once: `concurrency`, or fewer where the model says it serves
    fewer (its `max_concurrency`; the local model serves one per process)."""
    cap = getattr(model, "max_concurrency", None)
    return min(concurrency, cap) if cap else concurrency


async def play_episode(
    harness: Harness,
    instance: Instance,
    task: Task,
    seed: int,
    model: Model,
    user_model: Model | None,
    models: Mapping[str, Model] | None = None,
) -> Episode:
    """One episode of `task` at `seed` on `instance`; a model outage becomes an errored episode, not an error."""
    user = user_for(task, model=user_model or model, sample=seed)
    try:
        return await run_episode(
            harness,
            instance,
            model,
            user,
            sample=seed,
            task_id=task.id,
            task_context=task.context,
            models=models,
        )
    except ModelError as error:  # the runtime records these itself; this is the safety net
        return Episode(
            harness=harness.name,
            harness_hash=harness.hash,
            model=model.name,
            world=instance.world.name,
            fixture=task.fixture,
            seed=seed,
            clock=task.clock,
            task_id=task.id,
            calls=list(instance.log),
            diff=instance.diff(),
            stop_reason="model_error",
            error=f"{type(error).__name__}: {error}",
        )


class LocalExecutor:
    """Episodes as asyncio tasks in this process, at most `in_flight(model, concurrency)` at once, started
    in plan order. Nothing blocks the event loop for long: instances cost about a millisecond, tool calls
    are fast, and a model that computes in-process (the local provider) does so in a thread."""

    name = "local"

    async def play(
        self, setup: BatchSetup, episodes: Sequence[tuple[Task, int]], on_played: OnPlayed
    ) -> None:
        slots = asyncio.Semaphore(in_flight(setup.model, setup.concurrency))  # FIFO: plan order
        failed = False

        async def one(task: Task, seed: int) -> None:
            nonlocal failed
            async with slots:  # held until the episode is stored: the next starts only then
                if failed:  # an episode or its storing raised: start no more
                    return
                try:
                    with setup.world.instance(task.fixture, seed=seed, clock=task.clock) as instance:
                        episode = await play_episode(
                            setup.harness, instance, task, seed, setup.model, setup.user_model
                        )
                    on_played(task, seed, episode)
                except BaseException:
                    failed = True
                    raise

        running = [asyncio.ensure_future(one(task, seed)) for task, seed in episodes]
        try:
            await asyncio.gather(*running)
        finally:
            for future in running:
                future.cancel()
            await asyncio.gather(*running, return_exceptions=True)


class ExecutorChoice(BaseModel):
    """A parsed `--executor`: `local`, or Ray at `address` (None: $RAY_ADDRESS, else a new local cluster)."""

    kind: Literal["local", "ray"]
    address: str | None = None
    workers: int | None = None


EXECUTOR_HELP = "local, ray, or ray://HOST:PORT, each Ray form optionally with ?workers=N"


def parse_executor(spec: str) -> ExecutorChoice:
    """`local`, `ray`, `ray://HOST:PORT`, the Ray forms optionally with `?workers=N` (worker processes;
    default one per CPU of the cluster). Raises ValueError naming the accepted forms."""
    target, _, query = spec.strip().partition("?")
    workers = None
    if query:
        name, _, value = query.partition("=")
        if name != "workers" or not value.isdigit() or int(value) < 1:
            raise ValueError(f"unknown executor option {query!r} in {spec!r}; use ?workers=N (N >= 1)")
        workers = int(value)
    if target == "local" and not query:
        return ExecutorChoice(kind="local")
    if target == "ray":
        return ExecutorChoice(kind="ray", workers=workers)
    host, _, port = target.removeprefix("ray://").rpartition(":")
    if target.startswith("ray://") and host and port.isdigit():
        return ExecutorChoice(kind="ray", address=target, workers=workers)
    raise ValueError(f"unknown executor {spec!r}: use {EXECUTOR_HELP}")


def _checked(spec: str) -> str:
    parse_executor(spec)
    return spec


ExecutorSpec = Annotated[str, AfterValidator(_checked)]
"""An executor named in a config (`OptimizeConfig.executor`, `GateConfig.executor`): checked as it is set."""
