"""A candidate that wins on val but breaks a task the incumbent always passed is refused, and the next
proposal starts from it: a repair that mends the broken task is kept, with both changes in its files."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from notes_desk import PROMPT, make_workspace

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, OptimizeResult, Proposal, ProposalContext, optimize

BOLD, MEND = "NOTE EVERY ORDER.", "ORDERS 1002 AND 1020 TOO."
DROPPED = (1002, 1020)  # a train task's order and a val task's
NEVER = 1007  # a train task's order no prompt gets noted: a failure the repair is not about


def agent(request) -> str | dict:
    """As shipped, notes even orders. Told to note every order, it does, but drops orders 1002 and 1020,
    which it noted before; told those too, it notes all."""
    system, last = request.messages[0]["content"], request.messages[-1]
    if last["role"] == "tool":
        return "Done, the note is on the order."
    order = re.search(r"ORD-(\d+)", last["content"])
    number = int(order.group(1))
    bold = BOLD in system and number != NEVER and (number not in DROPPED or MEND in system)
    if bold or (BOLD not in system and number % 2 == 0):
        return {
            "tool_calls": [{"name": "add_order_note", "arguments": {"order_id": order.group(), "note": "x"}}]
        }
    return "Sorry, I can't do that."


class Adds(Operator):
    """Appends `line` to the prompt when the parent has `needs` and not yet `line`."""

    def __init__(self, name: str, line: str, needs: str = "") -> None:
        self.name, self.line, self.needs = name, line, needs
        self.read: list[str] = []  # the failing train tasks it was shown when it proposed
        self.examples: list[str] = []  # the train tasks whose passing episodes it was shown

    async def propose(self, context: ProposalContext) -> Proposal | None:
        prompt = context.files[PROMPT]
        if self.line in prompt or self.needs not in prompt:
            return None
        self.read = [failure.task_id for failure in context.failures]
        self.examples = sorted(result.task_id for result in context.passing_episodes)
        files = {**context.files, PROMPT: prompt + self.line + "\n"}
        return Proposal.build(
            operator=self.name,
            rationale=self.line,
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def run(tmp_path: Path, train_sample: int | None = 16) -> tuple[OptimizeResult, list[Adds], Path]:
    root = make_workspace(tmp_path / "repo", prompt="You keep notes.\n", val=list(range(9, 41)), tasks=40)
    store = RunStore(tmp_path / "runs.sqlite")
    config = OptimizeConfig(
        harness=root / "h",
        suite=root / "s",
        max_proposals=2,
        max_minutes=None,
        score_test=False,
        val_looks=1,
        train_sample=train_sample,
    )
    proposers = [Adds("bold", BOLD), Adds("mend", MEND, needs=BOLD)]
    try:
        result = asyncio.run(
            optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=proposers)
        )
    finally:
        store.close()
    return result, proposers, root


def test_a_vetoed_winner_is_repaired_from_and_the_repair_is_kept(tmp_path: Path) -> None:
    result, proposers, root = run(tmp_path)

    first, second = result.steps
    assert (first.operator, first.verdict) == ("bold", "reject")
    assert any("always passed" in reason for reason in first.reasons)
    assert (second.operator, second.verdict) == ("mend", "accept")
    prompt = (root / "h" / PROMPT).read_text()
    assert BOLD in prompt and MEND in prompt
    assert proposers[1].read == ["note-2"]  # the repair read the train task its parent broke, nothing else


def test_a_repair_also_learns_from_and_is_raced_on_the_train_tasks_outside_the_sample(tmp_path: Path) -> None:
    """The search reads a sample of train; a vetoed winner is played once on the rest of train. What it
    broke there is what its repairs read and are raced on, what it passes there their demo sources."""
    result, (bold, mend), _ = run(tmp_path, train_sample=4)

    train = [f"note-{i}" for i in range(1, 9)]
    sample = set(bold.read) | set(
        bold.examples
    )  # the shipped prompt's train sample, as the first proposer saw it
    assert len(sample) == 4 and "note-2" not in sample
    # The repair played the sample as its parent did; it mended note-2, which its parent broke outside it.
    assert mend.read == ["note-2"]
    assert result.steps[0].verdict == "reject" and (result.steps[1].operator, result.steps[1].verdict) == (
        "mend",
        "accept",
    )
    # Told to note every order, the parent passes every train task but note-2 and note-7.
    passed_by_bold = {task for task in train if task not in ("note-2", "note-7")}
    assert set(mend.examples) == passed_by_bold
    assert set(mend.examples) - sample  # some come from outside the sample
