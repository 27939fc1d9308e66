"""Loading suites: a well-formed suite loads, and every mistake is named by file, task and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from minidesk.agent import SUITE
from minidesk.world import world

from atoll.evals import SuiteError, load_suite

GRADERS = """
from atoll.evals import Check, grader

@grader
def short(task, episode, words: int):
    return Check(name="short", passed=True, feedback="ok")
"""

GOOD_TASK = """\
- id: refund-x
  split: val
  fixture: tiny
  user: {message: "Refund ORD-1"}
  reference:
    - refund_order: {order_id: ORD-1, reason: damaged}
  expect:
    inserted:
      refunds:
        - {order_id: ORD-1, amount: {approx: 59.99, tol: 0.01}}
    matches_reference: true
"""


def write_suite(
    root: Path, tasks: dict[str, str], *, suite_yaml: str | None = None, graders: str | None = GRADERS
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "suite.yaml").write_text(
        suite_yaml or "name: t\nworld: minidesk.world\ndefault_seeds: [0, 1, 2]\n"
    )
    (root / "tasks").mkdir(exist_ok=True)
    for name, text in tasks.items():
        (root / "tasks" / name).write_text(text)
    if graders is not None:
        (root / "graders.py").write_text(graders)
    return root


def problems(root: Path) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(root)
    return caught.value.problems


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # paths in messages are shown relative to the working directory


def test_the_fixture_suite_loads_with_its_tasks_graders_and_splits() -> None:
    suite = load_suite(SUITE, world=world)
    assert [t.id for t in suite.tasks] == ["refund-damaged", "cancel-shipped", "refuse-refund-twice"]
    assert [t.id for t in suite.select(split="val")] == ["refund-damaged", "cancel-shipped"]
    assert set(suite.graders) == {"mentions_amount", "reply_shorter_than"}
    assert suite.seeds(suite.task("refuse-refund-twice")) == [3]
    assert suite.seeds(suite.task("refund-damaged"), k=4) == [0, 1, 2, 3]
    assert suite.seeds(suite.task("refuse-refund-twice"), k=2) == [3, 0]
    assert load_suite(SUITE / "suite.yaml", world=world).fingerprint == suite.fingerprint


def test_a_bad_value_matcher_is_named_by_file_task_and_field(tmp_path: Path) -> None:
    root = write_suite(
        tmp_path / "s", {"refunds.yaml": GOOD_TASK.replace("tol: 0.01", "tol: 0.01, pattern: x")}
    )
    (problem,) = problems(root)
    assert problem.startswith("s/tasks/refunds.yaml: task 'refund-x': expect.inserted.refunds[0].amount: ")
    assert "'tol' goes with 'approx' only" in problem or "a value matcher is" in problem


def test_every_problem_of_every_task_is_reported_at_once(tmp_path: Path) -> None:
    broken = """\
- id: a
  split: validation
  fixture: tiny
  user: {message: hi}
  expect: {no_other_writes: true}
- id: b
  split: val
  fixture: huge
  user: {message: hi}
  reference:
    - refund_ordr: {order_id: ORD-1}
    - refund_order: {order_id: 7}
  expect:
    inserted: {refundz: [{order_id: ORD-1}]}
    updated:
      orders:
        - key: {customer_id: C1}
          after: {statuz: refunded}
    unchanged: [orders]
    graders: [nope, {name: short, args: {wordz: 3}}, short]
- id: c
  split: test
  fixture: tiny
  user: {message: hi}
  expect: {}
- id: d
  split: test
  fixture: tiny
  user: {message: hi}
  expekt: {no_other_writes: true}
