"""The runs store under several processes at once: every write waits its turn and none is lost.

Two `optimize eval` started together, or an optimizer and an eval sharing `runs/atoll.sqlite`,
open and write the same file; a write transaction that reads first must wait for the lock, not
fail with "database is locked".
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from multiprocessing.synchronize import Event
from pathlib import Path

from atoll.evals import RunRecord, RunStore
from atoll.worlds.base import now_text

WRITERS, WRITES = 4, 30


def write(path: str, writer: int, go: Event) -> None:
    """Open the store (creating it, for the first one in) and write runs, snapshots and a shared counter."""
    go.wait()
    with RunStore(path) as store:
        store.ensure_table("counters", {"name": str, "value": int}, pk="name")
        for i in range(WRITES):
            name = f"{writer}-{i}"
            store.save_harness(name, "h", {"prompt.md": name})
            store.start_run(
                RunRecord(id=name, harness="h", harness_hash=name, model="m", started_at=now_text())
            )
            with store.transaction() as db:  # read, then write: what the optimizer's save_step does
                row = db.execute("SELECT value FROM counters WHERE name = 'n'").fetchone()
                db["counters"].insert({"name": "n", "value": (row[0] if row else 0) + 1}, replace=True)
            store.finish_run(name, "finished")


def test_processes_writing_one_fresh_store_at_once_lose_nothing_and_raise_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    writers = [context.Process(target=write, args=(str(path), n, go)) for n in range(WRITERS)]
    for process in writers:
        process.start()
    go.set()  # all at once, on a file none of them has created yet
    for process in writers:
        process.join(60)
    assert [process.exitcode for process in writers] == [0] * WRITERS
    with sqlite3.connect(path) as db:
        assert (
            db.execute("SELECT count(*) FROM runs WHERE status = 'finished'").fetchone()[0]
            == WRITERS * WRITES
        )
        assert db.execute("SELECT count(*) FROM harness_snapshots").fetchone()[0] == WRITERS * WRITES
        assert db.execute("SELECT value FROM counters").fetchone()[0] == WRITERS * WRITES
