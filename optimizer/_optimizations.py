"""The optimizer's tables in the runs store: one row per optimization run (`optimizations`), one per
proposal (`proposals`), and the reads other parts need of them.

Every proposal is recorded before it is evaluated and again with its decision, and an
accepted one is marked committed only after git says so, so a run killed at any point can
be resumed without losing or repeating an accepted variant. Only this module writes or reads these
tables: the console lists runs with `list_optimizations` and shows patches with `proposal_patches`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from atoll.evals import RunStore
from atoll.worlds.base import live_status, now_text, process_owner
from atoll.worlds.base.stats import Decision

from ._config import OptimizeConfig, StepRecord
from ._objective import ObjectiveDecision, load_decision
from ._proposal import Attempt

RUNS_TABLE = "optimizations"
STEPS_TABLE = "proposals"
ATTEMPTS_TABLE = "proposer_attempts"


class OptimizationStore:
    """Read and write the optimizer's rows; every write is one transaction."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        store.ensure_table(
            RUNS_TABLE,
            {
                "id": str,
                "harness": str,
                "harness_path": str,
                "suite": str,
                "model": str,
                "config": str,
                "status": str,
                "stop_reason": str,
                "start_hash": str,
                "incumbent_hash": str,
                "started_at": str,
                "finished_at": str,
                "result": str,
                "owner": str,  # the process running it: once it is gone, a `running` run reads `interrupted`
                "operator_priors": str,  # the bandit's priors, fixed at the start so a resume reads the same
            },
            pk="id",
        )
        store.ensure_table(
            STEPS_TABLE,
            {
                "optimization_id": str,
                "iteration": int,
                "operator": str,
                "rationale": str,
                "patch": str,
                "parent_hash": str,
                "candidate_hash": str,
                "incumbent_hash": str,
                "verdict": str,
                "screen": str,
                "decision": str,
                "commit_sha": str,
                "created_at": str,
                "decided_at": str,
            },
            pk=("optimization_id", "iteration"),
        )
        store.ensure_table(
            ATTEMPTS_TABLE,
            {
                "optimization_id": str,
                "iteration": int,
                "operator": str,
                "attempt": str,  # an Attempt as JSON
            },
            pk=("optimization_id", "iteration", "operator"),
        )

    def create(
        self, run_id: str, config: OptimizeConfig, *, harness: str, model: str, start_hash: str
    ) -> None:
        with self.store.transaction() as db:
            db[RUNS_TABLE].insert(
                {
                    "id": run_id,
                    "harness": harness,
                    "harness_path": str(config.harness),
                    "suite": str(config.suite) if config.suite else None,
                    "model": model,
                    "config": config.model_dump_json(),
                    "status": "running",
                    "start_hash": start_hash,
                    "incumbent_hash": start_hash,
                    "started_at": now_text(),
                    "owner": process_owner(),
                }
            )

    # Reads go through the store's per-thread read connection, never the writer's (see `RunStore.read`).

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.store.read(f"SELECT * FROM {RUNS_TABLE} WHERE id = ?", [run_id])
        return _with_live_status(dict(rows[0])) if rows else None

    def resolve(self, ref: str) -> str | None:
        """The run `ref` names: an id, a unique part of one, or `latest` (the newest of any status)."""
        if ref in ("latest", "last"):
            return self.latest()
        if self.run(ref):
            return ref
        rows = self.store.read(f"SELECT id FROM {RUNS_TABLE} WHERE id LIKE ?", [f"%{ref}%"])
        return rows[0]["id"] if len(rows) == 1 else None

    def latest(self) -> str | None:
        rows = self.store.read(f"SELECT id FROM {RUNS_TABLE} ORDER BY started_at DESC, rowid DESC LIMIT 1")
        return rows[0]["id"] if rows else None

    def latest_unfinished(self) -> str | None:
        """The run `--resume latest` means: the newest that did not finish and whose process is gone
        (resuming a run that is alive in another terminal would run it twice)."""
        rows = self.store.db[RUNS_TABLE].rows_where(
            "status != 'finished'", order_by="started_at DESC, rowid DESC"
        )
        return next((row["id"] for row in rows if _with_live_status(row)["status"] != "running"), None)

    def update_run(self, run_id: str, **values: Any) -> None:
        if values.get("status") == "running":
            values["owner"] = process_owner()
        with self.store.transaction() as db:
            db[RUNS_TABLE].update(run_id, values)

    def finish(self, run_id: str, status: str, stop_reason: str, result: Any) -> None:
        self.update_run(
            run_id,
            status=status,
            stop_reason=stop_reason,
            finished_at=now_text(),
            result=result.model_dump_json() if result is not None else None,
        )

    def save_step(self, run_id: str, iteration: int, **values: Any) -> None:
        for key in ("screen", "decision"):
            if key in values and not isinstance(values[key], str | None):
                values[key] = (
                    json.dumps(values[key])
                    if isinstance(values[key], dict)
                    else values[key].model_dump_json()
                )
        with self.store.transaction() as db:
            existing = list(
                db[STEPS_TABLE].rows_where("optimization_id = ? AND iteration = ?", [run_id, iteration])
            )
            if existing:
                db[STEPS_TABLE].update((run_id, iteration), values)
            else:
                db[STEPS_TABLE].insert(
                    {"optimization_id": run_id, "iteration": iteration, "created_at": now_text(), **values}
                )

    def save_attempt(self, run_id: str, iteration: int, attempt: Attempt) -> None:
        """What one ask of a model-driven proposer came to (a resumed run asking again replaces it)."""
        row = {"optimization_id": run_id, "iteration": iteration, "operator": attempt.operator}
        with self.store.transaction() as db:
            db[ATTEMPTS_TABLE].upsert({**row, "attempt": attempt.model_dump_json()}, pk=list(row))

    def attempts(self, run_id: str) -> list[Attempt]:
        """The run's model-driven asks, in order."""
        rows = self.store.read(
            f"SELECT attempt FROM {ATTEMPTS_TABLE} WHERE optimization_id = ? ORDER BY iteration, rowid",
            [run_id],
        )
        return [Attempt.model_validate_json(row["attempt"]) for row in rows]

    def past_verdicts(self, harness: str, *, exclude: str) -> list[tuple[str, str | None]]:
        """(operator, verdict) of every proposal of other runs on the harness named `harness`."""
        rows = self.store.db.execute(
            f"SELECT p.operator, p.verdict FROM {STEPS_TABLE} p JOIN {RUNS_TABLE} o "
            "ON p.optimization_id = o.id WHERE o.harness = ? AND o.id != ? ORDER BY o.started_at, p.iteration",
            [harness, exclude],
        ).fetchall()
        return [(operator, verdict) for operator, verdict in rows]

    def proposal_rows(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.store.read(
            f"SELECT * FROM {STEPS_TABLE} WHERE optimization_id = ? ORDER BY iteration", [run_id]
        )
        return [dict(row) for row in rows]

    def proposals(self, run_id: str) -> list[StepRecord]:
        """The run's proposals as records, in order."""
        return [step_record(row) for row in self.proposal_rows(run_id)]


class OptimizationSummary(BaseModel):
    """One optimization run as a listing shows it: its status as a reader should see it (`live_status`)."""

    id: str
    harness: str
    model: str
    status: str
    stop_reason: str | None
    started_at: str
    finished_at: str | None


def list_optimizations(store: RunStore, *, limit: int = 100) -> list[OptimizationSummary]:
    """The latest optimization runs first; none in a store no optimization has run against (read without
    creating the tables, on this thread's own connection)."""
    if not store.has_table(RUNS_TABLE):
        return []
    rows = store.read(
        "SELECT id, harness, model, status, stop_reason, started_at, finished_at, owner "
        f"FROM {RUNS_TABLE} ORDER BY started_at DESC, rowid DESC LIMIT ?",
        [limit],
    )
    return [OptimizationSummary.model_validate(_with_live_status(dict(row))) for row in rows]


def proposal_patches(store: RunStore, optimization_id: str) -> dict[int, str]:
    """Each proposal's patch (unified diff of the harness files) by iteration; "" for one without."""
    if not store.has_table(STEPS_TABLE):
        return {}
    rows = store.read(
        f"SELECT iteration, patch FROM {STEPS_TABLE} WHERE optimization_id = ?", [optimization_id]
    )
    return {iteration: patch or "" for iteration, patch in rows}


def step_record(row: dict[str, Any]) -> StepRecord:
    """A proposal row as its record: a decided one with its gate figures, a screened-out one with its
    minibatch means, and the reason any proposal that never reached the gate was skipped."""
    decided = row["decision"] and row["verdict"] in ("accept", "reject", "void")
    decision = load_decision(row["decision"]) if decided else None
    c = decision.comparison if decision else None
    screen = json.loads(row["screen"]) if row["screen"] else {}
    return StepRecord(
        **_spend(decision, screen),
        iteration=row["iteration"],
        operator=row["operator"] or "",
        rationale=row["rationale"] or "",
        verdict=row["verdict"] or "unfinished",
        incumbent_score=c.incumbent_mean if c else screen.get("incumbent_mean"),
        candidate_score=c.candidate_mean if c else screen.get("candidate_mean"),
        p_value=c.p_better if c else None,
        lower_bound=c.lower_bound if c else None,
        wins=c.wins if c else None,
        losses=c.losses if c else None,
        ties=c.ties if c else None,
        commit=row["commit_sha"],
        reasons=decision.reasons if decision else _skip_reasons(row),
    )


def _spend(decision: Decision | None, screen: dict[str, Any]) -> dict[str, Any]:
    """The objective's figures of a run that lowers one: from the gate's decision, else the screen's
    last round."""
    if isinstance(decision, ObjectiveDecision):
        figures = decision.objective
        return {
            "objective": figures.objective,
            "incumbent_spend": figures.incumbent_mean,
            "candidate_spend": figures.candidate_mean,
            "reduction_lower_bound": figures.lower_bound,
        }
    last = (screen.get("rounds") or [{}])[-1]
    if last.get("incumbent_cost") is None:
        return {}
    return {"incumbent_spend": last["incumbent_cost"], "candidate_spend": last["candidate_cost"]}


def _skip_reasons(row: dict[str, Any]) -> list[str]:
    """Why a proposal never reached the gate (its load or render error, what it repeated, or why the
    screen dropped it)."""
    if row["verdict"] == "invalid" and row["decision"]:
        return [json.loads(row["decision"])["error"]]
    if row["verdict"] == "duplicate" and row["decision"]:
        return json.loads(row["decision"])["repeats"]
    if row["verdict"] == "none" and row["candidate_hash"]:  # how runs before the `duplicate` verdict kept one
        return ["the same files as the incumbent or an earlier proposal"]
    if row["verdict"] == "screened_out" and row["screen"]:
        reason = json.loads(row["screen"]).get("reason")  # records from before the race have none
        return [f"screen: {reason}"] if reason else []
    return []


def _with_live_status(row: dict[str, Any]) -> dict[str, Any]:
    """The row as a reader should see it (see `worlds.base.live_status`)."""
    return {**row, "status": live_status(row)}
