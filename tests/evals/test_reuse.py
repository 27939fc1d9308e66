"""Episode reuse: an episode already stored for the same harness, model, task inputs and seed is copied
into a later run, graded again by the suite as it is now, instead of being played a second time."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from minidesk.agent import SUITE, harness, solve, solver
from minidesk.world import world
from rich.console import Console

from atoll.evals import (
    BatchProgress,
    RunStore,
    _batch,
    evaluate_batch,
    load_suite,
    resume_batch,
)
from atoll.harnesses.models import ModelRequest, ModelUnavailable, ScriptedModel
from atoll.views.evals import progress_bar, render_eval_result

ALL = {("refund-damaged", 0), ("refund-damaged", 1), ("cancel-shipped", 0), ("cancel-shipped", 1)}


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(tmp_path / "runs.sqlite") as opened:
        yield opened


def played(model: ScriptedModel) -> set[tuple[str, int]]:
    """The (task, seed) pairs a scripted model was asked about (the opening message names the order)."""
    tasks = {"ORD-1": "refund-damaged", "ORD-2": "cancel-shipped", "ORD-3": "refuse-refund-twice"}
    found = set()
    for request in model.requests:
        opening = next(m["content"] for m in request.messages if m["role"] == "user")
        found.add((tasks[re.search(r"ORD-\d+", opening).group()], request.sample))
    return found


def edited_suite(tmp_path: Path, old: str, new: str, file: str = "tasks/orders.yaml"):
    """A copy of the minidesk suite with one text replaced in one file."""
    copy = tmp_path / "suite"
    shutil.copytree(SUITE, copy)
    path = copy / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    return load_suite(copy, world=world)


async def test_a_second_evaluation_reuses_every_episode_and_makes_no_model_call(suite, store) -> None:
    first = await evaluate_batch(harness(), suite, model=solver(), store=store)
    again, events = solver(), []

    second = await evaluate_batch(harness(), suite, model=again, store=store, on_progress=events.append)

    assert again.requests == []
    assert second.reused == 5 and second.metrics.reused == 5 and first.reused == 0
    assert second.scores() == first.scores() and second.metrics.mean_score == 1.0
    assert all(r.reused_from == first.run_id for r in second.results)
    assert [r.episode for r in second.results] == [r.episode for r in first.results]
    assert [e.kind for e in events] == ["start", "finish"]
    tokens = first.metrics.usage.total_tokens  # what the copies cost when played
    assert (events[0].done, events[0].reused, events[0].usage.total_tokens) == (5, 5, tokens)
    stored = store.episodes(second.run_id)
    assert len(stored) == 5 and {r.reused_from for r in stored} == {first.run_id}
    assert store.run(second.run_id).metrics.reused == 5
    assert {o.reused for o in store.outcomes(second.run_id)} == {True}


async def test_a_third_evaluation_names_the_run_that_played_the_episode(suite, store) -> None:
    first = await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    third = await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    assert {r.reused_from for r in third.results} == {first.run_id}


async def test_reuse_false_runs_every_episode(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), store=store)
    again = solver()
    second = await evaluate_batch(harness(), suite, model=again, store=store, reuse=False)
    assert second.reused == 0 and len(played(again)) == 5
    assert all(r.reused_from is None for r in store.episodes(second.run_id))


async def test_a_changed_harness_is_not_reused(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    again = solver()
    changed = harness(prompt="You run the desk, kindly. {{ documents.policy }}\n{{ tools }}\n")
    result = await evaluate_batch(changed, suite, model=again, split="val", store=store)
    assert result.reused == 0 and played(again) == ALL


async def test_another_model_is_not_reused(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    other = ScriptedModel(fn=solve, name="scripted-other")
    result = await evaluate_batch(harness(), suite, model=other, split="val", store=store)
    assert result.reused == 0 and played(other) == ALL


async def test_a_different_seed_is_not_reused(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    again = solver()
    result = await evaluate_batch(harness(), suite, model=again, split="val", seeds=[1, 2], store=store)
    assert result.reused == 2 and played(again) == {("refund-damaged", 2), ("cancel-shipped", 2)}


async def test_a_changed_user_message_is_not_reused_and_the_other_tasks_are(suite, store, tmp_path) -> None:
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    changed = edited_suite(tmp_path, "Please cancel ORD-2.", "Please cancel ORD-2 today.")
    again = solver()
    result = await evaluate_batch(harness(), changed, model=again, split="val", store=store)
    assert result.reused == 2 and played(again) == {("cancel-shipped", 0), ("cancel-shipped", 1)}


@pytest.mark.parametrize(
    ("file", "old", "new", "failed_check"),
    [
        ("tasks/orders.yaml", 'reply_contains: ["refund"]', 'reply_contains: ["voucher"]', "reply_contains"),
        ("graders.py", "passed=amount in said", "passed=amount not in said", "mentions amount"),
    ],
)
async def test_a_changed_expectation_or_grader_grades_the_copied_episode_by_the_suite_as_it_is_now(
    suite, store, tmp_path, file, old, new, failed_check
) -> None:
    first = await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    changed = edited_suite(tmp_path, old, new, file)
    again = solver()

    result = await evaluate_batch(harness(), changed, model=again, split="val", store=store)

    assert again.requests == [] and result.reused == 4
    assert result.scores()["cancel-shipped"] == first.scores()["cancel-shipped"] == [1.0, 1.0]
    refund = [r for r in result.results if r.task_id == "refund-damaged"]
    assert all(not r.passed and failed_check in r.grade.failed_checks[0].name for r in refund)
    assert [r.grade for r in store.episodes(result.run_id, task_id="refund-damaged")] == [
        r.grade for r in refund
    ]
    kept = store.episodes(first.run_id, task_id="refund-damaged")
    assert all(r.passed for r in kept), "the earlier run's own grades stay as they were"


async def test_an_errored_episode_is_never_reused(suite, store) -> None:
    def down_for_cancels(request: ModelRequest):
        if "cancel" in request.messages[1]["content"].lower():
            return ModelUnavailable("scripted outage")
        return solve(request)

    first = await evaluate_batch(
        harness(), suite, model=ScriptedModel(fn=down_for_cancels, name="scripted-solver"), store=store
    )
    assert first.metrics.errors == 2
    again = solver()

    result = await evaluate_batch(harness(), suite, model=again, store=store)

    assert played(again) == {("cancel-shipped", 0), ("cancel-shipped", 1)}
    assert result.reused == 3 and result.metrics.errors == 0 and result.metrics.mean_score == 1.0


class Stop(Exception):
    """Stops a batch midway."""


async def test_a_resumed_run_keeps_its_reuse_setting(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), store=store)
    started: list[BatchProgress] = []

    def stop_after_one(progress: BatchProgress) -> None:
        started.append(progress)
        if progress.kind == "episode":
            raise Stop

    with pytest.raises(Stop):
        await evaluate_batch(
            harness(),
            suite,
            model=solver(),
            store=store,
            reuse=False,
            concurrency=1,
            on_progress=stop_after_one,
        )
    again = solver()
    resumed = await resume_batch(started[0].run_id, store=store, model=again)
    assert resumed.reused == 0 and len(played(again)) == 4


async def test_the_summary_and_the_progress_bar_show_reused_episodes(suite, store) -> None:
    await evaluate_batch(harness(), suite, model=solver(), store=store)
    console = Console(record=True, width=200, force_terminal=False)
    with progress_bar(console) as on_progress:
        result = await evaluate_batch(harness(), suite, model=solver(), store=store, on_progress=on_progress)
    console.print(render_eval_result(result))
    shown = console.export_text()
    assert "5/5" in shown and "5 reused" in shown
    assert "5 of 5 episodes reused from earlier runs: no model call" in shown
    assert "reused from earlier runs (graded again)" in shown


async def test_a_simulated_user_on_another_model_is_not_reused(store, tmp_path: Path) -> None:
    from test_simulated_user import TASK

    root = tmp_path / "s"
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: s\nworld: minidesk.world\n")
    (root / "tasks" / "t.yaml").write_text(TASK)
    suite = load_suite(root, world=world)

    def customer(request: ModelRequest) -> str:
        return "Thank you!" if sum(m["role"] == "assistant" for m in request.messages) == 1 else "###STOP###"

    def play(name: str):
        return evaluate_batch(
            harness(), suite, model=solver(), user_model=ScriptedModel(fn=customer, name=name), store=store
        )

    await play("customer")
    assert (await play("customer")).reused == 1
    assert (await play("another-customer")).reused == 0


async def test_episodes_played_by_other_atoll_code_are_not_reused(suite, store, monkeypatch) -> None:
    await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    monkeypatch.setattr(_batch, "_runtime_fingerprint", lambda: "an upgraded runtime")
    assert (await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)).reused == 0


async def test_a_store_from_before_reuse_gains_the_columns_and_its_episodes_run_again(
    suite, tmp_path
) -> None:
    path = tmp_path / "old.sqlite"
    with RunStore(path) as store:
        await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX idx_episodes_reuse_key")
        db.execute("ALTER TABLE episodes DROP COLUMN reuse_key")
        db.execute("ALTER TABLE episodes DROP COLUMN reused_from")

    with RunStore(path) as store:
        again = solver()
        result = await evaluate_batch(harness(), suite, model=again, split="val", store=store)
        assert result.reused == 0 and played(again) == ALL
        assert (await evaluate_batch(harness(), suite, model=solver(), split="val", store=store)).reused == 4
