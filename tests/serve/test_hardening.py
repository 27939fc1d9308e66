"""The worlds server attacked as issue 35 did: input nested past any parser's depth, numbers and clocks out
of range, one REST key taking the memory, one face taking every session."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from atoll.worlds.serve import ResetRequest, create_app

AUTH = {"authorization": "Bearer sk_test_anything"}
FORM = {**AUTH, "content-type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def url(serve):
    app = create_app(["payments", "helpdesk"], defaults=ResetRequest(world="payments"), idle_seconds=60)
    with serve(app) as base:
        yield base


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- case 6: deep input -------------------------------------------------------------------------------------


def test_a_form_name_nested_past_the_bound_is_stripes_400(url: str) -> None:
    name = "metadata" + "[a]" * 600
    answer = httpx.post(f"{url}/rest/payments/deep/v1/customers", content=f"{name}=x", headers=FORM)
    assert answer.status_code == 400, answer.text
    assert "levels of brackets" in answer.json()["error"]["message"]


def test_a_json_body_nested_5000_deep_is_stripes_400(url: str) -> None:
    body = '{"metadata": ' + nested(5000) + "}"
    answer = httpx.post(
        f"{url}/rest/payments/deep/v1/customers",
        content=body,
        headers={**AUTH, "content-type": "application/json"},
    )
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["error"]["message"]


def test_mcp_and_websocket_frames_nested_5000_deep_are_parse_errors(url: str) -> None:
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": ' + nested(5000) + "}"
    answer = httpx.post(f"{url}/mcp", content=body)
    assert answer.status_code == 200 and answer.json()["error"]["code"] == -32700
    with connect(url.replace("http", "ws") + "/ws") as socket:
        socket.send('{"type": "step", "data": ' + nested(5000) + "}")
        assert json.loads(socket.recv(timeout=10))["data"]["code"] == "INVALID_JSON"
        socket.send('{"type": "state"}')
        assert json.loads(socket.recv(timeout=10))["type"] == "state", "the conversation goes on"


# -- case 7: numbers, clocks and text out of range ----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("amount=9223372036854775808&currency=usd", FORM["content-type"]),
        ('{"amount": 1e20, "currency": "usd"}', "application/json"),
        ('{"amount": 100000000, "currency": "usd"}', "application/json"),
        ('{"amount": 500, "currency": "usd", "description": "a\\ud800b"}', "application/json"),
    ],
    ids=["2**63", "1e20", "nine digits", "lone surrogate"],
)
def test_out_of_range_input_is_a_400_and_the_instance_goes_on(url: str, body: str, kind: str) -> None:
    base = f"{url}/rest/payments/range"
    assert httpx.put(base, json={}).status_code == 200
    answer = httpx.post(f"{base}/v1/payment_intents", content=body, headers={**AUTH, "content-type": kind})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert httpx.get(base).status_code == 200, "the instance's state still reads"
    fine = httpx.post(f"{base}/v1/payment_intents", content="amount=500&currency=usd", headers=FORM)
    assert fine.status_code == 200, fine.text


@pytest.mark.parametrize("clock", ["tick@9999-12-31 23:59:00", "fixed@0001-01-01 00:00:00", "tick@a\ud800"])
def test_a_clock_past_the_dates_a_world_can_reach_is_refused_where_it_enters(url: str, clock: str) -> None:
    opened = httpx.put(
        f"{url}/rest/payments/clock",
        content=json.dumps({"clock": clock}),
        headers={"content-type": "application/json"},
    )
    assert opened.status_code == 400, opened.text
    assert "clock" in opened.json()["error"]["message"]


def test_a_tick_clock_stops_at_the_last_second_rather_than_break_a_call() -> None:
    from datetime import datetime

    from atoll.worlds import Clock
    from atoll.worlds._clock import LATEST

    clock = Clock(mode="tick", start=LATEST, step_seconds=86_400)
    assert clock.at(datetime(2026, 1, 1), 10**6) == datetime.max.replace(microsecond=0)


# -- case 8: one REST key cannot take the server's memory ---------------------------------------------------


def test_a_rest_request_past_the_bound_is_a_413_envelope(url: str) -> None:
    answer = httpx.post(
        f"{url}/rest/payments/big/v1/customers", content="description=" + "x" * 900_000, headers=FORM
    )
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"] == "request_too_large"


def test_one_rest_key_holds_a_bounded_share_then_is_told_to_reset(url: str) -> None:
    from atoll.worlds.serve._sessions import MAX_INSTANCE_BYTES

    base = f"{url}/rest/payments/hog"
    statuses = []
    for n in range(80):  # 200 KB a post, each answered with the customer it made: 16 MB asked for
        answer = httpx.post(
            f"{base}/v1/customers",
            content=f"description={n}" + "x" * 200_000,
            headers={**FORM, "idempotency-key": f"k{n}"},
        )
        statuses.append(answer.status_code)
        if answer.status_code == 429:
            break
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses
    assert answer.json()["error"]["code"] == "instance_full"
    state = httpx.get(base)
    assert state.status_code == 200 and len(state.content) < 2 * MAX_INSTANCE_BYTES
    assert httpx.put(base, json={}).status_code == 200, "a reset starts afresh"
    fresh = httpx.post(f"{base}/v1/customers", content="description=again", headers=FORM)
    assert fresh.status_code == 200


def test_websocket_and_mcp_sessions_hold_the_same_bounded_share(serve) -> None:
    app = create_app(["helpdesk"], defaults=ResetRequest(world="helpdesk"))
    app.state.sessions.max_instance_bytes = 4_000
    step = {"type": "step", "data": {"type": "call_tool", "tool_name": "get_order", "arguments": {}}}
    with serve(app) as base, connect(base.replace("http", "ws") + "/ws") as socket:
        codes = []
        for _ in range(40):
            socket.send(json.dumps(step))
            reply = json.loads(socket.recv(timeout=10))
            codes.append(reply["data"].get("code") if reply["type"] == "error" else "ok")
        assert codes[0] == "ok" and codes[-1] == "INSTANCE_FULL", codes
        session = httpx.post(
            f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
        )
        session_id = session.json()["result"]["session_id"]
        call = {"name": "get_order", "arguments": {"order_id": "ORD-1001"}, "session_id": session_id}
        errors = [
            httpx.post(
                f"{base}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
            )
            .json()
            .get("error")
            for _ in range(40)
        ]
        assert errors[0] is None and errors[-1]["code"] == -32000 and "bytes" in errors[-1]["message"]


# -- case 9: no face takes every session --------------------------------------------------------------------


def test_rest_keys_cannot_lock_websocket_and_mcp_clients_out(serve) -> None:
    app = create_app(["payments"], defaults=ResetRequest(world="payments"), max_sessions=20)
    with serve(app) as base:
        statuses = [
            httpx.get(f"{base}/rest/payments/key{n}/v1/balance", headers=AUTH).status_code for n in range(22)
        ]
        assert statuses == [200] * 10 + [429] * 12
        with connect(base.replace("http", "ws") + "/ws") as socket:
            socket.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(socket.recv(timeout=10))["type"] == "observation"
        created = httpx.post(
            f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
        )
        assert "session_id" in created.json()["result"]


# -- case 12: the smaller ones ------------------------------------------------------------------------------


@pytest.mark.parametrize("session_id", [["a"], {"a": 1}, 7])
def test_an_mcp_session_id_that_is_no_string_is_invalid_params(url: str, session_id: object) -> None:
    params = {"session_id": session_id, "name": "retrieve_balance", "arguments": {}}
    for method in ("tools/call", "tools/list", "openenv/session/close"):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        assert httpx.post(f"{url}/mcp", json=body).json()["error"]["code"] == -32602, method


async def test_the_stdio_mcp_server_answers_garbage_with_a_parse_error() -> None:
    import io

    import anyio

    from atoll.worlds.serve._mcp import McpWorld, _serve_stdio

    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    written = io.StringIO()
    stdin = anyio.wrap_file(io.StringIO("not json at all\n" + json.dumps(hello) + "\n"))
    server = McpWorld("helpdesk", "small_shop").server
    await _serve_stdio(server, stdin=stdin, stdout=anyio.wrap_file(written))
    first, second = (json.loads(line) for line in written.getvalue().splitlines()[:2])
    assert first["id"] is None and first["error"]["code"] == -32700
    assert second["id"] == 1 and "result" in second, "the session goes on"


def test_all_rest_keys_together_hold_a_bounded_total(serve) -> None:
    app = create_app(["payments"], defaults=ResetRequest(world="payments"))
    app.state.sessions.max_total_bytes = 600_000
    with serve(app) as base:
        statuses = [
            httpx.post(
                f"{base}/rest/payments/key{n}/v1/customers",
                content="description=" + "x" * 100_000,
                headers=FORM,
            ).status_code
            for n in range(6)
        ]
        assert statuses[:2] == [200, 200] and statuses[-1] == 429, statuses
        assert httpx.delete(f"{base}/rest/payments/key0").status_code == 200
        again = httpx.post(f"{base}/rest/payments/key9/v1/customers", content="description=y", headers=FORM)
        assert again.status_code == 200, "a closed key gives its bytes back"


def test_the_mcp_servers_sessions_hold_the_same_bounded_share(serve, mcp_session) -> None:
    from atoll.worlds.serve import create_mcp_http_app

    app = create_mcp_http_app("helpdesk", "small_shop")
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_order", "arguments": {"order_id": "ORD-1001"}},
    }

    def reply(answer: httpx.Response) -> dict:
        lines = [line for line in answer.text.splitlines() if line.startswith("data: ")]
        return json.loads(lines[-1][len("data: ") :] if lines else answer.text)

    with serve(app) as base:
        session = mcp_session(httpx.post, f"{base}/mcp")
        (connections,) = app.app.served.live
        connections.manager.max_instance_bytes = 4_000
        answers = [reply(httpx.post(f"{base}/mcp", json=call, headers=session)) for _ in range(20)]
    assert "result" in answers[0] and answers[-1]["error"]["code"] == -32000, answers[-1]
    assert "bytes" in answers[-1]["error"]["message"]
