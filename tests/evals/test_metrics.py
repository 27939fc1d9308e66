import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from atoll.evals.metrics import EpisodeOutcome, compute_metrics, pass_hat_k, passes
from atoll.harnesses.models import ModelUsage


@st.composite
def task_trials(draw) -> list[tuple[int, int]]:
    """Per task (tries, successes), every task with the same number of tries."""
    n = draw(st.integers(1, 8))
    return [(n, c) for c in draw(st.lists(st.integers(0, n), min_size=1, max_size=20))]


def test_pass_hat_k_is_the_closed_form_averaged_over_tasks():
    # Task A: 2 of 4 tries pass, task B: 4 of 4.
    assert pass_hat_k([(4, 2), (4, 4)], 1) == pytest.approx((0.5 + 1.0) / 2)
    assert pass_hat_k([(4, 2), (4, 4)], 2) == pytest.approx((1 / 6 + 1.0) / 2)
    assert pass_hat_k([(4, 2), (4, 4)], 3) == pytest.approx((0.0 + 1.0) / 2)


@given(task_trials(), st.data())
def test_pass_hat_k_is_the_share_of_k_subsets_of_tries_that_all_pass(trials, data):
    k = data.draw(st.integers(1, trials[0][0]))
    expected = []
    for n, c in trials:
        outcomes = [True] * c + [False] * (n - c)
        subsets = list(itertools.combinations(outcomes, k))
        expected.append(sum(all(subset) for subset in subsets) / len(subsets))

    assert pass_hat_k(trials, k) == pytest.approx(sum(expected) / len(expected))


@given(task_trials())
def test_pass_hat_k_lies_in_zero_one_starts_at_the_pass_rate_and_never_rises_with_k(trials):
    n = trials[0][0]
    values = [pass_hat_k(trials, k) for k in range(1, n + 1)]

    assert all(0.0 <= value <= 1.0 for value in values)
    assert values[0] == pytest.approx(sum(c / n for _, c in trials) / len(trials))
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(values))


def test_pass_hat_k_refuses_a_k_larger_than_the_tries():
    with pytest.raises(ValueError, match="pass\\^3 needs at least 3 tries per task"):
        pass_hat_k([(2, 2)], 3)


def episodes(task_id: str, scores: list[float], **fields) -> list[EpisodeOutcome]:
    return [
        EpisodeOutcome(task_id=task_id, seed=seed, score=score, **fields) for seed, score in enumerate(scores)
    ]


def test_metrics_summarise_a_batch_per_task_and_overall():
    batch = [
        *episodes(
            "refund",
            [1.0, 1.0, 0.0],
            usage=ModelUsage(prompt_tokens=100, completion_tokens=10, cost_usd=0.01),
        ),
        *episodes(
            "lookup", [1.0, 0.5, 0.5], usage=ModelUsage(prompt_tokens=50, completion_tokens=5, cost_usd=0.005)
        ),
    ]
    metrics = compute_metrics(batch)

    assert metrics.episodes == 6
    assert metrics.tasks == 2
    assert metrics.per_task["refund"].pass_rate == pytest.approx(2 / 3)
    assert metrics.per_task["lookup"].passes == 1
    assert metrics.mean_score == pytest.approx((2 / 3 + 2 / 3) / 2)
    assert metrics.pass_1 == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert metrics.pass_k == {
        1: pytest.approx(0.5),
        2: pytest.approx((1 / 3 + 0.0) / 2),
        3: pytest.approx(0.0),
    }
    assert (metrics.usage.prompt_tokens, metrics.usage.completion_tokens) == (450, 45)
    assert metrics.usage.cost_usd == pytest.approx(0.045)


def test_every_task_weighs_the_same_whatever_its_number_of_seeds():
    metrics = compute_metrics([*episodes("a", [1.0] * 4), *episodes("b", [0.0])])

    assert metrics.mean_score == 0.5
    assert metrics.pass_1 == 0.5
    assert metrics.pass_k == {1: 0.5}


def test_latency_reports_the_median_and_the_95th_percentile():
    batch = [EpisodeOutcome(task_id="t", seed=i, score=1.0, latency_s=float(i + 1)) for i in range(20)]
    metrics = compute_metrics(batch, ks=[1])

    assert metrics.latency_median_s == 10.5
    assert metrics.latency_p95_s == pytest.approx(19.05)


def test_errored_episodes_fail_and_are_counted():
    batch = [
        EpisodeOutcome(task_id="t", seed=0, score=1.0),
        EpisodeOutcome(task_id="t", seed=1, score=0.0, errored=True),
    ]
    metrics = compute_metrics(batch)

    assert metrics.errors == 1
    assert metrics.per_task["t"].errors == 1
    assert metrics.pass_1 == 0.5


def test_an_errored_episode_with_a_score_is_refused():
    with pytest.raises(ValidationError, match=r"errored episodes score 0, got score=0\.5; set score=0\.0"):
        EpisodeOutcome(task_id="t", seed=0, score=0.5, errored=True)


def test_partial_credit_summing_to_one_passes_and_the_threshold_is_configurable():
    assert passes(0.1 + 0.2 + 0.7)
    assert not passes(0.99)
    metrics = compute_metrics(episodes("t", [0.8, 0.6]), pass_threshold=0.75)

    assert metrics.per_task["t"].passes == 1
    assert metrics.pass_threshold == 0.75


def test_asking_for_pass_k_beyond_the_seeds_names_the_task_short_of_seeds():
    batch = [*episodes("many", [1.0] * 5), *episodes("few", [1.0] * 2)]

    with pytest.raises(ValueError, match="pass\\^3 needs at least 3 seeds per task, task 'few' has 2"):
        compute_metrics(batch, ks=[1, 3])


def test_the_same_task_and_seed_twice_is_refused():
    with pytest.raises(ValueError, match="task_id='t' seed=0 appears twice"):
        compute_metrics([*episodes("t", [1.0]), *episodes("t", [0.0])])


def test_no_episodes_is_refused():
    with pytest.raises(ValueError, match="no episodes"):
        compute_metrics([])


def test_pass_k_defaults_to_every_k_up_to_the_fewest_seeds():
    metrics = compute_metrics([*episodes("a", [1.0, 0.0, 1.0]), *episodes("b", [1.0] * 4)])

    assert sorted(metrics.pass_k) == [1, 2, 3]
    assert metrics.pass_k[3] == pytest.approx((0.0 + 1.0) / 2)
    assert math.isclose(metrics.pass_k[2], (1 / 3 + 1.0) / 2)


def test_metrics_and_results_stored_before_the_usage_record_still_read() -> None:
    from atoll.evals.metrics import Metrics
    from atoll.optimizer import OptimizeResult

    metrics = compute_metrics(episodes("a", [1.0], usage=ModelUsage(prompt_tokens=7, completion_tokens=2)))
    old = metrics.model_dump(exclude={"usage"}) | {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "cost_usd": 0.5,
    }
    assert Metrics.model_validate(old).usage == ModelUsage(prompt_tokens=7, completion_tokens=2, cost_usd=0.5)

    stored = {
        "run_id": "r",
        "status": "finished",
        "stop_reason": "budget",
        "start_hash": "a",
        "final_hash": "a",
    }
    stored |= {"val_start": 0.5, "val_final": 0.5, "model_calls": 12, "tokens": 900, "cost_usd": 0.25}
    result = OptimizeResult.model_validate(stored)
    assert (result.usage.model_calls, result.usage.total_tokens, result.usage.cost_usd) == (12, 900, 0.25)
