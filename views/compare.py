"""`optimize diff`, shown: the file diff of two harness sides, the per-task flips of two runs, and one
task's two world diffs side by side."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from atoll.evals import EpisodeResult, RunRecord, RunStore
from atoll.optimizer import DiffSide, ReportError, task_flips
from atoll.views.harness_diff import render_harness_diff
from atoll.views.world_diff import render_diff

FLIP_STYLES = {
    "newly failing": "bold red",
    "newly passing": "bold green",
    "still failing": "yellow",
    "still passing": "dim",
}


def render_flips(store: RunStore, run_a: str, run_b: str) -> RenderableType:
    """The tasks whose fate changed between two runs, with score deltas; still-passing ones counted."""
    flips, unpaired = task_flips(store, run_a, run_b)
    counts = {status: sum(flip.status == status for flip in flips) for status in FLIP_STYLES}
    summary = Text(" · ").join(
        Text(f"{count} {status}", style=FLIP_STYLES[status]) for status, count in counts.items() if count
    )
    table = Table("", "task", "A", "B", "Δ", "passes A → B", title="Task flips (A → B)", title_justify="left")
    for flip in flips:
        if flip.status == "still passing" and abs(flip.delta) < 1e-9:
            continue
        table.add_row(
            Text(flip.status, style=FLIP_STYLES[flip.status]),
            flip.task,
            f"{flip.score_a:.3f}",
            f"{flip.score_b:.3f}",
            Text(
                f"{flip.delta:+.3f}", style="green" if flip.delta > 0 else "red" if flip.delta < 0 else "dim"
            ),
            f"{flip.passes_a} → {flip.passes_b}",
        )
    parts: list[RenderableType] = [
        table if table.row_count else Text("No task changed.", style="dim"),
        summary,
    ]
    if unpaired:
        parts.append(Text(f"played by one run only: {', '.join(unpaired)}", style="dim"))
    return Group(*parts)


class Responsive:
    """`wide` where the console has at least `min_width` columns, else `narrow`: a table of ten columns
    squeezed into sixty is unreadable, the same facts as a list are not."""

    def __init__(self, wide: RenderableType, narrow: RenderableType, *, min_width: int = 100) -> None:
        self.wide, self.narrow, self.min_width = wide, narrow, min_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.wide if options.max_width >= self.min_width else self.narrow


def side_by_side(left: RenderableType, right: RenderableType) -> RenderableType:
    """Two columns on a wide terminal, one above the other on a narrow one."""
    grid = Table.grid(expand=True, padding=(0, 2))
    grid.add_column(ratio=1)
    grid.add_column(ratio=1)
    grid.add_row(left, right)
    return Responsive(grid, Group(left, Text(""), right))


def _episode_view(name: str, run: RunRecord, result: EpisodeResult | None) -> RenderableType:
    if result is None:
        return Text(f"{name}: run {run.id} did not play this seed", style="dim")
    verdict = (
        Text("errored", style="magenta")
        if result.errored
        else (Text("passed", style="green") if result.passed else Text("failed", style="red"))
    )
    parts: list[RenderableType] = [
        Text.assemble(
            (f"{name}: ", "bold"), f"run {run.id} · seed {result.seed} · score {result.score:.2f} ", verdict
        ),
        render_diff(result.episode.diff, title="World diff"),
    ]
    if result.episode.error:
        parts.append(Text(f"error: {result.episode.error}", style="magenta"))
    if result.episode.reply:
        parts.append(Text(f"reply: {result.episode.reply}", style="italic"))
    parts += [Text(check.line(), style="red") for check in result.grade.failed_checks]
    return Group(*parts)


def render_world_diffs(
    store: RunStore, run_a: str, run_b: str, task: str, *, seed: int | None = None
) -> RenderableType:
    """What the agent changed in the world on one task in each run, side by side, with the grades."""
    runs = [store.run(run_a), store.run(run_b)]
    episodes = [{r.seed: r for r in store.episodes(run.id, task_id=task)} for run in runs]
    if not any(episodes):
        raise ReportError(f"neither run played task {task!r}; `optimize show RUN` lists their tasks")
    if seed is None:
        common = sorted(episodes[0].keys() & episodes[1].keys()) or sorted(
            episodes[0].keys() | episodes[1].keys()
        )
        seed = common[0]
    left, right = (
        _episode_view(name, run, played.get(seed))
        for name, run, played in zip(("A", "B"), runs, episodes, strict=True)
    )
    return Group(Text(f"Task {task}, seed {seed}", style="bold"), side_by_side(left, right))


def render_comparison(
    a: DiffSide,
    b: DiffSide,
    store: RunStore | None = None,
    *,
    task: str | None = None,
    seed: int | None = None,
) -> RenderableType:
    """Everything `optimize diff A B` shows: the file diff, then (two runs) the flips, then (a task) the
    world diffs."""
    parts: list[RenderableType] = [render_harness_diff(a.files, b.files, labels=(a.label, b.label))]
    both_runs = a.run is not None and b.run is not None and store is not None
    if both_runs:
        parts.append(render_flips(store, a.run.id, b.run.id))
    if task is not None:
        if not both_runs:
            raise ReportError(
                "world diffs of a task need two eval runs as A and B (run ids, see `optimize runs`)"
            )
        parts.append(render_world_diffs(store, a.run.id, b.run.id, task, seed=seed))
    return Group(*parts)
