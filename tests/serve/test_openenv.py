"""The OpenEnv-compatible server, driven by OpenEnv's own clients and by raw WebSocket frames."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from atoll.worlds.serve import ResetRequest, create_app, run_server


@pytest.fixture(scope="module")
def url(shop, serve):
    with serve(create_app([shop], defaults=ResetRequest(world="shop", fixture="tiny"))) as base:
        yield base


SHOP_TOOLS = [
    "get_customer",
    "place_order",
    "add_customer",
    "set_status",
    "delete_order",
    "credit_then_fail",
    "credit_and_run",
    "interrupt_then_write",
    "switch_to_autocommit",
    "sneaky_reader",
    "sql_today",
]


def ws_url(base: str, query: str = "") -> str:
    return base.replace("http://", "ws://") + "/ws" + query


def exchange(socket, message) -> dict:
    socket.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(socket.recv(timeout=5))


def call(tool: str, /, **arguments) -> dict:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}}


def test_health_metadata_and_schema_answer_as_openenv_servers_do(url):
    assert httpx.get(f"{url}/health").json() == {"status": "healthy"}
    metadata = httpx.get(f"{url}/metadata").json()
    assert metadata["name"] == "atoll-worlds" and "shop" in metadata["description"]
    schema = httpx.get(f"{url}/schema").json()
    assert set(schema) == {"action", "observation", "reset_observation", "state"}
    assert set(schema["action"]["discriminator"]["mapping"]) == {"call_tool", "list_tools"}
    assert "diff" in schema["state"]["properties"]


def test_openenvs_generic_client_resets_steps_and_reads_the_state(url, openenv):
    from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction

    generic_client, _ = openenv
    with generic_client(base_url=url).sync() as env:
        reset = env.reset(world="shop", fixture="tiny", seed=2, clock="tick", episode_id="ep-7")
        tools = env.step(ListToolsAction())
        placed = env.step(
            CallToolAction(tool_name="place_order", arguments={"customer_id": "C2", "total": 9.5})
        )
        refused = env.step(CallToolAction(tool_name="get_customer", arguments={"customer_id": "C404"}))
        state = env.state()
    assert reset.observation["fixture"] == "tiny" and reset.observation["seed"] == 2
    assert reset.observation["documents"] == {"policy": "Be kind."}
    assert (reset.reward, reset.done) == (None, False)
    assert [tool["name"] for tool in tools.observation["tools"]] == SHOP_TOOLS
    assert placed.observation["error"] is None
    assert placed.observation["result"]["data"] == {"order_id": 6, "created_at": "2026-03-02 09:00:00"}
    assert refused.observation["error"] == {
        "error_type": "execution_error",
        "message": "not_found: No customer C404.",
    }
    assert refused.observation["result"]["data"] == {
        "error": {"type": "not_found", "message": "No customer C404.", "details": {}}
    }
    assert state["episode_id"] == "ep-7" and state["step_count"] == 2
    assert state["diff"]["tables"]["orders"]["inserted"][0]["customer_id"] == "C2"


async def test_openenvs_mcp_tool_client_lists_and_calls_tools_on_one_session(url, openenv):
    _, mcp_tool_client = openenv
    async with mcp_tool_client(base_url=url) as env:
        names = [tool.name for tool in await env.list_tools()]
        shipped = await env.call_tool("set_status", order_id=3, status="shipped")
        refused = await env.call_tool("get_customer", customer_id="C404")
        state = await env.state()
    assert names == SHOP_TOOLS
    assert shipped == {"ok": True}
    assert refused == {"error": {"type": "not_found", "message": "No customer C404.", "details": {}}}
    assert state.step_count == 2  # the HTTP calls and the WebSocket share one session


def test_each_websocket_gets_its_own_instance(url):
    with connect(ws_url(url)) as first, connect(ws_url(url)) as second:
        exchange(first, call("delete_order", order_id=1))
        exchange(second, call("set_status", order_id=1, status="paid"))
        first_state = exchange(first, {"type": "state"})["data"]
        second_state = exchange(second, {"type": "state"})["data"]
    assert first_state["diff_summary"] == {"orders": {"inserted": 0, "updated": 0, "deleted": 1}}
    assert second_state["diff_summary"] == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}


@pytest.mark.parametrize(
    ("frame", "code", "says"),
    [
        ("{not json", "INVALID_JSON", "Invalid JSON"),
        (b"\xff\xfe", "INVALID_JSON", "Invalid JSON"),
        ("[1, 2]", "VALIDATION_ERROR", "JSON object"),
        ('{"type": "dance"}', "UNKNOWN_TYPE", "'dance'"),
        ('{"type": "step"}', "VALIDATION_ERROR", "invalid message"),
        ('{"type": "step", "data": {"type": "call_tool"}}', "VALIDATION_ERROR", "invalid message"),
        ('{"type": "reset", "data": {"fixture": "huge"}}', "VALIDATION_ERROR", "no fixture 'huge'"),
        ('{"type": "reset", "data": {"fixtrue": "tiny"}}', "VALIDATION_ERROR", "invalid message"),
        ('{"type": "rows", "data": {"table": "secrets"}}', "VALIDATION_ERROR", "no table 'secrets'"),
        ("x" * ((1 << 20) + 1), "VALIDATION_ERROR", "at most 1048576"),
    ],
)
def test_a_malformed_frame_gets_an_error_reply_and_the_session_goes_on(url, frame, code, says):
    with connect(ws_url(url), max_size=None) as socket:
        exchange(socket, call("set_status", order_id=2, status="packed"))
        reply = exchange(socket, frame)
        state = exchange(socket, {"type": "state"})
    assert reply["type"] == "error" and reply["data"]["code"] == code
    assert says in reply["data"]["message"]
    assert state["data"]["diff_summary"] == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}
    assert httpx.get(f"{url}/health").status_code == 200


def test_a_tool_error_is_an_observation_not_a_protocol_error(url):
    with connect(ws_url(url)) as socket:
        reply = exchange(socket, call("no_such_tool"))
        invalid = exchange(socket, call("set_status", order_id="x", status="y"))
    assert reply["type"] == "observation"
    assert reply["data"]["observation"]["error"]["error_type"] == "tool_not_found"
    assert invalid["data"]["observation"]["error"]["error_type"] == "invalid_args"


def test_the_console_can_read_a_tables_rows(url):
    with connect(ws_url(url)) as socket:
        exchange(socket, call("add_customer", name="Zed"))
        rows = exchange(socket, {"type": "rows", "data": {"table": "customers", "limit": 10}})["data"]
    assert rows["columns"] == ["id", "name", "credit"] and rows["primary_key"] == ["id"]
    assert [row["name"] for row in rows["rows"]][-1] == "Zed"


def test_bad_json_rpc_gets_json_rpc_errors(url):
    parse = httpx.post(f"{url}/mcp", content=b"{oops").json()
    unknown = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "tools/dance"}).json()
    missing = httpx.post(
        f"{url}/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {}}
    ).json()
    gone = httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"session_id": "nope"}},
    ).json()
    assert parse["error"]["code"] == -32700
    assert unknown == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32601, "message": "Method not found: tools/dance"},
    }
    assert missing["error"]["code"] == -32602
    assert "no live session 'nope'" in gone["error"]["message"]


def test_an_oversized_request_body_is_refused(url):
    response = httpx.post(f"{url}/mcp", content=b"x" * (2 << 20))
    assert response.status_code == 413 and "at most" in response.json()["error"]["message"]


def test_sessions_past_the_limit_are_refused_with_capacity_reached(shop, serve):
    with serve(create_app([shop], max_sessions=2)) as base, connect(ws_url(base)), connect(ws_url(base)):
        with connect(ws_url(base)) as third:
            refusal = json.loads(third.recv(timeout=5))
        assert httpx.get(f"{base}/api/sessions").json() == {"live": 2, "max": 2}
    assert refusal["data"]["code"] == "CAPACITY_REACHED"
    assert (refusal["data"]["active_sessions"], refusal["data"]["max_sessions"]) == (2, 2)


def test_an_idle_session_expires_and_its_socket_is_told(shop, serve):
    app = create_app([shop], defaults=ResetRequest(world="shop", fixture="tiny"), idle_seconds=0.2)
    with serve(app) as base, connect(ws_url(base)) as socket:
        exchange(socket, call("delete_order", order_id=1))
        time.sleep(0.5)
        reply = exchange(socket, {"type": "state"})
        assert httpx.get(f"{base}/api/sessions").json()["live"] == 0
    assert reply["data"]["code"] == "SESSION_ERROR" and "idle" in reply["data"]["message"]


def test_a_token_server_wants_the_token_on_every_request(shop, serve):
    with serve(
        create_app([shop], defaults=ResetRequest(world="shop", fixture="tiny"), token="s3cret")
    ) as base:
        assert httpx.get(f"{base}/health").status_code == 401
        assert httpx.get(f"{base}/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{base}/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(f"{base}/?token=s3cret").status_code == 200
        assert (
            httpx.post(f"{base}/mcp?token=s3cret", json={}).status_code == 401
        )  # query tokens: GET and WS only
        with pytest.raises(InvalidStatus):
            connect(ws_url(base))
        with connect(ws_url(base, "?token=s3cret")) as socket:
            assert exchange(socket, call("get_customer", customer_id="C1"))["type"] == "observation"
        with connect(ws_url(base), additional_headers={"Authorization": "Bearer s3cret"}) as socket:
            assert exchange(socket, {"type": "state"})["type"] == "state"


def test_without_a_token_only_loopback_hosts_and_same_origin_pages_get_in(url):
    assert httpx.get(f"{url}/health", headers={"Host": "evil.example:80"}).status_code == 403
    assert httpx.get(f"{url}/health", headers={"Host": "localhost"}).status_code == 200
    for foreign in ("http://evil.example", "null"):
        with pytest.raises(InvalidStatus):
            connect(ws_url(url), origin=foreign)
    with connect(ws_url(url), origin=url) as socket:
        assert exchange(socket, {"type": "state"})["type"] == "state"


def test_binding_beyond_loopback_without_a_token_is_refused_before_serving():
    with pytest.raises(ValueError, match="pass --token SECRET"):
        run_server(host="0.0.0.0", port=1)
