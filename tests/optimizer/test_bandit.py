"""The bandit that picks the next proposer: it learns from records, repeats for a seed, reads past runs."""

from __future__ import annotations

import random
from pathlib import Path

from atoll.evals import RunStore
from atoll.optimizer import OptimizeConfig
from atoll.optimizer._bandit import PAST_WEIGHT, Bandit, reward, tally
from atoll.optimizer._optimizations import OptimizationStore


def firsts(bandit: Bandit, draws: int = 400, seed: int = 0) -> dict[str, int]:
    counts = dict.fromkeys(bandit.names, 0)
    for i in range(draws):
        counts[bandit.order(random.Random(f"{seed}:{i}"))[0]] += 1
    return counts


def test_an_accept_weighs_more_than_a_screen_pass_and_failures_count_against():
    assert reward("accept") == (2.0, 0.0)
    assert reward("reject") == reward("void") == (1.0, 0.0)
    assert reward("screened_out") == reward("invalid") == reward("none") == (0.0, 1.0)
    assert reward(None) is None


def test_the_operator_with_the_better_record_goes_first_most_often():
    bandit = Bandit(["seldom", "often"])
    for _ in range(4):
        bandit.record("seldom", "screened_out")
        bandit.record("often", "reject")
    bandit.record("often", "accept")

    counts = firsts(bandit)

    assert counts["often"] > 0.9 * sum(counts.values())
    assert counts["seldom"] > 0  # still explored now and then


def test_the_order_repeats_for_a_seed_and_lists_every_proposer():
    bandit = Bandit(["a", "b", "c"], priors={"b": (1.0, 2.0)})

    orders = [bandit.order(random.Random("3:5")) for _ in range(3)]

    assert orders[0] == orders[1] == orders[2]
    assert sorted(orders[0]) == ["a", "b", "c"]
    assert len({tuple(bandit.order(random.Random(f"3:{i}"))) for i in range(30)}) > 1


def test_priors_come_from_past_runs_on_the_same_harness(tmp_path: Path):
    store = RunStore(tmp_path / "runs.sqlite")
    records = OptimizationStore(store)
    for run_id, harness, verdicts in [
        ("opt-past", "desk", [("add_demo", "accept"), ("hide_tool", "screened_out"), ("none", "none")]),
        ("opt-other", "elsewhere", [("hide_tool", "accept")]),
        ("opt-now", "desk", [("add_demo", "screened_out")]),
    ]:
        records.create(
            run_id, OptimizeConfig(harness=Path(harness)), harness=harness, model="m", start_hash="h"
        )
        for iteration, (operator, verdict) in enumerate(verdicts):
            records.save_step(run_id, iteration, operator=operator, verdict=verdict)

    priors = tally(records.past_verdicts("desk", exclude="opt-now"), PAST_WEIGHT)
    store.close()

    assert priors == {"add_demo": (2 * PAST_WEIGHT, 0.0), "hide_tool": (0.0, PAST_WEIGHT)}
    bandit = Bandit(["hide_tool", "add_demo"], priors)
    assert firsts(bandit)["add_demo"] > firsts(bandit)["hide_tool"]
