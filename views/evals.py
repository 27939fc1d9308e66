"""Terminal views of eval results (rich): the progress bar, summary tables, runs, and one episode.

Each function returns a renderable (or, for the progress bar, a context manager) and prints
nothing itself, so the CLI decides where output goes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console, Group, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from atoll.evals import (
    BatchProgress,
    BatchResult,
    EpisodeOutcome,
    EpisodeResult,
    Grade,
    Metrics,
    OnProgress,
    RunRecord,
    RunStore,
    compute_metrics,
    pass_hat_k,
    passes,
)
from atoll.views.episode import render_episode, render_prompts

_STATUS_STYLES = {"finished": "green", "running": "yellow", "interrupted": "yellow", "failed": "red"}


@contextmanager
def progress_bar(console: Console | None = None, *, description: str = "eval") -> Iterator[OnProgress]:
    """A rich progress bar (done, passing, errors, reused, tokens, cost, elapsed); yields the `on_progress`
    callback."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    bar: list[int] = []

    def update(state: BatchProgress) -> None:
        reused = f"[cyan]{state.reused} reused[/] " if state.reused else ""
        stats = (
            f"[green]{state.passed} pass[/] [red]{state.errors} err[/] {reused}"
            f"{_tokens(state.usage.total_tokens)} tok ${state.usage.cost_usd:.4f}"
        )
        if not bar:
            bar.append(progress.add_task(description, total=state.total, stats=stats))
        progress.update(bar[0], completed=state.done, total=state.total, stats=stats)

    with progress:
        yield update


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10_000 else str(count)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _score(value: float) -> str:
    return f"{value:.3f}"


def render_summary(
    metrics: Metrics, outcomes: list[EpisodeOutcome], *, k: int | None = None, title: str = "Results"
) -> RenderableType:
    """One row per task, then the overall figures (mean score, pass^1, pass^k, errors, tokens, cost, latency)."""
    k = k or max(metrics.pass_k)
    by_task: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_task[outcome.task_id].append(outcome)
    show_k = k > 1
    tasks = Table(title=title, title_justify="left")
    tasks.add_column("task")
    for name in ("n", "mean score", "pass^1", *([f"pass^{k}"] if show_k else []), "errors"):
        tasks.add_column(name, justify="right")
    for name in ("tokens", "cost", "latency p50"):
        tasks.add_column(name, justify="right")
    for task_id, task in metrics.per_task.items():
        runs = by_task.get(task_id, [])
        row = [task_id, str(task.episodes), _score(task.mean_score), _pct(task.pass_rate)]
        if show_k:
            row.append(_pct(pass_hat_k([(task.episodes, task.passes)], k)) if task.episodes >= k else "–")
        row.append(Text(str(task.errors), style="red" if task.errors else ""))
        row += [
            _tokens(sum(r.usage.total_tokens for r in runs)),
            f"${sum(r.usage.cost_usd for r in runs):.4f}",
            f"{statistics.median(r.latency_s for r in runs):.2f} s" if runs else "–",
        ]
        style = "green" if task.pass_rate >= 1.0 else ("red" if task.passes == 0 else "")
        tasks.add_row(*row, style=style)
    return Group(tasks, render_overall(metrics))


def render_overall(metrics: Metrics) -> Table:
    """The batch's figures in one table."""
    overall = Table(title="Overall", title_justify="left", show_header=False)
    overall.add_column("metric")
    overall.add_column("value", justify="right")
    overall.add_row("episodes / tasks", f"{metrics.episodes} / {metrics.tasks}")
    overall.add_row("mean score", _score(metrics.mean_score))
    for k, value in sorted(metrics.pass_k.items()):
        overall.add_row(f"pass^{k}", _pct(value))
    overall.add_row("errors", Text(str(metrics.errors), style="red" if metrics.errors else ""))
    if metrics.reused:
        overall.add_row("reused from earlier runs (graded again)", str(metrics.reused))
    overall.add_row(
        "tokens (prompt + completion)", f"{metrics.usage.prompt_tokens} + {metrics.usage.completion_tokens}"
    )
    overall.add_row("cost", f"${metrics.usage.cost_usd:.4f}")
    overall.add_row("latency p50 / p95", f"{metrics.latency_median_s:.2f} s / {metrics.latency_p95_s:.2f} s")
    return overall


def render_eval_result(result: BatchResult) -> RenderableType:
    """What `optimize eval` prints at the end: the run, the per-task table and the overall figures."""
    header = Text()
    header.append(f"run {result.run_id}", style="bold")
    header.append(
        f"  {result.harness} @{result.harness_hash[:10]}  model {result.model}  suite {result.suite}"
        f"{f' split {result.split}' if result.split else ''}  {result.elapsed_s:.1f} s",
        style="dim",
    )
    if result.resumed:
        header.append(f"  ({result.resumed} episodes resumed from the store)", style="dim")
    if result.reused:
        header.append(
            f"  ({result.reused} of {len(result.results)} episodes reused from earlier runs: no model call)",
            style="dim",
        )
    outcomes = [r.outcome() for r in result.results]
    return Group(header, render_summary(result.metrics, outcomes, k=result.k))


