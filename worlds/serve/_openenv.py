"""The OpenEnv-compatible world server: `/health`, `/metadata`, `/schema`, the `/ws` session
protocol, OpenEnv's `/mcp` JSON-RPC, and the web console at `/`.

Every WebSocket gets its own session, so its own instance; `reset` picks the world, fixture,
seed and clock. Tool calls take well under a millisecond on an in-memory instance, so they run
on the event loop; only loading a fixture (which may build it) goes to a thread. One bad
message earns one error reply and the conversation goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse
from pydantic import ValidationError
from pydantic_core import from_json

from atoll.worlds import Instance, World, WorldError

from . import _protocol as wire
from ._auth import DEFAULT_MAX_BODY_BYTES, Guard, check_bind
from ._catalog import WorldCatalog
from ._errors import answer_errors_in_shape
from ._http import connection_limits, guarded_protocol
from ._rest import rest_router
from ._sessions import (
    InstanceFull,
    NoInstance,
    ResetRequest,
    Session,
    SessionLimitReached,
    SessionManager,
    UnknownSession,
)

log = logging.getLogger(__name__)

CONSOLE = Path(__file__).parent / "console"


class _Refused(Exception):
    """A message the server will not act on; its code and message go back to the client."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


def _validation_errors(error: ValidationError) -> list[dict[str, Any]]:
    return json.loads(error.json(include_url=False))


