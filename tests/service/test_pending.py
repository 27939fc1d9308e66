"""Records off the response path (service/_pending.py): an answer never waits for the runs store, and a
record answered is never lost, even when the process that answered is killed before storing it."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import pytest

import atoll.service._pending as pending_module
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.service import NewRecord, RecordStore, create_service_app
from atoll.service._pending import journal_folder
from atoll.service._records import INSERT_ROWS

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harnesses" / "support_agent"
CHAT = {"model": "support_agent", "messages": [{"role": "user", "content": "Where is ORD-1042?"}]}
REPLY = "It left the warehouse yesterday."


def lock(path: Path) -> sqlite3.Connection:
    """A connection holding the runs store's write lock (as another process's long write holds it) until
    it is closed, from any thread."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("BEGIN IMMEDIATE")
    return connection


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    with closing(lock(path)):
        yield


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def url(store_path: Path, serve) -> Iterator[str]:
    store = RunStore(store_path)
    app = create_service_app([HARNESS], worlds=[], store=store, model=ScriptedModel(fn=lambda _: REPLY))
    with serve(app) as served:
        yield served
    store.close()


def test_an_answer_does_not_wait_for_the_store_and_its_record_is_stored_after(
    url: str, store_path: Path
) -> None:
    with write_locked(store_path):  # before: the call waited for the lock (30 s), the record on its path
        began = time.monotonic()
        answered = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=10)
        assert answered.status_code == 200 and time.monotonic() - began < 5
    record = httpx.get(f"{url}/v1/records/{answered.headers['x-atoll-record-id']}").json()
    assert record["response"]["choices"][0]["message"]["content"] == REPLY
    assert record["session"] == answered.headers["x-atoll-session"]


def test_feedback_sent_the_moment_the_answer_arrives_finds_its_record(url: str, store_path: Path) -> None:
    held = lock(store_path)
    answered = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=10)
    release = threading.Timer(0.5, held.close)  # the record is stored half a second after the feedback came
    release.start()
    feedback = httpx.post(
        f"{url}/feedback", json={"record_ids": [answered.headers["x-atoll-record-id"]], "passed": True}
    )
    release.join()
    assert feedback.status_code == 200, feedback.text


def test_a_continued_conversation_joins_its_session_before_the_first_call_is_stored(
    url: str, store_path: Path
) -> None:
    with write_locked(store_path):
        first = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=10)
        answer = first.json()["choices"][0]["message"]
        follow = {**CHAT, "messages": [*CHAT["messages"], answer, {"role": "user", "content": "Thanks!"}]}
        second = httpx.post(f"{url}/v1/chat/completions", json=follow, timeout=10)
    assert second.headers["x-atoll-session"] == first.headers["x-atoll-session"]


def test_journal_files_are_emptied_once_stored_and_a_full_one_deleted(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pending_module, "SEGMENT_BYTES", 2000)  # a few records a file
    with RunStore(store_path) as store:
        records = RecordStore(store)
        with write_locked(store_path):
            ids = {records.submit(_record(n)).id for n in range(10)}
            assert len(list(journal_folder(store_path).glob("*.jsonl"))) > 2
        assert records.flush()
        (left,) = journal_folder(store_path).glob("*.jsonl")
        assert left.read_text().count("\n") == 1, "only its owner's line"
        assert {record.id for record in records.list(limit=None)} == ids
        records.close()
    assert list(journal_folder(store_path).iterdir()) == []


def test_a_batch_of_more_records_than_one_insert_takes_is_stored_whole(store_path: Path) -> None:
    with RunStore(store_path) as store:
        records = RecordStore(store)
        with write_locked(store_path):  # they pile up: the writer takes them in one batch
            ids = {records.submit(_record(n)).id for n in range(2 * INSERT_ROWS + 1)}
        assert records.flush()
        assert {record.id for record in records.list(limit=None)} == ids
        records.close()


def _record(n: int) -> NewRecord:
    return NewRecord(
        harness="support_agent",
        agent="desk",
        release=None,
        release_hash="h",
        model="scripted",
        request={"messages": [{"role": "user", "content": f"Where is ORD-{n}?"}]},
        response=None,
        prompt_hash="p",
        error="the model was down",
    )


SERVER = """
import sys
import uvicorn
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.service import create_service_app
app = create_service_app(
    [sys.argv[2]], worlds=[], store=RunStore(sys.argv[1]), model=ScriptedModel(fn=lambda _: sys.argv[3])
)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[4]), log_level="warning")
"""


def test_a_record_answered_just_before_the_process_is_killed_is_stored_by_the_next_one(
    store_path: Path,
) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(store_path), str(HARNESS), REPLY, str(port)], cwd=ROOT
    )
    try:
        _wait_up(f"http://127.0.0.1:{port}")
        with write_locked(store_path):  # the record cannot be stored before the kill
            answered = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=CHAT, timeout=10)
            assert answered.status_code == 200
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
    finally:
        server.kill()
    assert list(journal_folder(store_path).glob("*.jsonl")), "the answered record is journaled"
    with RunStore(store_path) as store:
        stored = RecordStore(store).get(answered.headers["x-atoll-record-id"])
    assert stored.response["choices"][0]["message"]["content"] == REPLY
    assert stored.session == answered.headers["x-atoll-session"]
    assert list(journal_folder(store_path).iterdir()) == [], "its journal went once it was stored"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"the server at {url} did not come up")
