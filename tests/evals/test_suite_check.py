"""`check_suite` and `optimize suite check`: broken references named, blind spots listed, val power reported.

The shipped helpdesk suite must come out clean; small minidesk suites written here carry one trap each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from minidesk.agent import FILES
from minidesk.world import world
from rich.console import Console
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import SuiteCheck, SuiteError, check_suite, load_suite
from atoll.harnesses import Harness
from atoll.optimizer import acceptance_power
from atoll.views.suite_check import render_suite_check

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

TRAPS = """\
- id: refund-one
  split: val
  fixture: tiny
  user: {message: "Refund ORD-1, it arrived broken."}
  reference:
    - refund_order: {order_id: ORD-1, reason: damaged}
  expect:
    inserted: {refunds: [{order_id: ORD-1}]}
    no_other_writes: true

- id: cancel-without-collateral-check
  split: train
  fixture: tiny
  user: {message: "Cancel ORD-2."}
  reference:
    - cancel_order: {order_id: ORD-2}
  expect:
    updated: {orders: [{key: {id: ORD-2}, after: {status: cancelled}}]}

- id: vacuous
  split: train
  fixture: tiny
  user: {message: "Just saying hi."}
  expect: {unchanged: [customers], no_other_writes: true}

- id: wrong-expectation
  split: test
  fixture: tiny
  user: {message: "Refund ORD-3."}
  reference:
    - refund_order: {order_id: ORD-3, reason: changed mind}
  expect:
    inserted: {refunds: [{order_id: ORD-1}]}

- id: failing-call
  split: test
  fixture: tiny
  user: {message: "Cancel ORD-1."}
  reference:
    - cancel_order: {order_id: ORD-1}
  expect: {no_other_writes: true}

- id: needs-credit
  split: train
  fixture: tiny
  user: {message: "Give C2 five dollars of credit."}
  reference:
    - give_credit: {customer_id: C2, amount: 5}
  expect:
    updated: {customers: [{key: {id: C2}, after: {credit: 10}}]}
    no_other_writes: true
