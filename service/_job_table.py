"""The `jobs` table of the runs store: one row per job, written at each step so a job outlives its process.
Only this module reads or writes it."""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic_core import from_json

from atoll.evals import RunStore
from atoll.worlds.base import live_status, now_text, process_owner

from ._job_models import BrokenJob, Job, JobKind, UnknownJob

_log = logging.getLogger(__name__)

TABLE = "jobs"

_COLUMNS: dict[str, type] = {
    "id": str,
    "harness": str,
    "path": str,
    "kind": str,
    "options": str,  # JSON
    "source": str,
    "status": str,
    "stage": str,
    "outcome": str,
    "optimization_id": str,
    "feedback_mark": str,
    "result": str,  # JSON
    "error": str,
    "created_at": str,
    "updated_at": str,
    "finished_at": str,
    "owner": str,
}


class JobTable:
    """The jobs' rows: read on this thread's own connection, each write one transaction.

    Args:
        store: the runs store (the table and its indexes are created here).
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store
        store.ensure_table(TABLE, _COLUMNS, pk="id")
        with store.transaction() as db:
            db[TABLE].create_index(["harness", "created_at"], if_not_exists=True)
            db[TABLE].create_index(["status"], if_not_exists=True)

    def get(self, job_id: str) -> Job:
        rows = self.store.read(f"SELECT * FROM {TABLE} WHERE id = ?", [job_id])
        if not rows:
            raise UnknownJob(f"no job {job_id!r}; GET /jobs lists them")
        try:
            return _job(dict(rows[0]))
        except ValueError as error:
            raise BrokenJob(f"job {job_id} is broken in the runs store: {_first_line(error)}") from None

    def list(self, *, harness: str | None = None, limit: int | None = 50) -> list[Job]:
        """Jobs, newest first."""
        where, values = ("harness = ?", [harness]) if harness is not None else ("1", [])
        suffix = f" LIMIT {int(limit)}" if limit is not None else ""
        return self._rows(f"{where} ORDER BY created_at DESC, rowid DESC{suffix}", values)

    def running(self, harness: str) -> list[Job]:
        """The jobs of `harness` whose row says running, newest first (read as interrupted when their
        process is gone)."""
        return self._rows("harness = ? AND status = 'running' ORDER BY created_at DESC", [harness])

    def unfinished(self) -> list[Job]:
        """Every job left running or interrupted, newest first: what a starting service may resume."""
        return self._rows("status IN ('running', 'interrupted') ORDER BY created_at DESC", [])

    def last(self, harness: str, kind: JobKind | None = None) -> Job | None:
        """The newest job of `harness` (of `kind`, when given)."""
        where, values = "harness = ?", [harness]
        if kind is not None:
            where, values = where + " AND kind = ?", [*values, kind]
        rows = self._rows(f"{where} ORDER BY created_at DESC, rowid DESC LIMIT 1", values)
        return rows[0] if rows else None

    def insert(self, job: Job) -> None:
        """Store a new job, in the caller's transaction (`store.transaction()`), or in one of its own."""
        with self.store.transaction() as db:
            db[TABLE].insert(_row(job))

    def save(self, job: Job) -> None:
        """Store the job whole, stamped now."""
        job.updated_at = now_text()
        with self.store.transaction() as db:
            db[TABLE].upsert(_row(job), pk="id")

    def save_status(self, job: Job) -> None:
        """Store only the job's status, outcome, error and times: what is left to save when saving it whole
        failed."""
        with self.store.transaction() as db:
            db.execute(
                f"UPDATE {TABLE} SET status = ?, outcome = ?, error = ?, finished_at = ?, updated_at = ? "
                "WHERE id = ?",
                [job.status, job.outcome, job.error, job.finished_at, job.updated_at, job.id],
            )

    def claim(self, job: Job, path: str) -> bool:
        """Take an interrupted job for this process by compare-and-swap: its row is read again inside the
        write transaction and taken only if it still reads interrupted. Of two services starting at once,
        one resumes it; the other finds it running."""
        owner, claimed_at = process_owner(), now_text()
        with self.store.transaction() as db:
            rows = db.execute(f"SELECT status, owner FROM {TABLE} WHERE id = ?", [job.id]).fetchall()
            if not rows or live_status({"status": rows[0][0], "owner": rows[0][1]}) != "interrupted":
                return False
            db.execute(
                f"UPDATE {TABLE} SET status = 'running', owner = ?, error = NULL, path = ?, updated_at = ? "
                "WHERE id = ?",
                [owner, path, claimed_at, job.id],
            )
        job.status, job.owner, job.error, job.path, job.updated_at = "running", owner, None, path, claimed_at
        return True

    def _rows(self, where: str, values: list[Any]) -> list[Job]:
        """The jobs of the rows found; a row that cannot be read back is logged and left out, so one broken
        job never breaks the listing of every other."""
        jobs = []
        for row in self.store.read(f"SELECT * FROM {TABLE} WHERE {where}", values):
            try:
                jobs.append(_job(dict(row)))
            except ValueError as error:
                _log.warning(
                    "job %s is broken in the runs store (%s); left out", row["id"], _first_line(error)
                )
        return jobs


def _row(job: Job) -> dict[str, Any]:
    row = job.model_dump(mode="json")
    row["options"] = json.dumps(row["options"], sort_keys=True)
    row["result"] = json.dumps(row["result"], sort_keys=True, default=str)
    return row


def _job(row: dict[str, Any]) -> Job:
    values = {**row, "status": live_status(row)}  # `running` under a process that is gone: interrupted
    values["options"] = from_json(row["options"] or b"")  # depth-bounded; a ValueError when broken
    values["result"] = from_json(row["result"] or "{}")
    values["outcome"] = row["outcome"] or ""
    return Job.model_validate(values)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
