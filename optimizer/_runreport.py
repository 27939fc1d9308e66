"""`optimize report RUN`: one optimization run told whole, in the terminal or as one HTML page.

Everything is read back from the runs store (the `optimizations` and `proposals` tables, the
episodes of its evaluations and the harness snapshots), so a report can be made of a run that was
interrupted, or on another machine than the one that ran it.
"""

from __future__ import annotations

import io
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup
from pydantic import BaseModel
from rich.bar import Bar
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from evals import RunStore, StoreError
from harnesses.models import ModelUsage

from ._config import OptimizeResult, StepRecord
from ._diffview import render_harness_diff
from ._html import REPORT_TEMPLATE
from ._records import Records
from ._reports import ReportError, Responsive

SPARKS = "▁▂▃▄▅▆▇█"
VERDICT_STYLES = {"accept": "green", "reject": "red", "void": "magenta"}


class TrajectoryPoint(BaseModel):
    label: str
    score: float


class RunReport(BaseModel):
    """What `render_report` and `write_html_report` show, read from the store once."""

    id: str
    harness: str
    harness_path: str
    model: str
    status: str
    stop_reason: str | None
    started_at: str
    finished_at: str | None
    trajectory: list[TrajectoryPoint]
    proposals: list[StepRecord]
    test_start: float | None = None
    test_final: float | None = None
    episodes: int
    usage: ModelUsage  # the run's episodes
    elapsed_s: float | None = None
    start_hash: str
    final_hash: str
    files_start: dict[str, str]
    files_final: dict[str, str]

    @property
    def accepted(self) -> int:
        return sum(row.verdict == "accept" for row in self.proposals)


