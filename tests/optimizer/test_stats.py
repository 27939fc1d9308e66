import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from atoll.evals.metrics import EpisodeOutcome
from atoll.worlds.base.stats import (
    AcceptanceRule,
    Decision,
    GateRule,
    PairedScores,
    bootstrap_lower_bound,
    decide,
    gate,
    sign_test_greater,
)


def paired(incumbent: list[list[float | None]], candidate: list[list[float | None]]) -> PairedScores:
    return PairedScores(
        incumbent={f"t{i}": scores for i, scores in enumerate(incumbent)},
        candidate={f"t{i}": scores for i, scores in enumerate(candidate)},
    )


# 20 tasks the incumbent always fails and the candidate always passes, 10 both always pass.
INCUMBENT = [[0.0] * 3] * 20 + [[1.0] * 3] * 10
CLEAR_WIN = paired(INCUMBENT, [[1.0] * 3] * 30)

binary_scores = st.lists(
    st.lists(st.sampled_from([0.0, 1.0]), min_size=3, max_size=3), min_size=1, max_size=40
)


def test_a_clear_win_is_accepted_with_its_figures():
    decision = decide(CLEAR_WIN)

    assert decision.verdict == "accept"
    assert decision.accepted
    assert decision.reasons == []
    assert decision.comparison.wins == 20
    assert decision.comparison.ties == 10
    assert decision.comparison.p_better == pytest.approx(2**-20)
    assert decision.comparison.mean_delta == pytest.approx(20 / 30)
    assert decision.summary().startswith("accept: mean 0.333 -> 1.000")


def test_no_change_is_rejected_and_the_reasons_say_why():
    decision = decide(paired(INCUMBENT, INCUMBENT))

    assert decision.verdict == "reject"
    assert not decision.accepted
    assert decision.reasons == [
        "sign test p=1 > 0.05 (0 tasks better, 0 worse, 30 tied)",
        "bootstrap 95% lower bound of the mean gain +0.000 <= minimum effect 0.02",
    ]


def test_a_gain_smaller_than_the_minimum_effect_is_rejected_even_when_significant():
    # 6 of 100 tasks gain a little, none lose: significant, but the mean gain is 0.006.
    decision = decide(paired([[0.0]] * 100, [[0.1]] * 6 + [[0.0]] * 94))

    assert decision.comparison.p_better <= 0.05
    assert decision.verdict == "reject"
    assert [reason.split(" of ")[0] for reason in decision.reasons] == ["bootstrap 95% lower bound"]


def test_breaking_a_task_the_incumbent_always_passed_blocks_acceptance():
    candidate = [[1.0] * 3] * 29 + [[1.0, 0.0, 0.0]]
    decision = decide(paired(INCUMBENT, candidate))

    assert decision.comparison.p_better <= 0.05
    assert decision.comparison.lower_bound > 0.02
    assert decision.verdict == "reject"
    assert decision.broken_tasks == ["t29"]
    assert decision.reasons == ["1 task(s) the incumbent always passed fall below a 50% pass rate: t29 (1/3)"]


def test_a_single_lucky_pass_is_not_always_passed_and_does_not_veto():
    # One seed per task: the incumbent passed t29 once; the candidate misses it once but wins 20 tasks.
    incumbent = [[0.0]] * 20 + [[1.0]] * 10
    candidate = [[1.0]] * 29 + [[0.0]]

    assert decide(paired(incumbent, candidate)).accepted
    strict = AcceptanceRule(always_passed_min_seeds=1)
    assert decide(paired(incumbent, candidate), strict).broken_tasks == ["t29"]


def test_a_task_still_passing_half_the_time_does_not_block_acceptance():
    candidate = [[1.0] * 4] * 29 + [[1.0, 1.0, 0.0, 0.0]]
    decision = decide(paired([[0.0] * 4] * 20 + [[1.0] * 4] * 10, candidate))

    assert decision.broken_tasks == []
    assert decision.accepted


def test_errored_episodes_count_as_failures_of_their_side():
    # One errored seed on a task the incumbent always passed: 2/3 passes, and a loss on that task.
    candidate = [[1.0] * 3] * 29 + [[1.0, None, 1.0]]
    decision = decide(paired(INCUMBENT, candidate))

    assert decision.comparison.losses == 1
    assert decision.comparison.deltas["t29"] == pytest.approx(-1 / 3)
    assert decision.comparison.candidate_error_rate == pytest.approx(1 / 90)
    assert decision.accepted


def test_too_many_errors_on_either_side_void_the_comparison():
    errored = [[None] * 3] * 7 + [[1.0] * 3] * 23  # 21 of 90 episodes errored: 23%
    candidate_errs = decide(paired(INCUMBENT, errored))
    incumbent_errs = decide(paired(errored, [[1.0] * 3] * 30))

    assert candidate_errs.verdict == "void"
    assert not candidate_errs.accepted
    assert candidate_errs.reasons == [
        "the candidate errored in 23% of its episodes, above the 20% limit: "
        "fix the errors and rerun, the comparison is void"
    ]
    assert incumbent_errs.verdict == "void"
    assert incumbent_errs.reasons[0].startswith("the incumbent errored in 23%")


def test_an_error_rate_at_the_limit_still_gets_a_decision():
    errored = [[None] * 3] * 6 + [[1.0] * 3] * 24  # exactly 20%
    assert decide(paired([[0.0] * 3] * 30, errored)).verdict == "accept"


