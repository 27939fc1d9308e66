"""The MCP server: one world's tools over stdio or streamable HTTP, a private instance per session.

A world instance is state that lives across calls. Over stdio (and in process) the
connection is the session, in either protocol era. Over HTTP only the handshake era has
sessions, so there `server/discover` lists only handshake versions (clients in "auto" mode then
fall back to `initialize`) and every `Mcp-Session-Id` gets its own instance, freed when the
client ends the session or, on a timer, after `idle_seconds` without a request (a connected
client's open event stream keeps the MCP session alive, not its instance). A failed call is a
tool result with `isError` set and the world's structured error (`{"error": {"type",
"message", "details"}}`), so the agent reads it like any other observation. The session's
state document (calls and diff) is the resource `atoll://state`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from atoll.worlds import Clock, UnknownFixture, World, get_world

from ._auth import DEFAULT_MAX_BODY_BYTES, Guard, check_bind
from ._catalog import WorldCatalog
from ._http import connection_limits, guarded_protocol
from ._sessions import (
    InstanceFull,
    ResetRequest,
    Session,
    SessionLimitReached,
    SessionManager,
    UnknownSession,
)

SESSION_HEADER = "mcp-session-id"
STATE_URI = "atoll://state"
DOCUMENT_URI = "atoll://documents/"
_PARSE_ERROR, _INVALID_REQUEST, _INVALID_PARAMS, _SERVER_ERROR = -32700, -32600, -32602, -32000


@dataclass
class _Connections:
    """The sessions of one lifespan: a stdio connection's one, or every HTTP session's."""

    manager: SessionManager
    by_key: dict[str, str] = field(default_factory=dict)  # Mcp-Session-Id ("" on stdio) -> session id


class McpWorld:
    """One world served over MCP; `server` is the low-level MCP `Server` to run on any transport."""

    def __init__(
        self,
        world: str | World,
        fixture: str,
        *,
        seed: int = 0,
        clock: str | None = None,
        max_sessions: int = 256,
        idle_seconds: float = 600.0,
    ) -> None:
        self.world = get_world(world)
        if fixture not in self.world.fixtures:
            raise UnknownFixture(
                f"world {self.world.name!r} has no fixture {fixture!r}; it has: {', '.join(self.world.fixtures)}"
            )
        Clock.parse(clock)  # a bad clock fails now, not on the first call
        self.defaults = ResetRequest(world=self.world.name, fixture=fixture, seed=seed, clock=clock)
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.live: list[_Connections] = []
        self.over_http = False
        self.server: Server[_Connections] = Server(
            f"atoll-{self.world.name}",
            version=self.world.version,
            instructions=self.world.description or None,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )

    def require_sessions(self) -> None:
        """Over HTTP: steer clients to the handshake era (the one with sessions) and expire idle sessions."""
        self.over_http = True
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[_Connections]:
        connections = _Connections(
            SessionManager(
                WorldCatalog([self.world]),
                defaults=self.defaults,
                max_sessions=self.max_sessions,
                # A stdio connection is its own bound: its instance lives as long as the connection.
                idle_seconds=self.idle_seconds if self.over_http else float("inf"),
            )
        )
        self.live.append(connections)
        reaper = asyncio.create_task(connections.manager.reap_forever()) if self.over_http else None
        try:
            yield connections
        finally:
            if reaper is not None:
                reaper.cancel()
            self.live.remove(connections)
            connections.manager.close_all()

    def forget(self, mcp_session_id: str) -> None:
        """Close the instance of an HTTP session the client has ended."""
        for connections in self.live:
            session_id = connections.by_key.pop(mcp_session_id, None)
            if session_id is not None:
                connections.manager.close(session_id)

    async def _discover(self, ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(),
            instructions=self.server.instructions,
        )

    async def _session(self, ctx: Any) -> Session:
        """This connection's session, opened (with its instance) on first use."""
        connections: _Connections = ctx.lifespan_context
        key = "" if ctx.request is None else ctx.request.headers.get(SESSION_HEADER)
        if key is None:
            raise MCPError(
                _INVALID_REQUEST,
                "this server keeps a private world instance per MCP session; connect with the session-ful "
                f"handshake (protocol {HANDSHAKE_PROTOCOL_VERSIONS[-1]})",
            )
        manager = connections.manager
        if key in connections.by_key:
            try:
                session = manager.get(connections.by_key[key])
            except UnknownSession:
                raise MCPError(
                    _INVALID_REQUEST,
                    f"this session's world instance was closed after {self.idle_seconds:g} s idle; "
                    "start a new MCP session for a fresh one",
                ) from None
        else:
            try:
                session = manager.open("mcp")
            except SessionLimitReached as full:
                raise MCPError(_SERVER_ERROR, str(full)) from None
            connections.by_key[key] = session.id
        if session.instance is None:
            planned = session.plan(ResetRequest())
            await asyncio.to_thread(manager.load, planned)
            session.reset(planned)
        return session

    async def _list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.parameters_schema(),
                    annotations=types.ToolAnnotations(read_only_hint=not tool.writes, open_world_hint=False),
                )
                for tool in self.world.tools.values()
            ]
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = await self._session(ctx)
        assert session.instance is not None
        try:
            session.check_room()
        except InstanceFull as full:
            raise MCPError(_SERVER_ERROR, str(full)) from None
        arguments = params.arguments or {}
        result = session.instance.call(params.name, **arguments)
        if result.ok:
            structured = result.value if isinstance(result.value, dict) else {"result": result.value}
        else:
            structured = {"error": result.error.model_dump()}
        session.charge(len(json.dumps(arguments, default=str)), len(result.for_model()))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.for_model())],
            structured_content=structured,
            is_error=not result.ok,
        )

    async def _list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                uri=STATE_URI,
                name="state",
                description="This session's instance: fixture, seed, clock, every tool call and the diff so far.",
                mime_type="application/json",
            )
        ]
        resources += [
            types.Resource(uri=f"{DOCUMENT_URI}{name}", name=name, mime_type="text/markdown")
            for name in self.world.documents
        ]
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri == STATE_URI:
            session = await self._session(ctx)
            text, mime = json.dumps(session.state(), default=str), "application/json"
        elif params.uri.startswith(DOCUMENT_URI) and params.uri[len(DOCUMENT_URI) :] in self.world.documents:
            text, mime = self.world.documents[params.uri[len(DOCUMENT_URI) :]], "text/markdown"
        else:
            raise MCPError(_INVALID_PARAMS, f"no resource {params.uri!r}; list them with resources/list")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)]
        )


