"""The two statistical rules of Atoll: when the optimizer keeps a variant, and when the CI gate fails one.

Why not "the mean went up": on a few dozen tasks and a handful of seeds a variant that is no better
raises the mean about half the time (benchmarks/acceptance.py measures it). Both rules compare the
same tasks on the same seeds and ask three questions at once: do more tasks get better than worse
(an exact sign test), is the average change clear of noise (a bootstrap lower bound), and did a task
that used to work every time break. An episode that errored counts as a failure of its side; a side
that errors too often makes the comparison meaningless, and the rules say so instead of deciding.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, computed_field, model_validator

from ._passes import passes

TIE_TOLERANCE = 1e-9
"""Per-task deltas closer to zero than this are ties: float noise from averaging is not a win."""

Score = Annotated[float, Field(ge=0.0, le=1.0)]


def _old_gate_sign(value: Any) -> Any:
    """The gate's tolerance was once written negative (`--tolerance -0.05`, a bound); a positive one was
    refused then, so a negative number can only mean that old spelling: it reads as its size."""
    return -value if isinstance(value, int | float) and value < 0 else value


Tolerance = Annotated[
    float,
    BeforeValidator(_old_gate_sign),
    Field(ge=0.0, lt=1.0, description="How far the mean score may fall: fail below -tolerance."),
]
"""How far the mean score may fall, a size (0.05): the bound the gate fails below is -tolerance. A negative
value is read as its size, the gate's old spelling."""


