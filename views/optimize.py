"""Terminal views of an optimization: the live status panel and the closing summary."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from atoll.optimizer import OptimizeResult, OptimizerEvent, OptimizerStatus, StepRecord


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m{seconds:02d}s"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA unknown yet"
    minutes = round(seconds / 60)
    return "ETA under a minute" if minutes < 1 else f"ETA ~{minutes} min"


def status_line(status: OptimizerStatus) -> str:
    """One line: the phase, the time left, and the best candidate so far."""
    phase = {"start": "scoring the start", "search": "searching", "test": "scoring test", "done": "done"}
    best = f"best: {status.best}" if status.best else "no candidate has reached val yet"
    return f"{phase[status.phase]} · {_eta(status.eta_s)} · {best}"


def render_status(status: OptimizerStatus) -> RenderableType:
    """The live panel: the phase, ETA and best candidate, the incumbent, the current proposal and stage,
    counts and spend."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("now", status_line(status))
    grid.add_row(
        "incumbent",
        f"{_score(status.incumbent_score)} on val (start {_score(status.start_score)}) · {status.incumbent_hash[:10]}",
    )
    grid.add_row(
        "proposal",
        f"{status.iteration} of {status.max_proposals}"
        + (f" · {status.operator}" if status.operator else ""),
    )
    if status.rationale:
        grid.add_row("", Text(status.rationale[:160], style="dim"))
    progress = f" ({status.batch_done}/{status.batch_total} episodes)" if status.batch_total else ""
    grid.add_row("stage", f"{status.stage}{progress}")
    grid.add_row("decisions", f"[green]{status.accepted} accepted[/] · [red]{status.rejected} rejected[/]")
    grid.add_row(
        "spend",
        f"{status.episodes} episodes · {status.usage.model_calls} model calls · "
        f"{status.usage.total_tokens:,} tokens · ${status.usage.cost_usd:.4f} · {_elapsed(status.elapsed_s)}",
    )
    return Panel(grid, title=f"optimize · {status.run_id}", title_align="left")


def event_line(event: OptimizerEvent) -> str | None:
    """One plain line for the events worth a line in a log (no live view): None for the rest."""
    status = event.status
    clock = f"[{_elapsed(status.elapsed_s)}]"
    if event.kind == "evaluate" and status.batch_total == 0:
        return f"{clock} evaluating {status.stage}"
    if event.kind == "proposal" and status.operator:
        return (
            f"{clock} proposal {status.iteration}/{status.max_proposals} ({_eta(status.eta_s)}) · "
            f"{status.operator}: {status.rationale}"
        )
    if event.kind == "screen":
        return f"{clock} {status.stage}"
    if event.kind == "decision":
        if event.decision is not None:
            return f"{clock} {event.decision.summary()}\n{clock} {status_line(status)}"
        return f"{clock} {status.stage}"
    if event.kind == "commit":
        return f"{clock} committed; incumbent now {_score(status.incumbent_score)} ({status.incumbent_hash[:10]})"
    if event.kind in ("paused", "finish"):
        return f"{clock} {event.kind}: {status.message}"
    return None


def print_optimize_result(console: Console, result: OptimizeResult, *, show_patch: bool = True) -> None:
    """Print the closing summary: as tables on a terminal; for a log (stdout piped, a CI log, `| tee`),
    as plain lines, one per proposal with its whole rationale, never wrapped or cut to a width that a
    log does not have (rich takes 80 columns there, and the table's rationale column shrank to 12)."""
    if console.is_terminal:
        console.print(render_optimize_result(result, show_patch=show_patch))
        return
    for line in optimize_result_lines(result, show_patch=show_patch):
        console.print(line, highlight=False, soft_wrap=True)


def optimize_result_lines(result: OptimizeResult, *, show_patch: bool = True) -> list[Text]:
    """The closing summary for a log: the verdict, the scores, each proposal (its figures on one line, its
    rationale and why it was not kept on the next ones, whole), the final diff, the spend."""
    spending = result.objective != "quality"
    lines = [_headline(result), Text("Scores (mean over tasks):", style="bold")]
    rows = [
        ("val (gate)", result.val_start, result.val_final, result.val_spend_start, result.val_spend_final)
    ]
    if result.test_start is not None:
        rows.append(
            (
                "test (reported, never used to decide)",
                result.test_start,
                result.test_final,
                result.test_spend_start,
                result.test_spend_final,
            )
        )
    for split, start, final, spend_start, spend_final in rows:
        spend = (
            f" · {result.objective} per episode {_spend(spend_start) or '–'} → {_spend(spend_final) or '–'}"
            if spending
            else ""
        )
        lines.append(Text(f"  {split}: {_score(start)} → {_score(final)}{spend}"))
    lines.append(Text(f"Proposals ({len(result.steps)}):", style="bold"))
    for step in result.steps:
        figures = [step.operator, step.verdict]
        if step.candidate_score is not None:
            figures.append(f"{_score(step.incumbent_score)} → {_score(step.candidate_score)}")
        if spending and step.candidate_spend is not None:
            figures.append(f"{result.objective} {_spend_change(step)}")
        if step.p_value is not None:
            figures.append(f"p {step.p_value:.3g}")
        if step.lower_bound is not None:
            figures.append(f"lower bound {step.lower_bound:+.3f}")
        if step.commit:
            figures.append(f"commit {step.commit[:10]}")
        style = {"accept": "green", "reject": "red", "void": "magenta"}.get(step.verdict, "")
        lines.append(Text(f"  {step.iteration + 1}. " + " · ".join(figures), style=style))
        for part in step.rationale.strip().splitlines():
            if part.strip():
                lines.append(Text(f"     {part.strip()}", style="dim"))
        if not step.commit:
            lines.extend(Text(f"     why not: {reason}", style="dim") for reason in step.reasons)
    if result.final_hash != result.start_hash and show_patch and result.final_patch:
        lines.append(Text("Final harness vs start:", style="bold"))
        lines.extend(Text(line) for line in result.final_patch.rstrip("\n").splitlines())
    lines.append(_footer(result))
    return lines