def load_run_report(store: RunStore, ref: str) -> RunReport:
    """The report of the optimization run `ref` names (an id, a unique part of one, or `latest`)."""
    records = Records(store)
    run_id = records.resolve(ref)
    row = records.run(run_id) if run_id else None
    if row is None:
        raise ReportError(f"{store.path}: no optimization run {ref!r}; run `optimize run HARNESS` first")
    result = OptimizeResult.model_validate_json(row["result"]) if row["result"] else None
    proposals, trajectory = records.step_records(run_id), []
    for step in proposals:
        if step.p_value is None:  # never reached the gate
            continue
        if not trajectory:
            trajectory.append(TrajectoryPoint(label="start", score=step.incumbent_score))
        if step.verdict == "accept":
            label = f"#{step.iteration + 1} {step.operator}"
            trajectory.append(TrajectoryPoint(label=label, score=step.candidate_score))
    start_score = result.val_start if result else _gate_score(store, run_id, row["start_hash"])
    if start_score is not None:
        trajectory[:1] = [TrajectoryPoint(label="start", score=start_score)]
    prefix = f"{run_id}-"
    episodes, calls, prompt, completion, cost = store.db.execute(
        "SELECT COUNT(*), COALESCE(SUM(model_calls), 0), COALESCE(SUM(prompt_tokens), 0), "
        "COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost), 0) "
        "FROM episodes WHERE substr(run_id, 1, ?) = ?",
        [len(prefix), prefix],
    ).fetchone()
    final_hash = row["incumbent_hash"] or row["start_hash"]
    return RunReport(
        id=run_id,
        harness=row["harness"],
        harness_path=row["harness_path"],
        model=row["model"],
        status=row["status"],
        stop_reason=row["stop_reason"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        trajectory=trajectory,
        proposals=proposals,
        test_start=result.test_start if result else None,
        test_final=result.test_final if result else None,
        episodes=episodes,
        usage=ModelUsage(
            model_calls=calls, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost
        ),
        elapsed_s=result.elapsed_s if result else None,
        start_hash=row["start_hash"],
        final_hash=final_hash,
        files_start=_files(store, row["start_hash"]),
        files_final=_files(store, final_hash),
    )


def _files(store: RunStore, harness_hash: str) -> dict[str, str]:
    """A snapshot's files; none when the run stopped before its first evaluation stored one."""
    try:
        return store.harness_files(harness_hash)
    except StoreError:
        return {}


def _gate_score(store: RunStore, run_id: str, harness_hash: str) -> float | None:
    """The mean over tasks of a harness's gate evaluation in this run, if it got that far."""
    outcomes = store.outcomes(f"{run_id}-gate-{harness_hash[:12]}")
    by_task: dict[str, list[float]] = {}
    for outcome in outcomes:
        by_task.setdefault(outcome.task_id, []).append(outcome.score)
    means = [sum(scores) / len(scores) for scores in by_task.values()]
    return sum(means) / len(means) if means else None


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def sparkline(values: list[float]) -> str:
    """Scores in [0, 1] as block characters: the trajectory in one glance."""
    return "".join(SPARKS[min(len(SPARKS) - 1, int(max(0.0, value) * len(SPARKS)))] for value in values)


# -- terminal -------------------------------------------------------------------------------------


def render_trajectory(report: RunReport) -> RenderableType:
    if not report.trajectory:
        return Text("No gate score yet: the run stopped before its first evaluation finished.", style="dim")
    title = f"Gate score per accepted step  {sparkline([p.score for p in report.trajectory])}"
    chart = Table(title=title, title_justify="left", show_header=False, expand=True, box=None)
    chart.add_column(no_wrap=True, max_width=28, overflow="ellipsis")
    chart.add_column(justify="right", no_wrap=True)
    chart.add_column(ratio=1)
    for point in report.trajectory:
        chart.add_row(point.label, f"{point.score:.3f}", Bar(1.0, 0.0, point.score, color="green"))
    return chart


def _proposal_figures(row: StepRecord) -> str:
    if row.p_value is None:
        return ""
    return (
        f"{_score(row.incumbent_score)} → {_score(row.candidate_score)} · lower bound {row.lower_bound:+.3f} "
        f"· p={row.p_value:.3g} · {row.record}"
    )


def render_proposals(report: RunReport) -> RenderableType:
    """Every proposal with its verdict and figures: a table when wide, a list when narrow."""
    table = Table(
        "#", "operator", "verdict", "score", "lower bound", "p", "tasks", "commit", "rationale",
        title="Proposals", title_justify="left",
    )  # fmt: skip
    items: list[RenderableType] = [Text("Proposals", style="italic")]
    for row in report.proposals:
        verdict = Text(row.verdict, style=VERDICT_STYLES.get(row.verdict, "dim"))
        rationale = row.rationale.split("\n")[0][:100]
        score = (
            f"{_score(row.incumbent_score)} → {_score(row.candidate_score)}"
            if row.p_value is not None  # the gate's means; a screened-out row's are a minibatch's
            else ""
        )
        table.add_row(
            str(row.iteration + 1),
            row.operator,
            verdict,
            score,
            f"{row.lower_bound:+.3f}" if row.lower_bound is not None else "",
            f"{row.p_value:.3g}" if row.p_value is not None else "",
            row.record,
            (row.commit or "")[:10],
            rationale,
        )
        commit = f" · {row.commit[:10]}" if row.commit else ""
        items.append(Text.assemble(f"#{row.iteration + 1} {row.operator} ", verdict, commit))
        items.append(Padding(Text(rationale, style="dim"), (0, 0, 0, 3)))
        if row.candidate_score is not None:
            items.append(Padding(Text(_proposal_figures(row)), (0, 0, 0, 3)))
    return Responsive(table, Group(*items))


def render_report(store: RunStore, run_id: str) -> RenderableType:
    """The run in the terminal: what it was, the trajectory, every proposal, spend, the final diff."""
    return render_run_report(load_run_report(store, run_id))


def render_run_report(report: RunReport) -> RenderableType:
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    head.add_row(
        "run", f"{report.id} · {report.status}" + (f" ({report.stop_reason})" if report.stop_reason else "")
    )
    head.add_row("harness", f"{report.harness} ({report.harness_path}) · model {report.model}")
    head.add_row("when", f"{report.started_at} → {report.finished_at or '…'}")
    head.add_row("decisions", f"{report.accepted} accepted of {len(report.proposals)} proposals")
    if report.test_start is not None:
        head.add_row(
            "test split",
            f"{_score(report.test_start)} → {_score(report.test_final)} (reported, never used to decide)",
        )
    elapsed = f" · {report.elapsed_s / 60:.1f} min" if report.elapsed_s is not None else ""
    head.add_row(
        "spend",
        f"{report.episodes} episodes · {report.usage.model_calls} model calls · "
        f"{report.usage.total_tokens:,} tokens · ${report.usage.cost_usd:.4f}{elapsed}",
    )
    return Group(
        Text(f"Optimization {report.id}", style="bold"),
        head,
        render_trajectory(report),
        render_proposals(report),
        render_harness_diff(
            report.files_start,
            report.files_final,
            labels=(f"start {report.start_hash[:10]}", f"final {report.final_hash[:10]}"),
        ),
    )


# -- HTML -----------------------------------------------------------------------------------------


def _chart_points(report: RunReport, width: int = 640, height: int = 180, pad: int = 28) -> list[dict]:
    n = len(report.trajectory)
    step = (width - 2 * pad) / max(1, n - 1)
    return [
        {
            "x": round(pad + i * step, 1),
            "y": round(height - pad - point.score * (height - 2 * pad), 1),
            "label": point.label,
            "score": f"{point.score:.3f}",
        }
        for i, point in enumerate(report.trajectory)
    ]


def _html_of(renderable: RenderableType, width: int = 110) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system="truecolor")
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format="{code}")


def write_html_report(store: RunStore, run_id: str, path: Path | str) -> Path:
    """The report as one self-contained HTML page: inline CSS and SVG, no scripts, no external files."""
    report = load_run_report(store, run_id)
    # Sandboxed though the template is ours: the values it is given are model-written text.
    environment = ImmutableSandboxedEnvironment(autoescape=True, undefined=jinja2.StrictUndefined)
    page = environment.from_string(REPORT_TEMPLATE).render(
        report=report,
        points=_chart_points(report),
        sparkline=sparkline([p.score for p in report.trajectory]),
        diff_html=Markup(
            _html_of(render_harness_diff(report.files_start, report.files_final, labels=("start", "final")))
        ),
        styles=VERDICT_STYLES,
    )
    target = Path(path)
    target.write_text(page, encoding="utf-8")
    return target
