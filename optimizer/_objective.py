"""The rule for optimizing cost, latency or tokens while holding quality.

With `--objective quality` (the default) the optimizer keeps a candidate only if it is better
(`worlds.base.stats.decide`). With `cost`, `latency` or `tokens` it keeps a candidate only if two things
hold on the same tasks and seeds:

- quality is non-inferior: the CI gate's own rule (`worlds.base.stats.gate`) passes the candidate
  against the incumbent, so the optimizer never keeps a cut the gate would fail on the same evidence
  (the bootstrap lower bound of the mean quality change is at least `-tolerance`, losses do not
  significantly outnumber wins, and no task the incumbent always passed collapses);
- the objective is significantly lower: an exact sign test that more tasks went down than up, and a
  bootstrap lower bound of the relative reduction of the suite's total above `min_reduction`.

Both figures go on every decision and into its one-line summary (the log line and the commit message).
benchmarks/acceptance.py measures how often the rule keeps a candidate that is no cheaper, and how
often it keeps one that is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from atoll.evals.metrics import EpisodeOutcome
from atoll.worlds.base.stats import (
    TIE_TOLERANCE,
    Decision,
    GateRule,
    PairedScores,
    comparison_figures,
    gate,
    sign_test_greater,
)

Objective = Literal["quality", "cost", "latency", "tokens"]
"""What `optimize run --objective` optimizes; every objective but quality is held to `decide_objective`."""

ResourceObjective = Literal["cost", "latency", "tokens"]
"""The objectives that are lowered while quality is held: dollars, seconds or tokens per episode."""

_UNITS: dict[str, str] = {"cost": "USD", "latency": "s", "tokens": "tokens"}

Amount = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class PairedCosts(BaseModel):
    """Both sides' objective values (dollars, seconds or tokens per episode) on the same tasks and seeds.

    Aligned like `PairedScores`: each task maps to its per-seed values, position i is the same seed on
    both sides. None marks an episode whose value is unknown (an errored episode); the comparison
    drops that seed from both sides of its task, so a side that errors on its expensive seeds does not
    look cheaper for it, and counts it towards the side's missing rate.
    """

    objective: ResourceObjective = "cost"
    incumbent: dict[str, list[Amount | None]]
    candidate: dict[str, list[Amount | None]]

    @model_validator(mode="after")
    def _check_paired(self) -> PairedCosts:
        if not self.incumbent:
            raise ValueError("PairedCosts.incumbent has no tasks: measure both sides on at least one task")
        if self.incumbent.keys() != self.candidate.keys():
            only_incumbent = sorted(self.incumbent.keys() - self.candidate.keys())
            only_candidate = sorted(self.candidate.keys() - self.incumbent.keys())
            raise ValueError(
                f"PairedCosts: tasks differ (only incumbent: {only_incumbent}, only candidate: "
                f"{only_candidate}); measure both sides on the same tasks"
            )
        for task, values in self.incumbent.items():
            if not values or len(values) != len(self.candidate[task]):
                raise ValueError(
                    f"PairedCosts: task {task!r} has {len(values)} incumbent and "
                    f"{len(self.candidate[task])} candidate values; measure both sides on the same seeds"
                )
        return self

    @classmethod
    def from_outcomes(
        cls,
        incumbent: Iterable[EpisodeOutcome],
        candidate: Iterable[EpisodeOutcome],
        objective: ResourceObjective,
    ) -> PairedCosts:
        """Pair two sides' episodes by (task, seed), as `PairedScores.from_outcomes` does (and with its
        checks); an errored episode's value is None. Cost is `usage.cost_usd`, tokens
        `usage.total_tokens`, latency `latency_s`."""
        incumbent, candidate = list(incumbent), list(candidate)
        PairedScores.from_outcomes(incumbent, candidate)  # refuses duplicate or unpaired (task, seed)
        return cls(
            objective=objective,
            incumbent=spent(incumbent, objective),
            candidate=spent(candidate, objective),
        )

    @property
    def tasks(self) -> list[str]:
        return list(self.incumbent)

    @property
    def episodes(self) -> int:
        """Episodes per side."""
        return sum(len(values) for values in self.incumbent.values())


class ObjectiveRule(BaseModel):
    """When the optimizer keeps a candidate that lowers cost, latency or tokens; recorded with every
    decision so it can be re-derived.

    The relative reduction is that of the suite's total: 1 − Σ_t c_t / Σ_t i_t, where i_t and c_t are
    task t's mean value over the seeds both sides measured. It is what the bill (or the wall time) of
    running the suite changes by, and a ratio of sums stays finite and stable when some tasks cost
    almost nothing; a mean of per-task ratios (or of log ratios) is dominated by such tasks, where
    1 token against 3 reads as a 200% increase, and is undefined at zero. Its lower bound is a
    percentile bootstrap that resamples tasks (`resamples` draws from `seed`, the same draws as the
    quality bound unless a task is dropped for want of values) and recomputes the ratio of sums. Because the total weighs expensive tasks more,
    the sign test, which counts tasks, keeps a cut on a few expensive tasks from carrying it alone.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tolerance: float = Field(
        0.05,
        ge=0.0,
        lt=1.0,
        description="Quality may fall by at most this much: the bootstrap lower bound of the mean "
        "quality change must be >= -tolerance (the gate's GateRule.tolerance, the same size).",
    )
    quality_alpha: float = Field(
        0.05,
        gt=0.0,
        lt=1.0,
        description="Reject if the gate's sign test for quality losses gives p <= quality_alpha.",
    )
    alpha: float = Field(
        0.05,
        gt=0.0,
        lt=1.0,
        description="Objective sign test: accept only if p <= alpha that more tasks went down than up.",
    )
    min_reduction: float = Field(
        0.10,
        ge=0.0,
        lt=1.0,
        description="The bootstrap lower bound of the relative reduction of the total must exceed it.",
    )
    resamples: int = Field(2000, ge=2000)
    seed: int = Field(0, description="Bootstrap seed, for both the quality and the objective bound.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    pass_threshold: float = Field(1.0, ge=0.0, le=1.0, description="Score at which an episode passes.")
    max_error_rate: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="Above this share of errored scores or unknown values on either side: void.",
    )
    always_passed_min_seeds: int = Field(2, ge=1, description="See AcceptanceRule.always_passed_min_seeds.")

    @property
    def quality_rule(self) -> GateRule:
        """The gate rule the quality side is held to."""
        return GateRule(
            tolerance=self.tolerance,
            alpha=self.quality_alpha,
            resamples=self.resamples,
            seed=self.seed,
            confidence=self.confidence,
            pass_threshold=self.pass_threshold,
            max_error_rate=self.max_error_rate,
            always_passed_min_seeds=self.always_passed_min_seeds,
        )