def render_runs(runs: list[RunRecord]) -> Table:
    """`optimize runs`: the latest runs, one line each."""
    table = Table(title="Runs", title_justify="left")
    for name in ("id", "kind", "status", "harness", "model", "suite", "split"):
        table.add_column(name)
    for name in ("episodes", "mean", "pass^1", "pass^k"):
        table.add_column(name, justify="right")
    table.add_column("started (UTC)")
    for run in runs:
        metrics = run.metrics
        top_k = max(metrics.pass_k) if metrics else None
        table.add_row(
            run.id,
            run.kind,
            Text(run.status, style=_STATUS_STYLES.get(run.status, "")),
            f"{run.harness} @{run.harness_hash[:8]}",
            run.model,
            run.suite or "",
            run.split or "all",
            str(metrics.episodes) if metrics else "–",
            _score(metrics.mean_score) if metrics else "–",
            _pct(metrics.pass_1) if metrics else "–",
            f"{_pct(metrics.pass_k[top_k])} (k={top_k})" if metrics and top_k and top_k > 1 else "–",
            run.started_at,
        )
    return table


def render_grade(grade: Grade) -> Table:
    """The grader's verdicts: one row per check, failures first."""
    table = Table(
        title=f"Grade {grade.score:.3f} — {'passed' if grade.passed else 'failed'}",
        title_justify="left",
        title_style="bold green" if grade.passed else "bold red",
    )
    table.add_column("")
    table.add_column("check")
    table.add_column("weight", justify="right")
    table.add_column("feedback")
    for check in sorted(grade.checks, key=lambda c: c.passed):
        mark = Text("✓", style="green") if check.passed else Text("✗", style="red")
        table.add_row(mark, check.name, f"{check.weight:g}", check.feedback)
    return table


def render_episode_result(result: EpisodeResult) -> RenderableType:
    """One episode: transcript, tool calls, diff (the harness's renderer), then the verdicts."""
    title = Text(f"task {result.task_id}  seed {result.seed}", style="bold")
    return Group(title, render_episode(result.episode), render_grade(result.grade))


def render_run(
    store: RunStore, ref: str, task: str | None = None, seed: int | None = None, *, prompt: bool = False
) -> RenderableType:
    """`optimize show RUN [TASK]`: the run's summary and its failing episodes' verdicts, or a task's episodes
    whole, each after the system messages it was sent when `prompt` is set."""
    run = store.run(ref)
    header = Text()
    header.append(f"run {run.id}", style="bold")
    header.append(
        f"  {run.kind}  {run.status}  {run.harness} @{run.harness_hash[:10]}  model {run.model}  "
        f"suite {run.suite} {run.split or ''}  started {run.started_at}",
        style="dim",
    )
    if task is not None:
        episodes = store.episodes(run.id, task_id=task, seed=seed)
        if not episodes:
            return Group(header, Text(f"no stored episode of task {task!r} in this run", style="yellow"))
        shown: list[RenderableType] = [header]
        for result in episodes:
            episode = result.episode
            if prompt and episode.prompts:
                which = Text(
                    f"task {result.task_id}  seed {result.seed}: the system messages sent", style="bold"
                )
                shown += [which, render_prompts(episode.prompts, episode.prompt_hash)]
            elif prompt:
                missing = "text not in this store" if episode.prompt_hash else "not recorded"
                shown.append(
                    Text(f"task {result.task_id}  seed {result.seed}: prompt {missing}", style="yellow")
                )
            shown.append(render_episode_result(result))
        return Group(*shown)
    outcomes = store.outcomes(run.id)
    if not outcomes:
        return Group(header, Text("no episodes stored yet", style="yellow"))
    metrics = run.metrics or compute_metrics(outcomes, pass_threshold=run.config.get("pass_threshold", 1.0))
    failing = [o for o in outcomes if not passes(o.score, metrics.pass_threshold) or o.errored]
    parts: list[RenderableType] = [header, render_summary(metrics, outcomes, k=run.k)]
    if failing:
        parts.append(render_failures(store, run.id, failing))
    return Group(*parts)


def render_failures(store: RunStore, run_id: str, failing: list[EpisodeOutcome], limit: int = 20) -> Table:
    """The failed checks of failing episodes, one line each: where a person starts reading."""
    table = Table(title="Failing episodes", title_justify="left")
    table.add_column("task")
    table.add_column("seed", justify="right")
    table.add_column("score", justify="right")
    table.add_column("failed checks")
    for outcome in failing[:limit]:
        (result,) = store.episodes(run_id, task_id=outcome.task_id, seed=outcome.seed)
        lines = (
            "\n".join(check.line() for check in result.grade.failed_checks) or "(below the pass threshold)"
        )
        table.add_row(outcome.task_id, str(outcome.seed), _score(outcome.score), lines)
    if len(failing) > limit:
        table.caption = f"{len(failing) - limit} more; `optimize show RUN TASK` shows one task's episodes"
    return table
