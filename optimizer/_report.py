"""What `optimize report RUN` shows of one optimization run, as data (`views.report` draws it).

Everything is read back from the runs store (the `optimizations` and `proposals` tables, the
episodes of its evaluations and the harness snapshots), so a report can be made of a run that was
interrupted, or on another machine than the one that ran it.
"""

from __future__ import annotations

from pydantic import BaseModel

from atoll.evals import RunStore, StoreError
from atoll.harnesses.models import ModelUsage

from ._compare import ReportError
from ._config import FrontierPoint, OptimizeResult, StepRecord
from ._optimizations import OptimizationStore


class TrajectoryPoint(BaseModel):
    label: str
    score: float
    spend: float | None = None  # the objective per episode, in a run that lowers one


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
    objective: str = "quality"
    frontier: list[FrontierPoint] = []

    @property
    def accepted(self) -> int:
        return sum(row.verdict == "accept" for row in self.proposals)


def load_run_report(store: RunStore, ref: str) -> RunReport:
    """The report of the optimization run `ref` names (an id, a unique part of one, or `latest`)."""
    optimizations = OptimizationStore(store)
    run_id = optimizations.resolve(ref)
    row = optimizations.run(run_id) if run_id else None
    if row is None:
        raise ReportError(f"{store.path}: no optimization run {ref!r}; run `optimize run HARNESS` first")
    result = OptimizeResult.model_validate_json(row["result"]) if row["result"] else None
    proposals, trajectory = optimizations.proposals(run_id), []
    for step in proposals:
        if step.p_value is None:  # never reached the gate
            continue
        if not trajectory:
            trajectory.append(
                TrajectoryPoint(label="start", score=step.incumbent_score, spend=step.incumbent_spend)
            )
        if step.verdict == "accept":
            label = f"#{step.iteration + 1} {step.operator}"
            trajectory.append(
                TrajectoryPoint(label=label, score=step.candidate_score, spend=step.candidate_spend)
            )
    start_score = result.val_start if result else _gate_score(store, run_id, row["start_hash"])
    if start_score is not None:
        spend = result.val_spend_start if result else (trajectory[0].spend if trajectory else None)
        trajectory[:1] = [TrajectoryPoint(label="start", score=start_score, spend=spend)]
    spent = store.usage_of(f"{run_id}-")  # every evaluation of the run is a run `RUN-...`
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
        episodes=spent.episodes,
        usage=spent.usage,
        elapsed_s=result.elapsed_s if result else None,
        start_hash=row["start_hash"],
        final_hash=final_hash,
        files_start=_files(store, row["start_hash"]),
        files_final=_files(store, final_hash),
        objective=result.objective
        if result
        else next((s.objective for s in proposals if s.objective), "quality"),
        frontier=result.frontier() if result else [],
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
