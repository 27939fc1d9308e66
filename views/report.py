"""`optimize report RUN`, shown: one optimization run in the terminal, or as one self-contained HTML page."""

from __future__ import annotations

import io
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup
from rich.bar import Bar
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from atoll.evals import RunStore
from atoll.optimizer import RunReport, StepRecord, load_run_report
from atoll.views._html import REPORT_TEMPLATE
from atoll.views.compare import Responsive
from atoll.views.harness_diff import render_harness_diff

SPARKS = "▁▂▃▄▅▆▇█"
VERDICT_STYLES = {"accept": "green", "reject": "red", "void": "magenta"}


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def sparkline(values: list[float]) -> str:
    """Scores in [0, 1] as block characters: the trajectory in one glance."""
    return "".join(SPARKS[min(len(SPARKS) - 1, int(max(0.0, value) * len(SPARKS)))] for value in values)


def render_trajectory(report: RunReport) -> RenderableType:
    if not report.trajectory:
        return Text("No gate score yet: the run stopped before its first evaluation finished.", style="dim")
    title = f"Gate score per accepted step  {sparkline([p.score for p in report.trajectory])}"
    spending = report.objective != "quality"
    if spending:
        title += f"  and {report.objective} per episode"
    chart = Table(title=title, title_justify="left", show_header=False, expand=True, box=None)
    chart.add_column(no_wrap=True, max_width=28, overflow="ellipsis")
    chart.add_column(justify="right", no_wrap=True)
    if spending:
        chart.add_column(justify="right", no_wrap=True)
    chart.add_column(ratio=1)
    for point in report.trajectory:
        spend = [_spend(point.spend, report.objective)] if spending else []
        chart.add_row(point.label, f"{point.score:.3f}", *spend, Bar(1.0, 0.0, point.score, color="green"))
    return chart


def render_frontier(report: RunReport) -> RenderableType:
    """What the gate judged that nothing beats on both quality and the objective: the choices on offer."""
    if report.objective == "quality" or not report.frontier:
        return Text("")
    table = Table(
        "harness", "val quality", f"{report.objective} per episode", "kept", "commit",
        title=f"Quality / {report.objective} frontier (gate-judged candidates nothing beats on both)",
        title_justify="left",
    )  # fmt: skip
    for point in report.frontier:
        table.add_row(
            point.label,
            _score(point.quality),
            _spend(point.spend, report.objective),
            "yes" if point.accepted else "",
            (point.commit or "")[:10],
        )
    return table


def _spend(value: float | None, objective: str) -> str:
    if value is None:
        return "–"
    return (
        f"${value:.5f}"
        if objective == "cost"
        else f"{value:.2f} s"
        if objective == "latency"
        else f"{value:,.0f}"
    )


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
        render_frontier(report),
        render_proposals(report),
        render_harness_diff(
            report.files_start,
            report.files_final,
            labels=(f"start {report.start_hash[:10]}", f"final {report.final_hash[:10]}"),
        ),
    )


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
        frontier_html=Markup(_html_of(render_frontier(report))),
        diff_html=Markup(
            _html_of(render_harness_diff(report.files_start, report.files_final, labels=("start", "final")))
        ),
        styles=VERDICT_STYLES,
    )
    target = Path(path)
    target.write_text(page, encoding="utf-8")
    return target
