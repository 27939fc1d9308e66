"""Confirming a candidate on val in looks: one that has fallen behind, or can no longer be accepted, stops
before it plays the whole split; one that wins plays it all and is kept, as before."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from notes_desk import MAGIC, PROMPT, Helpful, make_workspace

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, Proposal, ProposalContext, optimize
from atoll.worlds.base.stats import PairedScores, decide, futility, look_sizes

ODD_ONLY = "ODD ORDERS ONLY."


def agent(request) -> str | dict:
    """Adds the note on even orders as shipped, on every order when told to always add one, and on odd
    orders only under the odd-orders line: a change that wins half the tasks and loses the other half."""
    system, last = request.messages[0]["content"], request.messages[-1]
    if last["role"] == "tool":
        return "Done, the note is on the order."
    order = re.search(r"ORD-(\d+)", last["content"])
    number = int(order.group(1))
    odd = bool(number % 2)
    if (MAGIC in system and ODD_ONLY not in system) or (ODD_ONLY in system) == odd:
        return {
            "tool_calls": [{"name": "add_order_note", "arguments": {"order_id": order.group(), "note": "x"}}]
        }
    return "Sorry, I can't do that."


class Lopsided(Operator):
    name = "lopsided"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = {**context.files, PROMPT: context.files[PROMPT] + ODD_ONLY + "\n"}
        return Proposal.build(
            operator=self.name,
            rationale="Odd orders only.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def run(root: Path, proposer: Operator, **options):
    store = RunStore(root.parent / "runs.sqlite")
    config = OptimizeConfig(
        harness=root / "h", suite=root / "s", max_proposals=1, max_minutes=None, score_test=False, **options
    )
    try:
        result = asyncio.run(
            optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=[proposer])
        )
        played = store.db.execute(
            "SELECT count(*) FROM episodes e JOIN runs r ON r.id = e.run_id "
            "WHERE r.id LIKE ? AND r.harness_hash != ?",
            [f"{result.run_id}-gate%", result.start_hash],
        ).fetchone()[0]
        return result, played
    finally:
        store.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(
        tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(9, 21)), tasks=20
    )


def test_a_candidate_that_wins_half_and_loses_half_stops_before_the_end_of_val(workspace: Path) -> None:
    result, played = run(workspace, Lopsided())
    [step] = result.steps
    assert step.verdict == "reject"
    assert re.match(r"(behind|cannot win) after \d+ of 12 val tasks", step.reasons[0]), step.reasons
    assert 0 < played < 12


def test_with_one_look_it_plays_all_of_val(workspace: Path) -> None:
    result, played = run(workspace, Lopsided(), val_looks=1)
    assert result.steps[0].verdict == "reject" and played == 12


def test_a_winner_plays_every_look_and_is_kept(workspace: Path) -> None:
    result, played = run(workspace, Helpful())
    assert [step.verdict for step in result.steps] == ["accept"]
    assert played == 12 and result.val_final == 1.0


def test_look_sizes_end_at_the_whole_split() -> None:
    assert look_sizes(50, 4) == [13, 25, 38, 50]
    assert look_sizes(3, 4) == [1, 2, 3]
    assert look_sizes(10, 1) == [10]


def test_futility_stops_a_candidate_behind_or_out_of_reach_and_never_one_that_could_still_win() -> None:
    tasks = [f"t{i}" for i in range(20)]
    incumbent = {t: [0.0] for t in tasks}

    def seen(wins: int, losses: int, ties: int) -> tuple[PairedScores, dict]:
        played = tasks[: wins + losses + ties]
        before = {t: [1.0 if wins <= i < wins + losses else 0.0] for i, t in enumerate(played)}
        after = {t: [1.0 if i < wins else 0.0] for i, t in enumerate(played)}
        left = {t: incumbent[t] for t in tasks[len(played) :]}
        return PairedScores(incumbent=before, candidate=after), left

    assert futility(*seen(1, 2, 2)).startswith("behind after 5 of 20")
    assert futility(*seen(3, 0, 2)) is None
    # 0 wins, 0 losses, 17 ties: the 3 tasks left cannot carry a sign test at 0.05.
    assert futility(*seen(0, 0, 17)).startswith("cannot win after 17 of 20")
    # Never stops a candidate whose best completion the rule accepts.
    scores, left = seen(2, 1, 2)
    best = PairedScores(
        incumbent={**scores.incumbent, **left}, candidate={**scores.candidate, **{t: [1.0] for t in left}}
    )
    assert decide(best).accepted and futility(scores, left, behind=False) is None
