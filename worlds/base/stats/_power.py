"""Can the acceptance rule ever fire on a split? Its power, worked out by running the rule itself.

Why: the sign test counts tasks, not episodes. At alpha 0.05 it needs five tasks better and none
worse (0.5**5 = 0.031 <= 0.05), so on a four-task val split `optimize run` can never accept a
variant however good it is, and on seven tasks five of the seven must improve with none worse. More
seeds (-k) do not lower that count, because each task's seeds are averaged before the test; they only
make each task's mean less noisy, so a real gain shows up as a win more reliably. Only more tasks help.

Every figure here comes from `decide` and `sign_test_greater` on constructed scores (the most
favourable ones: no task worse, no always-passed task to break), never from a formula of ours, so the
figures are the rule's own and stay right when the rule changes. It sits below evals because the suite
check (`optimize suite check`) reports it before any optimization runs.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from ._paired import AcceptanceRule, PairedScores, decide, sign_test_greater

UNLIKELY_SHARE = 0.5
"""Acceptance is "unlikely" when more than this share of the split's tasks must improve, none worse."""
UNLIKELY_MEAN_GAIN = 0.25
"""... or when the sparsest win the rule accepts must raise the mean score by more than this."""
_GAIN_PRECISION = 1e-6


def sign_test_needs(alpha: float) -> int:
    """The fewest tasks that must move one way, none the other, for the exact sign test to give p <= alpha."""
    needed = 1
    while sign_test_greater([1.0] * needed) > alpha:
        needed += 1
    return needed