def create_app(
    worlds: Iterable[str | World] | None = None,
    *,
    defaults: ResetRequest | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
    token: str | None = None,
    max_message_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The server as an ASGI app: `worlds` (names, module paths or World objects; default: every
    shipped world), `defaults` for fields a reset leaves out, and the bounds on sessions and messages."""
    manager = SessionManager(
        WorldCatalog(worlds), defaults=defaults, max_sessions=max_sessions, idle_seconds=idle_seconds
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(manager.reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            manager.close_all()

    app = FastAPI(title="Atoll worlds", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.sessions = manager
    app.add_middleware(Guard, token=token, max_body_bytes=max_message_bytes)
    answer_errors_in_shape(app)
    conversation = _Conversation(manager, max_message_bytes)
    app.include_router(rest_router(manager))  # /rest/{world}/{key}/…: the worlds' HTTP operations

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "healthy"}

    @app.get("/metadata")
    async def metadata_() -> dict[str, Any]:
        return {
            "name": "atoll-worlds",
            "description": f"Atoll worlds: {', '.join(manager.catalog.names)}. Reset picks world, fixture, "
            "seed and clock; steps call the world's tools; the state holds the diff.",
            "version": _version(),
            "readme_content": None,
            "author": None,
            "documentation_url": None,
        }

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return wire.schemas()

    @app.get("/api/worlds")
    async def api_worlds() -> list[dict[str, Any]]:
        return await asyncio.to_thread(manager.catalog.describe)

    @app.get("/api/sessions")
    async def api_sessions() -> dict[str, int]:
        return {"live": len(manager), "max": manager.max_sessions}

    @app.post("/mcp")
    async def mcp(request: Request) -> JSONResponse:
        return JSONResponse(await _jsonrpc(await request.body(), manager, conversation))

    @app.get("/")
    async def console() -> FileResponse:
        return FileResponse(CONSOLE / "index.html", headers={"cache-control": "no-cache"})

    @app.get("/console.js")
    async def console_script() -> FileResponse:
        return FileResponse(CONSOLE / "console.js", headers={"cache-control": "no-cache"})

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await conversation.serve(websocket)

    return app


def run_server(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    token: str | None = None,
    worlds: Iterable[str | World] | None = None,
    defaults: ResetRequest | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
    max_message_bytes: int = DEFAULT_MAX_BODY_BYTES,
    log_level: str = "warning",
) -> None:
    """Serve until interrupted (what `optimize serve` runs); refuses a non-loopback host without a token."""
    import uvicorn

    check_bind(host, token)
    app = create_app(
        worlds,
        defaults=defaults,
        max_sessions=max_sessions,
        idle_seconds=idle_seconds,
        token=token,
        max_message_bytes=max_message_bytes,
    )
    limit, max_waiting = connection_limits(max_sessions)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        # Frames a little over the limit get an error reply; far over it, the socket is closed.
        ws_max_size=4 * max_message_bytes,
        limit_concurrency=limit,
        http=guarded_protocol(max_waiting=max_waiting),  # the header deadline and slow clients' share
    )


def _version() -> str:
    try:
        return metadata.version("atoll")
    except metadata.PackageNotFoundError:
        return "0"


class _Conversation:
    """The `/ws` protocol: one reply per message, in order, on a session private to the socket."""

    def __init__(self, manager: SessionManager, max_message_bytes: int) -> None:
        self.manager = manager
        self.max_message_bytes = max_message_bytes
        self.attached: set[str] = set()

    async def serve(self, websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            session, owned = self._session_for(websocket.query_params.get("session_id"))
        except _Refused as refusal:
            await websocket.send_json(_error(refusal.code, refusal.message, **refusal.extra))
            await websocket.close()
            return
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                reply = await self.answer(session, message.get("text") or message.get("bytes") or "")
                if reply is None:
                    break
                await websocket.send_text(json.dumps(reply, default=str))
                if session.closed:
                    break
        except WebSocketDisconnect:
            pass
        finally:
            if owned:
                self.manager.close(session.id)
            else:
                self.attached.discard(session.id)
        if websocket.client_state.name == "CONNECTED":
            await websocket.close()

    def _session_for(self, session_id: str | None) -> tuple[Session, bool]:
        """A new session, or (OpenEnv's production clients) an existing one made over `/mcp`."""
        try:
            if session_id is None:
                return self.manager.open(), True
            session = self.manager.get(session_id)
        except SessionLimitReached as full:
            raise _Refused(
                "CAPACITY_REACHED", str(full), active_sessions=full.live, max_sessions=full.limit
            ) from None
        except UnknownSession as missing:
            raise _Refused("SESSION_ERROR", str(missing)) from None
        if session_id in self.attached:
            raise _Refused("SESSION_ERROR", f"session {session_id} already has a WebSocket attached")
        self.attached.add(session_id)
        return session, False

    async def answer(self, session: Session, raw: str | bytes) -> dict[str, Any] | None:
        """The reply to one frame; None when the client asked to close."""
        if session.closed:
            return _error(
                "SESSION_ERROR",
                f"this session was closed after {self.manager.idle_seconds:g} s idle; reconnect and reset",
            )
        try:
            return await self._act(session, self._parse(raw), len(raw))
        except InstanceFull as full:
            return _error("INSTANCE_FULL", str(full), used_bytes=full.used, max_bytes=full.limit)
        except _Refused as refusal:
            return _error(refusal.code, refusal.message, **refusal.extra)
        except SessionLimitReached as full:
            return _error("CAPACITY_REACHED", str(full), active_sessions=full.live, max_sessions=full.limit)
        except ValidationError as invalid:
            return _error("VALIDATION_ERROR", "invalid message", errors=_validation_errors(invalid))
        except (NoInstance, WorldError, ValueError) as bad:
            return _error("VALIDATION_ERROR", str(bad))
        except Exception as error:  # the server stays up whatever one message does
            log.exception("message failed on session %s", session.id)
            return _error("EXECUTION_ERROR", f"{type(error).__name__}: {error}")

    def _parse(self, raw: str | bytes) -> wire.Message:
        size = len(raw.encode() if isinstance(raw, str) else raw)
        if size > self.max_message_bytes:
            raise _Refused(
                "VALIDATION_ERROR",
                f"message is {size} bytes; this server accepts at most {self.max_message_bytes}",
            )
        try:
            payload = from_json(raw)  # depth-bounded: a frame nested past it is refused, not a crash
        except ValueError as error:
            raise _Refused("INVALID_JSON", f"Invalid JSON: {error}") from None
        if not isinstance(payload, dict):
            raise _Refused("VALIDATION_ERROR", 'a message is a JSON object, like {"type": "state"}')
        kind = payload.get("type")
        if kind not in wire.MESSAGE_TYPES:
            raise _Refused(
                "UNKNOWN_TYPE",
                f"Unknown message type: {kind!r}; expected one of {', '.join(wire.MESSAGE_TYPES)}",
            )
        return wire.MESSAGE.validate_python(payload)

    async def _act(self, session: Session, message: wire.Message, size: int) -> dict[str, Any] | None:
        if isinstance(message, wire.CloseMessage):
            return None
        if isinstance(message, wire.ResetMessage):
            await self.reset(session, ResetRequest.model_validate(message.data))
            return {"type": "observation", "data": wire.step_reply(wire.reset_observation(session))}
        if isinstance(message, wire.StateMessage):
            return {"type": "state", "data": session.state()}
        if isinstance(message, wire.RowsMessage):
            return {"type": "rows", "data": await self.rows(session, message.data)}
        action = wire.ACTION.validate_python(message.data)
        if isinstance(action, wire.ListToolsAction):
            observation: Any = wire.list_tools_observation(session.world())
        else:
            instance = await self.instance(session)
            session.check_room()
            observation = wire.call_observation(instance, action)
            session.charge(size, len(observation.model_dump_json()))
        return {"type": "observation", "data": wire.step_reply(observation)}

    async def reset(self, session: Session, request: ResetRequest) -> None:
        planned = session.plan(request)
        await asyncio.to_thread(self.manager.load, planned)
        session.reset(planned)

    async def instance(self, session: Session) -> Instance:
        """The session's instance, opening the server's default one first if there is none yet."""
        if session.instance is None:
            await self.reset(session, ResetRequest())
        return session.require()

    async def rows(self, session: Session, request: wire.RowsRequest) -> dict[str, Any]:
        instance = await self.instance(session)
        table = instance.world.tables.get(request.table)
        if table is None:
            raise _Refused(
                "VALIDATION_ERROR", f"no table {request.table!r}; tables: {', '.join(instance.world.tables)}"
            )
        return {
            "table": request.table,
            "columns": [c.name for c in table.columns],
            "primary_key": table.primary_key,
            "rows": instance.table_rows(request.table, request.limit),
        }


_PARSE_ERROR, _INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS, _SERVER_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32000,
)


async def _jsonrpc(body: bytes, manager: SessionManager, conversation: _Conversation) -> dict[str, Any]:
    """OpenEnv's `/mcp`: `openenv/session/create|close`, `tools/list` and `tools/call` as JSON-RPC 2.0."""
    try:
        request = from_json(body)  # depth-bounded: a body nested past it is refused, not a crash
    except ValueError as error:
        return _rpc_error(None, _PARSE_ERROR, f"Parse error: {error}")
    if (
        not isinstance(request, dict)
        or request.get("jsonrpc") != "2.0"
        or not isinstance(request.get("method"), str)
    ):
        return _rpc_error(
            None, _INVALID_REQUEST, 'Invalid Request: send {"jsonrpc": "2.0", "method": ..., "id": ...}'
        )
    request_id, method, params = request.get("id"), request["method"], request.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, _INVALID_PARAMS, "params must be an object")
    try:
        result = await _rpc_method(method, params, manager, conversation, len(body))
    except _RpcError as error:
        return _rpc_error(request_id, error.code, error.message, error.data)
    except SessionLimitReached as full:
        return _rpc_error(
            request_id, _SERVER_ERROR, str(full), {"active_sessions": full.live, "max_sessions": full.limit}
        )
    except InstanceFull as full:
        return _rpc_error(
            request_id, _SERVER_ERROR, str(full), {"used_bytes": full.used, "max_bytes": full.limit}
        )
    except UnknownSession as missing:
        return _rpc_error(request_id, _INVALID_PARAMS, str(missing))
    except ValidationError as invalid:
        return _rpc_error(request_id, _INVALID_PARAMS, "invalid params", _validation_errors(invalid))
    except (NoInstance, WorldError, ValueError) as bad:
        return _rpc_error(request_id, _INVALID_PARAMS, str(bad))
    except Exception as error:
        log.exception("JSON-RPC %s failed", method)
        return _rpc_error(request_id, _SERVER_ERROR, f"{type(error).__name__}: {error}")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


