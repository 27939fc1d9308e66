import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from atoll.evals.metrics import EpisodeOutcome
from atoll.harnesses.models import ModelUsage
from atoll.optimizer import (
    ObjectiveDecision,
    ObjectiveRule,
    PairedCosts,
    PairedScores,
    decide_objective,
)


def paired(incumbent: list[list[float | None]], candidate: list[list[float | None]]) -> PairedScores:
    return PairedScores(
        incumbent={f"t{i}": scores for i, scores in enumerate(incumbent)},
        candidate={f"t{i}": scores for i, scores in enumerate(candidate)},
    )


def costs(incumbent: list[list[float | None]], candidate: list[list[float | None]]) -> PairedCosts:
    return PairedCosts(
        objective="tokens",
        incumbent={f"t{i}": values for i, values in enumerate(incumbent)},
        candidate={f"t{i}": values for i, values in enumerate(candidate)},
    )


# 20 tasks, 3 seeds: 10 always passed, 10 always failed, on both sides.
QUALITY = [[1.0] * 3] * 10 + [[0.0] * 3] * 10
SAME_QUALITY = paired(QUALITY, QUALITY)
# Task t costs 1000 + 100 t tokens per episode, with a little noise across seeds.
TOKENS = [[1000.0 + 100 * t + s for s in (0, 7, -5)] for t in range(20)]


def cheaper(fraction: float, tasks: int = 20) -> list[list[float]]:
    """The incumbent's tokens cut by `fraction` on the first `tasks` tasks, unchanged on the rest."""
    return [[v * (1 - fraction) for v in row] if t < tasks else row for t, row in enumerate(TOKENS)]


def test_a_candidate_as_good_and_clearly_cheaper_is_accepted_with_both_figures():
    decision = decide_objective(SAME_QUALITY, costs(TOKENS, cheaper(0.3, tasks=18)))

    assert decision.verdict == "accept"
    assert decision.accepted
    assert decision.reasons == []
    figures = decision.objective
    assert (figures.wins, figures.losses, figures.ties) == (18, 0, 2)
    assert figures.p_lower == pytest.approx(2**-18)
    assert figures.incumbent_total == pytest.approx(sum(sum(row) / 3 for row in TOKENS))
    assert figures.reduction == pytest.approx(0.3 * sum(map(sum, TOKENS[:18])) / sum(map(sum, TOKENS)))
    assert 0.10 < figures.lower_bound < figures.reduction
    assert decision.comparison.mean_delta == 0.0


def test_a_cheaper_candidate_that_loses_quality_beyond_the_tolerance_is_rejected():
    # 4 of the 10 always-passed tasks drop to 1/3: mean quality -0.13, and those tasks collapse.
    worse = [[1.0, 0.0, 0.0]] * 4 + [[1.0] * 3] * 6 + [[0.0] * 3] * 10
    decision = decide_objective(paired(QUALITY, worse), costs(TOKENS, cheaper(0.5)))

    assert decision.verdict == "reject"
    assert decision.objective.lower_bound > 0.4
    assert decision.comparison.lower_bound < -0.05
    assert decision.reasons[0].startswith("quality: bootstrap 95% lower bound of the mean change")
    assert all(reason.startswith("quality: ") for reason in decision.reasons)


def test_a_small_quality_loss_within_the_tolerance_does_not_block_a_cut():
    # One task's partial score drops from 0.5 to 0.4: a mean change of -0.005.
    incumbent = [*QUALITY[:19], [0.5] * 3]
    candidate = [*QUALITY[:19], [0.4] * 3]
    decision = decide_objective(paired(incumbent, candidate), costs(TOKENS, cheaper(0.3)))

    assert decision.comparison.mean_delta == pytest.approx(-0.005)
    assert decision.accepted


def test_breaking_a_task_the_incumbent_always_passed_blocks_a_cut():
    # t0 now passes once in three, though its mean score only drops by 0.067: the veto, not the bound.
    broken = [[1.0, 0.9, 0.9], *QUALITY[1:]]
    decision = decide_objective(paired(QUALITY, broken), costs(TOKENS, cheaper(0.3)))

    assert decision.comparison.lower_bound >= -0.05
    assert decision.verdict == "reject"
    assert decision.broken_tasks == ["t0"]
    assert decision.reasons == [
        "quality: 1 task(s) the base always passed now fail half the time or more: t0 (1/3)"
    ]


def test_a_cut_on_too_few_tasks_fails_the_sign_test():
    # 4 tasks make most of the bill and get 60% cheaper, 1 task gets a little dearer, the rest tie.
    incumbent = TOKENS[:16] + [[20_000.0] * 3] * 4
    candidate = [row if t < 16 else [v * 0.4 for v in row] for t, row in enumerate(incumbent)]
    candidate[0] = [v * 1.05 for v in TOKENS[0]]
    decision = decide_objective(SAME_QUALITY, costs(incumbent, candidate))

    assert decision.objective.lower_bound > 0.10
    assert decision.verdict == "reject"
    assert decision.reasons == ["tokens: sign test p=0.188 > 0.05 (4 tasks lower, 1 higher, 15 tied)"]


