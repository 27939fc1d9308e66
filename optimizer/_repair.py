"""Repairing a winner that broke something: a candidate the rule refused only because it broke tasks the
incumbent always passed is the parent of the next proposals, so a proposer can mend what it broke.

On the 1.5B model `tool_choice: first` made 26 val tasks better and 4 worse, two of them privacy refusals the
shipped agent always passed: the veto refuses it, rightly, and a greedy search would then never look at it
again. Starting the next proposals from it lets a proposer read its failing train episodes (the new
disclosures among them) and add what stops them. A repair's tries but the last ask the LLM-free operators
first, each aimed at the train tasks the winner broke (on this model the two reflective repairs tried
wrote tool notes that mended nothing), its last the proposers in their usual turn; `calling_demos`, for
one, swaps the demos that answer without a call for passing episodes that call first, and offers the
next likest when a swap was tried. The repaired candidate is still judged against the incumbent on every
val task, veto included: nothing gets around the rule.
"""

from __future__ import annotations

from typing import Any

from atoll.worlds.base.stats import Decision

from ._objective import load_decision

# Proposals that start from a vetoed winner before the search returns to the incumbent. On the 1.5B model
# the incumbent's own proposals changed no outcome (six of six in one run) while a winner's repairs moved
# tasks; most repairs end at the screen, a few minutes each.
REPAIR_TRIES = 4


def vetoed_only(decision: Any) -> bool:
    """Whether the quality rule refused `decision`'s candidate only for the tasks it broke."""
    return (
        type(decision) is Decision
        and decision.verdict == "reject"
        and bool(decision.broken_tasks)
        and len(decision.reasons) == 1
    )


class Repairs:
    """Which harness (by hash) the next proposals start from, if a vetoed winner is being repaired."""

    def __init__(self, tries: int = REPAIR_TRIES) -> None:
        self.tries = tries
        self.parent_hash: str | None = None
        self.left = 0
        self.operators_first = False  # whether the proposal `take` last answered for is a repair but its last

    def take(self) -> str | None:
        """The hash of the vetoed winner the next proposal starts from, or None: start as usual."""
        self.operators_first = self.left > 1
        if not self.left:
            return None
        self.left -= 1
        return self.parent_hash

    def after(self, verdict: str | None, decision: Any, candidate_hash: str | None) -> bool:
        """Note a proposal's fate; True when its candidate is a vetoed winner to repair from now on."""
        if verdict == "accept":
            self.parent_hash, self.left = None, 0
        elif vetoed_only(decision) and candidate_hash is not None:
            self.parent_hash, self.left = candidate_hash, self.tries
            return True
        return False

    def replay(self, rows: list[dict[str, Any]]) -> None:
        """The state after the stored, decided proposals of a run being resumed, in order."""
        for row in rows:
            if row["verdict"] is None:
                continue
            self.take()
            decided = row["verdict"] in ("accept", "reject", "void") and row["decision"]
            self.after(
                row["verdict"], load_decision(row["decision"]) if decided else None, row["candidate_hash"]
            )
