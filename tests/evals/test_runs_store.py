"""The runs store: where it lives, what it keeps, how runs are named, and a killed run's leftovers."""

from __future__ import annotations

import json
import os
import re
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
from typer.testing import CliRunner

from atoll import evals
from atoll.cli import app
from atoll.evals import RunRecord, RunStore, StoreError, evaluate_batch, load_suite, resume_batch
from atoll.harnesses.models import ModelRequest, ModelResponse
from atoll.worlds.base import now_text

runner = CliRunner()


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
    from atoll.evals import RunStore, evaluate_batch, load_suite

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
        with RunStore(path) as store:
            assert store.run("killed").status == "running"  # its process is alive
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()

    listed = runner.invoke(app, ["runs"], env={"ATOLL_RUNS_DB": str(path), "COLUMNS": "200"})
    assert re.search(r"killed\s.*\sinterrupted\s", listed.stdout), listed.stdout
    with RunStore(path) as store:
        assert store.run("killed").status == "interrupted"  # its process is gone: -9 left no word
        assert store.latest_unfinished("eval") == "killed"
        kept = store.episodes("killed")
        assert 6 <= len(kept) < 120 and all(r.passed for r in kept)
        result = await resume_batch("killed", store=store, model=solver(), concurrency=16)
        assert len(result.results) == 120 and result.resumed == len(kept)
        assert store.run("killed").status == "finished"


def start(store: RunStore, run_id: str, kind: str = "eval") -> None:
    store.start_run(
        RunRecord(id=run_id, kind=kind, harness="h", harness_hash="x", model="m", started_at=now_text())
    )


def test_a_run_is_interrupted_once_its_process_is_gone_even_when_its_pid_is_reused(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        start(store, "mine")
        assert store.run("mine").status == "running"  # this process runs it
        owner = json.loads(store.db["runs"].get("mine")["owner"])
        for changed, status in [
            ({"token": "another-boot:1"}, "interrupted"),  # same pid, another process
            ({"host": "elsewhere"}, "running"),  # another machine's process: cannot tell
        ]:
            store.db["runs"].update("mine", {"owner": json.dumps({**owner, **changed})})
            assert store.run("mine").status == status


def test_a_store_from_before_owners_were_kept_gains_the_column_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        start(store, "old")
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE runs DROP COLUMN owner")
    with RunStore(path) as store:
        assert "owner" in store.db["runs"].columns_dict
        assert store.run("old").status == "running"  # no owner recorded: nobody can say it died


def test_eval_resume_latest_finishes_the_newest_unfinished_eval_not_a_later_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    with RunStore() as store:
        for run_id, kind in [("eval-old", "eval"), ("eval-killed", "eval"), ("gate-after", "gate")]:
            start(store, run_id, kind)
        store.finish_run("eval-old", "interrupted")
        store.finish_run("eval-killed", "interrupted")
        store.finish_run("gate-after", "finished")
        start(store, "eval-live")  # still running in a live process (this one): not to be resumed twice
    resumed = []

    def interrupted_resume(run_ref: str, **options: object) -> None:
        resumed.append(run_ref)
        raise KeyboardInterrupt

    monkeypatch.setattr(evals, "resume", interrupted_resume)
    result = runner.invoke(app, ["eval", "--resume", "latest"])
    assert resumed == ["eval-killed"]
    assert result.exit_code == 130
    assert "interrupted; resume with: optimize eval --resume eval-killed" in re.sub(
        r"\s+", " ", result.stderr
    )


def test_eval_resume_latest_with_no_unfinished_eval_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    with RunStore() as store:
        start(store, "eval-done")
        start(store, "gate-killed", "gate")
        store.finish_run("eval-done", "finished")
        store.finish_run("gate-killed", "interrupted")
    result = runner.invoke(app, ["eval", "--resume", "latest"])
    message = re.sub(r"\s+", " ", result.stderr)
    assert (
        result.exit_code != 0 and "no unfinished eval run to resume" in message and "Traceback" not in message
    )


def test_an_interrupted_eval_names_the_run_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    stored = []

    def interrupted_evaluate(
        harness: object, suite: object, *, store: RunStore, run_id: str, **options: object
    ):
        if not stored:  # the first time, once the run is stored; the second, before
            start(store, run_id)
            stored.append(run_id)
        raise KeyboardInterrupt

    monkeypatch.setattr(evals, "evaluate", interrupted_evaluate)
    command = ["eval", "harnesses/support_agent", "--suite", "evals/helpdesk"]
    first, second = runner.invoke(app, command), runner.invoke(app, command)
    assert first.exit_code == second.exit_code == 130
    assert f"interrupted; resume with: optimize eval --resume {stored[0]}" in re.sub(
        r"\s+", " ", first.stderr
    )
    assert "--resume" not in second.stderr  # nothing was stored: nothing to resume