def create_mcp_server(
    world: str | World,
    fixture: str,
    *,
    seed: int = 0,
    clock: str | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
) -> Server[Any]:
    """The MCP server for one world and fixture (run it on any MCP transport, or hand it to `mcp.Client`)."""
    return McpWorld(
        world, fixture, seed=seed, clock=clock, max_sessions=max_sessions, idle_seconds=idle_seconds
    ).server


def create_mcp_http_app(
    world: str | World,
    fixture: str,
    *,
    seed: int = 0,
    clock: str | None = None,
    host: str = "127.0.0.1",
    token: str | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
) -> ASGIApp:
    """The streamable-HTTP MCP app (endpoint `/mcp`), guarded like every world server; refuses a
    non-loopback `host` without a token."""
    check_bind(host, token)
    served = McpWorld(
        world, fixture, seed=seed, clock=clock, max_sessions=max_sessions, idle_seconds=idle_seconds
    )
    served.require_sessions()
    app = served.server.streamable_http_app(
        host=host,
        session_idle_timeout=idle_seconds,
        max_sessions=max_sessions,
        max_request_body_size=DEFAULT_MAX_BODY_BYTES,
    )
    return Guard(_ForgetEndedSessions(app, served), token=token, max_body_bytes=DEFAULT_MAX_BODY_BYTES)


def run_mcp(
    world: str | World,
    fixture: str,
    seed: int = 0,
    *,
    clock: str | None = None,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
    log_level: str = "warning",
) -> None:
    """Serve until the client hangs up (stdio) or until interrupted (`http=True`: streamable HTTP at /mcp)."""
    limits = {"seed": seed, "clock": clock, "max_sessions": max_sessions, "idle_seconds": idle_seconds}
    if not http:
        asyncio.run(_serve_stdio(McpWorld(world, fixture, **limits).server))
        return
    import uvicorn

    app = create_mcp_http_app(world, fixture, host=host, token=token, **limits)
    limit, max_waiting = connection_limits(max_sessions)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        limit_concurrency=limit,
        http=guarded_protocol(max_waiting=max_waiting),
    )


async def _serve_stdio(server: Server[Any], **streams: Any) -> None:
    """Serve over stdin and stdout (or the `stdin`, `stdout` given); a line that is not JSON-RPC is answered
    with -32700, as JSON-RPC asks (the MCP server would drop it and leave the client waiting)."""
    async with stdio_server(**streams) as (read_stream, write_stream):
        parsed_writer, parsed = create_context_streams[SessionMessage | Exception](0)

        async def answer_garbage() -> None:
            async with parsed_writer:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        error = types.ErrorData(
                            code=_PARSE_ERROR, message="Parse error: the line is not a JSON-RPC 2.0 message"
                        )
                        await write_stream.send(
                            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))
                        )
                    else:
                        await parsed_writer.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_garbage)
            await server.run(parsed, write_stream, server.create_initialization_options())


class _ForgetEndedSessions:
    """ASGI wrapper: when a client DELETEs its MCP session, close that session's instance too."""

    def __init__(self, app: ASGIApp, served: McpWorld) -> None:
        self.app = app
        self.served = served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "DELETE":
            headers = dict(scope["headers"])
            ended = headers.get(SESSION_HEADER.encode())
            if ended:
                self.served.forget(ended.decode("latin-1"))
