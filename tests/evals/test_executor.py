"""The executor seam: the batch runner plans, grades and stores; an executor only plays episodes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence

import pytest
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world
from pydantic import ValidationError

from atoll.evals import (
    BatchSetup,
    Executor,
    ExecutorError,
    LocalExecutor,
    OnPlayed,
    RunStore,
    Task,
    evaluate_batch,
    executor_for,
    load_suite,
    parse_executor,
    play_episode,
)
from atoll.optimizer import GateConfig, OptimizeConfig


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


class Backwards:
    """Plays the episodes one at a time, last first: any order, anywhere, gives the same batch."""

    name = "backwards"

    def __init__(self) -> None:
        self.closed = False

    async def play(
        self, setup: BatchSetup, episodes: Sequence[tuple[Task, int]], on_played: OnPlayed
    ) -> None:
        try:
            for task, seed in reversed(episodes):
                with setup.world.instance(task.fixture, seed=seed, clock=task.clock) as instance:
                    episode = await play_episode(
                        setup.harness, instance, task, seed, setup.model, setup.user_model
                    )
                on_played(task, seed, episode)
        finally:
            self.closed = True


async def test_an_executor_of_ones_own_gives_the_same_scores_in_the_same_order(suite) -> None:
    executor = Backwards()
    assert isinstance(executor, Executor)
    local = await evaluate_batch(harness(), suite, model=solver(), seeds=[0, 1])
    mine = await evaluate_batch(harness(), suite, model=solver(), seeds=[0, 1], executor=executor)
    assert mine.scores() == local.scores() and [r.task_id for r in mine.results] == [
        r.task_id for r in local.results
    ]
    assert executor.closed


async def test_a_failing_batch_closes_its_executor_and_keeps_what_was_stored(suite, tmp_path) -> None:
    executor = Backwards()

    def stop_after_two(progress) -> None:
        if progress.done == 2:
            raise RuntimeError("the progress bar broke")

    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(RuntimeError, match="progress bar broke"):
            await evaluate_batch(
                harness(), suite, model=solver(), store=store, executor=executor, on_progress=stop_after_two
            )
        (run,) = store.runs()
        assert executor.closed and run.status == "failed" and len(store.episodes(run.id)) == 2


async def test_an_interrupt_keeps_every_episode_that_had_finished(suite, tmp_path, monkeypatch) -> None:
    """Each episode is stored before its slot goes to the next, so a Ctrl-C a moment after episodes end
    loses none that ended."""
    finished: list[str] = []

    async def counted(*args, **kwargs):
        episode = await play_episode(*args, **kwargs)
        finished.append(episode.task_id)
        return episode

    monkeypatch.setattr("atoll.evals._executors._base.play_episode", counted)
    with RunStore(tmp_path / "runs.sqlite") as store:
        batch = asyncio.ensure_future(
            evaluate_batch(
                harness(), suite, model=solver(latency_s=0.01), store=store, seeds=[0, 1, 2, 3], concurrency=8
            )
        )
        while len(finished) < 5:
            await asyncio.sleep(0.001)
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        (run,) = store.runs()
        assert run.status == "interrupted" and len(store.episodes(run.id)) == len(finished) >= 5


@pytest.mark.parametrize(
    ("spec", "kind", "address", "workers"),
    [
        ("local", "local", None, None),
        ("ray", "ray", None, None),
        ("ray?workers=4", "ray", None, 4),
        ("ray://head.example:10001", "ray", "ray://head.example:10001", None),
        ("ray://10.0.0.5:10001?workers=16", "ray", "ray://10.0.0.5:10001", 16),
    ],
)
def test_executor_specs_name_where_episodes_run(spec: str, kind: str, address: str | None, workers) -> None:
    choice = parse_executor(spec)
    assert (choice.kind, choice.address, choice.workers) == (kind, address, workers)


@pytest.mark.parametrize("spec", ["dask", "ray://head", "ray://:10001", "ray?workers=0", "local?workers=2"])
def test_an_unknown_executor_is_refused_naming_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ExecutorError, match=r"local, ray, or ray://HOST:PORT|\?workers=N"):
        executor_for(spec)
    with pytest.raises(ValidationError, match="executor"):
        OptimizeConfig(harness="h", executor=spec)
    with pytest.raises(ValidationError, match="executor"):
        GateConfig(harness="h", executor=spec)


def test_local_is_the_default_and_an_executor_object_is_used_as_it_is() -> None:
    assert isinstance(executor_for(None), LocalExecutor) and isinstance(executor_for("local"), LocalExecutor)
    mine = Backwards()
    assert executor_for(mine) is mine
    assert OptimizeConfig(harness="h").executor == GateConfig(harness="h").executor == "local"


def test_ray_without_its_extra_says_how_to_install_it(monkeypatch) -> None:
    from atoll.evals._executors import _ray

    monkeypatch.setattr(_ray.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ExecutorError, match=r"pip install 'atoll\[ray\]'"):
        executor_for("ray://nowhere:1")


def test_nothing_imports_ray_until_a_batch_runs_on_it() -> None:
    code = "import sys; from atoll import cli, evals, optimizer; evals.executor_for('local'); print('ray' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
