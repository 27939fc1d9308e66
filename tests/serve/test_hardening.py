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
