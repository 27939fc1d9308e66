"""Proposals that repeat what was already tried: passed over without using a proposal slot, asked again a
bounded number of times, and, when nothing new comes, recorded as `duplicate` with what they repeated,
in the live lines and in the summary."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from notes_desk import PROMPT, Helpful, agent, make_workspace
from rich.console import Console

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, OptimizerEvent, Proposal, ProposalContext, optimize
from atoll.optimizer._proposing import REASKS
from atoll.views.optimize import event_line, render_optimize_result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))


class Counted(Helpful):
    """The helpful operator, counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def propose(self, context: ProposalContext) -> Proposal | None:
        self.asked += 1
        return await super().propose(context)


class FirstNoChange(Helpful):
    """Hands back the incumbent's own files the first time it is asked (as a proposer that skips
    `Proposal.build` can), then the helpful line."""

    name = "first_no_change"

    def __init__(self) -> None:
        self.asked = 0

    async def propose(self, context: ProposalContext) -> Proposal | None:
        self.asked += 1
        if self.asked == 1:
            files = dict(context.files)
            return Proposal(
                operator=self.name, rationale="same", files=files, parent_hash=context.harness_hash, patch=""
            )
        return await super().propose(context)


class BreaksTheTemplate(Operator):
    name = "breaks_the_template"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = {**context.files, PROMPT: context.files[PROMPT] + "{{ 1 / 0 }}\n"}
        return Proposal.build(
            operator=self.name,
            rationale="break",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def run(root: Path, proposers: list, *, resume: str | None = None, on_event=None, **overrides):
    config = OptimizeConfig(
        harness=root / "h", suite=root / "s", max_minutes=None, **{"max_proposals": 3, **overrides}
    )
    store = RunStore(root.parent / "runs.sqlite")
    try:
        return asyncio.run(
            optimize(
                config,
                resume=resume,
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=proposers,
                on_event=on_event,
            )
        )
    finally:
        store.close()


def test_a_proposal_with_no_change_is_passed_over_without_using_a_proposal(workspace: Path):
    proposer, lines = FirstNoChange(), []

    result = run(workspace, [proposer], max_proposals=1, on_event=lambda e: lines.append(event_line(e)))

    assert [step.verdict for step in result.steps] == ["accept"]
    assert proposer.asked == 2
    assert any(
        line
        and line.endswith("duplicate, not counted: first_no_change proposed no change from the incumbent")
        for line in lines
    )


def test_a_proposer_that_only_repeats_itself_is_asked_a_bounded_number_of_times_and_the_step_says_why(
    workspace: Path,
):
    proposer, events = Counted(), []

    # 1: the helpful line (accepted); 2: the line again (new files, screened out); 3: that again.
    result = run(workspace, [proposer], on_event=events.append)

    assert [step.verdict for step in result.steps] == ["accept", "screened_out", "duplicate"]
    assert proposer.asked == 2 + REASKS + 1
    assert result.steps[2].reasons == ["helpful: the same files as proposal 2 (screened_out)"]
    lines = [line.split("] ", 1)[1] for line in map(event_line, events) if line]
    repeat = "duplicate, not counted: helpful proposed the same files as proposal 2 (screened_out)"
    assert [line for line in lines if line.startswith("duplicate")] == [
        repeat,
        f"{repeat}; asked again, 2 of 3 times",
        f"{repeat}; asked again, 3 of 3 times",
        "duplicate: the proposers only repeated earlier proposals (3 repeats); proposal 3 of 3 is spent",
    ]
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(render_optimize_result(result))
    summary = " ".join(console.export_text().split())
    assert "│ 3 │ helpful │ duplicate │" in summary
    assert "why not: helpful: the same files as proposal 2 (screened_out)" in summary


def test_a_repeat_of_an_invalid_proposal_is_told_as_such(workspace: Path):
    result = run(workspace, [BreaksTheTemplate()], max_proposals=2)

    assert [step.verdict for step in result.steps] == ["invalid", "duplicate"]
    assert result.steps[1].reasons == ["breaks_the_template: the same files as proposal 1 (invalid)"]


def test_a_run_interrupted_while_passing_over_a_repeat_resumes_to_the_same_steps(workspace: Path):
    def interrupt(event: OptimizerEvent) -> None:
        if event.status.stage.startswith("duplicate, not counted"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(workspace, [Helpful()], on_event=interrupt)

    result = run(workspace, [Helpful()], resume="latest")

    assert [step.verdict for step in result.steps] == ["accept", "screened_out", "duplicate"]
    assert result.steps[2].reasons == ["helpful: the same files as proposal 2 (screened_out)"]
