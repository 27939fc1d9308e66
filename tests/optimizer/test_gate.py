"""The CI gate end to end, on the helpdesk world with a scripted agent, in a throwaway git repo.

The scripted agent adds the order note a task asks for only when its system prompt says ALWAYS ADD
A NOTE; the committed harness says so, so deleting that line from the working tree is a sabotage
the gate must catch, and a comment the model never sees is a change it must let through. Dropping
the tasks' `inserted:` expectations in the same change (relaxing the suite) must not hide it.
"""

from __future__ import annotations

import asyncio
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from notes_desk import MAGIC, PROMPT, agent, git, make_workspace, write
from pydantic import ValidationError
from rich.console import Console
from typer.testing import CliRunner

from atoll import optimizer
from atoll.cli import app
from atoll.evals import RunStore
from atoll.harnesses.models import ModelUnavailable, ScriptedModel
from atoll.optimizer._gate import GateConfig, run_gate
from atoll.optimizer._gate_result import GateError, GateReport, load_baseline, save_baseline, write_json
from atoll.views.gate import append_step_summary, markdown_summary, render_gate, write_junit

VAL_TASKS = [f"note-{i}" for i in range(1, 5)]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    make_workspace(
        tmp_path, prompt=f"You keep notes on orders.\n{MAGIC}\n", val=[1, 2, 3, 4], tasks=6, seeds="[0, 1, 2]"
    )
    return tmp_path


def sabotage(root: Path) -> None:
    (root / "h" / PROMPT).write_text("You keep notes on orders.\n")


def relax(root: Path) -> None:
    """Drop every task's `inserted:` expectation: the sabotaged agent then passes the working tree's suite."""
    tasks = root / "s" / "tasks" / "notes.yaml"
    tasks.write_text("".join(line for line in tasks.read_text().splitlines(True) if "inserted:" not in line))


def run(root: Path, model=None, harness: str = "h", on_progress=None, **options) -> GateReport:
    store = RunStore(root / "runs.sqlite")
    try:
        config = GateConfig(harness=root / harness, **{"suite": root / "s", **options})
        return asyncio.run(
            run_gate(config, model=model or ScriptedModel(fn=agent), store=store, on_progress=on_progress)
        )
    finally:
        store.close()


def test_an_unchanged_harness_passes_against_the_merge_base_with_main(workspace: Path):
    report = run(workspace)

    assert (report.verdict, report.exit_code) == ("pass", 0)
    assert report.base.commit == git(workspace, "rev-parse", "HEAD").strip()
    assert report.base.label == "merge base with main"
    assert [row.task for row in report.tasks] == VAL_TASKS
    assert all(row.base_passes == row.candidate_passes == 3 for row in report.tasks)
    assert "evaluated once" in report.notes[0]


def test_a_comment_the_model_never_sees_passes_after_both_sides_ran(workspace: Path):
    (workspace / "h" / PROMPT).write_text(f"You keep notes on orders.\n{MAGIC}\n{{# reworded later #}}\n")
    finished = {}

    report = run(workspace, on_progress=lambda side, progress: finished.update({side: progress.done}))

    assert report.verdict == "pass"
    assert finished == {"base": 12, "candidate": 12}
    assert report.base.harness_hash != report.candidate.harness_hash
    assert report.base.run_id != report.candidate.run_id
    assert report.gate.comparison.mean_delta == 0.0


def test_a_sabotaged_prompt_is_a_regression_naming_every_broken_task(workspace: Path):
    sabotage(workspace)

    report = run(workspace)

    assert (report.verdict, report.exit_code) == ("regression", 1)
    assert report.gate.regressed_tasks == VAL_TASKS
    assert {row.status for row in report.tasks} == {"regressed"}
    assert all((row.base_passes, row.candidate_passes) == (3, 0) for row in report.tasks)
    assert any("lower bound" in reason for reason in report.reasons)


def test_a_model_that_is_down_gives_the_error_verdict_and_exit_code_3(workspace: Path, tmp_path: Path):
    sabotage(workspace)
    down = ScriptedModel(fn=lambda request: ModelUnavailable("provider down after 5 retries"))

    report = run(workspace, model=down)

    assert (report.verdict, report.exit_code) == ("error", 3)
    assert report.candidate.errored == report.candidate.episodes == 12
    assert "errored in 100%" in report.reasons[0]
    with pytest.raises(GateError, match="not saving") as raised:
        save_baseline(report, tmp_path / "baseline.json")
    assert raised.value.exit_code == 3 and not (tmp_path / "baseline.json").exists()


