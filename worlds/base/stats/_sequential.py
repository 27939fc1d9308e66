"""Confirming a candidate on val in looks: stop one that can no longer be accepted, or has fallen behind.

Playing the whole val split for every candidate that passed the screen costs a full val pass each (about
15 minutes for an acting harness on the embedded 1.5B model). The tasks are played in a fixed, seeded
order, a growing share at each look, and after each look but the last the candidate is stopped when:

- it cannot win: even if every task it has not played yet came out as well as a task can (a score of
  1 on every seed), the acceptance rule would still refuse it; or
- it is behind: more of the tasks it played got worse than got better.

Stopping for futility only ever turns an accept into a reject, never the reverse, so the rule's
false-accept rate can only fall. What it costs is power, which `benchmarks/acceptance.py` measures
beside the episodes it saves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ._paired import AcceptanceRule, PairedScores, compare, decide


def look_sizes(total: int, looks: int) -> list[int]:
    """The cumulative number of tasks played by each look: `looks` nearly equal steps ending at `total`."""
    looks = max(1, min(looks, total))
    return sorted({math.ceil(total * i / looks) for i in range(1, looks + 1)})


def futility(
    seen: PairedScores,
    unseen: Mapping[str, Sequence[float | None]],
    rule: AcceptanceRule | None = None,
    *,
    behind: bool = True,
) -> str | None:
    """Why the candidate should stop before the tasks in `unseen` (task -> the incumbent's scores there) are
    played, or None to go on. `seen` holds both sides on the tasks played so far."""
    rule = rule or AcceptanceRule()
    total = len(seen.tasks) + len(unseen)
    where = f"after {len(seen.tasks)} of {total} val tasks"
    if behind:
        comparison = compare(seen, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence)
        if comparison.losses > comparison.wins:
            return f"behind {where}: {comparison.wins} better, {comparison.losses} worse"
    best = PairedScores(
        incumbent={**seen.incumbent, **{task: list(scores) for task, scores in unseen.items()}},
        candidate={**seen.candidate, **{task: [1.0] * len(scores) for task, scores in unseen.items()}},
    )
    decision = decide(best, rule)
    if not decision.accepted:
        return f"cannot win {where}, even if every task left improved: {decision.reasons[0]}"
    return None