def test_a_reduction_whose_lower_bound_is_below_the_minimum_is_rejected():
    decision = decide_objective(SAME_QUALITY, costs(TOKENS, cheaper(0.08)))

    assert decision.objective.p_lower == pytest.approx(2**-20)
    assert decision.objective.reduction == pytest.approx(0.08)
    assert decision.verdict == "reject"
    assert decision.reasons == [
        "tokens: bootstrap 95% lower bound of the reduction +8.0% <= minimum reduction 10%"
    ]
    assert decide_objective(
        SAME_QUALITY, costs(TOKENS, cheaper(0.08)), ObjectiveRule(min_reduction=0.05)
    ).accepted


def test_the_reduction_is_of_the_total_so_a_near_free_task_cannot_dominate():
    # Task t0 goes from 1 token to 3 (+200%), every other task is 20% cheaper.
    incumbent = [[1.0] * 3, *TOKENS[1:]]
    candidate = [[3.0] * 3, *cheaper(0.2)[1:]]
    decision = decide_objective(SAME_QUALITY, costs(incumbent, candidate))

    assert decision.objective.reduction == pytest.approx(0.2, abs=0.001)
    assert decision.objective.losses == 1
    assert decision.accepted


def test_too_many_errors_void_the_decision():
    errored = [[None] * 3] * 5 + QUALITY[5:]  # 15 of 60 episodes: 25%
    scores = decide_objective(paired(QUALITY, errored), costs(TOKENS, cheaper(0.3)))
    missing = [[None] * 3] * 5 + cheaper(0.3)[5:]
    unmeasured = decide_objective(SAME_QUALITY, costs(TOKENS, missing))

    assert scores.verdict == "void"
    assert not scores.accepted
    assert scores.reasons == [
        "the candidate errored in 25% of its episodes, above the 20% limit: "
        "fix the errors and rerun, the comparison is void"
    ]
    assert unmeasured.verdict == "void"
    assert unmeasured.reasons == [
        "the candidate's tokens is unknown for 25% of its episodes, above the 20% limit: "
        "fix the errors and rerun, the comparison is void"
    ]


def test_an_unmeasured_seed_is_dropped_from_both_sides_of_its_task():
    candidate = cheaper(0.3)
    candidate[0] = [None, *candidate[0][1:]]
    decision = decide_objective(SAME_QUALITY, costs(TOKENS, candidate))

    assert decision.objective.changes["t0"] == pytest.approx(-0.3 * (TOKENS[0][1] + TOKENS[0][2]) / 2)
    assert decision.objective.candidate_missing_rate == pytest.approx(1 / 60)
    assert decision.accepted


def test_the_summary_carries_both_figures_and_the_decision_round_trips():
    decision = decide_objective(SAME_QUALITY, costs(TOKENS, cheaper(0.08)), ObjectiveRule(seed=7))
    summary = decision.summary()

    assert summary == (
        "reject: quality (tolerance 0.05) mean 0.500 -> 0.500 (+0.000, 95% lower bound +0.000), "
        "0 tasks better / 0 worse / 20 tied, sign test p=1 better, p=1 worse; "
        "tokens (minimum reduction 10%) per episode 1951 -> 1795 tokens, reduction +8.0%, "
        "95% lower bound +8.0%, 20 tasks lower / 0 higher / 0 tied, sign test p=9.54e-07 lower; "
        "tokens: bootstrap 95% lower bound of the reduction +8.0% <= minimum reduction 10%"
    )
    restored = ObjectiveDecision.model_validate_json(decision.model_dump_json())
    assert restored == decision
    assert restored.rule.seed == 7


def test_the_bound_is_reproducible_from_the_rule_seed():
    noisy = [[v * (0.6 + 0.05 * (t % 7)) for v in row] for t, row in enumerate(TOKENS)]
    first = decide_objective(SAME_QUALITY, costs(TOKENS, noisy), ObjectiveRule(seed=1)).objective.lower_bound

    assert (
        decide_objective(SAME_QUALITY, costs(TOKENS, noisy), ObjectiveRule(seed=1)).objective.lower_bound
        == first
    )
    assert (
        decide_objective(SAME_QUALITY, costs(TOKENS, noisy), ObjectiveRule(seed=2)).objective.lower_bound
        != first
    )


def test_the_rule_refuses_a_negative_tolerance_and_few_resamples():
    with pytest.raises(ValidationError, match="tolerance"):
        ObjectiveRule(tolerance=-0.05)
    with pytest.raises(ValidationError, match="resamples"):
        ObjectiveRule(resamples=500)
    assert ObjectiveRule(tolerance=0.02).quality_rule.tolerance == 0.02  # one sign: the same size


