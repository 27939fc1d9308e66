"""REST serving: a world's HTTP operations, per instance, with Stripe's wire conventions.

`/rest/{world}/{key}/…` reaches the operations of one private instance, opened on first use and reclaimed
like every session (idle timeout, session bound); point a vendor SDK at `/rest/{world}/{key}` as its base
address and nothing else changes. Bodies are form-encoded with brackets (`_form.py`); a refusal is Stripe's
envelope `{"error": {"type", "code", "param", "message"}}` with its status; an `Idempotency-Key` on a write
replays the first answer (header `Idempotent-Replayed: true`, nothing written) and refuses other
parameters under the same key; the world's pinned API version is checked and echoed. The operation runs
through `Instance.request`, the dispatcher its agent tool goes through, so both land in one diff.
See docs/rest.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import from_json

from atoll.worlds import Operation, ToolFailure, World, WorldError

from ._form import FormError, bracketed, decode
from ._sessions import InstanceFull, NoInstance, ResetRequest, Session, SessionLimitReached, SessionManager

PREFIX = "/rest"
IDEMPOTENCY_HEADER = "idempotency-key"
MAX_IDEMPOTENCY_KEY = 255
REPLIES_KEPT = 1000  # idempotent answers kept per instance, oldest dropped first
MAX_REQUEST_BYTES = 256 << 10  # one operation's parameters; Stripe's own requests are a few KB
_KEY = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
# A world's failure code to its status when the world's error names none.
_STATUS = {"unknown_tool": 404, "not_found": 404, "world_bug": 500}
# Pydantic's error types to Stripe's parameter error codes.
_PARAM_CODES = {
    "extra_forbidden": "parameter_unknown",
    "missing": "parameter_missing",
    "int_parsing": "parameter_invalid_integer",
    "int_type": "parameter_invalid_integer",
    "int_from_float": "parameter_invalid_integer",
    "bool_parsing": "parameter_invalid_boolean",
}


class OpenRequest(BaseModel):
    """The body of `PUT /rest/{world}/{key}`: which fixture, seed and clock the key's instance starts from."""

    model_config = ConfigDict(extra="forbid")

    fixture: str | None = Field(None, description="Fixture to start from; default the world's default.")
    seed: int | None = Field(None, ge=0, description="Instance seed: picks the ids the world generates.")
    clock: str | None = Field(None, description="fixed, tick, wall, or fixed@YYYY-MM-DD HH:MM:SS.")


@dataclass
class _Reply:
    fingerprint: str
    status: int
    body: bytes


@dataclass
class _Entry:
    """One key's instance and the idempotent answers given on it."""

    session: Session
    replies: OrderedDict[str, _Reply] = field(default_factory=OrderedDict)