class Outcome(Protocol):
    """What pairing reads of an episode (`evals.Outcome` is one): defined here, below evals."""

    @property
    def task_id(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def errored(self) -> bool: ...


class PairedScores(BaseModel):
    """Both sides' scores on the same tasks and seeds: the evidence every decision is made from.

    Each task maps to its per-seed scores, aligned by seed (position i is the same seed on both sides).
    None marks an errored episode: it counts as a failure (score 0) and towards the error rate.
    For the CI gate the incumbent is the base ref's harness.
    """

    incumbent: dict[str, list[Score | None]]
    candidate: dict[str, list[Score | None]]

    @model_validator(mode="after")
    def _check_paired(self) -> PairedScores:
        if not self.incumbent:
            raise ValueError("PairedScores.incumbent has no tasks: evaluate both sides on at least one task")
        if self.incumbent.keys() != self.candidate.keys():
            only_incumbent = sorted(self.incumbent.keys() - self.candidate.keys())
            only_candidate = sorted(self.candidate.keys() - self.incumbent.keys())
            raise ValueError(
                f"PairedScores: tasks differ (only incumbent: {only_incumbent}, only candidate: "
                f"{only_candidate}); evaluate both sides on the same tasks"
            )
        for task, scores in self.incumbent.items():
            if not scores or len(scores) != len(self.candidate[task]):
                raise ValueError(
                    f"PairedScores: task {task!r} has {len(scores)} incumbent and "
                    f"{len(self.candidate[task])} candidate scores; evaluate both sides on the same seeds"
                )
        return self

    @classmethod
    def from_outcomes(cls, incumbent: Iterable[Outcome], candidate: Iterable[Outcome]) -> PairedScores:
        """Pair two sides' episodes by (task, seed); both sides must cover the same pairs."""
        sides = []
        for name, outcomes in (("incumbent", incumbent), ("candidate", candidate)):
            by_task: dict[str, dict[int, Outcome]] = defaultdict(dict)
            for outcome in outcomes:
                if outcome.seed in by_task[outcome.task_id]:
                    raise ValueError(
                        f"{name} has task_id={outcome.task_id!r} seed={outcome.seed} twice: "
                        "give each try of a task its own seed"
                    )
                by_task[outcome.task_id][outcome.seed] = outcome
            sides.append(by_task)
        for task in sides[0].keys() & sides[1].keys():
            if sides[0][task].keys() != sides[1][task].keys():
                raise ValueError(
                    f"task {task!r} ran on seeds {sorted(sides[0][task])} for the incumbent and "
                    f"{sorted(sides[1][task])} for the candidate; evaluate both sides on the same seeds"
                )
        incumbent_scores, candidate_scores = (
            {
                task: [None if o.errored else o.score for _, o in sorted(runs.items())]
                for task, runs in side.items()
            }
            for side in sides
        )
        return cls(incumbent=incumbent_scores, candidate=candidate_scores)

    @property
    def tasks(self) -> list[str]:
        return list(self.incumbent)

    @property
    def episodes(self) -> int:
        """Episodes per side."""
        return sum(len(scores) for scores in self.incumbent.values())

    @property
    def incumbent_errors(self) -> int:
        return sum(score is None for scores in self.incumbent.values() for score in scores)

    @property
    def candidate_errors(self) -> int:
        return sum(score is None for scores in self.candidate.values() for score in scores)


def sign_test_greater(deltas: Sequence[float]) -> float:
    """One-sided exact sign test that positive deltas outnumber negative ones.

    Returns P(X >= wins) for X ~ Binomial(wins + losses, 1/2); ties carry no evidence and are
    dropped, and with no wins and no losses the p-value is 1. For losses, pass the negated deltas.
    """
    wins = sum(delta > TIE_TOLERANCE for delta in deltas)
    trials = wins + sum(delta < -TIE_TOLERANCE for delta in deltas)
    return sum(math.comb(trials, k) for k in range(wins, trials + 1)) / 2**trials


def bootstrap_lower_bound(
    deltas: Sequence[float], *, resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> float:
    """One-sided percentile-bootstrap lower bound of the mean: resample tasks with replacement.

    The (1 - confidence) quantile of the resampled means; the same seed gives the same bound.
    """
    values = np.asarray(deltas, dtype=float)
    if values.size == 0:
        raise ValueError("bootstrap_lower_bound needs at least one delta")
    draws = np.random.default_rng(seed).integers(0, values.size, size=(resamples, values.size))
    return float(np.quantile(values[draws].mean(axis=1), 1.0 - confidence))


class Comparison(BaseModel):
    """The paired statistics both rules read. Each task's seeds are averaged first; tasks weigh the same."""

    deltas: dict[str, float] = Field(description="Per task: candidate mean − incumbent mean over seeds.")
    incumbent_mean: float
    candidate_mean: float
    mean_delta: float
    lower_bound: float = Field(description="Bootstrap lower bound of mean_delta at the rule's confidence.")
    wins: int = Field(description="Tasks whose mean went up.")
    losses: int = Field(description="Tasks whose mean went down.")
    ties: int
    p_better: float = Field(description="One-sided sign-test p-value that wins outnumber losses.")
    p_worse: float = Field(description="One-sided sign-test p-value that losses outnumber wins.")
    incumbent_error_rate: float
    candidate_error_rate: float


def compare(scores: PairedScores, *, resamples: int, seed: int, confidence: float) -> Comparison:
    """Compute the paired statistics of the candidate against the incumbent."""
    incumbent = {task: _mean(values) for task, values in scores.incumbent.items()}
    candidate = {task: _mean(values) for task, values in scores.candidate.items()}
    deltas = {task: candidate[task] - incumbent[task] for task in scores.tasks}
    values = list(deltas.values())
    wins = sum(delta > TIE_TOLERANCE for delta in values)
    losses = sum(delta < -TIE_TOLERANCE for delta in values)
    return Comparison(
        deltas=deltas,
        incumbent_mean=sum(incumbent.values()) / len(incumbent),
        candidate_mean=sum(candidate.values()) / len(candidate),
        mean_delta=sum(values) / len(values),
        lower_bound=bootstrap_lower_bound(values, resamples=resamples, seed=seed, confidence=confidence),
        wins=wins,
        losses=losses,
        ties=len(values) - wins - losses,
        p_better=sign_test_greater(values),
        p_worse=sign_test_greater([-delta for delta in values]),
        incumbent_error_rate=scores.incumbent_errors / scores.episodes,
        candidate_error_rate=scores.candidate_errors / scores.episodes,
    )


class AcceptanceRule(BaseModel):
    """When the optimizer keeps a candidate; recorded with every decision so it can be re-derived."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(0.05, gt=0.0, lt=1.0, description="Sign test: accept only if p <= alpha.")
    min_effect: float = Field(
        0.02, ge=0.0, lt=1.0, description="The bootstrap lower bound of the mean gain must exceed it."
    )
    resamples: int = Field(2000, ge=2000)
    seed: int = Field(0, description="Bootstrap seed.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    pass_threshold: float = Field(1.0, ge=0.0, le=1.0, description="Score at which an episode passes.")
    max_error_rate: float = Field(0.2, ge=0.0, le=1.0, description="Above this on either side: void.")
    always_passed_min_seeds: int = Field(
        2,
        ge=1,
        description="A task counts as 'always passed' only with at least this many passing seeds: "
        "with one seed a single lucky pass would veto every candidate that misses it once.",
    )


class Decision(BaseModel):
    """The optimizer's verdict on a candidate, with every figure and both score vectors behind it.

    "accept" means the candidate is better with confidence; "reject" does not mean it is worse.
    """

    verdict: Literal["accept", "reject", "void"]
    reasons: list[str] = Field(description="One line per failed condition; empty on accept.")
    broken_tasks: list[str] = Field(description="Tasks the incumbent always passed that the candidate broke.")
    comparison: Comparison
    rule: AcceptanceRule
    scores: PairedScores

    @computed_field
    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"

    def summary(self) -> str:
        """One line with the figures, for the log and the commit message."""
        return f"{self.verdict}: {comparison_figures(self.comparison, self.rule.confidence)}" + "".join(
            f"; {reason}" for reason in self.reasons
        )


def decide(scores: PairedScores, rule: AcceptanceRule | None = None) -> Decision:
    """Accept the candidate only if it beats the incumbent on the sign test, on the bootstrap lower
    bound by more than the minimum effect, and breaks no task the incumbent always passed."""
    rule = rule or AcceptanceRule()
    comparison = compare(scores, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence)
    broken = _tasks_falling_to(
        scores, rule.pass_threshold, lambda rate: rate < 0.5, rule.always_passed_min_seeds
    )
    reasons = _error_reasons(comparison, rule.max_error_rate)
    if reasons:
        return Decision(
            verdict="void",
            reasons=reasons,
            broken_tasks=broken,
            comparison=comparison,
            rule=rule,
            scores=scores,
        )
    if comparison.p_better > rule.alpha:
        reasons.append(
            f"sign test p={comparison.p_better:.3g} > {rule.alpha:g} "
            f"({comparison.wins} tasks better, {comparison.losses} worse, {comparison.ties} tied)"
        )
    if comparison.lower_bound <= rule.min_effect:
        reasons.append(
            f"bootstrap {rule.confidence:.0%} lower bound of the mean gain {comparison.lower_bound:+.3f} "
            f"<= minimum effect {rule.min_effect:g}"
        )
    if broken:
        reasons.append(
            f"{len(broken)} task(s) the incumbent always passed fall below a 50% pass rate: "
            + _pass_rates(scores, broken, rule.pass_threshold)
        )
    return Decision(
        verdict="reject" if reasons else "accept",
        reasons=reasons,
        broken_tasks=broken,
        comparison=comparison,
        rule=rule,
        scores=scores,
    )


class GateRule(BaseModel):
    """When the CI gate fails a candidate against the base ref (non-inferiority, not superiority)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tolerance: Tolerance = 0.05
    alpha: float = Field(
        0.05, gt=0.0, lt=1.0, description="Fail if the sign test for losses gives p <= alpha."
    )
    resamples: int = Field(2000, ge=2000)
    seed: int = Field(0, description="Bootstrap seed.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    pass_threshold: float = Field(1.0, ge=0.0, le=1.0, description="Score at which an episode passes.")
    max_error_rate: float = Field(0.2, ge=0.0, le=1.0, description="Above this on either side: error.")
    always_passed_min_seeds: int = Field(2, ge=1, description="See AcceptanceRule.always_passed_min_seeds.")


class GateVerdict(BaseModel):
    """The CI gate's verdict. "error" means the runs errored too often to judge (the CLI exits 3)."""

    verdict: Literal["pass", "regression", "error"]
    reasons: list[str] = Field(description="One line per failed condition; empty on pass.")
    regressed_tasks: list[str] = Field(
        description="Tasks the base always passed that now fail half the time."
    )
    comparison: Comparison
    rule: GateRule
    scores: PairedScores

    @computed_field
    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def summary(self) -> str:
        """One line with the figures, for the CI log and the Markdown summary."""
        return f"{self.verdict}: {comparison_figures(self.comparison, self.rule.confidence)}" + "".join(
            f"; {reason}" for reason in self.reasons
        )


def gate(scores: PairedScores, rule: GateRule | None = None) -> GateVerdict:
    """Fail the candidate (scores.candidate) if it is worse than the base (scores.incumbent) beyond the
    tolerance, loses on significantly more tasks than it wins, or breaks a task the base always passed."""
    rule = rule or GateRule()
    comparison = compare(scores, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence)
    regressed = _tasks_falling_to(
        scores, rule.pass_threshold, lambda rate: rate <= 0.5, rule.always_passed_min_seeds
    )
    reasons = _error_reasons(comparison, rule.max_error_rate)
    if reasons:
        return GateVerdict(
            verdict="error",
            reasons=reasons,
            regressed_tasks=regressed,
            comparison=comparison,
            rule=rule,
            scores=scores,
        )
    if comparison.lower_bound < -rule.tolerance:
        reasons.append(
            f"bootstrap {rule.confidence:.0%} lower bound of the mean change {comparison.lower_bound:+.3f} "
            f"< {-rule.tolerance or 0.0:+g} (tolerance {rule.tolerance:g})"
        )
    if comparison.p_worse <= rule.alpha:
        reasons.append(
            f"sign test for losses p={comparison.p_worse:.3g} <= {rule.alpha:g} "
            f"({comparison.losses} tasks worse, {comparison.wins} better, {comparison.ties} tied)"
        )
    if regressed:
        reasons.append(
            f"{len(regressed)} task(s) the base always passed now fail half the time or more: "
            + _pass_rates(scores, regressed, rule.pass_threshold)
        )
    return GateVerdict(
        verdict="regression" if reasons else "pass",
        reasons=reasons,
        regressed_tasks=regressed,
        comparison=comparison,
        rule=rule,
        scores=scores,
    )


def _mean(scores: list[float | None]) -> float:
    return sum(score or 0.0 for score in scores) / len(scores)


def _passes(scores: list[float | None], threshold: float) -> int:
    return sum(score is not None and passes(score, threshold) for score in scores)


def _tasks_falling_to(
    scores: PairedScores, threshold: float, broken_rate: Callable[[float], bool], min_seeds: int
) -> list[str]:
    """Tasks the incumbent passed on every seed (at least `min_seeds`) whose candidate pass rate
    satisfies `broken_rate`."""
    return [
        task
        for task in scores.tasks
        if len(scores.incumbent[task]) >= min_seeds
        and _passes(scores.incumbent[task], threshold) == len(scores.incumbent[task])
        and broken_rate(_passes(scores.candidate[task], threshold) / len(scores.candidate[task]))
    ]


def _pass_rates(scores: PairedScores, tasks: list[str], threshold: float) -> str:
    return ", ".join(
        f"{task} ({_passes(scores.candidate[task], threshold)}/{len(scores.candidate[task])})"
        for task in tasks
    )


def _error_reasons(comparison: Comparison, max_error_rate: float) -> list[str]:
    return [
        f"the {side} errored in {rate:.0%} of its episodes, above the {max_error_rate:.0%} limit: "
        "fix the errors and rerun, the comparison is void"
        for side, rate in (
            ("incumbent", comparison.incumbent_error_rate),
            ("candidate", comparison.candidate_error_rate),
        )
        if rate > max_error_rate
    ]


def comparison_figures(comparison: Comparison, confidence: float) -> str:
    """The means, the change and its lower bound in one phrase: what every verdict line quotes."""
    return (
        f"mean {comparison.incumbent_mean:.3f} -> {comparison.candidate_mean:.3f} "
        f"({comparison.mean_delta:+.3f}, {confidence:.0%} lower bound {comparison.lower_bound:+.3f}), "
        f"{comparison.wins} tasks better / {comparison.losses} worse / {comparison.ties} tied, "
        f"sign test p={comparison.p_better:.3g} better, p={comparison.p_worse:.3g} worse"
    )