async def _rpc_method(
    method: str, params: dict[str, Any], manager: SessionManager, conversation: _Conversation, size: int
) -> dict[str, Any]:
    session_id = params.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise _RpcError(_INVALID_PARAMS, "params.session_id must be a string, as session/create returned it")
    if method == "openenv/session/create":
        return {"session_id": manager.open("mcp").id}
    if method == "openenv/session/close":
        if not session_id:
            raise _RpcError(_INVALID_PARAMS, "openenv/session/close needs params.session_id")
        if not manager.close(session_id):
            raise _RpcError(_INVALID_PARAMS, f"Unknown session_id: {session_id}")
        return {"session_id": session_id, "closed": True}
    if method == "tools/list":
        if session_id:
            world = manager.get(session_id).world()
        elif manager.defaults.world:
            world = manager.catalog.get(manager.defaults.world)
        else:
            raise NoInstance("tools/list needs params.session_id, or a server started with a default --world")
        tools = wire.tool_specs(world)
        return {
            "tools": [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools
            ]
        }
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise _RpcError(
                _INVALID_PARAMS, "tools/call needs params.name (a string) and params.arguments (an object)"
            )
        # Without a session_id the call runs on a throwaway instance of the default fixture, as in OpenEnv.
        session = manager.get(session_id) if session_id else manager.open("mcp")
        try:
            instance = await conversation.instance(session)
            session.check_room()
            result = wire.call_result(instance.call(name, **arguments))
            session.charge(size, len(result.model_dump_json()))
            return result.model_dump(mode="json")
        finally:
            if not session_id:
                manager.close(session.id)
    raise _RpcError(_METHOD_NOT_FOUND, f"Method not found: {method}")