class RestError(Exception):
    """A request refused before any operation ran: its status and Stripe-style error fields."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"type": "invalid_request_error", "code": code, "param": param, "message": message}


class RestInstances:
    """The instances reached over REST, by (world, key), over the server's one SessionManager."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._routes: dict[str, list[Operation]] = {}
        self._opening = asyncio.Lock()

    def world(self, name: str) -> World:
        try:
            world = self.manager.catalog.get(name)
        except WorldError as unknown:
            raise RestError(404, str(unknown), code="resource_missing") from None
        if not world.operations:
            raise RestError(
                404, f"world {name!r} declares no HTTP operations; reach its tools over /ws or /mcp instead"
            )
        return world

    def route(self, world: World, method: str, path: str) -> tuple[Operation, dict[str, str]]:
        """The operation answering `method path`; literal segments win over placeholders."""
        if world.name not in self._routes:
            self._routes[world.name] = sorted(
                world.operations.values(), key=lambda op: len(op.path_parameters)
            )
        for operation in self._routes[world.name]:
            if operation.method == method:
                found = operation.match(path)
                if found is not None:
                    return operation, found
        raise RestError(404, f"Unrecognized request URL ({method}: {path}).")

    def existing(self, world: str, key: str) -> _Entry:
        entry = self._entries.get((world, key))
        if entry is None:
            raise RestError(
                404, f"no instance {key!r} of {world}: a request under /rest/{world}/{key}/ opens it"
            )
        if entry.session.closed:
            raise RestError(
                410,
                f"instance {key!r} of {world} was closed after {self.manager.idle_seconds:g} s idle; "
                f"PUT /rest/{world}/{key} opens it afresh, or use another key",
                code="instance_expired",
            )
        entry.session.touch()
        return entry

    async def open(self, world: str, key: str, request: OpenRequest | None = None) -> _Entry:
        """The key's entry; its instance opened now if it has none (or afresh, when `request` is given)."""
        if not _KEY.fullmatch(key):
            raise RestError(400, f"instance key {key!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
        async with self._opening:  # two first requests on one key must not open two sessions
            entry = self._entries.get((world, key))
            if entry is not None and request is None:
                return self.existing(world, key)
            if entry is None or entry.session.closed:
                self._prune()
                try:
                    entry = _Entry(self.manager.open("rest"))
                except SessionLimitReached as full:
                    raise RestError(429, str(full), code="rate_limit") from None
                self._entries[(world, key)] = entry
            wanted = ResetRequest(world=world, **(request.model_dump() if request else {}))
            try:
                planned = entry.session.plan(wanted)
                await asyncio.to_thread(self.manager.load, planned)
                entry.session.reset(planned)
            except (NoInstance, WorldError, ValueError) as bad:
                raise RestError(400, str(bad)) from None
            entry.replies.clear()
            return entry

    def close(self, world: str, key: str) -> bool:
        entry = self._entries.pop((world, key), None)
        return entry is not None and self.manager.close(entry.session.id)

    def _prune(self) -> None:
        """Forget keys whose instances expired, once there are many: their 410 is a courtesy, not a promise."""
        if len(self._entries) > 2 * self.manager.max_sessions:
            for key in [k for k, e in self._entries.items() if e.session.closed]:
                del self._entries[key]


def rest_router(manager: SessionManager) -> APIRouter:
    """The REST face of every world the server offers that declares HTTP operations."""
    instances = RestInstances(manager)
    router = APIRouter()

    @router.api_route(PREFIX + "/{world}/{key}/{path:path}", methods=["GET", "POST", "DELETE"])
    async def operation(world: str, key: str, path: str, request: Request) -> Response:
        try:
            return await _answer(instances, world, key, "/" + path, request)
        except RestError as refused:
            return _envelope(refused.status, refused.body, _world_headers(manager, world))

    @router.get(PREFIX + "/{world}/{key}")
    async def state(world: str, key: str) -> Response:
        try:
            entry = instances.existing(world, key)
        except RestError as refused:
            return _envelope(refused.status, refused.body, {})
        return _json(200, entry.session.state(), {})

    @router.put(PREFIX + "/{world}/{key}")
    async def reopen(world: str, key: str, body: OpenRequest) -> Response:
        try:
            instances.world(world)
            entry = await instances.open(world, key, body)
        except RestError as refused:
            return _envelope(refused.status, refused.body, {})
        return _json(200, _opened(entry), {})

    @router.delete(PREFIX + "/{world}/{key}")
    async def close(world: str, key: str) -> Response:
        return _json(200, {"world": world, "key": key, "closed": instances.close(world, key)}, {})

    return router


async def _answer(
    instances: RestInstances, world_name: str, key: str, path: str, request: Request
) -> Response:
    world = instances.world(world_name)
    headers = _world_headers(instances.manager, world_name)
    _check_version(world, request)
    if not request.headers.get("authorization", "").lower().startswith("bearer "):
        raise RestError(
            401,
            "You did not provide an API key. Send it in the Authorization header, using Bearer auth "
            "(e.g. 'Authorization: Bearer sk_test_…'); any key will do unless the server has a --token.",
        )
    operation, path_values = instances.route(world, request.method, path)
    arguments, size = await _parameters(request, operation, path_values)
    entry = await instances.open(world_name, key)
    assert entry.session.instance is not None
    try:
        entry.session.check_room()
    except InstanceFull as full:
        raise RestError(429, str(full), code="instance_full") from None
    idempotency = request.headers.get(IDEMPOTENCY_HEADER) if request.method != "GET" else None
    fingerprint = ""
    if idempotency is not None:
        headers["Idempotency-Key"] = idempotency
        fingerprint = _fingerprint(operation, path, arguments)
        replay = _replayed(entry, idempotency, fingerprint)
        if replay is not None:
            return Response(
                replay.body,
                replay.status,
                {**headers, "Idempotent-Replayed": "true"},
                media_type="application/json",
            )
    result = entry.session.instance.request(operation.name, **arguments)
    if result.ok:
        status, body = 200, json.dumps(result.value, ensure_ascii=False).encode()
    else:
        assert result.error is not None
        status, error = _failure(result.error)
        body = json.dumps({"error": error}, ensure_ascii=False).encode()
    entry.session.charge(size, len(body), kept=len(body) if idempotency is not None else 0)
    if idempotency is not None:
        entry.replies[idempotency] = _Reply(fingerprint, status, body)
        while len(entry.replies) > REPLIES_KEPT:
            entry.replies.popitem(last=False)
    return Response(body, status, headers, media_type="application/json")


def _check_version(world: World, request: Request) -> None:
    face = world.rest
    asked = request.headers.get(face.version_header) if face else None
    if face is not None and asked is not None and asked != face.version:
        raise RestError(
            400,
            f"This world answers as API version {face.version} only, and the request asked for {asked}; "
            f"send {face.version_header}: {face.version} (or pin the SDK whose version this is).",
            code="api_version_unsupported",
        )


async def _parameters(
    request: Request, operation: Operation, path_values: dict[str, str]
) -> tuple[dict[str, Any], int]:
    """The operation's validated arguments, the query (GET, DELETE) or the body (POST) plus the path, and the
    size of what they were read from; a 413 past MAX_REQUEST_BYTES."""
    raw = await request.body() if request.method == "POST" else request.url.query.encode()
    if len(raw) > MAX_REQUEST_BYTES:
        raise RestError(
            413,
            f"The request's parameters are {len(raw)} bytes; an operation takes at most {MAX_REQUEST_BYTES}.",
            code="request_too_large",
        )
    try:
        if request.method == "POST":
            kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
            given = _json_body(raw) if kind == "application/json" else decode(raw.decode("utf-8"))
        else:
            given = decode(request.url.query)
    except FormError as bad:
        raise RestError(400, str(bad), param=bad.param) from None
    except UnicodeDecodeError:
        raise RestError(400, "The request body is not UTF-8 text.") from None
    for name in path_values:
        if name in given:
            raise RestError(
                400,
                f"Received unknown parameter: {name} (it is in the URL)",
                code="parameter_unknown",
                param=name,
            )
    try:
        return operation.tool.validate({**given, **path_values}), len(raw)
    except ValidationError as invalid:
        raise _invalid(invalid) from None


def _json_body(raw: bytes) -> dict[str, Any]:
    try:
        given = from_json(raw or b"{}")  # depth-bounded: a body nested past it is refused, not a crash
    except ValueError as error:
        raise RestError(400, f"The request body is not valid JSON: {error}") from None
    if not isinstance(given, dict):
        raise RestError(400, "A JSON request body must be an object of parameters.")
    return given


def _invalid(invalid: ValidationError) -> RestError:
    """Stripe names one parameter per error: the first one pydantic found, in the client's bracket notation."""
    first = invalid.errors()[0]
    param = bracketed(tuple(first["loc"]))
    code = _PARAM_CODES.get(first["type"], "parameter_invalid")
    if code == "parameter_unknown":
        message = f"Received unknown parameter: {param}"
    elif code == "parameter_missing":
        message = f"Missing required param: {param}."
    else:
        message = f"Invalid {param}: {first['msg']}"
    return RestError(400, message, code=code, param=param)


def _fingerprint(operation: Operation, path: str, arguments: dict[str, Any]) -> str:
    payload = json.dumps([operation.name, path, arguments], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _replayed(entry: _Entry, key: str, fingerprint: str) -> _Reply | None:
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise RestError(400, f"Idempotency-Key is {len(key)} characters; at most {MAX_IDEMPOTENCY_KEY}.")
    stored = entry.replies.get(key)
    if stored is None:
        return None
    if stored.fingerprint != fingerprint:
        refused = RestError(
            400,
            "Keys for idempotent requests can only be used with the same parameters they were first used with. "
            f"Try using a key other than '{key}' if you meant to execute a different request.",
        )
        refused.body["type"] = "idempotency_error"
        raise refused
    return stored


def _failure(failure: ToolFailure) -> tuple[int, dict[str, Any]]:
    """A world's failure as an HTTP status and Stripe's error object: `details` carry status, type and param."""
    details = dict(failure.details)
    status = int(details.pop("status", None) or _STATUS.get(failure.type, 400))
    kind = details.pop("type", None) or ("api_error" if status >= 500 else "invalid_request_error")
    param = details.pop("param", None)
    return status, {"type": kind, "code": failure.type, "param": param, "message": failure.message, **details}


def _world_headers(manager: SessionManager, world_name: str) -> dict[str, str]:
    headers = {"Request-Id": f"req_{secrets.token_urlsafe(10)}"}
    try:
        face = manager.catalog.get(world_name).rest
    except WorldError:
        face = None
    if face is not None:
        headers[face.version_header] = face.version
    return headers


def _opened(entry: _Entry) -> dict[str, Any]:
    state = entry.session.state()
    return {k: state[k] for k in ("session_id", "world", "fixture", "seed", "clock", "now")}


def _envelope(status: int, error: dict[str, Any], headers: dict[str, str]) -> Response:
    return _json(status, {"error": error}, headers)


def _json(status: int, payload: Any, headers: dict[str, str]) -> Response:
    return Response(
        json.dumps(payload, ensure_ascii=False, default=str), status, headers, media_type="application/json"
    )