def acceptance_power(
    tasks: int, k: int = 1, rule: AcceptanceRule | None = None, *, split: str = "val"
) -> SplitPower:
    """What it takes for `decide` to accept a candidate on `tasks` tasks at `k` seeds each.

    `fewest_tasks` is the fewest tasks that must improve (each by at most the whole score, none
    worse) for `decide` to accept; `gain_per_task` is the smallest equal gain each of them must then
    make, found by bisection on `decide` (accepted at that value, rejected just below it), and
    `mean_gain` the mean gain that sparsest win amounts to. A broad win, every task up a little,
    can be accepted with a mean gain just above `rule.min_effect`; a harness edit usually fixes a
    few tasks and leaves the rest alone, which is the sparse case.

    Verdict: "impossible" when no candidate can be accepted (fewer tasks than the sign test needs),
    "unlikely" when more than half the tasks must improve with none worse (UNLIKELY_SHARE) or the
    sparsest win must raise the mean by more than UNLIKELY_MEAN_GAIN, else "ok".
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    rule = rule or AcceptanceRule()
    needs = sign_test_needs(rule.alpha)
    fewest = _fewest(tasks, k, needs, rule) if tasks >= needs else None
    gain: float | None = None
    mean_gain: float | None = None
    verdict: Literal["ok", "unlikely", "impossible"] = "impossible"
    if fewest is not None:
        gain = _smallest_gain(tasks, k, fewest, rule)
        mean_gain = fewest * gain / tasks
        unlikely = fewest > tasks * UNLIKELY_SHARE or mean_gain > UNLIKELY_MEAN_GAIN
        verdict = "unlikely" if unlikely else "ok"
    power = SplitPower(
        split=split,
        tasks=tasks,
        k=k,
        alpha=rule.alpha,
        min_effect=rule.min_effect,
        sign_test_needs=needs,
        fewest_tasks=fewest,
        gain_per_task=gain,
        mean_gain=mean_gain,
        tasks_for_ok=_tasks_for_ok(tasks, k, needs, rule),
        verdict=verdict,
        message="",
    )
    return power.model_copy(update={"message": _acceptance_message(power)})


def _win(tasks: int, k: int, improved: int, gain: float) -> PairedScores:
    """The most favourable evidence: `improved` tasks up by `gain` on every seed, the rest tied, none
    passing before (so the always-passed veto has nothing to protect)."""
    return PairedScores(
        incumbent={f"task-{i}": [0.0] * k for i in range(tasks)},
        candidate={f"task-{i}": [gain if i < improved else 0.0] * k for i in range(tasks)},
    )


def _accepts(tasks: int, k: int, improved: int, gain: float, rule: AcceptanceRule) -> bool:
    return decide(_win(tasks, k, improved, gain), rule).accepted


def _fewest(tasks: int, k: int, needs: int, rule: AcceptanceRule) -> int | None:
    """The fewest improved tasks `decide` accepts at a full gain each; more improved tasks only
    raise the bootstrap bound, so bisect."""
    if not _accepts(tasks, k, tasks, 1.0, rule):
        return None
    low, high = needs - 1, tasks  # low: rejected (or below the sign test), high: accepted
    while high - low > 1:
        middle = (low + high) // 2
        if middle >= needs and _accepts(tasks, k, middle, 1.0, rule):
            high = middle
        else:
            low = middle
    return high


def _smallest_gain(tasks: int, k: int, improved: int, rule: AcceptanceRule) -> float:
    """The smallest equal gain of `improved` tasks that `decide` accepts (to _GAIN_PRECISION)."""
    low, high = 0.0, 1.0  # low: rejected, high: accepted (checked by _fewest)
    while high - low > _GAIN_PRECISION:
        middle = (low + high) / 2
        if _accepts(tasks, k, improved, middle, rule):
            high = middle
        else:
            low = middle
    return high


def _tasks_for_ok(tasks: int, k: int, needs: int, rule: AcceptanceRule, limit: int = 200) -> int | None:
    """The smallest task count (at least `tasks`) at which no more than UNLIKELY_SHARE of the tasks
    must improve; None when none up to `limit` does (a minimum effect too large for any split)."""
    for count in range(max(tasks, needs, 1), max(tasks, limit) + 1):
        share = math.floor(count * UNLIKELY_SHARE)
        if share >= needs and _accepts(count, k, share, 1.0, rule):
            return count
    return None


def _acceptance_message(power: SplitPower) -> str:
    head = f"{power.split} split: {power.tasks} task(s) x {power.k} seed(s)"
    likely = (
        f" ({power.tasks_for_ok}+ for no more than half to have to improve)"
        if power.tasks_for_ok is not None and power.tasks_for_ok > power.tasks
        else ""
    )
    seeds = "; more seeds (-k) do not lower that count, they only steady each task's mean"
    if power.fewest_tasks is None or power.gain_per_task is None or power.mean_gain is None:
        return (
            f"{head}: the optimizer can never accept a variant: the sign test needs at least "
            f"{power.sign_test_needs} tasks better and none worse (alpha {power.alpha:g}). Grow "
            f"{power.split} to at least {power.sign_test_needs} tasks{likely}{seeds}."
        )
    figures = (
        f"at least {power.fewest_tasks} of {power.tasks} tasks better with none worse (each up "
        f"{power.gain_per_task:+.3f} if only they improve: mean gain {power.mean_gain:+.3f})"
    )
    if power.verdict == "ok":
        return f"{head}: acceptance needs {figures}."
    advice = []
    if power.fewest_tasks > power.tasks * UNLIKELY_SHARE and power.tasks_for_ok is not None:
        advice.append(f"add {power.split} tasks{likely}{seeds}")
    if power.mean_gain > UNLIKELY_MEAN_GAIN:
        advice.append(
            f"lower --min-effect (now {power.min_effect:g}): that mean gain is above {UNLIKELY_MEAN_GAIN:g}"
        )
    fix = f" To fix: {'; '.join(advice)}." if advice else ""
    return f"{head}: acceptance is unlikely: it needs {figures}.{fix}"


class SplitPower(BaseModel):
    """Whether the optimizer's acceptance rule can accept a candidate on a split, and what it takes.

    Computed by `acceptance_power` with the rule itself; the suite check (evals) and the optimizer both
    report it.
    """

    split: str
    tasks: int = Field(description="Tasks in the split: what the sign test counts.")
    k: int = Field(description="Seeds per task; averaged per task before any test.")
    alpha: float
    min_effect: float
    sign_test_needs: int = Field(
        description="Fewest tasks that must improve, none worse, for the sign test to give p <= alpha."
    )
    fewest_tasks: int | None = Field(
        description="Fewest tasks that must improve (none worse) for the whole rule to accept; None: impossible."
    )
    gain_per_task: float | None = Field(
        description="With only `fewest_tasks` improved, the smallest equal gain each must make."
    )
    mean_gain: float | None = Field(description="The mean gain of that sparsest acceptable win.")
    tasks_for_ok: int | None = Field(
        description="The task count at which no more than half the tasks must improve; None: none found."
    )
    verdict: Literal["ok", "unlikely", "impossible"]
    message: str = Field(description="One line for a person: the figures and what to do.")
