"""The harness endpoint through the official `openai` client, unchanged but for `base_url`: chat, tool
calls the client runs, streaming, skills Atoll answers itself, feedback, and the served release
switching under load without a restart or a failed request."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from typer.testing import CliRunner

from atoll.cli import app as cli_app
from atoll.evals import RunRecord, RunStore
from atoll.harnesses import content_hash
from atoll.harnesses.models import ModelRequest, ModelUnavailable, ScriptedModel
from atoll.service import ReleaseChain, create_service_app

PROMPT = "prompts/front.md.j2"
FILES = {
    "harness.yaml": (
        "name: desk\nworld: helpdesk\nmodel: scripted\nentry: front\n"
        "agents:\n  front:\n    prompt: prompts/front.md.j2\n    delegates: [refunds]\n    skills: [policy]\n    skill_tool: true\n"
        "  refunds:\n    description: Refunds.\n    prompt: prompts/refunds.md.j2\n"
    ),
    "tools.yaml": "front: [get_order]\nrefunds: [get_order]\n",
    PROMPT: "You are the front desk. VERSION 0\n",
    "prompts/refunds.md.j2": "You do refunds.\n",
    "skills/policy.md": "Refunds within 30 days of delivery.\n",
}
HOLD = threading.Event()  # a request whose user says "hold" waits for it at the model
HELD = threading.Event()  # ... and sets this when it got there


def desk(request: ModelRequest) -> str | dict:
    """The scripted model: looks an order up, loads the policy skill, and says which prompt it was given."""
    system, last = request.messages[0]["content"], request.messages[-1]
    version = re.search(r"VERSION \d+", system)
    said = version.group() if version else "no version"
    if last["role"] == "tool":
        if "Refunds within" in last["content"]:
            return "Policy: refunds within 30 days."
        return f"Found it ({said}): {json.loads(last['content'])['id']}."
    text = last["content"]
    if "hold" in text:
        return held(f"Hello from {said}.")
    if "policy" in text:
        return {"tool_calls": [{"name": "load_skill", "arguments": {"name": "policy"}}]}
    order = re.search(r"ORD-\d+", text)
    if order:
        return {"tool_calls": [{"name": "get_order", "arguments": {"order_id": order.group()}}]}
    return f"Hello from {said}."


async def held(reply: str) -> str:
    HELD.set()
    await asyncio.to_thread(HOLD.wait, 10)
    return reply


@pytest.fixture
def harness(tmp_path: Path) -> Path:
    folder = tmp_path / "desk"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def service(harness: Path, store_path: Path, serve):
    """A live server for the desk harness; yields (base url, model)."""
    model = ScriptedModel(fn=desk)
    store = RunStore(store_path)
    app = create_service_app([harness], worlds=["helpdesk"], store=store, model=model)
    with serve(app) as url:
        yield url, model
    store.close()


def client(url: str, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, **options)


def publish(store_path: Path, prompt: str) -> int:
    """Release the desk with another prompt, from a connection of its own (as another process would)."""
    with RunStore(store_path) as store:
        chain = ReleaseChain(store)
        head = chain.head("desk")
        files = {**FILES, PROMPT: prompt}
        return chain.publish(
            "desk", files, commit=None, evidence={}, expected_head=head.number if head else None
        ).number


def test_a_tool_call_round_trip_with_the_official_client_is_recorded_as_one_session(service) -> None:
    url, model = service
    chat = client(url).chat.completions
    ask = [{"role": "user", "content": "Where is ORD-1001?"}]

    first = chat.with_raw_response.create(model="desk", messages=ask)
    answer = first.parse()
    (call,) = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_order" and json.loads(call.function.arguments) == {
        "order_id": "ORD-1001"
    }
    assert first.headers["x-atoll-release"] == "unreleased"
    assert [tool["function"]["name"] for tool in model.requests[0].tools] == [
        "get_order",
        "delegate_to_refunds",
        "load_skill",
    ]

    result = {"id": "ORD-1001", "status": "shipped"}
    follow_up = [
        *ask,
        answer.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)},
    ]
    second = chat.with_raw_response.create(model="desk", messages=follow_up)
    assert second.parse().choices[0].message.content == "Found it (VERSION 0): ORD-1001."

    records = httpx.get(f"{url}/v1/records", params={"harness": "desk"}).json()["data"]
    ids = {first.headers["x-atoll-record-id"], second.headers["x-atoll-record-id"]}
    assert {record["id"] for record in records} == ids
    assert len({record["session"] for record in records}) == 1, "a follow-up continues its conversation"


def test_streaming_gives_the_same_answer_in_chunks(service) -> None:
    url, _ = service
    chat = client(url).chat.completions
    stream = chat.create(
        model="desk",
        messages=[{"role": "user", "content": "Hi there"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from VERSION 0."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.total_tokens > 0

    calls = chat.create(model="desk", messages=[{"role": "user", "content": "ORD-1002?"}], stream=True)
    deltas = [call for c in calls if c.choices for call in (c.choices[0].delta.tool_calls or [])]
    assert [d.function.name for d in deltas] == ["get_order"]


def test_a_skill_is_loaded_by_atoll_and_only_the_reply_reaches_the_client(service) -> None:
    url, model = service
    answer = client(url).chat.completions.create(
        model="desk", messages=[{"role": "user", "content": "What is your policy?"}]
    )
    assert answer.choices[0].message.content == "Policy: refunds within 30 days."
    assert len(model.requests) == 2 and model.requests[1].messages[-1]["role"] == "tool"


def test_sub_agents_are_served_by_name_and_unknown_models_are_refused(service) -> None:
    url, model = service
    openai_client = client(url)
    assert [m.id for m in openai_client.models.list()] == ["desk", "desk/front", "desk/refunds"]
    openai_client.chat.completions.create(model="desk/refunds", messages=[{"role": "user", "content": "Hi"}])
    assert model.requests[-1].messages[0]["content"].startswith("You do refunds.")
    with pytest.raises(openai.NotFoundError, match="desk/refunds"):
        openai_client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "Hi"}])


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"model": "desk"}, "messages: Field required"),
        ({"model": "desk", "messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        (
            {"model": "desk", "messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]},
            "tool_call_id",
        ),
        ({"model": "desk", "messages": [{"role": "user", "content": "x"}], "n": 2}, "n: "),
    ],
)
def test_a_malformed_request_gets_an_error_reply_naming_the_field(service, body: dict, says: str) -> None:
    url, _ = service
    reply = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert reply.status_code == 400
    assert says in reply.json()["error"]["message"]


def test_a_token_protects_the_endpoint_and_is_the_clients_api_key(
    harness: Path, store_path: Path, serve
) -> None:
    app = create_service_app(
        [harness],
        worlds=["helpdesk"],
        store=RunStore(store_path),
        model=ScriptedModel(fn=desk),
        token="s3cret",
    )
    with serve(app) as url:
        with pytest.raises(openai.AuthenticationError):
            client(url).models.list()
        allowed = openai.OpenAI(base_url=f"{url}/v1", api_key="s3cret", max_retries=0)
        assert "desk" in [m.id for m in allowed.models.list()]


def test_feedback_attaches_to_the_record_named_in_the_header(service) -> None:
    url, _ = service
    raw = client(url).chat.completions.with_raw_response.create(
        model="desk", messages=[{"role": "user", "content": "Hi"}]
    )
    record_id = raw.headers["x-atoll-record-id"]
    sent = httpx.post(f"{url}/feedback", json={"record_ids": [record_id], "passed": False, "comment": "rude"})
    assert sent.status_code == 200, sent.text
    record = httpx.get(f"{url}/v1/records/{record_id}").json()
    (feedback,) = record["feedback"]
    assert feedback["passed"] is False and feedback["comment"] == "rude"


def test_a_new_release_is_served_without_a_restart_and_a_request_in_flight_keeps_its_own(
    service, store_path: Path
) -> None:
    url, _ = service
    chat = client(url, timeout=20).chat.completions
    HOLD.clear()
    HELD.clear()
    held: dict = {}
    waiting = threading.Thread(
        target=lambda: held.update(
            raw=chat.with_raw_response.create(model="desk", messages=[{"role": "user", "content": "hold on"}])
        )
    )
    waiting.start()
    assert HELD.wait(timeout=10), "the held request reached the model"
    assert publish(store_path, "You are the front desk. VERSION 1\n") == 1
    after = chat.with_raw_response.create(model="desk", messages=[{"role": "user", "content": "Hi"}])
    HOLD.set()
    waiting.join(timeout=20)

    assert (
        after.headers["x-atoll-release"] == "1"
        and after.parse().choices[0].message.content == "Hello from VERSION 1."
    )
    assert held["raw"].headers["x-atoll-release"] == "unreleased"
    assert held["raw"].parse().choices[0].message.content == "Hello from VERSION 0."
    files = httpx.get(f"{url}/v1/harnesses/desk/release").json()
    assert files["release"]["number"] == 1 and "VERSION 1" in files["files"][PROMPT]


def test_switching_the_head_under_concurrent_load_fails_no_request(service, store_path: Path) -> None:
    url, _ = service

    async def load() -> list:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0) as async_client:

            async def one(i: int):
                return await async_client.chat.completions.with_raw_response.create(
                    model="desk", messages=[{"role": "user", "content": f"Hi {i}"}]
                )

            first = [asyncio.create_task(one(i)) for i in range(25)]
            await asyncio.to_thread(publish, store_path, "You are the front desk. VERSION 1\n")
            second = [asyncio.create_task(one(i)) for i in range(25, 50)]
            await asyncio.to_thread(publish, store_path, "You are the front desk. VERSION 2\n")
            return await asyncio.gather(*first, *second)

    answers = asyncio.run(load())
    assert len(answers) == 50
    served = {"unreleased": "VERSION 0", "1": "VERSION 1", "2": "VERSION 2"}
    for raw in answers:  # each answer came from the prompt of the release its header names
        assert served[raw.headers["x-atoll-release"]] in raw.parse().choices[0].message.content
    assert (
        client(url)
        .chat.completions.with_raw_response.create(model="desk", messages=[{"role": "user", "content": "Hi"}])
        .headers["x-atoll-release"]
        == "2"
    )


def test_the_projects_records_policy_redacts_what_the_server_writes(
    tmp_path: Path, harness: Path, serve
) -> None:
    (tmp_path / "atoll.toml").write_text('[records]\nredact = ["email"]\n')
    app = create_service_app(
        [harness], worlds=[], store=RunStore(tmp_path / "runs.sqlite"), model=ScriptedModel(fn=desk)
    )
    with serve(app) as url:
        raw = client(url).chat.completions.with_raw_response.create(
            model="desk", messages=[{"role": "user", "content": "I am ada@example.com"}]
        )
        record = httpx.get(f"{url}/v1/records/{raw.headers['x-atoll-record-id']}").json()
    assert record["request"]["messages"][0]["content"] == "I am [email]"


def test_the_agents_served_are_the_releases_own(service, store_path: Path) -> None:
    url, model = service
    with RunStore(store_path) as store:
        files = {
            **FILES,
            "harness.yaml": FILES["harness.yaml"].replace("  refunds:\n", "  billing:\n"),
            "prompts/billing.md.j2": "You do billing.\n",
        }
        files["harness.yaml"] = files["harness.yaml"].replace("delegates: [refunds]", "delegates: [billing]")
        files["harness.yaml"] = files["harness.yaml"].replace(
            "prompts/refunds.md.j2", "prompts/billing.md.j2"
        )
        files["tools.yaml"] = "front: [get_order]\nbilling: [get_order]\n"
        ReleaseChain(store).publish("desk", files, commit=None, evidence={}, expected_head=None)
    openai_client = client(url)
    assert [m.id for m in openai_client.models.list()] == ["desk", "desk/front", "desk/billing"]
    openai_client.chat.completions.create(model="desk/billing", messages=[{"role": "user", "content": "Hi"}])
    assert model.requests[-1].messages[0]["content"].startswith("You do billing.")
    with pytest.raises(openai.NotFoundError):
        openai_client.chat.completions.create(
            model="desk/refunds", messages=[{"role": "user", "content": "Hi"}]
        )


def test_a_failed_call_is_recorded_and_its_error_names_the_record(
    harness: Path, store_path: Path, serve
) -> None:
    (harness / PROMPT).write_text("You serve {{ task.customer.name }}.\n")

    app = create_service_app([harness], worlds=[], store=RunStore(store_path), model=ScriptedModel(fn=desk))
    with serve(app) as url:
        unrendered = httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "desk", "messages": [{"role": "user", "content": "Hi"}]},
        )
        assert unrendered.status_code == 400 and unrendered.json()["error"]["code"] == "prompt_render_failed"
        record = httpx.get(f"{url}/v1/records/{unrendered.headers['x-atoll-record-id']}").json()
        assert "customer" in record["error"]
        rendered = httpx.post(
            f"{url}/v1/chat/completions",
            json={
                "model": "desk",
                "messages": [{"role": "user", "content": "Hi"}],
                "metadata": {"atoll_context": '{"customer": {"name": "Ada"}}'},
            },
        )
        assert rendered.status_code == 200, rendered.text


def test_a_model_outage_is_a_502_server_error_naming_its_record(
    harness: Path, store_path: Path, serve
) -> None:
    down = ScriptedModel(fn=lambda _: ModelUnavailable("provider down"))
    app = create_service_app([harness], worlds=[], store=RunStore(store_path), model=down)
    with serve(app) as url, pytest.raises(openai.InternalServerError) as raised:
        client(url).chat.completions.create(model="desk", messages=[{"role": "user", "content": "Hi"}])
    assert raised.value.status_code == 502
    assert raised.value.body["type"] == "server_error" and "provider down" in raised.value.body["message"]
    assert raised.value.response.headers["x-atoll-record-id"].startswith("rec_")


WRITER = """
import sys, time
from atoll.evals import RunStore
from atoll.service import NewRecord, RecordStore
records = RecordStore(RunStore(sys.argv[1]))
print("ready", flush=True)
until = time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:
    records.add(NewRecord(harness="other", agent="a", release=None, release_hash="h", model="m",
                          request={"messages": [{"role": "user", "content": "hi"}]}, response=None,
                          prompt_hash="p", error="written by another process"))