def test_costs_on_different_tasks_or_seeds_are_refused_with_the_task_named():
    with pytest.raises(ValidationError, match=r"only incumbent: \['b'\], only candidate: \['c'\]"):
        PairedCosts(incumbent={"a": [1.0], "b": [1.0]}, candidate={"a": [1.0], "c": [1.0]})
    with pytest.raises(ValidationError, match=r"task 'a' has 2 incumbent and 1 candidate values"):
        PairedCosts(incumbent={"a": [1.0, 2.0]}, candidate={"a": [1.0]})
    with pytest.raises(ValidationError, match=r"candidate\.a\.0"):
        PairedCosts(incumbent={"a": [1.0]}, candidate={"a": [-1.0]})


def test_scores_and_costs_that_do_not_match_are_refused_with_the_task_named():
    with pytest.raises(ValueError, match=r"task 't0' has 3 scores and 2 tokens values"):
        decide_objective(SAME_QUALITY, costs([row[:2] for row in TOKENS], [row[:2] for row in TOKENS]))
    with pytest.raises(ValueError, match=r"only scores: \['t19'\]"):
        decide_objective(SAME_QUALITY, costs(TOKENS[:19], TOKENS[:19]))


def test_costs_from_episodes_pair_by_seed_and_drop_errors():
    def episode(seed: int, tokens: int, errored: bool = False) -> EpisodeOutcome:
        usage = ModelUsage(prompt_tokens=tokens, completion_tokens=10, cost_usd=tokens / 1000)
        return EpisodeOutcome(task_id="a", seed=seed, score=0.0, errored=errored, usage=usage, latency_s=seed)

    incumbent = [episode(2, 200), episode(1, 100)]
    candidate = [episode(1, 50, errored=True), episode(2, 150)]

    tokens = PairedCosts.from_outcomes(incumbent, candidate, "tokens")
    assert tokens.incumbent == {"a": [110.0, 210.0]}
    assert tokens.candidate == {"a": [None, 160.0]}
    assert PairedCosts.from_outcomes(incumbent, candidate, "cost").incumbent == {"a": [0.1, 0.2]}
    assert PairedCosts.from_outcomes(incumbent, candidate, "latency").candidate == {"a": [None, 2.0]}
    with pytest.raises(ValueError, match=r"task 'a' ran on seeds \[1, 2\] for the incumbent and \[2\]"):
        PairedCosts.from_outcomes(incumbent, candidate[1:], "tokens")


scores_and_costs = st.integers(1, 12).flatmap(
    lambda tasks: st.tuples(
        *(
            st.lists(
                st.lists(st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0])), min_size=2, max_size=2),
                min_size=tasks,
                max_size=tasks,
            )
            for _ in range(2)
        ),
        *(
            st.lists(
                st.lists(st.one_of(st.none(), st.floats(0.0, 1e4)), min_size=2, max_size=2),
                min_size=tasks,
                max_size=tasks,
            )
            for _ in range(2)
        ),
    )
)
LENIENT = ObjectiveRule(max_error_rate=1.0, min_reduction=0.0, alpha=0.5, tolerance=0.5)


@settings(max_examples=60, deadline=None)
@given(scores_and_costs)
def test_swapping_the_sides_never_accepts_both_ways(draw):
    incumbent, candidate, incumbent_costs, candidate_costs = draw
    for rule in (ObjectiveRule(), LENIENT):
        forward = decide_objective(
            paired(incumbent, candidate), costs(incumbent_costs, candidate_costs), rule
        )
        backward = decide_objective(
            paired(candidate, incumbent), costs(candidate_costs, incumbent_costs), rule
        )
        assert not (forward.accepted and backward.accepted)


@settings(max_examples=60, deadline=None)
@given(scores_and_costs)
def test_identical_sides_are_never_accepted(draw):
    scores, _, values, _ = draw
    for rule in (ObjectiveRule(), LENIENT):
        assert not decide_objective(paired(scores, scores), costs(values, values), rule).accepted


def test_nothing_to_reduce_when_the_incumbent_costs_nothing():
    decision = decide_objective(
        paired([[1.0] * 2] * 3, [[1.0] * 2] * 3), costs([[0.0] * 2] * 3, [[0.0] * 2] * 3)
    )

    assert decision.objective.reduction is None
    assert decision.verdict == "reject"
    assert "tokens: the incumbent's total is 0, there is nothing to reduce" in decision.reasons
    assert "reduction undefined" in decision.summary()


def test_a_draw_of_only_free_incumbent_tasks_gives_an_infinite_bound_that_survives_json():
    # Half the draws of 2 tasks pick t0 only: free for the incumbent, 5 tokens for the candidate.
    decision = decide_objective(
        paired([[1.0] * 2] * 2, [[1.0] * 2] * 2), costs([[0.0] * 2, [100.0] * 2], [[5.0] * 2, [50.0] * 2])
    )

    assert decision.objective.reduction == pytest.approx(0.45)
    assert decision.objective.lower_bound == -math.inf
    assert ObjectiveDecision.model_validate_json(decision.model_dump_json()) == decision
