"""The gate's verdict for people and for CI: a terminal view, a Markdown summary, JUnit XML.

Each says the verdict first, then the figures that decided it, then the tasks behind them, so a
reviewer reading a pull request's checks sees why a change failed without opening a log.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from atoll.evals import BatchProgress
from atoll.optimizer import GateProgress, GateReport, GateSide, TaskRow

HEADLINES = {
    "pass": ("PASS", "bold green", "no regression against {base}"),
    "regression": ("REGRESSION", "bold red", "worse than {base}"),
    "error": ("ERROR", "bold magenta", "too many episodes errored to judge; fix the errors and rerun"),
}
STATUS_STYLES = {"regressed": "bold red", "worse": "red", "better": "green", "same": "dim"}
STATUS_ORDER = {"regressed": 0, "worse": 1, "better": 2, "same": 3}


def _ordered(report: GateReport) -> list[TaskRow]:
    """Regressions first, then the worst losses: what a reviewer must look at."""
    return sorted(report.tasks, key=lambda row: (STATUS_ORDER[row.status], row.delta))


def _side_line(side: GateSide) -> str:
    commit = f" @ {side.commit[:10]}" if side.commit else ""
    run = f" · run {side.run_id}" if side.run_id else ""
    return f"{side.label}{commit} · harness {side.harness_hash[:12]} · {side.model}{run}"


def _headline(report: GateReport) -> tuple[str, str, str]:
    word, style, text = HEADLINES[report.verdict]
    return word, style, text.format(base=report.base.label)


def _all_pass(side: GateSide, report: GateReport) -> int:
    threshold = report.gate.rule.pass_threshold
    return sum(
        all(score is not None and score >= threshold - 1e-9 for score in scores)
        for scores in side.scores.values()
    )


def _suite_change(report: GateReport) -> str | None:
    """Which suite files changed since the base and how the gate dealt with it: a relaxed suite must show."""
    change = report.suite_change
    if change is None:
        return None
    files = ", ".join(change.files) or "its files differ from the baseline's"
    if change.accepted:
        return f"suite changed since the base: {files}; accepted (--accept-suite-changes): it alone decides"
    return f"suite changed since the base: {files}; both suites graded both sides, the worse verdict stands"


def _by_suite(report: GateReport) -> list[tuple[str, str, str, str]]:
    """(suite, verdict, mean score base → candidate, regressed tasks) for each suite that graded both sides."""
    other = report.under_base_suite
    if other is None:
        return []
    return [
        (
            f"{which} suite",
            verdict.verdict,
            f"{verdict.comparison.incumbent_mean:.3f} → {verdict.comparison.candidate_mean:.3f}",
            ", ".join(verdict.regressed_tasks) or "none",
        )
        for which, verdict in (("working tree's", report.gate), ("base's", other.gate))
    ]


def _shape(report: GateReport) -> str:
    seeds = {row.seeds for row in report.tasks}
    per_task = str(seeds.pop()) if len(seeds) == 1 else "varying"
    return f"{report.split} split, {len(report.tasks)} tasks x {per_task} seed(s), paired"


# -- terminal -------------------------------------------------------------------------------------


def render_gate(report: GateReport) -> RenderableType:
    """The verdict, both sides, the deciding figures, the tasks (regressions first), the reasons."""
    word, style, text = _headline(report)
    c, rule = report.gate.comparison, report.gate.rule
    sides = Table.grid(padding=(0, 2))
    sides.add_column(style="bold")
    sides.add_column(overflow="fold")
    sides.add_row("base", _side_line(report.base))
    sides.add_row("candidate", _side_line(report.candidate))
    sides.add_row("tasks", f"{report.suite}: {_shape(report)}")
    change = _suite_change(report)
    if change:
        sides.add_row("suite", Text(change, style="yellow"))

    scope = " (working tree's suite)" if report.under_base_suite else ""
    figures = Table("", "base", "candidate", "change", title=f"Figures{scope}", title_justify="left")
    figures.add_row(
        "mean score", f"{c.incumbent_mean:.3f}", f"{c.candidate_mean:.3f}", f"{c.mean_delta:+.3f}"
    )
    n = len(report.tasks)
    figures.add_row(
        "tasks passing every seed",
        f"{_all_pass(report.base, report)}/{n}",
        f"{_all_pass(report.candidate, report)}/{n}",
        "",
    )
    figures.add_row(
        "errored episodes",
        f"{report.base.errored}/{report.base.episodes}",
        f"{report.candidate.errored}/{report.candidate.episodes}",
        "",
    )
    bound_ok = c.lower_bound >= -rule.tolerance
    figures.add_row(
        f"{rule.confidence:.0%} lower bound of the change",
        "",
        "",
        Text(f"{c.lower_bound:+.3f} (tolerance {rule.tolerance:g})", style="green" if bound_ok else "red"),
    )
    figures.add_row(
        "sign test for losses",
        "",
        "",
        Text(
            f"p={c.p_worse:.3g} ({c.losses} worse, {c.wins} better, {c.ties} tied)",
            style="green" if c.p_worse > rule.alpha else "red",
        ),
    )

    tasks = Table("task", "base", "candidate", "Δ", "passes", title=f"Tasks{scope}", title_justify="left")
    tasks.add_column("", no_wrap=True)
    for row in _ordered(report):
        tasks.add_row(
            row.task,
            f"{row.base_mean:.3f}",
            f"{row.candidate_mean:.3f}",
            Text(f"{row.delta:+.3f}", style=STATUS_STYLES[row.status]),
            f"{row.base_passes}/{row.seeds} → {row.candidate_passes}/{row.seeds}",
            Text(row.status, style=STATUS_STYLES[row.status]),
        )
    parts: list[RenderableType] = [
        Text.assemble((f"{word} ", style), (f"{report.harness}: {text}", "bold")),
        sides,
        figures,
        tasks,
    ]
    if _by_suite(report):
        suites = Table(
            "suite", "verdict", "mean base → candidate", "regressed", title="By suite", title_justify="left"
        )
        for name, verdict, means, regressed in _by_suite(report):
            suites.add_row(name, Text(verdict, style=HEADLINES[verdict][1]), means, regressed)
        parts.append(suites)
    parts += [Text(f"✗ {reason}", style="red") for reason in report.reasons]
    parts += [Text(f"note: {note}", style="dim") for note in report.notes]
    return Group(*parts)


@contextmanager
def gate_progress(console: Console | None = None) -> Iterator[GateProgress]:
    """A progress bar per side; yields the `on_progress` callback for `run_gate`."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} pass[/] [red]{task.fields[errors]} err[/]"),
        TimeElapsedColumn(),
        console=console,
    )
    bars: dict[str, int] = {}

    def update(side: str, state: BatchProgress) -> None:
        if side not in bars:
            bars[side] = progress.add_task(f"gate: {side}", total=state.total, passed=0, errors=0)
        progress.update(bars[side], completed=state.done, passed=state.passed, errors=state.errors)

    with progress:
        yield update


