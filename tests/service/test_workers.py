"""`optimize serve --workers N` (`run_service(workers=N)`): several processes answer on one port and record
every call, with its feedback, in the one runs store."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import RunStore
from atoll.service import RecordStore
from atoll.service._pending import journal_folder

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harnesses" / "support_agent"
REPLY = "import os\n\n\ndef reply(_):\n    return f'answered by {os.getpid()}'\n"
SERVER = """
import sys
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.service import run_service
from pid_reply import reply
run_service(
    "127.0.0.1", int(sys.argv[3]), harnesses=[sys.argv[2]], worlds=[], store=RunStore(sys.argv[1]),
    model=ScriptedModel(fn=reply, latency_s=0.02), workers=2,
)
"""
CALLS = 40


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_up(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and server.poll() is None:
        try:
            httpx.get(f"{url}/health", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"the server at {url} did not come up:\n{log.read_text()[-3000:]}")


def _call(url: str, n: int) -> tuple[int, str, str, int]:
    """One client on a connection of its own: a chat, then feedback on its record at once."""
    with httpx.Client(base_url=url, timeout=30) as client:
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "support_agent", "messages": [{"role": "user", "content": f"Order ORD-{n}?"}]},
        )
        record_id = chat.headers["x-atoll-record-id"]
        feedback = client.post("/feedback", json={"record_ids": [record_id], "passed": n % 2 == 0})
        return (
            chat.status_code,
            chat.json()["choices"][0]["message"]["content"],
            record_id,
            feedback.status_code,
        )


def _until_both_answer(url: str) -> list[tuple[int, str, str, int]]:
    """Calls, one at a time, until each worker has answered one (the second may start a little later)."""
    calls: list[tuple[int, str, str, int]] = []
    deadline = time.monotonic() + 120
    while len({reply for _, reply, _, _ in calls}) < 2:
        assert time.monotonic() < deadline, "the second worker never answered"
        calls.append(_call(url, len(calls)))
    return calls


def _median_s(url: str) -> float:
    """The median time of 21 `GET /health` on one kept-alive connection."""
    with httpx.Client(base_url=url) as client:
        times = []
        for _ in range(21):
            began = time.perf_counter()
            client.get("/health").raise_for_status()
            times.append(time.perf_counter() - began)
    return sorted(times)[10]


def test_two_workers_answer_and_record_every_call_and_its_feedback_in_one_store(tmp_path: Path) -> None:
    (tmp_path / "pid_reply.py").write_text(REPLY)  # the model's function, importable in the workers
    store_path, port = tmp_path / "runs.sqlite", _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    with log.open("w") as errors:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(store_path), str(HARNESS), str(port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
            stderr=errors,
        )
    try:
        _wait_up(url, server, log)
        calls = _until_both_answer(url)
        assert _median_s(url) < 0.025, "a small response is sent at once, not after a delayed ACK (40 ms)"
        with ThreadPoolExecutor(CALLS) as pool:
            calls += pool.map(lambda n: _call(url, n), range(CALLS))
    finally:
        server.send_signal(signal.SIGTERM)  # a stopping service stores what it journaled
        server.wait(timeout=60)
    assert {(chat, feedback) for chat, _, _, feedback in calls} == {(200, 200)}
    answered_by = {reply for _, reply, _, _ in calls}
    assert len(answered_by) == 2
    with RunStore(store_path) as store:
        stored = {record.id: record for record in RecordStore(store).list(limit=None, full=True)}
    assert set(stored) == {record_id for _, _, record_id, _ in calls}
    assert {r.response["choices"][0]["message"]["content"] for r in stored.values()} == answered_by
    assert all(len(record.feedback) == 1 for record in stored.values())
    assert list(journal_folder(store_path).iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--workers", "2"], "name a --harness with it"),
        (["--workers", "2", "--harness", str(HARNESS), "--world", "helpdesk"], "serves no worlds"),
    ],
)
def test_workers_need_a_harness_and_serve_no_worlds(arguments: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["serve", *arguments])
    assert result.exit_code == 2 and said in result.output
