"""`optimize suite check`, shown: a row per task, then the blind spots and whether val can accept anything.

The table is for finding a task; the lines under it are what to read first. A do-nothing agent's
mean score is printed however low it is: every point of it is a check that passes when nothing is
written, a score the optimizer cannot tell from progress.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from atoll.evals import Probe, SplitPower, SuiteCheck, TaskCheck
from atoll.optimizer import GatePower

_VERDICT_STYLES = {"ok": "green", "unlikely": "yellow", "impossible": "bold red", "weak": "yellow"}


def render_suite_check(check: SuiteCheck) -> RenderableType:
    """The per-task table, the failing references, the blind-spot summary and the power line."""
    return Group(
        _headline(check), _table(check), *_failures(check), *_blind_spots(check), _power(check.power)
    )


def power_warning(power: SplitPower | GatePower | None) -> str | None:
    """The one-line warning `optimize run` and `optimize gate` print at start (rich markup), or None
    when the rule can work on the split."""
    if power is None or power.verdict == "ok":
        return None
    return f"[yellow]warning:[/] {escape(power.message)}"


def _headline(check: SuiteCheck) -> Text:
    text = Text()
    text.append(f"suite {check.suite}", style="bold")
    text.append(f"  {check.path}  world {check.world}  {len(check.tasks)} tasks", style="dim")
    if check.harness:
        text.append(f"  harness {check.harness}", style="dim")
    return text


def _table(check: SuiteCheck) -> Table:
    table = Table(title="Tasks", title_justify="left")
    table.add_column("task")
    table.add_column("split")
    table.add_column("reference")
    table.add_column("do nothing", justify="right")
    table.add_column("stray write", justify="right")
    if check.harness:
        table.add_column("tools the harness lacks")
    for task in check.tasks:
        row: list[str | Text] = [
            task.task,
            task.split,
            _reference(task),
            _probe(task.do_nothing, passed="PASSES", failed="fails"),
            _probe(task.stray_write, passed="missed", failed="caught"),
        ]
        if check.harness:
            row.append(Text(", ".join(task.missing_tools), style="red"))
        table.add_row(*row)
    return table


def _reference(task: TaskCheck) -> Text:
    if task.reference_ok:
        return Text(f"✓ {len(task.reference)}/{len(task.reference)} seeds", style="green")
    seeds = ", ".join(str(seed) for seed in task.failing_seeds)
    return Text(f"✗ seed{'s' if len(task.failing_seeds) > 1 else ''} {seeds}", style="bold red")


def _probe(probe: Probe, *, passed: str, failed: str) -> Text:
    """A careless agent's score and whether the task lets it through (red: a blind spot)."""
    if probe.grade is None:
        return Text(probe.status, style="red" if probe.status == "error" else "dim")
    if probe.grade.passed:
        return Text(f"{probe.grade.score:.2f} {passed}", style="bold red")
    return Text(f"{probe.grade.score:.2f} {failed}", style="green")


def _failures(check: SuiteCheck) -> list[RenderableType]:
    lines: list[RenderableType] = []
    for task in check.tasks:
        for result in task.reference:
            if not result.passed:
                lines.append(
                    Text(f"✗ {task.task} ({task.file}) seed {result.seed}: {result.feedback}", style="red")
                )
        known = {result.feedback for result in task.reference}  # a failing reference fails the probes too
        for probe, agent in ((task.do_nothing, "do-nothing"), (task.stray_write, "stray-write")):
            if probe.status == "error" and probe.detail not in known:
                lines.append(Text(f"✗ {task.task} ({task.file}) {agent} agent: {probe.detail}", style="red"))
    if lines:
        lines.insert(0, Text("References that fail their own task, and graders that crash", style="bold"))
    return lines


def _blind_spots(check: SuiteCheck) -> list[RenderableType]:
    graded = [task for task in check.tasks if task.do_nothing.grade is not None]
    lines: list[RenderableType] = [Text("Blind spots", style="bold")]
    if check.do_nothing_mean is not None:
        passes = check.do_nothing_passes
        lines.append(
            Text(
                f"do-nothing agent (no tool call, one generic reply): mean score {check.do_nothing_mean:.3f} "
                f"over {len(graded)} tasks, passes {len(passes)}"
                + (f": {', '.join(passes)}" if passes else ""),
                style="bold red" if passes else "",
            )
        )
        vacuous = [tally for tally in check.do_nothing_checks if tally.passed]
        if vacuous:
            lines.append(
                Text(
                    "  checks it passes without doing anything: "
                    + ", ".join(f"{tally.kind} {tally.passed}/{tally.total}" for tally in vacuous)
                    + " (points an agent keeps by doing less)",
                    style="dim",
                )
            )
    ran = [task for task in check.tasks if task.stray_write.grade is not None]
    missed = check.stray_write_passes
    if ran:
        lines.append(
            Text(
                f"stray-write agent (its reference, then another task's): missed by {len(missed)} of {len(ran)} "
                "tasks" + (f": {', '.join(missed)}" if missed else ""),
                style="bold red" if missed else "",
            )
        )
    skipped = Counter(task.stray_write.detail for task in check.tasks if task.stray_write.status == "skipped")
    for detail, count in skipped.items():
        lines.append(Text(f"  stray write skipped on {count} task(s): {detail}", style="dim"))
    if check.harness:
        lacking = Counter(tool for task in check.tasks for tool in task.missing_tools)
        if lacking:
            tools = ", ".join(
                f"{tool} ({count} task{'' if count == 1 else 's'})" for tool, count in lacking.most_common()
            )
            lines.append(
                Text(
                    f"harness {check.harness}: {len(check.unsolvable)} tasks use tools none of its agents sees: "
                    f"{tools}",
                    style="yellow",
                )
            )
        else:
            lines.append(Text(f"harness {check.harness}: its agents see every reference tool", style="green"))
    return lines


def _power(power: SplitPower) -> Text:
    text = Text("Power: ", style="bold")
    text.append(power.message, style=_VERDICT_STYLES[power.verdict])
    return text
