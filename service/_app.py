"""One ASGI app for everything Atoll serves: the worlds (OpenEnv, MCP, console), the harness
endpoint (`/v1/chat/completions`, `/v1/models`), feedback and records, and the released files.

It is the worlds app with the harness routes added, so the same guard covers every route: loopback
only unless a token is given, bounded bodies, same-origin pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from evals import RunStore
from harnesses.models import Model
from worlds import World
from worlds.serve import ResetRequest, check_bind, create_app

from ._endpoint import HarnessEndpoint
from ._feedback_api import records_router
from ._records import RecordPolicy, RecordStore
from ._releases import ReleaseChain
from ._wire import RequestError, error_body, parse_request, stream_events

RECORD_HEADER = "x-atoll-record-id"
RELEASE_HEADER = "x-atoll-release"


def create_service_app(
    harnesses: Iterable[Path | str] = (),
    *,
    worlds: Iterable[str | World] | None = None,
    store: RunStore | None = None,
    model: Model | str | None = None,
    policy: RecordPolicy | None = None,
    token: str | None = None,
    defaults: ResetRequest | None = None,
    max_sessions: int = 256,
    idle_seconds: float = 600.0,
    max_in_flight: int = 64,
) -> FastAPI:
    """The service as an ASGI app. `harnesses` are served at `/v1`; `store` (default the runs store)
    holds their records and releases; the rest is as `worlds.serve.create_app`."""
    app = create_app(
        worlds, defaults=defaults, max_sessions=max_sessions, idle_seconds=idle_seconds, token=token
    )
    store = store or RunStore()
    records = RecordStore(store, policy)
    releases = ReleaseChain(store)
    endpoint = HarnessEndpoint(
        harnesses, records=records, releases=releases, model=model, max_in_flight=max_in_flight
    )
    app.state.endpoint = endpoint
    app.include_router(records_router(records))

    @app.exception_handler(RequestError)
    async def refused(_: Request, error: RequestError) -> JSONResponse:
        return JSONResponse(error_body(str(error), error.code), status_code=error.status)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "atoll"}
                for name in endpoint.served_models()
            ],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> JSONResponse | StreamingResponse:
        chat_request = parse_request(await request.body())
        served = await endpoint.complete(
            chat_request, session=chat_request.session(request.headers.get("x-atoll-session"))
        )
        headers = {
            RECORD_HEADER: served.record.id,
            RELEASE_HEADER: str(served.release.number) if served.release else "unreleased",
            "x-atoll-session": served.record.session,
        }
        if not chat_request.stream:
            return JSONResponse(served.body, headers=headers)
        include_usage = bool((chat_request.stream_options or {}).get("include_usage"))
        return StreamingResponse(
            stream_events(served.body, include_usage=include_usage),
            media_type="text/event-stream",
            headers={**headers, "cache-control": "no-cache"},
        )

    @app.get("/v1/harnesses/{name}/release")
    async def released(name: str) -> dict[str, Any]:
        """The files of the release served now, for clients that run their own loop."""
        if name not in endpoint.working:
            raise RequestError(f"harness {name!r} is not served here", status=404, code="harness_not_found")
        harness, release = endpoint.current(name)
        return {
            "harness": name,
            "release": release.model_dump() if release else None,
            "content_hash": harness.hash,
            "files": harness.files(),
        }

    return app


def run_service(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    token: str | None = None,
    log_level: str = "warning",
    **options: Any,
) -> None:
    """Serve until interrupted (what `optimize serve` runs); refuses a non-loopback host without a token."""
    import uvicorn

    check_bind(host, token)
    app = create_service_app(token=token, **options)
    in_flight = options.get("max_in_flight", 64) + options.get("max_sessions", 256)
    uvicorn.run(app, host=host, port=port, log_level=log_level, limit_concurrency=in_flight + 64)