@given(wins=st.integers(0, 30), losses=st.integers(0, 30), ties=st.integers(0, 10))
def test_the_sign_test_p_value_is_the_binomial_upper_tail(wins, losses, ties):
    assume(wins + losses + ties > 0)
    deltas = [0.5] * wins + [-0.25] * losses + [0.0] * ties
    n = wins + losses
    expected = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n

    assert sign_test_greater(deltas) == pytest.approx(expected)
    assert decide(paired([[0.5]] * len(deltas), [[0.5 + d] for d in deltas])).comparison.p_better == (
        pytest.approx(expected)
    )


def test_the_sign_test_matches_known_values():
    assert sign_test_greater([1.0] * 5) == 1 / 32
    assert sign_test_greater([1.0] * 9 + [-1.0]) == 11 / 1024
    assert sign_test_greater([0.0, 0.0]) == 1.0


def test_float_noise_around_zero_is_a_tie_not_a_win():
    assert sign_test_greater([1e-12] * 10) == 1.0


def test_the_bootstrap_bound_is_reproducible_from_its_seed():
    deltas = [0.3, -0.1, 0.0, 0.5, 0.2, -0.4, 0.1, 0.0, 0.6, 0.05]

    first = bootstrap_lower_bound(deltas, seed=7)
    assert bootstrap_lower_bound(deltas, seed=7) == first
    assert bootstrap_lower_bound(deltas, seed=8) != first
    assert min(deltas) <= first < sum(deltas) / len(deltas)
    assert bootstrap_lower_bound([0.25] * 5) == 0.25


def test_a_decision_records_the_rule_and_round_trips_through_json():
    rule = AcceptanceRule(seed=42, resamples=3000)
    decision = decide(CLEAR_WIN, rule)

    restored = Decision.model_validate_json(decision.model_dump_json())
    assert restored == decision
    assert restored.rule.seed == 42
    assert restored.scores.incumbent["t0"] == [0.0, 0.0, 0.0]


def test_a_rule_with_fewer_than_2000_resamples_is_refused():
    with pytest.raises(ValidationError, match="resamples"):
        AcceptanceRule(resamples=500)


@given(binary_scores)
def test_a_candidate_identical_to_the_incumbent_is_never_accepted_and_always_passes_the_gate(scores):
    same = paired(scores, scores)
    assert decide(same).verdict == "reject"
    assert gate(same).verdict == "pass"


def test_the_gate_passes_a_small_loss_within_tolerance():
    verdict = gate(paired([[1.0] * 3] * 30, [[1.0] * 3] * 29 + [[1.0, 1.0, 0.0]]))

    assert verdict.verdict == "pass"
    assert verdict.passed
    assert verdict.reasons == []


def test_the_gate_fails_a_sabotaged_candidate_on_every_count():
    base = [[1.0] * 3] * 10 + [[0.5] * 3] * 10
    sabotaged = [[0.0] * 3] * 5 + [[1.0] * 3] * 5 + [[0.25] * 3] * 10
    verdict = gate(paired(base, sabotaged))

    assert verdict.verdict == "regression"
    assert not verdict.passed
    assert verdict.regressed_tasks == ["t0", "t1", "t2", "t3", "t4"]
    assert [reason.split(" ")[0:3] for reason in verdict.reasons] == [
        ["bootstrap", "95%", "lower"],
        ["sign", "test", "for"],
        ["5", "task(s)", "the"],
    ]


def test_the_gate_fails_a_task_the_base_always_passed_that_now_fails_half_the_time():
    verdict = gate(paired([[1.0] * 4] * 30, [[1.0] * 4] * 29 + [[1.0, 0.0, 1.0, 0.0]]))

    assert verdict.verdict == "regression"
    assert verdict.regressed_tasks == ["t29"]


def test_the_gate_reports_an_error_when_runs_error_too_often():
    verdict = gate(paired([[1.0] * 3] * 10, [[None] * 3] * 3 + [[1.0] * 3] * 7))

    assert verdict.verdict == "error"
    assert not verdict.passed
    assert "candidate errored in 30%" in verdict.reasons[0]


def test_the_gate_tolerance_is_configurable():
    base, candidate = [[0.8]] * 10, [[0.8]] * 9 + [[0.7]]
    assert gate(paired(base, candidate)).passed
    assert not gate(paired(base, candidate), GateRule(tolerance=0.0)).passed


def test_scores_from_episodes_pair_by_seed_and_mark_errors():
    incumbent = [
        EpisodeOutcome(task_id="a", seed=2, score=0.0),
        EpisodeOutcome(task_id="a", seed=1, score=1.0),
    ]
    candidate = [
        EpisodeOutcome(task_id="a", seed=1, score=0.0, errored=True),
        EpisodeOutcome(task_id="a", seed=2, score=0.5),
    ]
    scores = PairedScores.from_outcomes(incumbent, candidate)

    assert scores.incumbent == {"a": [1.0, 0.0]}
    assert scores.candidate == {"a": [None, 0.5]}
    assert scores.candidate_errors == 1


def test_scores_on_different_seeds_are_refused_with_the_task_named():
    with pytest.raises(ValueError, match=r"task 'a' ran on seeds \[1\] for the incumbent and \[2\]"):
        PairedScores.from_outcomes(
            [EpisodeOutcome(task_id="a", seed=1, score=1.0)], [EpisodeOutcome(task_id="a", seed=2, score=1.0)]
        )


def test_scores_on_different_tasks_are_refused_with_the_tasks_named():
    with pytest.raises(ValidationError, match=r"only incumbent: \['b'\], only candidate: \['c'\]"):
        PairedScores(incumbent={"a": [1.0], "b": [1.0]}, candidate={"a": [1.0], "c": [1.0]})


def test_a_score_outside_zero_to_one_is_refused():
    with pytest.raises(ValidationError, match=r"candidate\.a\.0"):
        PairedScores(incumbent={"a": [1.0]}, candidate={"a": [1.5]})
