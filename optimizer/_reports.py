"""`optimize diff`: what changed between two harness versions and what that did to the tasks.

A side is a git ref of the harness folder, an eval run in the runs store, or a harness snapshot
there (by content hash). Any two sides give the file diff; two runs also give the per-task flips
and, for one task, the two world diffs side by side: the evidence of what the change did.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from evals import EpisodeResult, RunRecord, RunStore, StoreError, passes
from harnesses import HarnessError, load_harness
from worlds import AtollError
from worlds.render import render_diff

from . import _git as git
from ._diffview import render_harness_diff
from ._gate import harness_files_at

SIDE_KINDS = ("git", "run", "hash")
WORKTREE = "worktree"
FlipStatus = Literal["newly failing", "newly passing", "still failing", "still passing"]
FLIP_STYLES = {
    "newly failing": "bold red",
    "newly passing": "bold green",
    "still failing": "yellow",
    "still passing": "dim",
}


class ReportError(AtollError):
    """A report cannot be made as asked: an unknown ref, run or hash, or sides that lack what it needs."""


@dataclass
class DiffSide:
    """One side of `optimize diff`: the harness files, and the eval run when the side is one."""

    label: str
    files: dict[str, str]
    run: RunRecord | None = field(default=None)


def resolve_side(spec: str, harness_path: Path | None = None, store: RunStore | None = None) -> DiffSide:
    """What `spec` names: `worktree`, a git ref of `harness_path`, an eval run id (or a unique part of
    one, or `latest`), or a harness hash prefix from the store, tried in that order. Prefix it with
    `git:`, `run:` or `hash:` to say which."""
    kind, _, value = spec.partition(":")
    if kind not in SIDE_KINDS:
        kind, value = "", spec
    if value == WORKTREE and harness_path is not None:
        try:
            return DiffSide(f"{harness_path} (working tree)", load_harness(harness_path).files())
        except HarnessError as error:
            raise ReportError(str(error)) from None
    if kind in ("", "git") and harness_path is not None:
        side = _git_side(value, harness_path, explicit=kind == "git")
        if side is not None:
            return side
    if kind in ("", "run") and store is not None:
        try:
            run = store.run(value)
        except StoreError as error:
            if kind == "run":
                raise ReportError(str(error)) from None
        else:
            return DiffSide(f"run {run.id}", store.harness_files(run.harness_hash), run)
    if kind in ("", "hash") and store is not None:
        found = [
            row[0]
            for row in store.db.execute(
                "SELECT hash FROM harness_snapshots WHERE substr(hash, 1, ?) = ?", [len(value), value]
            )
        ]
        if len(found) == 1:
            return DiffSide(f"harness {found[0][:12]}", store.harness_files(found[0]))
        if len(found) > 1:
            raise ReportError(
                f"harness hash {value!r} is ambiguous ({len(found)} snapshots); give more of it"
            )
    tried = [
        f"a git ref of {harness_path}" if harness_path is not None else None,
        f"a run or harness hash in {store.path}" if store is not None else None,
    ]
    raise ReportError(
        f"{spec!r} is not {' nor '.join(t for t in tried if t) or 'anything without a harness or store'}; "
        "`git log`, `optimize runs` and `optimize report` list what there is"
    )


def _git_side(ref: str, harness_path: Path, *, explicit: bool) -> DiffSide | None:
    try:
        sha = git.resolve_ref(harness_path, ref)
    except git.GitError:
        if explicit:
            raise ReportError(f"{ref!r} is not a commit of the repository holding {harness_path}") from None
        return None
    files = harness_files_at(harness_path, sha)
    if not files:
        raise ReportError(f"{harness_path} does not exist at {ref} ({sha[:10]})")
    return DiffSide(f"{ref} ({sha[:10]})", files)


# -- task flips -----------------------------------------------------------------------------------


class Flip(BaseModel):
    """One task in two runs. A task passes a run when it passed on every seed."""

    task: str
    status: FlipStatus
    score_a: float
    score_b: float
    delta: float
    passes_a: str
    passes_b: str


def task_flips(store: RunStore, run_a: str, run_b: str) -> tuple[list[Flip], list[str]]:
    """(the tasks both runs played, worst news first; the tasks only one of them played)."""
    sides = []
    for ref in (run_a, run_b):
        run = store.run(ref)
        threshold = run.config.get("pass_threshold", 1.0)
        by_task: dict[str, list[tuple[float, bool]]] = defaultdict(list)
        for outcome in store.outcomes(run.id):
            by_task[outcome.task_id].append(
                (outcome.score, not outcome.errored and passes(outcome.score, threshold))
            )
        sides.append(by_task)
    a, b = sides
    flips = []
    for task in [task for task in a if task in b]:
        mean_a = sum(score for score, _ in a[task]) / len(a[task])
        mean_b = sum(score for score, _ in b[task]) / len(b[task])
        pass_a, pass_b = all(ok for _, ok in a[task]), all(ok for _, ok in b[task])
        status: FlipStatus = (
            ("still passing" if pass_b else "newly failing")
            if pass_a
            else ("newly passing" if pass_b else "still failing")
        )
        flips.append(
            Flip(
                task=task,
                status=status,
                score_a=mean_a,
                score_b=mean_b,
                delta=mean_b - mean_a,
                passes_a=f"{sum(ok for _, ok in a[task])}/{len(a[task])}",
                passes_b=f"{sum(ok for _, ok in b[task])}/{len(b[task])}",
            )
        )
    order = list(FLIP_STYLES)
    flips.sort(key=lambda flip: (order.index(flip.status), flip.delta))
    return flips, sorted(a.keys() ^ b.keys())


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


# -- world diffs ----------------------------------------------------------------------------------


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