"""


def test_chats_and_feedback_never_fail_while_the_console_is_polled_and_another_process_writes(
    service, store_path: Path
) -> None:
    url, _ = service
    publish(store_path, "You are the front desk. VERSION 1\n")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store_path), "6"], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout.readline().strip() == "ready"
    polling = threading.Event()
    console_failures: list[int] = []

    def poll() -> None:
        with httpx.Client(base_url=url) as console:
            while not polling.is_set():
                for path in ("/api/releases/desk", "/api/releases", "/api/optimizations/latest"):
                    status = console.get(path).status_code
                    if status not in (200, 404):
                        console_failures.append(status)

    pollers = [threading.Thread(target=poll) for _ in range(2)]
    for poller in pollers:
        poller.start()
    failed = []
    try:
        with httpx.Client(base_url=url, timeout=30) as app:
            started = time.monotonic()
            while time.monotonic() - started < 3:
                chat = app.post(
                    "/v1/chat/completions",
                    json={"model": "desk", "messages": [{"role": "user", "content": "Hi"}]},
                )
                if chat.status_code != 200:
                    failed.append(chat.text)
                    continue
                feedback = app.post(
                    "/feedback", json={"record_ids": [chat.headers["x-atoll-record-id"]], "passed": True}
                )
                if feedback.status_code != 200:
                    failed.append(feedback.text)
    finally:
        polling.set()
        for poller in pollers:
            poller.join()
        writer.wait(timeout=30)
    assert not failed, f"{len(failed)} writes failed, the first: {failed[0]}"
    assert not console_failures


def ask(url: str, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "desk", "messages": [{"role": "user", "content": "Hi"}], **body},
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "desk", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        json.dumps(
            {
                "model": "desk",
                "messages": [{"role": "user", "content": "Hi"}],
                "metadata": {"atoll_context": "[" * 2000 + "]" * 2000},
            }
        ).encode(),
        json.dumps(
            {
                "model": "desk",
                "messages": [
                    {"role": "user", "content": "Hi"},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "get_order", "arguments": "[" * 5000 + "]" * 5000},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "{}"},
                ],
            }
        ).encode(),
    ],
    ids=["body 5000 deep", "atoll_context 2000 deep", "tool arguments 5000 deep"],
)
def test_input_nested_past_any_parsers_depth_is_answered_never_a_500(service, body: bytes) -> None:
    url, _ = service
    reply = httpx.post(
        f"{url}/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("session", ["セッション", "a\r\nx-evil: 1", "a\x00b", "x" * 201, ["a"], True])
def test_a_session_id_no_header_can_carry_is_a_400_before_the_model_is_paid(service, session: Any) -> None:
    url, model = service
    reply = ask(url, metadata={"atoll_session": session})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"].startswith("metadata.atoll_session: a session id is 1 to 200")
    assert model.requests == [] and httpx.get(f"{url}/v1/records").json()["data"] == []


def test_a_session_header_outside_ascii_is_a_400_and_a_good_one_comes_back(service) -> None:
    url, _ = service
    refused = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "desk", "messages": [{"role": "user", "content": "Hi"}]},
        headers={"x-atoll-session": "caf\xe9".encode("latin-1")},
    )
    assert refused.status_code == 400 and "x-atoll-session" in refused.json()["error"]["message"]
    answered = ask(url, metadata={"atoll_session": "user-42 session"})
    assert answered.status_code == 200 and answered.headers["x-atoll-session"] == "user-42 session"


@pytest.mark.parametrize("seed", [10**30, -1, "12x", 1.5, True])
def test_a_seed_no_task_file_can_hold_is_a_400_naming_it(service, seed: Any) -> None:
    url, model = service
    reply = ask(url, metadata={"atoll_seed": seed})
    assert reply.status_code == 400 and "metadata.atoll_seed" in reply.json()["error"]["message"]
    assert model.requests == []
    assert ask(url, metadata={"atoll_seed": "12"}).status_code == 200


CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}],
}


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([CALLED, {"role": "tool", "tool_call_id": ["c1"], "content": "{}"}], "messages[2].tool_call_id"),
        (
            [CALLED, {"role": "tool", "tool_call_id": {"id": "c1"}, "content": "{}"}],
            "messages[2].tool_call_id",
        ),
        ([{"role": "assistant", "content": "x", "tool_calls": 5}], "messages[1].tool_calls"),
        ([{"role": "assistant", "content": "x", "tool_calls": True}], "messages[1].tool_calls"),
    ],
)
def test_a_malformed_tool_message_is_a_400_naming_the_field(service, messages: list, field: str) -> None:
    url, _ = service
    reply = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "desk", "messages": [{"role": "user", "content": "Hi"}, *messages]},
    )
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"].startswith(field)
    assert ask(url).status_code == 200, "the server still answers"


def test_a_model_that_cannot_be_built_is_a_502_and_recorded(harness: Path, store_path: Path, serve) -> None:
    app = create_service_app([harness], worlds=[], store=RunStore(store_path))  # model: scripted, by name
    with serve(app) as url:
        reply = ask(url)
        record = httpx.get(f"{url}/v1/records/{reply.headers['x-atoll-record-id']}").json()
    assert reply.status_code == 502 and reply.json()["error"]["code"] == "model_error"
    assert "the served model 'scripted' cannot be built" in record["error"]


def test_a_full_endpoint_says_when_to_retry(harness: Path, store_path: Path, serve) -> None:
    app = create_service_app(
        [harness], worlds=[], store=RunStore(store_path), model=ScriptedModel(fn=desk), max_in_flight=0
    )
    with serve(app) as url:
        reply = ask(url)
    assert reply.status_code == 429 and reply.headers["retry-after"] == "1"


def test_numbers_past_sqlites_are_answered_not_500s(service, store_path: Path) -> None:
    url, _ = service
    publish(store_path, "You are the front desk. VERSION 1\n")
    with RunStore(store_path) as store:
        store.start_run(
            RunRecord(
                id="eval-1", harness="desk", harness_hash="h", model="m", started_at="2026-03-02 09:00:00"
            )
        )
    episode = httpx.get(f"{url}/api/runs/eval-1/episodes/t1/{10**20}")
    assert episode.status_code == 404 and episode.json()["error"]["code"] == "unknown_episode"
    for body in ({"to": 1e20, "expected_head": 1}, {"to": 1, "expected_head": 10**20}):
        rollback = httpx.post(f"{url}/api/releases/desk/rollback", json=body)
        assert rollback.status_code == 400, rollback.text


# -- releases that cannot be served -------------------------------------------------------------------------


DEEP = "[" * 100_000 + "]" * 100_000
BREAKAGES = {
    "tampered files": (
        "UPDATE harness_snapshots SET files = replace(files, 'VERSION 2', 'TAMPERED') WHERE hash = ?",
        [],
    ),
    "missing snapshot": ("DELETE FROM harness_snapshots WHERE hash = ?", []),
    "snapshot not JSON": ("UPDATE harness_snapshots SET files = '{not json' WHERE hash = ?", []),
    "snapshot a list": ("UPDATE harness_snapshots SET files = '[1, 2]' WHERE hash = ?", []),
    "snapshot nested deep": ("UPDATE harness_snapshots SET files = ? WHERE hash = ?", [DEEP]),
    "broken evidence": ("UPDATE releases SET evidence = '{not json' WHERE content_hash = ?", []),
    "null evidence": ("UPDATE releases SET evidence = NULL WHERE content_hash = ?", []),
    "evidence nested deep": ("UPDATE releases SET evidence = ? WHERE content_hash = ?", [DEEP]),
}


def _break_release_2(store_path: Path, breakage: str) -> None:
    sql, values = BREAKAGES[breakage]
    with sqlite3.connect(store_path) as db:
        (digest,) = db.execute("SELECT content_hash FROM releases WHERE number = 2").fetchone()
        db.execute(sql, [*values, digest])


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_broken_head_is_refused_and_the_last_good_release_served(
    service, store_path: Path, breakage: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = service
    publish(store_path, "You are the front desk. VERSION 1\n")
    publish(store_path, "You are the front desk. VERSION 2\n")
    _break_release_2(store_path, breakage)
    replies = [ask(url) for _ in range(2)]
    assert [reply.status_code for reply in replies] == [200, 200]
    assert [reply.headers["x-atoll-release"] for reply in replies] == ["1", "1"]
    assert "VERSION 1" in replies[0].json()["choices"][0]["message"]["content"]
    assert httpx.get(f"{url}/v1/models").status_code == 200
    assert caplog.text.count("desk: release 2 is not served") == 1, "said once, loudly"
    listing = httpx.get(f"{url}/api/releases")
    assert listing.status_code == 200, listing.text
    (chain,) = listing.json()["data"]
    assert chain["head"] is None or chain["head"]["number"] == 2


def test_a_head_whose_files_match_their_hash_but_nest_past_any_parser_is_refused(
    service, store_path: Path
) -> None:
    url, _ = service
    publish(store_path, "You are the front desk. VERSION 1\n")
    publish(store_path, "You are the front desk. VERSION 2\n")
    files = {**FILES, "harness.yaml": "[" * 100_000}
    with sqlite3.connect(store_path) as db:
        db.execute(
            "INSERT INTO harness_snapshots (hash, name, files, created_at) VALUES (?, 'desk', ?, '')",
            [content_hash(files), json.dumps(files)],
        )
        db.execute("UPDATE releases SET content_hash = ? WHERE number = 2", [content_hash(files)])
    reply = ask(url)
    assert reply.status_code == 200 and reply.headers["x-atoll-release"] == "1", reply.text


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_release_list_and_show_name_a_broken_head_in_one_line(
    store_path: Path, breakage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(store_path, "You are the front desk. VERSION 1\n")
    publish(store_path, "You are the front desk. VERSION 2\n")
    _break_release_2(store_path, breakage)
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store_path))
    listed = CliRunner().invoke(cli_app, ["release", "list", "desk"])
    assert listed.exit_code == 2, listed.output
    assert "release 2 of desk" in listed.stderr and "release 1 is served in its place" in listed.stderr
    shown = CliRunner().invoke(cli_app, ["release", "show", "desk"])
    assert shown.exit_code == 2 and "release 2 of desk" in shown.stderr, shown.output
    for result in (listed, shown):
        assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_release_list_names_a_broken_row_in_one_line(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(store_path, "You are the front desk. VERSION 1\n")
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE releases SET evidence = '{not json' WHERE number = 1")
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store_path))
    for args in (["release", "list", "desk"], ["release", "rollback", "desk", "1"]):
        result = CliRunner().invoke(cli_app, args)
        assert result.exit_code == 2, result.output
        assert "release 1 of desk is broken in the runs store" in result.stderr
        assert "Traceback" not in result.output


# -- the command line ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "--port", "99999"], "--port"),
        (["serve", "--port", "-1"], "--port"),
        (["serve", "--harness", "no/such/harness"], "not a harness folder"),
        (["records", "list", "--since", "99999999999d"], "reaches back before the year 1"),
        (["records", "list", "--limit", "99999999999999999999999"], "--limit"),
        (
            ["release", "rollback", "desk", "99999999999999999999999"],
            "has no release 99999999999999999999999",
        ),
        (["release", "show", "desk", "99999999999999999999999"], "has no release 99999999999999999999999"),
    ],
)
def test_out_of_range_arguments_are_one_line_and_a_usage_error(
    args: list[str], says: str, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store_path))
    result = CliRunner().invoke(cli_app, args)
    assert result.exit_code == 2, result.output
    assert says in result.stderr and "Traceback" not in result.output
    assert "serving" not in result.stderr


def test_serve_says_what_it_redacts_before_serving(harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import atoll.service._app as app_module

    monkeypatch.setattr(app_module, "run_service", lambda *args, **kwargs: None)
    monkeypatch.setattr("atoll.service.run_service", lambda *args, **kwargs: None)
    result = CliRunner().invoke(cli_app, ["serve", "--harness", str(harness)])
    assert result.exit_code == 0, result.output
    assert "records: redacting email, phone, card" in result.stderr