# -- Markdown -------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_summary(report: GateReport) -> str:
    """GitHub-flavoured Markdown for `$GITHUB_STEP_SUMMARY` or a pull-request comment."""
    word, _, text = _headline(report)
    icon = {"pass": "✅", "regression": "❌", "error": "⚠️"}[report.verdict]
    c, rule = report.gate.comparison, report.gate.rule
    n = len(report.tasks)
    scope = ", with the working tree's suite" if report.under_base_suite else ""
    lines = [
        f"### {icon} Atoll gate: **{word}** · `{report.harness}`",
        "",
        f"**Verdict: {report.verdict}** ({_cell(text)}).",
        "",
        f"Base: {_cell(_side_line(report.base))}  ",
        f"Candidate: {_cell(_side_line(report.candidate))}  ",
        f"Suite `{report.suite}`: {_shape(report)}",
        "",
    ]
    change = _suite_change(report)
    if change:
        lines += [f"> **{_cell(change)}**", ""]
    if _by_suite(report):
        lines += [
            "| suite | verdict | mean score (base → candidate) | regressed tasks |",
            "|---|---|---:|---|",
        ]
        lines += [
            f"| {name} | {verdict} | {means} | {_cell(regressed)} |"
            for name, verdict, means, regressed in _by_suite(report)
        ]
        lines.append("")
    lines += [
        "| | base | candidate | change |",
        "|---|---:|---:|---:|",
        f"| mean score | {c.incumbent_mean:.3f} | {c.candidate_mean:.3f} | {c.mean_delta:+.3f} |",
        f"| tasks passing every seed | {_all_pass(report.base, report)}/{n} "
        f"| {_all_pass(report.candidate, report)}/{n} | |",
        f"| errored episodes | {report.base.errored}/{report.base.episodes} "
        f"| {report.candidate.errored}/{report.candidate.episodes} | |",
        "",
        f"{rule.confidence:.0%} lower bound of the change: **{c.lower_bound:+.3f}** (tolerance {rule.tolerance:g}) · "
        f"sign test for losses p={c.p_worse:.3g} ({c.losses} worse, {c.wins} better, {c.ties} tied)",
    ]
    if report.reasons:
        lines += ["", "**Why:**", *(f"- {_cell(reason)}" for reason in report.reasons)]
    if report.notes:
        lines += ["", *(f"> note: {_cell(note)}" for note in report.notes)]
    changed = sum(row.status != "same" for row in report.tasks)
    lines += [
        "",
        f"<details><summary>Per task ({changed} of {n} changed{scope})</summary>",
        "",
        "| task | base | candidate | Δ | passes | status |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in _ordered(report):
        status = f"**{row.status}**" if row.status == "regressed" else row.status
        lines.append(
            f"| `{_cell(row.task)}` | {row.base_mean:.3f} | {row.candidate_mean:.3f} | {row.delta:+.3f} "
            f"| {row.base_passes}/{row.seeds} → {row.candidate_passes}/{row.seeds} | {status} |"
        )
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def append_step_summary(report: GateReport) -> Path | None:
    """Append the Markdown summary to `$GITHUB_STEP_SUMMARY` when it is set; returns the file."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as summary:
        summary.write(markdown_summary(report) + "\n")
    return Path(target)


# -- JUnit ----------------------------------------------------------------------------------------


def write_junit(report: GateReport, path: Path | str) -> None:
    """JUnit XML: a suite with one test case per task (failing where the task regressed, erroring
    where its episodes errored under an error verdict) and a suite with the overall verdict, so a
    regression of the mean alone still shows as a failed test."""
    tasks = ET.Element("testsuite", name=f"atoll gate: {report.harness} tasks", tests=str(len(report.tasks)))
    failures = errors = 0
    for row in report.tasks:
        case = ET.SubElement(tasks, "testcase", classname=f"atoll.gate.{report.harness}", name=row.task)
        scores = (
            f"score {row.base_mean:.3f} -> {row.candidate_mean:.3f} ({row.delta:+.3f}); "
            f"passes {row.base_passes}/{row.seeds} -> {row.candidate_passes}/{row.seeds}"
        )
        if row.status == "regressed":
            failures += 1
            message = (
                f"the base passed it on every seed, the candidate on {row.candidate_passes} of {row.seeds}"
            )
            ET.SubElement(case, "failure", message=message, type="regression").text = scores
        elif report.verdict == "error" and row.candidate_errors:
            errors += 1
            message = f"{row.candidate_errors} of {row.seeds} episodes errored"
            ET.SubElement(case, "error", message=message, type="errored").text = scores
        ET.SubElement(case, "system-out").text = scores
    tasks.set("failures", str(failures))
    tasks.set("errors", str(errors))

    overall = ET.Element("testsuite", name=f"atoll gate: {report.harness}", tests="1")
    case = ET.SubElement(overall, "testcase", classname=f"atoll.gate.{report.harness}", name="verdict")
    if report.verdict != "pass":
        kind = "failure" if report.verdict == "regression" else "error"
        ET.SubElement(
            case, kind, message="; ".join(report.reasons), type=report.verdict
        ).text = report.gate.summary()
    ET.SubElement(case, "system-out").text = report.gate.summary()
    overall.set("failures", str(int(report.verdict == "regression")))
    overall.set("errors", str(int(report.verdict == "error")))

    root = ET.Element("testsuites", name="atoll gate")
    root.extend([tasks, overall])
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
