"""The power of a split: whether `decide` can accept anything on it, with figures the real rule confirms,
and the warning `optimize run` and `optimize gate` print when it cannot (or the gate's sign test cannot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from notes_desk import HARNESS_YAML, PROMPT, write
from typer.testing import CliRunner

from atoll import optimizer
from atoll.cli import app
from atoll.evals import BatchProgress
from atoll.optimizer import (
    AcceptanceRule,
    GateError,
    OptimizerEvent,
    OptimizerPaused,
    OptimizerStatus,
    PairedScores,
    acceptance_power,
    decide,
    regression_power,
    sign_test_greater,
    sign_test_needs,
)

runner = CliRunner()


def sparse_win(tasks: int, improved: int, gain: float, k: int = 1) -> PairedScores:
    """`improved` tasks up by `gain` on every seed, the rest tied: built here, not by the module under test."""
    return PairedScores(
        incumbent={f"t{i}": [0.0] * k for i in range(tasks)},
        candidate={f"t{i}": [gain if i < improved else 0.0] * k for i in range(tasks)},
    )


def test_the_sign_test_needs_five_tasks_at_alpha_005_and_more_at_a_stricter_alpha() -> None:
    assert sign_test_needs(0.05) == 5
    assert sign_test_greater([1.0] * 5) <= 0.05 < sign_test_greater([1.0] * 4)
    assert sign_test_needs(0.01) == 7


def test_four_val_tasks_can_never_accept_and_the_message_says_to_add_tasks() -> None:
    power = acceptance_power(4, k=3)

    assert (power.verdict, power.fewest_tasks, power.mean_gain) == ("impossible", None, None)
    assert "can never accept" in power.message and "at least 5" in power.message
    assert "-k" in power.message  # more seeds do not help the count, and it says so
    # Even the best possible candidate, every task from 0 to 1 on every seed, is rejected.
    assert not decide(sparse_win(4, 4, 1.0, k=3)).accepted


def test_seven_tasks_are_unlikely_and_many_tasks_are_ok() -> None:
    seven = acceptance_power(7)
    assert (seven.verdict, seven.fewest_tasks, seven.tasks_for_ok) == ("unlikely", 5, 10)
    assert "5 of 7 tasks" in seven.message and "10+" in seven.message

    many = acceptance_power(40)
    assert many.verdict == "ok" and many.fewest_tasks is not None and many.fewest_tasks <= 20
    assert "acceptance needs" in many.message


def test_more_seeds_do_not_change_how_many_tasks_must_improve() -> None:
    assert acceptance_power(7, k=1).fewest_tasks == acceptance_power(7, k=5).fewest_tasks == 5


def test_a_minimum_effect_no_sparse_win_can_clear_is_unlikely_and_names_the_option() -> None:
    power = acceptance_power(15, rule=AcceptanceRule(min_effect=0.3))
    assert power.verdict == "unlikely" and "lower --min-effect (now 0.3)" in power.message


@settings(max_examples=12)
@given(tasks=st.integers(5, 30), k=st.integers(1, 3), min_effect=st.sampled_from([0.01, 0.02, 0.05, 0.1]))
def test_the_smallest_gain_is_accepted_by_the_real_rule_and_a_slightly_smaller_one_is_not(
    tasks: int, k: int, min_effect: float
) -> None:
    rule = AcceptanceRule(min_effect=min_effect)
    power = acceptance_power(tasks, k, rule)
    assert power.fewest_tasks is not None and power.gain_per_task is not None

    fewest, gain = power.fewest_tasks, power.gain_per_task
    assert decide(sparse_win(tasks, fewest, gain, k), rule).accepted
    assert not decide(sparse_win(tasks, fewest, gain - 2e-6, k), rule).accepted  # the figure is to 1e-6
    assert not decide(sparse_win(tasks, fewest - 1, 1.0, k), rule).accepted  # one task fewer: never
    assert power.mean_gain == pytest.approx(fewest * gain / tasks)


def test_the_gate_on_four_tasks_loses_its_sign_test_and_says_what_still_guards() -> None:
    weak = regression_power(4, k=3)
    assert weak.verdict == "weak" and weak.always_passed_check
    assert "can never fail a change" in weak.message and "always-passed check can" in weak.message

    one_seed = regression_power(4, k=1)
    assert not one_seed.always_passed_check and "needs 2+ seeds" in one_seed.message

    assert regression_power(17, k=3).verdict == "ok"


# -- the commands warn at start -------------------------------------------------------------------


def workspace(root: Path, val: int) -> Path:
    """A harness in h/ and a suite in s/ whose val split has `val` tasks (no git: the runs are faked)."""
    write(
        root / "h", {"harness.yaml": HARNESS_YAML, "tools.yaml": "desk: [add_order_note]\n", PROMPT: "Hi.\n"}
    )
    tasks = "".join(
        f"- id: note-{i}\n  split: {'val' if i < val else 'train'}\n  fixture: small_shop\n"
        f"  user: {{message: 'Note ORD-{1001 + i}.'}}\n"
        f"  reference: [{{add_order_note: {{order_id: ORD-{1001 + i}, note: called}}}}]\n"
        f"  expect: {{inserted: {{order_notes: [{{order_id: ORD-{1001 + i}}}]}}, no_other_writes: true}}\n"
        for i in range(val + 2)
    )
    write(
        root / "s",
        {"suite.yaml": "name: notes\nworld: helpdesk\ndefault_seeds: [0, 1, 2]\n", "tasks/t.yaml": tasks},
    )
    return root


@pytest.mark.parametrize("val,warned", [(4, True), (12, False)])
def test_optimize_run_warns_as_it_starts_when_val_cannot_accept_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, val: int, warned: bool
) -> None:
    async def stopped(config, *, resume, on_event):
        on_event(OptimizerEvent(kind="start", status=OptimizerStatus(run_id="r1")))
        raise OptimizerPaused("stopped by the test")

    monkeypatch.setattr(optimizer, "optimize", stopped)
    root = workspace(tmp_path, val)
    result = runner.invoke(app, ["run", str(root / "h"), "--suite", str(root / "s"), "--no-commit"])

    assert result.exit_code == 3, result.output  # the run itself went on after the warning
    said = " ".join(result.stderr.split())
    if warned:
        assert "warning: val split: 4 task(s) x 1 seed(s): the optimizer can never accept" in said
    else:
        assert "warning" not in said


def test_optimize_gate_warns_as_it_starts_when_its_sign_test_cannot_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stopped(config, *, on_progress):
        on_progress("both", BatchProgress(kind="start", run_id="r1", total=8))
        raise GateError("stopped by the test")

    monkeypatch.setattr(optimizer, "run_gate", stopped)
    root = workspace(tmp_path, 4)
    result = runner.invoke(app, ["gate", str(root / "h"), "--suite", str(root / "s")])

    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert "warning: gate on the val split: 4 task(s) x 3 seed(s): its sign test for losses can never" in said
    assert said.endswith("error: stopped by the test")


def test_a_gate_that_cannot_start_says_only_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(config, *, on_progress):
        raise GateError("no base ref")

    monkeypatch.setattr(optimizer, "run_gate", refused)
    root = workspace(tmp_path, 4)
    result = runner.invoke(app, ["gate", str(root / "h"), "--suite", str(root / "s")])
    assert (result.exit_code, result.stderr.strip()) == (2, "error: no base ref")
