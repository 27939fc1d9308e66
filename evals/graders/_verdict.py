"""What a grader says: checks with a feedback line each, and the grade they add up to.

The optimizer's proposer reads the feedback lines to decide what to change, so every check says
what was expected and what happened, in one line.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from atoll.evals.metrics import passes

GRADE_VERSION = 1

CheckKind = Literal[
    "inserted",
    "updated",
    "deleted",
    "unchanged",
    "no_other_writes",
    "matches_reference",
    "reply_contains",
    "reply_excludes",
    "python",
    "episode",
]


class Check(BaseModel):
    """One verdict: did the episode meet one expectation, and if not, what happened instead."""

    name: str = Field(
        description="What was checked, e.g. `inserted refunds[0]` or `reply_contains 'refund'`."
    )
    passed: bool
    weight: float = Field(1.0, ge=0.0, description="Its share of the score; 0 makes it informational.")
    feedback: str = Field(description="One line: what was expected and what happened.")
    kind: CheckKind = "python"

    def line(self) -> str:
        """`✓ name: feedback` or `✗ name: feedback`, as the proposer and the terminal show it."""
        return f"{'✓' if self.passed else '✗'} {self.name}: {self.feedback}"


class Grade(BaseModel):
    """A score in [0, 1] (the weighted mean of the checks) and the checks behind it."""

    version: int = GRADE_VERSION
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    checks: list[Check] = Field(default_factory=list)

    @classmethod
    def from_checks(cls, checks: list[Check], *, pass_threshold: float = 1.0) -> Grade:
        """Weighted mean of passed checks; with no weight at all (only notes) the score is 1."""
        total = sum(check.weight for check in checks)
        earned = sum(check.weight for check in checks if check.passed)
        score = min(1.0, max(0.0, earned / total)) if total > 0 else 1.0
        return cls(score=score, passed=passes(score, pass_threshold), checks=checks)

    @classmethod
    def errored(cls, error: str) -> Grade:
        """An episode that did not finish scores 0: the error is a failure of the side that made it."""
        check = Check(name="episode finished", passed=False, feedback=error, kind="episode")
        return cls(score=0.0, passed=False, checks=[check])

    @property
    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    def feedback(self) -> str:
        """Every check's line, failures first: what a proposer or a person reads."""
        ordered = sorted(self.checks, key=lambda check: check.passed)
        return "\n".join(check.line() for check in ordered)