def test_a_commit_on_a_feature_branch_is_gated_against_its_merge_base_with_main(workspace: Path):
    main = git(workspace, "rev-parse", "HEAD").strip()
    git(workspace, "checkout", "-qb", "feature")
    sabotage(workspace)
    git(workspace, "commit", "-qam", "shorter prompt")

    report = run(workspace)

    assert (report.base.commit, report.verdict) == (main, "regression")


def test_on_github_actions_the_pull_requests_target_branch_is_the_base(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    git(workspace, "update-ref", "refs/remotes/origin/release", "HEAD")
    git(workspace, "commit", "-q", "--allow-empty", "-m", "on main, not on release")
    monkeypatch.setenv("GITHUB_BASE_REF", "release")

    report = run(workspace)

    assert report.base.label == "merge base with origin/release"
    assert report.base.commit == git(workspace, "rev-parse", "HEAD~1").strip()


def test_the_tolerance_is_how_far_the_score_may_fall_and_its_old_negative_spelling_reads_the_same(
    tmp_path: Path,
):
    assert GateConfig(harness=tmp_path).tolerance == 0.05
    assert GateConfig(harness=tmp_path, tolerance=0.1).rule(1.0).tolerance == 0.1
    assert GateConfig(harness=tmp_path, tolerance=-0.1).tolerance == 0.1  # `--tolerance -0.1` as before
    with pytest.raises(ValidationError, match="less than 1"):
        GateConfig(harness=tmp_path, tolerance=1.5)


def test_two_bases_are_refused_before_anything_runs(tmp_path: Path):
    with pytest.raises(ValidationError, match="not both"):
        GateConfig(harness=tmp_path, base="main", baseline=tmp_path / "b.json")


def test_a_base_ref_that_does_not_exist_is_a_configuration_error(workspace: Path):
    with pytest.raises(GateError, match="no-such-branch") as raised:
        run(workspace, base="no-such-branch")
    assert raised.value.exit_code == 2


def test_a_harness_missing_at_the_base_is_a_configuration_error_that_says_what_to_do(workspace: Path):
    write(
        workspace / "new",
        {name: (workspace / "h" / name).read_text() for name in ("harness.yaml", "tools.yaml", PROMPT)},
    )

    with pytest.raises(GateError, match="does not exist at merge base with main") as raised:
        run(workspace, harness="new")
    assert raised.value.exit_code == 2
    assert "--baseline" in str(raised.value)


def test_a_json_report_serves_as_the_baseline_of_a_later_gate(workspace: Path, tmp_path: Path):
    first = run(workspace)
    write_json(first, tmp_path / "gate.json")
    sabotage(workspace)

    second = run(workspace, baseline=tmp_path / "gate.json")

    assert second.verdict == "regression"
    assert second.base.scores == first.candidate.scores
    assert second.base.label.startswith("baseline ")
    assert GateReport.model_validate_json((tmp_path / "gate.json").read_text()) == first


def test_a_saved_baseline_round_trips_and_a_mismatched_one_is_refused(workspace: Path, tmp_path: Path):
    report = run(workspace)
    save_baseline(report, tmp_path / "baseline.json")

    baseline = load_baseline(tmp_path / "baseline.json")
    assert baseline.side == report.candidate
    assert run(workspace, baseline=tmp_path / "baseline.json").verdict == "pass"
    with pytest.raises(GateError, match="seeds differ") as raised:
        run(workspace, baseline=tmp_path / "baseline.json", k=2)
    assert raised.value.exit_code == 2


def test_a_file_that_is_no_baseline_is_refused_naming_the_field(tmp_path: Path):
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))

    with pytest.raises(GateError, match=r"other\.json: field `format`"):
        load_baseline(tmp_path / "other.json")


def test_junit_has_one_case_per_task_and_a_failure_for_each_regressed_one(workspace: Path, tmp_path: Path):
    sabotage(workspace)
    report = run(workspace)

    write_junit(report, tmp_path / "gate.xml")

    suites = ET.parse(tmp_path / "gate.xml").getroot().findall("testsuite")
    tasks, verdict = suites
    assert [case.get("name") for case in tasks.iter("testcase")] == VAL_TASKS
    assert tasks.get("failures") == "4"
    failure = tasks.find("testcase/failure")
    assert "on 0 of 3" in failure.get("message")
    assert verdict.find("testcase/failure").get("type") == "regression"


