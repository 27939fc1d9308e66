"""`optimize diff`: what changed between two harness versions and what that did to the tasks.

A side is a git ref of the harness folder, an eval run in the runs store, or a harness snapshot
there (by content hash). Any two sides give the file diff; two runs also give the per-task flips
and, for one task, the two world diffs side by side: the evidence of what the change did. This
module resolves the sides and computes the flips; `views.compare` draws them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel

from atoll.evals import RunRecord, RunStore, StoreError, passes
from atoll.harnesses import HarnessError, load_harness
from atoll.worlds import AtollError

from . import git

SIDE_KINDS = ("git", "run", "hash")


WORKTREE = "worktree"


FlipStatus = Literal["newly failing", "newly passing", "still failing", "still passing"]


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
    files = git.harness_files_at(harness_path, sha)
    if not files:
        raise ReportError(f"{harness_path} does not exist at {ref} ({sha[:10]})")
    return DiffSide(f"{ref} ({sha[:10]})", files)


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
    order = list(get_args(FlipStatus))  # the worst news first
    flips.sort(key=lambda flip: (order.index(flip.status), flip.delta))
    return flips, sorted(a.keys() ^ b.keys())
