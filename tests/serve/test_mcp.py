"""The MCP server, driven by the official MCP SDK's client: in process, over stdio and over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from atoll.worlds import UnknownFixture
from atoll.worlds.serve import create_mcp_http_app, create_mcp_server

WORLDS_DIR = Path(__file__).parents[1] / "worlds"


async def state_of(client: Client) -> dict:
    return json.loads((await client.read_resource("atoll://state")).contents[0].text)


async def test_an_mcp_client_lists_the_worlds_tools_with_their_schemas(shop):
    async with Client(create_mcp_server(shop, "tiny"), mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == set(shop.tools)
    assert tools["get_customer"].input_schema["required"] == ["customer_id"]
    assert (
        tools["get_customer"].input_schema["properties"]["customer_id"]["description"]
        == 'The customer\'s id, like "C1".'
    )
    assert tools["get_customer"].annotations.read_only_hint is True
    assert tools["set_status"].annotations.read_only_hint is False


async def test_a_call_returns_the_tools_value_as_text_and_structured_content(shop):
    async with Client(create_mcp_server(shop, "tiny", seed=3), mode="legacy") as client:
        result = await client.call_tool("add_customer", {"name": "Ada"})
        state = await state_of(client)
    assert not result.is_error
    customer_id = result.structured_content["customer_id"]
    assert json.loads(result.content[0].text) == {"customer_id": customer_id}
    assert state["seed"] == 3
    assert state["diff"]["tables"]["customers"]["inserted"] == [
        {"id": customer_id, "name": "Ada", "credit": 0.0}
    ]


async def test_a_refused_call_is_a_tool_error_carrying_the_structured_error(shop):
    async with Client(create_mcp_server(shop, "tiny"), mode="legacy") as client:
        refused = await client.call_tool("get_customer", {"customer_id": "C404"})
        invalid = await client.call_tool("set_status", {"order_id": "not a number", "status": "x"})
        unknown = await client.call_tool("launch_rockets", {})
        buggy = await client.call_tool("credit_then_fail", {"customer_id": "C1", "amount": 5})
        state = await state_of(client)
    assert refused.is_error
    assert refused.structured_content == {
        "error": {"type": "not_found", "message": "No customer C404.", "details": {}}
    }
    assert invalid.is_error and invalid.structured_content["error"]["type"] == "invalid_arguments"
    assert "order_id" in invalid.structured_content["error"]["message"]
    assert unknown.is_error and unknown.structured_content["error"]["type"] == "unknown_tool"
    assert buggy.is_error and buggy.structured_content["error"]["type"] == "world_bug"
    assert state["diff"] == {"tables": {}}  # every failed call was rolled back


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_mcp_sessions_do_not_see_each_others_writes(shop, mode):
    server = create_mcp_server(shop, "tiny")
    async with Client(server, mode=mode) as first, Client(server, mode=mode) as second:
        await first.call_tool("set_status", {"order_id": 1, "status": "shipped"})
        await second.call_tool("delete_order", {"order_id": 2})
        seen_by_second = await second.call_tool("get_customer", {"customer_id": "C2"})
        first_state, second_state = await state_of(first), await state_of(second)
    assert not seen_by_second.is_error
    assert first_state["diff_summary"] == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}
    assert second_state["diff_summary"] == {"orders": {"inserted": 0, "updated": 0, "deleted": 1}}
    assert first_state["session_id"] != second_state["session_id"]


async def test_a_stdio_or_in_process_connection_keeps_its_instance_however_long_it_idles(shop):
    async with Client(create_mcp_server(shop, "tiny", idle_seconds=0.05), mode="legacy") as client:
        await client.call_tool("delete_order", {"order_id": 1})
        await asyncio.sleep(0.15)
        await client.call_tool("delete_order", {"order_id": 2})
        state = await state_of(client)
    assert state["step_count"] == 2
    assert len(state["diff"]["tables"]["orders"]["deleted"]) == 2


async def test_the_worlds_documents_are_resources(shop):
    async with Client(create_mcp_server(shop, "tiny"), mode="legacy") as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        policy = await client.read_resource("atoll://documents/policy")
    assert uris == {"atoll://state", "atoll://documents/policy"}
    assert policy.contents[0].text == "Be kind."


def test_an_unknown_fixture_or_clock_fails_when_the_server_is_made(shop):
    with pytest.raises(UnknownFixture, match="no fixture 'huge'; it has: tiny"):
        create_mcp_server(shop, "huge")
    with pytest.raises(ValueError, match="fixed, tick or wall"):
        create_mcp_server(shop, "tiny", clock="sundial")


async def test_the_stdio_server_serves_a_real_client_in_a_subprocess(shop):
    script = (
        f"import sys; sys.path.insert(0, {str(WORLDS_DIR)!r}); from shop_world import shop; "
        "from atoll.worlds.serve import run_mcp; run_mcp(shop, 'tiny', 5)"
    )
    params = StdioServerParameters(command=sys.executable, args=["-c", script], env=dict(os.environ))
    async with Client(params) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("place_order", {"customer_id": "C1", "total": 12.5})
        state = await state_of(client)
    assert "place_order" in names
    assert not result.is_error and result.structured_content["order_id"] == 6
    assert state["seed"] == 5 and state["step_count"] == 1


async def test_streamable_http_keeps_one_instance_per_session_behind_the_token(shop, serve):
    app = create_mcp_http_app(shop, "tiny", token="s3cret")
    with serve(app) as url:
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        bearer = {"Authorization": "Bearer s3cret"}
        async with (
            httpx2.AsyncClient(headers=bearer) as h1,
            httpx2.AsyncClient(headers=bearer) as h2,
            Client(streamable_http_client(f"{url}/mcp", http_client=h1)) as first,
            Client(streamable_http_client(f"{url}/mcp", http_client=h2)) as second,
        ):
            await first.call_tool("set_status", {"order_id": 1, "status": "shipped"})
            await second.call_tool("set_status", {"order_id": 1, "status": "lost"})
            first_state, second_state = await state_of(first), await state_of(second)
    assert refused.status_code == 401
    assert first_state["diff"]["tables"]["orders"]["updated"][0]["after"] == {"status": "shipped"}
    assert second_state["diff"]["tables"]["orders"]["updated"][0]["after"] == {"status": "lost"}


def test_mcp_over_http_beyond_loopback_needs_a_token(shop):
    with pytest.raises(ValueError, match="pass --token"):
        create_mcp_http_app(shop, "tiny", host="0.0.0.0")


async def test_an_idle_http_session_loses_its_instance_on_time_without_other_traffic(shop, serve):
    app = create_mcp_http_app(shop, "tiny", idle_seconds=0.3)
    with serve(app) as url:
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            await client.call_tool("delete_order", {"order_id": 1})
            await asyncio.sleep(0.8)
            with pytest.raises(MCPError, match=r"closed after 0\.3 s idle"):
                await state_of(client)