class ObjectiveComparison(BaseModel):
    """The paired objective figures. Per task, seeds with a value on both sides are averaged first."""

    # A zero-cost incumbent task can make a bootstrap draw's reduction -inf; keep it through JSON.
    model_config = ConfigDict(ser_json_inf_nan="constants")

    objective: ResourceObjective
    changes: dict[str, float] = Field(
        description="Per task: candidate mean − incumbent mean over the seeds both sides measured."
    )
    dropped_tasks: list[str] = Field(description="Tasks with no seed measured on both sides: not compared.")
    incumbent_total: float = Field(description="Sum over compared tasks of the incumbent's task means.")
    candidate_total: float = Field(description="Sum over compared tasks of the candidate's task means.")
    incumbent_mean: float = Field(description="incumbent_total per compared task: a typical episode.")
    candidate_mean: float = Field(description="candidate_total per compared task.")
    reduction: float | None = Field(
        description="1 − candidate_total / incumbent_total; None when the incumbent's total is 0."
    )
    lower_bound: float | None = Field(
        description="Bootstrap lower bound of the reduction at the rule's confidence; None with reduction."
    )
    wins: int = Field(description="Tasks whose mean went down.")
    losses: int = Field(description="Tasks whose mean went up.")
    ties: int
    p_lower: float = Field(description="One-sided sign-test p-value that more tasks went down than up.")
    incumbent_missing_rate: float = Field(description="Share of the incumbent's episodes with no value.")
    candidate_missing_rate: float = Field(description="Share of the candidate's episodes with no value.")


