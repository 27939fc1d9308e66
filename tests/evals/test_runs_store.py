"""The runs store: where it lives, what it keeps, how runs are named, and a killed run's leftovers."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world

from evals import RunStore, StoreError, evaluate_batch, load_suite, resume_batch
from harnesses.models import ModelRequest, ModelResponse


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


def test_the_store_lives_where_atoll_runs_db_says_else_under_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATOLL_RUNS_DB", raising=False)
    with RunStore() as store:
        assert store.path == Path("runs/atoll.sqlite") and store.path.exists()
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "elsewhere.sqlite"))
    with RunStore() as store:
        assert store.path == tmp_path / "elsewhere.sqlite"
        assert store.db.journal_mode == "wal"


async def test_an_episode_reads_back_exactly_as_it_was_stored(suite, tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = await evaluate_batch(harness(), suite, model=solver(), store=store)
        (stored,) = store.episodes(result.run_id, task_id="refund-damaged", seed=1)
        (original,) = [r for r in result.results if (r.task_id, r.seed) == ("refund-damaged", 1)]
        assert stored == original
        assert [o.task_id for o in store.outcomes(result.run_id)].count("cancel-shipped") == 2
        assert store.episode_keys(result.run_id) == {(r.task_id, r.seed) for r in result.results}


async def test_a_run_is_found_by_its_id_its_tail_its_head_or_latest(suite, tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = await evaluate_batch(
            harness(), suite, model=solver(), split="train", store=store, run_id="eval-a-1234"
        )
        second = await evaluate_batch(
            harness(), suite, model=solver(), split="train", store=store, run_id="eval-b-9876"
        )
        assert store.run("1234").id == first.run_id
        assert store.run("eval-b").id == second.run_id
        assert store.run("latest").id == second.run_id
        assert [run.id for run in store.runs()] == [second.run_id, first.run_id]
        with pytest.raises(StoreError, match="no run 'nothing'"):
            store.run("nothing")
        with pytest.raises(StoreError, match="ambiguous"):
            store.run("eval")


def test_other_parts_of_atoll_add_their_own_tables_beside_the_runs(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        store.ensure_table("variants", {"id": str, "parent": str, "files": str}, pk="id")
        store.ensure_table("variants", {"id": str, "parent": str, "files": str, "score": float}, pk="id")
        with store.transaction() as db:
            db["variants"].insert({"id": "v1", "parent": None, "files": "{}", "score": 0.5})
        assert store.db["variants"].columns_dict == {"id": str, "parent": str, "files": str, "score": float}
        with pytest.raises(StoreError, match="belongs to the runs store"):
            store.ensure_table("episodes", {"id": str}, pk="id")
        cache = store.response_cache()
        request = ModelRequest(messages=[{"role": "user", "content": "hi"}])
        key = cache.key("m", request)
        cache.put(key, "m", request, ModelResponse(model="m", content="hello", finish_reason="stop"))
        assert cache.get(key).content == "hello" and "model_calls" in store.db.table_names()


def test_a_store_from_a_newer_atoll_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    RunStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE store_meta SET value = '99' WHERE key = 'version'")
    with pytest.raises(StoreError, match="written by a newer Atoll"):
        RunStore(path)


KILLED_RUN = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from minidesk.agent import SUITE, harness, solver
    from minidesk.world import world
    from evals import RunStore, evaluate_batch, load_suite

    async def main():
        with RunStore({path!r}) as store:
            await evaluate_batch(harness(), load_suite(SUITE, world=world), model=solver(latency_s=0.05),
                                 seeds=list(range(40)), concurrency=2, store=store, run_id="killed")

    asyncio.run(main())
    """
)


def stored_episodes(path: Path) -> int:
    with sqlite3.connect(path) as db:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'episodes'").fetchone()[0]:
            return 0
        return db.execute("SELECT count(*) FROM episodes").fetchone()[0]


async def test_a_process_killed_mid_run_leaves_a_store_the_next_command_reads_and_resumes(
    suite, tmp_path: Path
) -> None:
    path = tmp_path / "runs.sqlite"
    script = KILLED_RUN.format(tests=str(Path(__file__).parent), path=str(path))
    process = subprocess.Popen([sys.executable, "-c", script], env=os.environ.copy())
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if path.exists() and stored_episodes(path) >= 6:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()

    with RunStore(path) as store:
        run = store.run("killed")
        assert run.status == "running"  # nobody could say otherwise: the process died
        kept = store.episodes("killed")
        assert 6 <= len(kept) < 120 and all(r.passed for r in kept)
        result = await resume_batch("killed", store=store, model=solver(), concurrency=16)
        assert len(result.results) == 120 and result.resumed == len(kept)
        assert store.run("killed").status == "finished"