"""
    root = write_suite(tmp_path / "s", {"a.yaml": broken, "b.yaml": GOOD_TASK.replace("refund-x", "a")})
    found = problems(root)
    expected = [
        "s/tasks/a.yaml: task 'a': split: Input should be 'train', 'val' or 'test' (got 'validation')",
        "s/tasks/a.yaml: task 'b': fixture: world 'minidesk' has no fixture 'huge'; it has: tiny",
        "s/tasks/a.yaml: task 'b': reference[0]: world 'minidesk' has no tool 'refund_ordr'; did you mean 'refund_order'?",
        "s/tasks/a.yaml: task 'b': reference[1].refund_order.order_id: Input should be a valid string (got 7)",
        "s/tasks/a.yaml: task 'b': reference[1].refund_order.reason: required, but missing",
        "s/tasks/a.yaml: task 'b': expect.inserted.refundz: world 'minidesk' has no table 'refundz'; did you mean 'refunds'?",
        "s/tasks/a.yaml: task 'b': expect.updated.orders[0].key.customer_id: not part of orders's primary key (id); name the row by its key",
        "s/tasks/a.yaml: task 'b': expect.updated.orders[0].after.statuz: table 'orders' has no column 'statuz'; did you mean 'status'?",
        "s/tasks/a.yaml: task 'b': expect.unchanged[0]: 'orders' must not change, yet rows of it are expected to change",
        "s/tasks/a.yaml: task 'b': expect.graders[0]: no grader 'nope' in graders.py; graders: short",
        "s/tasks/a.yaml: task 'b': expect.graders[1].args: grader 'short' has no argument 'wordz' (it takes: words)",
        "s/tasks/a.yaml: task 'b': expect.graders[2].args: grader 'short' needs argument 'words': write {name: short, args: {words: ...}}",
        "s/tasks/a.yaml: task 'c': expect: checks nothing; give rows (inserted/updated/deleted), unchanged, no_other_writes, matches_reference, reply_contains/reply_excludes or graders",
        "s/tasks/a.yaml: task 'd': expekt: unknown field; check the spelling against evals/README.md",
        "s/tasks/a.yaml: task 'd': expect: required, but missing",
    ]
    for line in expected:
        assert line in found, f"{line}\nnot among:\n" + "\n".join(found)
    assert any(
        p.startswith("s/tasks/b.yaml: task 'a': id: duplicate; s/tasks/a.yaml defines it too") for p in found
    )


def test_a_matches_reference_without_a_reference_and_a_simulated_user_with_replies_are_refused(
    tmp_path: Path,
) -> None:
    task = """\
- id: x
  split: val
  fixture: tiny
  user: {message: hi, replies: [ok], persona: Ada, goal: refund}
  expect: {matches_reference: true}
"""
    found = problems(write_suite(tmp_path / "s", {"x.yaml": task}))
    assert found == [
        "s/tasks/x.yaml: task 'x': user: give scripted `replies` or a simulated user (persona, facts, goal), not both"
    ]
    found = problems(write_suite(tmp_path / "t", {"x.yaml": task.replace("replies: [ok], ", "")}))
    assert found == [
        "s/tasks/x.yaml: task 'x': expect.matches_reference: needs a `reference:` solution (the tool calls that solve the task)".replace(
            "s/", "t/", 1
        )
    ]


def test_file_level_mistakes_name_the_file_and_line(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", {"a.yaml": "- id: x\n  split: [val\n", "b.yaml": "id: y\n"})
    with pytest.raises(SuiteError, match=r"s/tasks/a.yaml: line \d+: not valid YAML"):
        load_suite(root)
    (root / "tasks" / "a.yaml").unlink()
    assert problems(root) == [
        "s/tasks/b.yaml: expected a list of tasks (each starting with `- id: ...`), got a dict"
    ]


def test_suite_yaml_mistakes_name_the_field(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", {"a.yaml": GOOD_TASK}, suite_yaml="name: t\nworld: atlantis\n")
    (problem,) = problems(root)
    assert problem.startswith("s/suite.yaml: world: no world 'atlantis'")
    root = write_suite(
        tmp_path / "t",
        {"a.yaml": GOOD_TASK},
        suite_yaml="name: t\nworld: minidesk.world\ndefault_seeds: [1, 1]\nignore_columns: [refunds.when]\n",
    )
    found = problems(root)
    assert (
        "t/suite.yaml: default_seeds: seeds must be distinct non-negative integers, at least one; got [1, 1]"
        in found[0]
    )
    with pytest.raises(SuiteError, match="no suite.yaml here"):
        load_suite(tmp_path)


def test_a_graders_file_with_a_malformed_grader_fails_naming_it(tmp_path: Path) -> None:
    root = write_suite(
        tmp_path / "s",
        {"a.yaml": GOOD_TASK},
        graders="from atoll.evals import grader\n@grader\ndef g(x):\n    pass\n",
    )
    (problem,) = problems(root)
    assert problem.startswith("s/graders.py: grader 'g'") and "starts with (task, episode)" in problem


def test_asking_for_an_unknown_task_or_split_suggests_what_exists() -> None:
    suite = load_suite(SUITE, world=world)
    with pytest.raises(SuiteError, match="did you mean refund-damaged"):
        suite.select(tasks=["refund-damaged2"])
    with pytest.raises(SuiteError, match="use one of train, val, test"):
        suite.select(split="dev")