def compare_objective(
    costs: PairedCosts, *, resamples: int, seed: int, confidence: float
) -> ObjectiveComparison:
    """Compute the paired objective figures of the candidate against the incumbent."""
    incumbent: dict[str, float] = {}
    candidate: dict[str, float] = {}
    for task in costs.tasks:
        pairs = [
            (i, c)
            for i, c in zip(costs.incumbent[task], costs.candidate[task], strict=True)
            if i is not None and c is not None
        ]
        if pairs:
            incumbent[task] = sum(i for i, _ in pairs) / len(pairs)
            candidate[task] = sum(c for _, c in pairs) / len(pairs)
    changes = {task: candidate[task] - incumbent[task] for task in incumbent}
    values = list(changes.values())
    wins = sum(change < -TIE_TOLERANCE for change in values)
    losses = sum(change > TIE_TOLERANCE for change in values)
    incumbent_total, candidate_total = sum(incumbent.values()), sum(candidate.values())
    compared = max(len(incumbent), 1)
    reduction = lower_bound = None
    if incumbent_total > 0:
        reduction = 1.0 - candidate_total / incumbent_total
        lower_bound = _reduction_lower_bound(
            list(incumbent.values()),
            list(candidate.values()),
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
    episodes = costs.episodes
    return ObjectiveComparison(
        objective=costs.objective,
        changes=changes,
        dropped_tasks=[task for task in costs.tasks if task not in incumbent],
        incumbent_total=incumbent_total,
        candidate_total=candidate_total,
        incumbent_mean=incumbent_total / compared,
        candidate_mean=candidate_total / compared,
        reduction=reduction,
        lower_bound=lower_bound,
        wins=wins,
        losses=losses,
        ties=len(values) - wins - losses,
        p_lower=sign_test_greater([-change for change in values]),
        incumbent_missing_rate=_missing(costs.incumbent) / episodes,
        candidate_missing_rate=_missing(costs.candidate) / episodes,
    )


class ObjectiveDecision(Decision):
    """The optimizer's verdict on a candidate that should lower cost, latency or tokens at equal quality.

    A `Decision` (verdict, reasons, the quality comparison as the CI gate computes it, both score
    vectors), so the loop, its records and its views take either; plus the objective's figures.
    "accept" means quality is non-inferior and the objective is lower, both with confidence; "void"
    means either side errored (or went unmeasured) too often to judge.
    """

    rule: ObjectiveRule  # type: ignore[assignment]  # the objective's rule, in place of AcceptanceRule
    objective: ObjectiveComparison
    costs: PairedCosts

    def summary(self) -> str:
        """One line with both figures, for the log and the commit message."""
        return (
            f"{self.verdict}: quality (tolerance {self.rule.tolerance:g}) "
            f"{comparison_figures(self.comparison, self.rule.confidence)}; "
            f"{objective_figures(self.objective, self.rule)}"
            + "".join(f"; {reason}" for reason in self.reasons)
        )


def spent(outcomes: Iterable[EpisodeOutcome], objective: ResourceObjective) -> dict[str, list[float | None]]:
    """Per task, each episode's value of the objective in seed order; None for an errored episode."""
    by_task: dict[str, list[float | None]] = {}
    for outcome in sorted(outcomes, key=lambda o: o.seed):
        value = None if outcome.errored else _value(outcome, objective)
        by_task.setdefault(outcome.task_id, []).append(value)
    return by_task


def spend_per_episode(outcomes: Iterable[EpisodeOutcome], objective: ResourceObjective) -> float | None:
    """The objective per episode of a batch: the mean over tasks of each task's mean, as the rule sums
    (an errored episode counts 0); None for no episodes."""
    values = spent(outcomes, objective)
    if not values:
        return None
    return sum(sum(v or 0.0 for v in task) / len(task) for task in values.values()) / len(values)


def load_decision(text: str) -> Decision:
    """A stored decision read back as what it was: an ObjectiveDecision if it has objective figures."""
    data = json.loads(text)
    return (ObjectiveDecision if "objective" in data else Decision).model_validate(data)


def decide_objective(
    scores: PairedScores, costs: PairedCosts, rule: ObjectiveRule | None = None
) -> ObjectiveDecision:
    """Accept the candidate only if the CI gate passes its quality against the incumbent and its
    objective went down on significantly more tasks than up, with the bootstrap lower bound of the
    total's relative reduction above the rule's minimum."""
    rule = rule or ObjectiveRule()
    _check_aligned(scores, costs)
    quality = gate(scores, rule.quality_rule)
    objective = compare_objective(costs, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence)

    def decision(verdict: Literal["accept", "reject", "void"], reasons: list[str]) -> ObjectiveDecision:
        return ObjectiveDecision(
            verdict=verdict,
            reasons=reasons,
            broken_tasks=quality.regressed_tasks,
            comparison=quality.comparison,
            objective=objective,
            rule=rule,
            scores=scores,
            costs=costs,
        )

    void = [] if quality.verdict != "error" else list(quality.reasons)
    void += [
        f"the {side}'s {costs.objective} is unknown for {rate:.0%} of its episodes, above the "
        f"{rule.max_error_rate:.0%} limit: fix the errors and rerun, the comparison is void"
        for side, rate in (
            ("incumbent", objective.incumbent_missing_rate),
            ("candidate", objective.candidate_missing_rate),
        )
        if rate > rule.max_error_rate
    ]
    if not objective.changes:
        void.append(f"no task has its {costs.objective} measured on both sides for the same seed")
    if void:
        return decision("void", void)

    reasons = [f"quality: {reason}" for reason in quality.reasons]
    if objective.p_lower > rule.alpha:
        reasons.append(
            f"{costs.objective}: sign test p={objective.p_lower:.3g} > {rule.alpha:g} "
            f"({objective.wins} tasks lower, {objective.losses} higher, {objective.ties} tied)"
        )
    if objective.lower_bound is None:
        reasons.append(f"{costs.objective}: the incumbent's total is 0, there is nothing to reduce")
    elif objective.lower_bound <= rule.min_reduction:
        reasons.append(
            f"{costs.objective}: bootstrap {rule.confidence:.0%} lower bound of the reduction "
            f"{objective.lower_bound:+.1%} <= minimum reduction {rule.min_reduction:.0%}"
        )
    return decision("reject" if reasons else "accept", reasons)


def _reduction_lower_bound(
    incumbent: list[float], candidate: list[float], *, resamples: int, seed: int, confidence: float
) -> float:
    """Percentile-bootstrap lower bound of 1 − Σ candidate / Σ incumbent, resampling tasks.

    Draws the task indices exactly as `stats.bootstrap_lower_bound` does, so with the same seed both
    bounds see the same resamples. A resample whose incumbent total is 0 reduces nothing (0) if its
    candidate total is 0 too, else infinitely much the wrong way (−inf); the quantile is the lower
    order statistic, so such draws never turn into NaN, and the bound is never above the interpolated one.
    """
    before, after = np.asarray(incumbent, dtype=float), np.asarray(candidate, dtype=float)
    draws = np.random.default_rng(seed).integers(0, before.size, size=(resamples, before.size))
    totals_before, totals_after = before[draws].sum(axis=1), after[draws].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        reductions = np.where(
            totals_before > 0,
            1.0 - totals_after / totals_before,
            np.where(totals_after > 0, -np.inf, 0.0),
        )
    return float(np.quantile(reductions, 1.0 - confidence, method="lower"))


def _check_aligned(scores: PairedScores, costs: PairedCosts) -> None:
    if scores.incumbent.keys() != costs.incumbent.keys():
        only_scores = sorted(scores.incumbent.keys() - costs.incumbent.keys())
        only_costs = sorted(costs.incumbent.keys() - scores.incumbent.keys())
        raise ValueError(
            f"scores and {costs.objective} cover different tasks (only scores: {only_scores}, only "
            f"{costs.objective}: {only_costs}); pass both from the same episodes"
        )
    for task, values in scores.incumbent.items():
        if len(values) != len(costs.incumbent[task]):
            raise ValueError(
                f"task {task!r} has {len(values)} scores and {len(costs.incumbent[task])} "
                f"{costs.objective} values per side; pass both from the same episodes"
            )


def _missing(side: dict[str, list[float | None]]) -> int:
    return sum(value is None for values in side.values() for value in values)


def _value(outcome: EpisodeOutcome, objective: ResourceObjective) -> float:
    if objective == "cost":
        return outcome.usage.cost_usd
    if objective == "tokens":
        return float(outcome.usage.total_tokens)
    return outcome.latency_s


def objective_figures(figures: ObjectiveComparison, rule: ObjectiveRule) -> str:
    """The objective's figures in one line: for a decision's summary and the commit message."""
    unit = _UNITS[figures.objective]
    if figures.reduction is None or figures.lower_bound is None:
        reduction = "reduction undefined (incumbent total 0)"
    else:
        reduction = f"reduction {figures.reduction:+.1%}, {rule.confidence:.0%} lower bound {figures.lower_bound:+.1%}"
    return (
        f"{figures.objective} (minimum reduction {rule.min_reduction:.0%}) per episode {figures.incumbent_mean:.4g} -> {figures.candidate_mean:.4g} {unit}, "
        f"{reduction}, {figures.wins} tasks lower / {figures.losses} higher / {figures.ties} tied, "
        f"sign test p={figures.p_lower:.3g} lower"
    )