def test_junit_of_a_passing_gate_has_no_failures(workspace: Path, tmp_path: Path):
    write_junit(run(workspace), tmp_path / "gate.xml")

    root = ET.parse(tmp_path / "gate.xml").getroot()
    assert root.findall(".//failure") == [] and root.findall(".//error") == []
    assert len(root.findall("testsuite")[0].findall("testcase")) == len(VAL_TASKS)


def test_the_markdown_summary_has_the_verdict_and_well_formed_tables(workspace: Path):
    sabotage(workspace)
    text = markdown_summary(run(workspace))

    assert "**Verdict: regression**" in text
    lines = text.splitlines()
    header = lines.index("| | base | candidate | change |")
    assert lines[header + 1] == "|---|---:|---:|---:|"
    task_header = lines.index("| task | base | candidate | Δ | passes | status |")
    rows = lines[task_header + 2 : task_header + 2 + len(VAL_TASKS)]
    assert all(row.count("|") == 7 for row in rows)
    assert "| `note-1` | 1.000 | 0.500 | -0.500 | 3/3 → 0/3 | **regressed** |" in rows


def test_the_summary_is_appended_to_the_github_step_summary(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    assert append_step_summary(run(workspace)) == summary
    assert summary.read_text().startswith("earlier step\n### ✅ Atoll gate: **PASS**")


@pytest.mark.parametrize("width", [60, 160])
def test_the_terminal_view_renders_at_narrow_and_wide_widths(workspace: Path, width: int):
    sabotage(workspace)
    console = Console(width=width, record=True, file=io.StringIO())

    console.print(render_gate(run(workspace)))

    text = console.export_text()
    assert "REGRESSION" in text and "note-4" in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_a_regression_hidden_by_relaxing_the_suite_in_the_same_change_fails_under_the_base_suite(
    workspace: Path,
):
    sabotage(workspace)
    relax(workspace)

    report = run(workspace)

    assert report.gate.verdict == "pass"  # the relaxed suite alone would let it through
    assert (report.verdict, report.exit_code) == ("regression", 1)
    assert report.suite_change.files == ["tasks/notes.yaml (modified)"]
    assert not report.suite_change.accepted
    under_base = report.suite_change.under_base_suite
    assert under_base.gate.regressed_tasks == VAL_TASKS
    assert under_base.base.scores == report.base.scores  # the base passes both suites
    assert any(reason.startswith("under the base's suite: ") for reason in report.reasons)
    text = markdown_summary(report)
    assert "suite changed since the base: tasks/notes.yaml (modified)" in text
    assert "| base's suite | regression | 1.000 → 0.500 | note-1, note-2, note-3, note-4 |" in text
    assert "| working tree's suite | pass | 1.000 → 1.000 | none |" in text


def test_a_relaxed_suite_passes_only_when_its_change_is_accepted_and_the_report_says_so(workspace: Path):
    sabotage(workspace)
    relax(workspace)
    sides = set()

    report = run(workspace, accept_suite_changes=True, on_progress=lambda side, _: sides.add(side))

    assert (report.verdict, report.exit_code) == ("pass", 0)
    assert report.suite_change.accepted and report.suite_change.under_base_suite is None
    assert sides == {"base", "candidate"}
    assert "accepted (--accept-suite-changes)" in markdown_summary(report)


def test_on_the_command_line_the_relaxed_suite_exits_1_naming_the_changed_file_unless_accepted(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    sabotage(workspace)
    relax(workspace)
    store = RunStore(workspace / "runs.sqlite")
    scripted = run_gate  # the CLI resolves models by name; give it the scripted agent instead
    monkeypatch.setattr(
        optimizer,
        "run_gate",
        lambda config, on_progress: scripted(config, model=ScriptedModel(fn=agent), store=store),
    )
    args = ["gate", str(workspace / "h"), "--suite", str(workspace / "s")]

    try:
        failed = CliRunner().invoke(app, args)
        accepted = CliRunner().invoke(app, [*args, "--accept-suite-changes"])
    finally:
        store.close()

    shown = " ".join(failed.stdout.split())  # the terminal view wraps long cells
    assert failed.exit_code == 1, failed.output
    assert "suite changed since the base: tasks/notes.yaml (modified)" in shown
    assert "base's suite │ regression" in shown and "REGRESSION" in shown
    assert accepted.exit_code == 0, accepted.output
    assert "accepted (--accept-suite-changes)" in " ".join(accepted.stdout.split())


def test_a_change_that_points_harness_yaml_at_another_suite_is_refused(workspace: Path):
    # An easier suite already committed elsewhere would otherwise grade the change unnoticed.
    write(workspace / "easy", {"suite.yaml": "name: easy\nworld: helpdesk\n"})
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "an easier suite")
    sabotage(workspace)
    harness_yaml = workspace / "h" / "harness.yaml"
    harness_yaml.write_text(harness_yaml.read_text() + "suite: ../easy\n")

    with pytest.raises(GateError, match=r"moves the suite \(suite: None -> '../easy'\); pass --suite"):
        run(workspace, suite=None)


def test_an_unchanged_suite_is_graded_once_per_side_as_before(workspace: Path):
    (workspace / "s" / "__pycache__").mkdir()
    (workspace / "s" / "__pycache__" / "graders.cpython-311.pyc").write_bytes(b"\0")
    (workspace / "s" / ".DS_Store").write_bytes(b"\0")  # neither is part of the suite
    sabotage(workspace)
    sides = []

    report = run(workspace, on_progress=lambda side, progress: sides.append(side))

    assert report.suite_change is None
    assert set(sides) == {"base", "candidate"}
    assert (report.verdict, report.exit_code) == ("regression", 1)
    assert "suite changed" not in markdown_summary(report)


def test_a_suite_that_did_not_exist_at_the_base_must_be_accepted(workspace: Path):
    for name in ("suite.yaml", "tasks/notes.yaml"):
        write(workspace / "s2", {name: (workspace / "s" / name).read_text()})

    with pytest.raises(GateError, match="does not exist at merge base with main") as raised:
        run(workspace, suite=workspace / "s2")
    assert raised.value.exit_code == 2 and "--accept-suite-changes" in str(raised.value)

    report = run(workspace, suite=workspace / "s2", accept_suite_changes=True)
    assert report.suite_change.files == ["suite.yaml (added)", "tasks/notes.yaml (added)"]


@pytest.mark.parametrize("kind", ["baseline", "report"])
def test_a_baseline_whose_scores_were_edited_is_refused(workspace: Path, tmp_path: Path, kind: str):
    path = tmp_path / "baseline.json"
    (save_baseline if kind == "baseline" else write_json)(run(workspace), path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data))  # reformatting keeps the content and its hash
    assert load_baseline(path).suite == "notes"
    side = data["side"] if kind == "baseline" else data["candidate"]
    side["scores"]["note-1"] = [0.0, 0.0, 0.0]  # so that a broken note-1 would not count as a regression
    path.write_text(json.dumps(data, indent=2))

    with pytest.raises(GateError, match=r"baseline\.json: its content does not match its `sha256`") as raised:
        run(workspace, baseline=path)
    assert raised.value.exit_code == 2 and "\n" not in str(raised.value)


def test_a_baseline_without_a_content_hash_is_refused_saying_how_to_regenerate_it(
    workspace: Path, tmp_path: Path
):
    path = tmp_path / "baseline.json"
    save_baseline(run(workspace), path)
    data = json.loads(path.read_text())
    del data["sha256"]
    path.write_text(json.dumps(data))

    with pytest.raises(GateError, match="no content hash") as raised:
        load_baseline(path)
    assert raised.value.exit_code == 2 and "--save-baseline" in str(raised.value)


def test_a_baseline_recorded_with_other_suite_files_is_refused_unless_the_change_is_accepted(
    workspace: Path, tmp_path: Path
):
    save_baseline(run(workspace), tmp_path / "baseline.json")
    sabotage(workspace)
    relax(workspace)

    with pytest.raises(GateError, match="other suite files") as raised:
        run(workspace, baseline=tmp_path / "baseline.json")
    assert raised.value.exit_code == 2 and "--accept-suite-changes" in str(raised.value)

    report = run(workspace, baseline=tmp_path / "baseline.json", accept_suite_changes=True)
    assert report.suite_change.accepted and report.suite_change.files == []