"""


def write_suite(root: Path, tasks: str, seeds: str = "[0, 1]") -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text(f"name: traps\nworld: minidesk.world\ndefault_seeds: {seeds}\n")
    (root / "tasks" / "t.yaml").write_text(tasks)
    return root


@pytest.fixture(scope="module")
def helpdesk() -> SuiteCheck:
    return check_suite(ROOT / "evals" / "helpdesk", harness=ROOT / "harnesses" / "support_agent")


@pytest.fixture
def traps(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "traps", TRAPS)


# -- the shipped suite ---------------------------------------------------------------------------


def test_every_helpdesk_reference_passes_at_every_seed(helpdesk: SuiteCheck) -> None:
    assert helpdesk.ok and helpdesk.broken_references == []
    assert all(len(task.reference) == 3 for task in helpdesk.tasks)  # default_seeds [0, 1, 2]


def test_the_helpdesk_do_nothing_agent_fails_everything_yet_scores_its_vacuous_checks(
    helpdesk: SuiteCheck,
) -> None:
    assert helpdesk.do_nothing_passes == [] and helpdesk.stray_write_passes == []
    assert helpdesk.do_nothing_mean is not None and 0.3 < helpdesk.do_nothing_mean < 0.6
    tally = {t.kind: (t.passed, t.total) for t in helpdesk.do_nothing_checks}
    tasks = len(helpdesk.tasks)
    assert tally["no_other_writes"] == (tasks, tasks) and tally["inserted"][0] == 0


def test_the_helpdesk_val_power_is_the_rules_own(helpdesk: SuiteCheck) -> None:
    val = len(load_suite(ROOT / "evals" / "helpdesk").select(split="val"))
    assert helpdesk.power == acceptance_power(val, 1)
    assert helpdesk.power.verdict == "ok" and helpdesk.power.fewest_tasks == 5


def test_the_shipped_harness_lacks_tools_some_references_use(helpdesk: SuiteCheck) -> None:
    task = next(t for t in helpdesk.tasks if t.task == "address-change-pending")
    assert "update_shipping_address" in task.missing_tools
    assert "address-change-pending" in helpdesk.unsolvable


def test_the_view_shows_the_do_nothing_mean_and_the_power_line(helpdesk: SuiteCheck) -> None:
    console = Console(record=True, width=240)
    console.print(render_suite_check(helpdesk))
    shown = " ".join(console.export_text().split())
    tasks = len(helpdesk.tasks)
    assert f"mean score {helpdesk.do_nothing_mean:.3f} over {tasks} tasks, passes 0" in shown
    assert f"no_other_writes {tasks}/{tasks}" in shown and "Power: val split:" in shown
    assert "update_shipping_address" in shown


# -- suites with traps ---------------------------------------------------------------------------


def test_broken_references_are_named_per_task_and_seed_without_stopping_the_check(traps: Path) -> None:
    check = check_suite(traps)
    by_id = {task.task: task for task in check.tasks}

    assert not check.ok and check.broken_references == ["wrong-expectation", "failing-call"]
    wrong = by_id["wrong-expectation"]
    assert wrong.failing_seeds == [0, 1] and "inserted refunds[0]" in wrong.reference[0].feedback
    failed = by_id["failing-call"].reference[0]
    assert failed.score is None and "cancel_order" in failed.feedback and "too_late" in failed.feedback
    assert by_id["failing-call"].do_nothing.status == "error"  # its grade needs the failing reference
    assert by_id["failing-call"].stray_write.status == "skipped"


def test_a_vacuous_task_is_passed_by_the_do_nothing_agent(traps: Path) -> None:
    check = check_suite(traps)
    assert check.do_nothing_passes == ["vacuous"]


def test_a_task_without_a_collateral_check_misses_the_stray_write(traps: Path) -> None:
    check = check_suite(traps)
    by_id = {task.task: task for task in check.tasks}

    assert check.stray_write_passes == ["cancel-without-collateral-check"]
    assert by_id["refund-one"].stray_write.detail == "its reference, then cancel-without-collateral-check's"
    assert by_id["vacuous"].stray_write.passed is False  # another task's writes instead of none


def test_a_suite_with_nothing_to_borrow_skips_the_stray_write_and_says_why(tmp_path: Path) -> None:
    only = TRAPS.split("\n\n")[0] + "\n"
    check = check_suite(write_suite(tmp_path / "one", only))
    (task,) = check.tasks
    assert task.stray_write.status == "skipped" and "nothing to borrow" in task.stray_write.detail


def test_with_a_harness_the_tools_its_agents_never_see_are_listed(traps: Path) -> None:
    harness = Harness.from_files(FILES, world=world)  # desk: get_order, refund_order, cancel_order, add_note
    check = check_suite(traps, harness=harness)
    assert check.unsolvable == ["needs-credit"]
    assert {task.task: task.missing_tools for task in check.tasks}["needs-credit"] == ["give_credit"]


def test_k_adds_the_seeds_the_optimizer_would_run(traps: Path) -> None:
    check = check_suite(traps, k=3)
    assert [result.seed for result in check.tasks[0].reference] == [0, 1, 2]
    assert check.power.k == 3 and check.power.verdict == "impossible"  # one val task


# -- the command ---------------------------------------------------------------------------------


def test_the_command_exits_1_naming_the_broken_tasks(traps: Path) -> None:
    result = runner.invoke(app, ["suite", "check", str(traps)])

    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    assert "error: the reference of 2 task(s) fails its own task: wrong-expectation, failing-call" in said
    assert "wrong-expectation" in result.stdout and "can never accept" in " ".join(result.stdout.split())


def test_the_command_prints_json(traps: Path) -> None:
    result = runner.invoke(app, ["suite", "check", str(traps), "--json"])

    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["broken_references"] == ["wrong-expectation", "failing-call"]
    assert payload["do_nothing_passes"] == ["vacuous"] and payload["power"]["verdict"] == "impossible"
    assert SuiteCheck.model_validate(payload).ok is False


def test_a_clean_suite_exits_0(tmp_path: Path) -> None:
    clean = "\n\n".join(
        block for block in TRAPS.split("\n\n") if "refund-one" in block or "needs-credit" in block
    )
    result = runner.invoke(app, ["suite", "check", str(write_suite(tmp_path / "clean", clean))])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "args,says",
    [
        (["suite", "check"], "or set `harness` in atoll.toml"),
        (["suite", "check", "nowhere"], "nowhere: no suite.yaml here"),
    ],
)
def test_no_suite_or_one_that_does_not_load_exits_2(args: list[str], says: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and says in " ".join(result.stderr.split())


def test_a_harness_for_another_world_is_refused(traps: Path) -> None:
    with pytest.raises(SuiteError, match="drives world 'helpdesk' but suite 'traps' tests 'minidesk'"):
        check_suite(traps, harness=ROOT / "harnesses" / "support_agent")