def _headline(result: OptimizeResult) -> Text:
    if result.final_hash == result.start_hash:
        return Text(
            "No variant beat the incumbent with confidence; the harness is unchanged.", style="bold yellow"
        )
    committed = all(s.commit != "uncommitted" for s in result.accepted)
    return Text(
        f"Improved: {len(result.accepted)} variant(s) accepted"
        + (" and committed." if committed else " (files written, not committed)."),
        style="bold green",
    )


def _footer(result: OptimizeResult) -> Text:
    return Text(
        f"Stopped: {result.stop_reason}. {result.episodes} episodes, {result.usage.model_calls} model calls, "
        f"{result.usage.total_tokens:,} tokens, ${result.usage.cost_usd:.4f}, {_elapsed(result.elapsed_s)}. "
        f"Run {result.run_id}.",
        style="dim",
    )


def render_optimize_result(result: OptimizeResult, *, show_patch: bool = True) -> RenderableType:
    """The closing summary on a terminal: the verdict in one line, the trajectory, every decision, the final
    diff (`print_optimize_result` prints it, or its log form where there is no terminal)."""
    improved = result.final_hash != result.start_hash
    headline = _headline(result)
    spending = result.objective != "quality"
    columns = ["split", "start", "final"] + (
        [f"{result.objective} start", f"{result.objective} final"] if spending else []
    )
    title = "Scores (mean over tasks)" + (f" and {result.objective} per episode" if spending else "")
    scores = Table(*columns, title=title, title_justify="left")
    val_spend = [_spend(result.val_spend_start), _spend(result.val_spend_final)] if spending else []
    scores.add_row("val (gate)", _score(result.val_start), _score(result.val_final), *val_spend)
    if result.test_start is not None:
        test_spend = [_spend(result.test_spend_start), _spend(result.test_spend_final)] if spending else []
        scores.add_row(
            "test (reported, never used to decide)",
            _score(result.test_start),
            _score(result.test_final),
            *test_spend,
        )
    steps = Table(
        "#",
        "operator",
        "verdict",
        "incumbent → candidate (screen or gate)",
        *([result.objective] if spending else []),
        "p",
        "lower bound",
        "commit",
        "rationale (and why it was not kept)",
        title="Proposals",
        title_justify="left",
    )
    for step in result.steps:
        style = {"accept": "green", "reject": "red", "void": "magenta"}.get(step.verdict, "dim")
        steps.add_row(
            str(step.iteration + 1),
            step.operator,
            Text(step.verdict, style=style),
            f"{_score(step.incumbent_score)} → {_score(step.candidate_score)}"
            if step.candidate_score is not None
            else "",
            *([_spend_change(step)] if spending else []),
            f"{step.p_value:.3g}" if step.p_value is not None else "",
            f"{step.lower_bound:+.3f}" if step.lower_bound is not None else "",
            (step.commit or "")[:10],
            step.rationale[:60]
            + (f" · why not: {_tail(step.reasons[0])}" if step.reasons and not step.commit else ""),
        )
    footer = _footer(result)
    parts: list[RenderableType] = [headline, scores, steps]
    if improved and show_patch and result.final_patch:
        parts.append(
            Panel(
                Syntax(result.final_patch, "diff", word_wrap=True),
                title="final harness vs start",
                title_align="left",
            )
        )
    parts.append(footer)
    return Group(*parts)


def _tail(reason: str, width: int = 60) -> str:
    """The end of a long reason: an error names its file first and says what went wrong last."""
    return reason if len(reason) <= width else "…" + reason[-width:]


def _spend(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _spend_change(step: StepRecord) -> str:
    """The objective per episode, incumbent → candidate, with the cut's lower bound once decided."""
    if step.candidate_spend is None:
        return ""
    bound = (
        f" (cut bound {step.reduction_lower_bound:+.0%})" if step.reduction_lower_bound is not None else ""
    )
    return f"{_spend(step.incumbent_spend)} → {_spend(step.candidate_spend)}{bound}"
