"""The batch runner: tasks × seeds in parallel, graded, stored, resumable, and never felled by a model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from minidesk.agent import SUITE, harness, solve, solver
from minidesk.world import world

from atoll.evals import (
    BatchError,
    BatchProgress,
    RunStore,
    SuiteError,
    evaluate,
    evaluate_batch,
    load_suite,
    resume,
    resume_batch,
)
from atoll.harnesses import Harness
from atoll.harnesses.models import (
    ModelParams,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    ScriptedModel,
    get_model,
)
from atoll.worlds import World


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(tmp_path / "runs.sqlite") as opened:
        yield opened


async def test_a_batch_runs_every_task_at_every_seed_and_reports_progress(suite, store) -> None:
    events: list[BatchProgress] = []
    result = await evaluate_batch(harness(), suite, model=solver(), store=store, on_progress=events.append)
    assert [(r.task_id, r.seed) for r in result.results] == [
        ("refund-damaged", 0),
        ("refund-damaged", 1),
        ("cancel-shipped", 0),
        ("cancel-shipped", 1),
        ("refuse-refund-twice", 3),
    ]
    assert all(r.passed for r in result.results)
    assert result.metrics.mean_score == 1.0 and result.metrics.pass_k == {1: 1.0}
    assert result.metrics.usage.prompt_tokens > 0 and result.metrics.errors == 0
    assert [e.kind for e in events] == ["start"] + ["episode"] * 5 + ["finish"]
    assert (events[0].total, events[0].done) == (5, 0)
    assert (events[-1].done, events[-1].passed, events[-1].errors) == (5, 5, 0)
    assert events[-1].usage == result.metrics.usage
    run = store.run(result.run_id)
    assert (run.status, run.metrics.episodes, run.harness_hash) == ("finished", 5, harness().hash)
    assert store.harness_files(run.harness_hash) == harness().files()


async def test_k_runs_each_task_exactly_k_times_and_reports_pass_hat_k(suite) -> None:
    result = await evaluate_batch(harness(), suite, model=solver(), split="val", k=3)
    assert len(result.results) == 6 and set(result.metrics.pass_k) == {1, 3}
    assert result.scores() == {"refund-damaged": [1.0, 1.0, 1.0], "cancel-shipped": [1.0, 1.0, 1.0]}


async def test_a_model_that_stays_down_gives_errored_episodes_not_a_crashed_batch(suite, store) -> None:
    def flaky(request: ModelRequest):
        if "cancel" in request.messages[1]["content"].lower():
            return ModelUnavailable("scripted outage")
        return solve(request)

    result = await evaluate_batch(harness(), suite, model=ScriptedModel(fn=flaky), store=store)
    errored = [r for r in result.results if r.errored]
    assert [(r.task_id, r.seed) for r in errored] == [("cancel-shipped", 0), ("cancel-shipped", 1)]
    assert all(r.score == 0.0 and r.episode.stop_reason == "model_error" for r in errored)
    assert "scripted outage" in errored[0].grade.checks[0].feedback
    assert result.metrics.errors == 2 and result.metrics.per_task["cancel-shipped"].errors == 2
    assert result.metrics.mean_score == pytest.approx(2 / 3)
    stored = store.episodes(result.run_id, task_id="cancel-shipped")
    assert [r.errored for r in stored] == [True, True]


class CountingModel:
    """Solves tasks slowly and records how many calls were in flight at once."""

    name = "counting"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.in_flight = 0
        self.most = 0
        self.calls = 0

    async def complete(
        self, messages: list[dict], *, tools=None, params: ModelParams | None = None, sample: int = 0
    ) -> ModelResponse:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.calls += 1
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        return await ScriptedModel(fn=solve).complete(messages, tools=tools, params=params, sample=sample)


async def test_no_more_episodes_run_at_once_than_the_concurrency_limit(suite) -> None:
    model = CountingModel(0.01)
    result = await evaluate_batch(harness(), suite, model=model, seeds=list(range(6)), concurrency=4)
    assert len(result.results) == 18 and model.most == 4


async def test_a_model_that_serves_one_request_at_a_time_runs_one_episode_at_a_time(suite) -> None:
    # The local model: interleaved episodes would only evict each other's evaluated conversation.
    model = CountingModel(0.01)
    model.max_concurrency = 1
    result = await evaluate_batch(harness(), suite, model=model, seeds=list(range(2)), concurrency=4)
    assert len(result.results) == 6 and model.most == 1
    assert (
        get_model("local/gemma-3-270m").max_concurrency == 1
        and get_model("openai/gpt-4o").max_concurrency is None
    )


async def test_a_cancelled_run_leaves_a_readable_store_and_resuming_runs_only_what_is_missing(
    suite, tmp_path: Path
) -> None:
    path = tmp_path / "runs.sqlite"
    model = CountingModel(0.02)
    enough = asyncio.Event()

    def watch(progress: BatchProgress) -> None:
        if progress.done >= 5:
            enough.set()

    with RunStore(path) as store:
        batch = asyncio.create_task(
            evaluate_batch(
                harness(),
                suite,
                model=model,
                seeds=list(range(8)),
                concurrency=2,
                store=store,
                on_progress=watch,
            )
        )
        waiting = asyncio.create_task(enough.wait())
        await asyncio.wait([batch, waiting], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert enough.is_set() and not batch.done(), "the batch should still be running after 5 episodes"
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch

    with RunStore(path) as reopened:
        (run,) = reopened.runs()
        assert run.status == "interrupted" and run.metrics is None
        kept = reopened.episodes(run.id)
        assert 5 <= len(kept) < 24 and all(r.passed for r in kept)

        events: list[BatchProgress] = []
        resumed = await resume_batch(
            run.id, store=reopened, model=CountingModel(0.0), on_progress=events.append
        )
        assert resumed.run_id == run.id and resumed.resumed == len(kept)
        assert len(resumed.results) == 24 and resumed.metrics.pass_k[1] == 1.0
        assert events[0].done == len(kept) and events[-1].done == 24
        assert sum(e.kind == "episode" for e in events) == 24 - len(kept)
        assert len({(r.task_id, r.seed) for r in reopened.episodes(run.id)}) == 24
        assert reopened.run(run.id).status == "finished"


async def test_resuming_with_a_changed_harness_is_refused(suite, store) -> None:
    result = await evaluate_batch(harness(), suite, model=solver(), split="train", store=store)
    changed = harness(prompt="You are terse. {{ tools }}\n")
    with pytest.raises(BatchError, match=f"cannot resume run {result.run_id}: the harness changed"):
        await evaluate_batch(changed, suite, model=solver(), split="train", store=store, run_id=result.run_id)


async def test_a_task_whose_reference_fails_stops_the_batch_before_any_model_call(tmp_path: Path) -> None:
    root = tmp_path / "s"
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: s\nworld: minidesk.world\n")
    (root / "tasks" / "t.yaml").write_text(
        "- id: cancel-delivered\n  split: val\n  fixture: tiny\n  user: {message: Cancel ORD-1}\n"
        "  reference:\n    - cancel_order: {order_id: ORD-1}\n  expect: {matches_reference: true}\n"
    )
    model = solver()
    with pytest.raises(
        SuiteError,
        match=r"t.yaml: task 'cancel-delivered': reference\[0\] cancel_order\(order_id='ORD-1'\) failed",
    ):
        await evaluate_batch(harness(), load_suite(root, world=world), model=model)
    assert model.requests == []


async def test_a_script_bug_stops_the_batch_and_marks_the_run_failed(suite, store) -> None:
    with pytest.raises(RuntimeError, match="ran out of scripted responses"):
        await evaluate_batch(harness(), suite, model=ScriptedModel([]), store=store)
    (run,) = store.runs()
    assert run.status == "failed"


def test_the_sync_wrapper_runs_a_batch_without_an_event_loop(suite) -> None:
    result = evaluate(harness(), suite, model=solver(), tasks=["cancel-shipped"], seeds=[7])
    assert [(r.task_id, r.seed, r.passed) for r in result.results] == [("cancel-shipped", 7, True)]


async def test_a_harness_for_another_world_is_refused(suite) -> None:
    other = World(
        name="elsewhere", schema="CREATE TABLE things (id TEXT PRIMARY KEY);", documents={"policy": "-"}
    )
    files = {**harness().files(), "tools.yaml": "desk: []\n"}
    with pytest.raises(
        BatchError, match="drives world 'elsewhere' but suite 'minidesk' tests world 'minidesk'"
    ):
        await evaluate_batch(Harness.from_files(files, world=other), suite, model=solver())


async def test_the_sync_wrappers_refuse_to_run_inside_an_event_loop(suite, store) -> None:
    with pytest.raises(BatchError, match=r"use `await evaluate_batch\(...\)`"):
        evaluate(harness(), suite, model=solver())
    with pytest.raises(BatchError, match=r"use `await resume_batch\(...\)`"):
        resume("latest", store=store)


class RaisingModel:
    """A custom model that fails the way third-party code does: not with a ModelError."""

    name = "raising"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def complete(self, messages, *, tools=None, params=None, sample: int = 0) -> ModelResponse:
        raise self.error


@pytest.mark.parametrize(
    "error", [RuntimeError("backend crashed"), TimeoutError(), ValueError("prompt too long")]
)
async def test_any_exception_from_a_custom_model_errors_its_episodes_not_the_batch(
    suite, store, error
) -> None:
    result = await evaluate_batch(harness(), suite, model=RaisingModel(error), store=store)
    assert len(result.results) == 5 and all(r.errored for r in result.results)
    assert all(r.episode.stop_reason == "model_error" for r in result.results)
    assert type(error).__name__ in result.results[0].episode.error
    assert store.run(result.run_id).status == "finished"


async def test_cancelling_a_model_call_still_cancels_the_batch(suite, store) -> None:
    class Hanging(RaisingModel):
        async def complete(self, messages, *, tools=None, params=None, sample: int = 0) -> ModelResponse:
            await asyncio.sleep(60)
            raise AssertionError("unreachable")

    task = asyncio.ensure_future(evaluate_batch(harness(), suite, model=Hanging(RuntimeError()), store=store))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
