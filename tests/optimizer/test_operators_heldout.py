"""Val and test tasks never become demo material: proposers are handed train tasks only, and the loop
refuses a candidate whose new demos quote a held-out task's opening message.

The desk suite (see test_operators.py) makes copying tempting: its val and test tasks include a
kind of request train lacks (a cancellation, with a tool no train task uses) and notes worded
otherwise.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
import yaml
from notes_desk import agent, make_workspace
from pydantic import ValidationError
from test_operators import HELD_OUT, context_for, desk_agent, desk_files, propose, retrieving, write_suite

from atoll.evals import RunStore, Suite, load_suite
from atoll.harnesses import Demo, Harness
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    AddRule,
    Operator,
    OptimizeConfig,
    Proposal,
    ProposalContext,
    default_operators,
    optimize,
)
from atoll.optimizer._proposal import _plain, held_out_leak


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return load_suite(write_suite(tmp_path_factory.mktemp("desk_suite")))


def test_proposers_are_handed_train_tasks_only(suite: Suite):
    with pytest.raises(ValidationError, match="proposers read train tasks only, not note-val, cancel-val"):
        ProposalContext(files={}, harness_hash="h", train_tasks=suite.tasks, rng=random.Random(0))


def test_no_operator_output_quotes_a_val_or_test_task_or_serves_only_them(suite: Suite):
    """Walk from two starts through chains of proposals (each taken as the next parent), checking every
    proposal of every operator on the way."""
    messages = [_plain(message) for message in HELD_OUT.values()]
    checked = 0
    for start in (desk_files(), retrieving(["get_order", "add_order_note", "track_shipment"], k=2)):
        for walk in range(3):
            files, rng = start, random.Random(walk)
            for _ in range(6):
                context = context_for(files, suite, rng.randrange(1000))
                proposals = [p for op in default_operators() if (p := propose(op, context)) is not None]
                for proposal in proposals:
                    harness = Harness.from_files(proposal.files, world=suite.world)
                    assert all(m not in _plain(text) for text in proposal.files.values() for m in messages)
                    assert held_out_leak(harness.demos, {}, HELD_OUT) is None
                    assert all("cancel_order" not in tools for tools in harness.tools.values())
                    checked += 1
                files = rng.choice(proposals).files
    assert checked > 100


def demo_text(message: str) -> str:
    return yaml.safe_dump({"steps": [{"user": message}, {"reply": "Done."}]}, width=20)  # folded lines


def test_a_leak_is_found_whatever_the_folding_and_case_and_only_in_new_or_changed_demos():
    leak = Demo.model_validate(yaml.safe_load(demo_text(HELD_OUT["cancel-val"].upper())))
    train = Demo.model_validate(
        yaml.safe_load(demo_text("Please add a note to order ORD-1003 that I called."))
    )

    reason = held_out_leak({"x": leak, "ok": train}, {}, HELD_OUT)
    assert reason.startswith("demo 'x' quotes the opening message of held-out task 'cancel-val'")
    assert held_out_leak({"ok": train}, {}, HELD_OUT) is None
    assert held_out_leak({"x": leak}, {"x": leak}, HELD_OUT) is None  # the author's own, not the search's


class LeaksVal(Operator):
    """Writes a val task's message into a new demo, as a proposer that read val would."""

    name = "leaks_val"

    def __init__(self, message: str) -> None:
        self.message = message

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        files["harness.yaml"] += "    demos: [copied]\n"
        files["demos/copied.yaml"] = demo_text(self.message)
        return Proposal.build(
            operator=self.name,
            rationale="Copy a task.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def run_notes(root: Path, proposer: LeaksVal):
    store = RunStore(root.parent / "runs.sqlite")
    config = OptimizeConfig(
        harness=root / "h", suite=root / "s", max_proposals=1, max_minutes=None, concurrency=4
    )
    try:
        return asyncio.run(optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=[proposer]))
    finally:
        store.close()


def test_the_loop_refuses_a_candidate_whose_demo_quotes_a_val_task(tmp_path: Path):
    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))

    result = run_notes(root, LeaksVal("Please add a note to order ORD-1007 that I called."))

    [step] = result.steps
    assert step.verdict == "invalid"
    assert "held-out task 'note-7'" in step.reasons[0]


def test_the_loop_lets_a_demo_quote_a_train_task(tmp_path: Path):
    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))

    result = run_notes(root, LeaksVal("Please add a note to order ORD-1001 that I called."))

    [step] = result.steps
    assert step.verdict != "invalid"


def test_the_loop_hands_operators_the_failure_patterns_of_train_episodes(tmp_path: Path):
    for name, text in desk_files().items():
        (tmp_path / "h" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "h" / name).write_text(text)
    write_suite(tmp_path / "s")
    config = OptimizeConfig(
        harness=tmp_path / "h", suite=tmp_path / "s", max_proposals=1, max_minutes=None, commit=False
    )
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        result = asyncio.run(
            optimize(config, store=store, model=ScriptedModel(fn=desk_agent), proposers=[AddRule()])
        )
    finally:
        store.close()

    [step] = result.steps
    assert step.operator == "add_rule" and "6 repeat_call" in step.rationale
