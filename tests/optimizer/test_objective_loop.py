"""`optimize run --objective tokens`: a variant that says the same in fewer words is kept, with both
figures in its commit; one that saves words by dropping what the agent needs is not; and under the
default objective the shorter prompt changes no outcome, so it never reaches the gate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from notes_desk import MAGIC, PROMPT, agent, git, make_workspace
from rich.console import Console

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    Operator,
    OptimizeConfig,
    OptimizeResult,
    Proposal,
    ProposalContext,
    StepRecord,
    optimize,
)
from atoll.views.optimize import render_optimize_result
from atoll.views.report import render_report, write_html_report

PADDING = "Be warm, patient and thorough with every customer who writes to the desk. " * 12


class Trim(Operator):
    """Drops the padding: the same instructions in fewer words."""

    name = "trim"

    def __init__(self, keep_magic: bool = True) -> None:
        self.keep_magic = keep_magic

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        kept = f"{MAGIC}\n" if self.keep_magic else ""
        files[PROMPT] = f"You keep notes on orders.\n{kept}"
        if files == context.files:
            return None
        return Proposal.build(
            operator=self.name,
            rationale="Drop the padding." if self.keep_magic else "Drop everything but the first line.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    prompt = f"You keep notes on orders.\n{MAGIC}\n{PADDING}\n"
    return make_workspace(tmp_path / "repo", prompt=prompt, val=list(range(7, 13)))


def run(root: Path, proposers: list, **overrides):
    config = OptimizeConfig(
        harness=root / "h",
        suite=root / "s",
        max_proposals=1,
        max_minutes=None,
        **overrides,
    )
    store = RunStore(root.parent / "runs.sqlite")
    try:
        return asyncio.run(optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=proposers))
    finally:
        store.close()


def test_fewer_tokens_at_equal_quality_is_kept_with_both_figures_in_the_commit(workspace: Path) -> None:
    result = run(workspace, [Trim()], objective="tokens")

    (step,) = result.steps
    assert step.verdict == "accept", step.reasons
    assert step.objective == "tokens" and step.candidate_spend < step.incumbent_spend
    assert step.reduction_lower_bound > 0.10
    assert result.val_final == result.val_start and result.val_spend_final < result.val_spend_start
    message = git(workspace, "log", "-1", "--format=%B")
    assert "Sign test p=" in message and "Objective: tokens (minimum reduction 10%)" in message
    console = Console(width=200, record=True)
    console.print(render_optimize_result(result))
    shown = console.export_text()
    assert "tokens start" in shown and "tokens final" in shown and "(cut bound +" in shown
    (best,) = result.frontier()  # the trimmed prompt: as good as the start, and cheaper
    assert best.label == "proposal 1 (trim)" and best.accepted and best.spend == result.val_spend_final


def test_a_cut_that_loses_quality_is_dropped_by_the_screen(workspace: Path) -> None:
    result = run(workspace, [Trim(keep_magic=False)], objective="tokens")

    (step,) = result.steps
    assert step.verdict == "screened_out"
    assert "quality fell behind" in step.reasons[0]
    assert result.final_hash == result.start_hash


def test_under_the_quality_objective_a_shorter_prompt_changes_nothing_worth_a_gate(workspace: Path) -> None:
    result = run(workspace, [Trim()])

    (step,) = result.steps
    assert step.verdict == "screened_out" and "changed no outcome" in step.reasons[0]
    assert step.objective is None and result.objective == "quality"


def test_a_cut_that_breaks_a_task_the_incumbent_passed_is_confirmed_on_more_seeds_and_dropped(
    workspace: Path,
) -> None:
    """At k=1 the always-passed veto cannot see a broken task; the would-be accept reruns it on 3 seeds."""

    def loses_order_1012_without_padding(request) -> str | dict:
        system, last = request.messages[0]["content"], request.messages[-1]
        if PADDING.strip() not in system and "ORD-1012" in str(last["content"]):
            return "Sorry, I can't do that."
        return agent(request)

    def trim_with(confirm_k: int) -> StepRecord:
        config = OptimizeConfig(
            harness=workspace / "h",
            suite=workspace / "s",
            max_proposals=1,
            max_minutes=None,
            objective="tokens",
            objective_rule={"tolerance": 0.6},  # one task of six may fall: only the veto can refuse it
            confirm_k=confirm_k,
            commit=False,
        )
        store = RunStore(workspace.parent / f"runs-{confirm_k}.sqlite")
        try:
            model = ScriptedModel(fn=loses_order_1012_without_padding)
            (step,) = asyncio.run(optimize(config, store=store, model=model, proposers=[Trim()])).steps
            return step
        finally:
            store.close()

    step = trim_with(confirm_k=3)
    assert step.verdict == "reject"
    assert any("note-12 (0/3)" in reason for reason in step.reasons), step.reasons
    assert trim_with(confirm_k=0).verdict == "accept"  # the k=1 decision alone keeps it


@given(st.lists(st.tuples(st.sampled_from([0.2, 0.5, 0.8]), st.sampled_from([10.0, 20.0, 30.0])), max_size=8))
def test_the_frontier_holds_exactly_the_candidates_nothing_beats_on_both(points: list) -> None:
    steps = [
        StepRecord(
            iteration=i,
            operator="op",
            rationale="",
            verdict="reject",
            candidate_score=q,
            candidate_spend=c,
            p_value=0.5,
        )
        for i, (q, c) in enumerate(points)
    ]
    result = OptimizeResult(
        run_id="r",
        status="finished",
        stop_reason="",
        start_hash="a",
        final_hash="a",
        val_start=0.5,
        val_final=0.5,
        val_spend_start=20.0,
        steps=steps,
    )
    every = [(0.5, 20.0), *points]
    frontier = {(p.quality, p.spend) for p in result.frontier()}
    for quality, spend in every:
        beaten = any(q >= quality and c <= spend and (q, c) != (quality, spend) for q, c in every)
        assert ((quality, spend) in frontier) != beaten


def test_the_report_shows_both_figures_and_the_frontier_in_the_terminal_and_html(workspace: Path) -> None:
    result = run(workspace, [Trim()], objective="tokens")
    with RunStore(workspace.parent / "runs.sqlite") as store:
        console = Console(width=200, record=True)
        console.print(render_report(store, result.run_id))
        page = write_html_report(store, result.run_id, workspace.parent / "report.html").read_text()
    shown = console.export_text()
    assert "and tokens per episode" in shown and "Quality / tokens frontier" in shown
    assert "proposal 1 (trim)" in shown and "Quality / tokens frontier" in page
