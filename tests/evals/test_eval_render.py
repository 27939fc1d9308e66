"""What people see: the progress bar, the summary tables, the runs list and one episode with its verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world
from rich.console import Console

from atoll.evals import RunStore, evaluate_batch, load_suite
from atoll.harnesses.models import ModelRequest, ScriptedModel
from atoll.views.evals import progress_bar, render_eval_result, render_run, render_runs


def text(renderable) -> str:
    console = Console(record=True, width=200)
    console.print(renderable)
    return console.export_text()


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


def sloppy(request: ModelRequest):
    """Refunds, but never says the amount: fails one check of refund-damaged."""
    if request.messages[-1]["role"] == "tool":
        return "All done."
    from minidesk.agent import solve

    return solve(request)


async def test_the_summary_shows_each_task_and_the_overall_figures(suite) -> None:
    result = await evaluate_batch(harness(), suite, model=ScriptedModel(fn=sloppy), split="val", k=2)
    shown = text(render_eval_result(result))
    assert "refund-damaged" in shown and "cancel-shipped" in shown
    assert "pass^2" in shown and "mean score" in shown and "latency p50 / p95" in shown
    refund_row = next(line for line in shown.splitlines() if "refund-damaged" in line)
    assert "0.750" in refund_row and "0.0%" in refund_row
    assert f"run {result.run_id}" in shown


async def test_show_lists_failing_checks_and_one_task_shows_transcript_diff_and_verdicts(
    suite, tmp_path: Path
) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = await evaluate_batch(
            harness(), suite, model=ScriptedModel(fn=sloppy), split="val", store=store
        )
        overview = text(render_run(store, result.run_id))
        assert "Failing episodes" in overview
        assert "✗ reply_contains 'refund': expected the agent to tell the user 'refund'" in overview
        one = text(render_run(store, result.run_id, "refund-damaged", 0))
        assert "User: My order ORD-1 arrived broken" in one and "refund_order(" in one
        assert "World diff" in one and "Grade 0.750 — failed" in one
        assert "✗" in one and "mentions amount" in one
        runs = text(render_runs(store.runs()))
        assert result.run_id in runs and "finished" in runs


async def test_the_progress_bar_follows_the_batch(suite) -> None:
    console = Console(record=True, width=160, force_terminal=False)
    with progress_bar(console) as on_progress:
        await evaluate_batch(harness(), suite, model=solver(), on_progress=on_progress)
    shown = console.export_text()
    assert "5/5" in shown and "5 pass" in shown and "0 err" in shown
