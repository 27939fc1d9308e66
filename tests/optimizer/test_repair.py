"""A candidate that wins on val but breaks a task the incumbent always passed is refused, and the next
proposal starts from it: a repair that mends the broken task is kept, with both changes in its files."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from notes_desk import PROMPT, make_workspace

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, Proposal, ProposalContext, optimize

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

    async def propose(self, context: ProposalContext) -> Proposal | None:
        prompt = context.files[PROMPT]
        if self.line in prompt or self.needs not in prompt:
            return None
        self.read = [failure.task_id for failure in context.failures]
        files = {**context.files, PROMPT: prompt + self.line + "\n"}
        return Proposal.build(
            operator=self.name,
            rationale=self.line,
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def test_a_vetoed_winner_is_repaired_from_and_the_repair_is_kept(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "repo", prompt="You keep notes.\n", val=list(range(9, 41)), tasks=40)
    store = RunStore(tmp_path / "runs.sqlite")
    config = OptimizeConfig(
        harness=root / "h", suite=root / "s", max_proposals=2, max_minutes=None, score_test=False, val_looks=1
    )
    proposers = [Adds("bold", BOLD), Adds("mend", MEND, needs=BOLD)]
    try:
        result = asyncio.run(
            optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=proposers)
        )
    finally:
        store.close()

    first, second = result.steps
    assert (first.operator, first.verdict) == ("bold", "reject")
    assert any("always passed" in reason for reason in first.reasons)
    assert (second.operator, second.verdict) == ("mend", "accept")
    prompt = (root / "h" / PROMPT).read_text()
    assert BOLD in prompt and MEND in prompt
    assert proposers[1].read == ["note-2"]  # the repair read the train task its parent broke, nothing else
