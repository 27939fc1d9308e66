"""One ASGI app for everything Atoll serves: the worlds (OpenEnv, MCP, console), the harness
endpoint (`/v1/chat/completions`, `/v1/models`), feedback and records, and the released files.

It is the worlds app with the harness routes added, so the same guard covers every route: loopback
only unless a token is given, bounded bodies, same-origin pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from atoll.evals import RunStore
from atoll.harnesses.models import Model
from atoll.worlds import World
from atoll.worlds.serve import (
    ResetRequest,
    check_bind,
    check_token,
    connection_limits,
    create_app,
    guarded_protocol,
)

from ._console_api import console_router
from ._endpoint import RECORD_HEADER, HarnessEndpoint
from ._feedback_api import records_router
from ._jobs import Jobs
from ._jobs_api import jobs_router
from ._recipe_loop import RecipeLoop, load_recipe
from ._records import RecordPolicy, RecordStore, load_record_policy
from ._releases import ReleaseChain
from ._wire import RequestError, error_body, parse_request, stream_events

RELEASE_HEADER = "x-atoll-release"
# A stream of job events lasts as long as its job, so a stopping server that waited for every response would
# wait for the jobs it is about to interrupt; requests in flight get this long to finish, then are cut.
SHUTDOWN_GRACE_S = 10.0


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
    recipe: Path | str | None = None,
    check_every: float = 60.0,
) -> FastAPI:
    """The service as an ASGI app. `harnesses` are served at `/v1`; `store` (default the runs store)
    holds their records, releases and jobs; `policy` (default the `[records]` table of the atoll.toml
    above the first harness, else above the working directory) redacts and expires records; `recipe` (a recipe file, see `service.load_recipe`) starts
    jobs on its own, checking every `check_every` seconds; the rest is as `worlds.serve.create_app`.

    At start-up the jobs of the served harnesses left running by a process that is gone, or interrupted
    by a service that stopped, are resumed; at shutdown the jobs running are interrupted, to resume.
    ValueError for an empty or blank `token`."""
    check_token(token)
    app = create_app(
        worlds, defaults=defaults, max_sessions=max_sessions, idle_seconds=idle_seconds, token=token
    )
    harnesses = [Path(harness) for harness in harnesses]
    store = store or RunStore()
    if policy is None:
        policy = load_record_policy(harnesses[0] if harnesses else None)
    records = RecordStore(store, policy)
    releases = ReleaseChain(store)
    endpoint = HarnessEndpoint(
        harnesses, records=records, releases=releases, model=model, max_in_flight=max_in_flight
    )
    app.state.endpoint = endpoint
    app.include_router(records_router(records))
    app.include_router(console_router(store, releases, records))
    served = {name: Path(str(harness.source)).resolve() for name, harness in endpoint.working.items()}
    jobs = Jobs(store, records, releases, served, model=model)
    recipes = None
    if recipe is not None:
        recipes = RecipeLoop(load_recipe(recipe), jobs, releases, check_every=check_every)
    app.state.jobs, app.state.recipes = jobs, recipes
    app.include_router(jobs_router(jobs, recipes))
    _run_jobs_with(app, jobs, recipes, records)

    @app.exception_handler(RequestError)
    async def refused(_: Request, error: RequestError) -> JSONResponse:
        return JSONResponse(
            error_body(str(error), error.code, error.status), status_code=error.status, headers=error.headers
        )

    @app.exception_handler(Exception)
    async def failed(_: Request, error: Exception) -> JSONResponse:  # a bug: still an OpenAI-shaped answer
        return JSONResponse(
            error_body(f"{type(error).__name__}: {error}", "internal_error", 500), status_code=500
        )

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "atoll"}
                for name in endpoint.served_models()
            ],
        }

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

    # The route of every model call is matched first (the router tries the routes in order, and matching the
    # worlds', console's and jobs' routes before it cost a tenth of the endpoint's time), and is Starlette's
    # plain route: it takes the request as it is, so FastAPI's dependency solving would be all its cost (about
    # 50 us a call). The app's exception handlers answer for it as for every route.
    app.router.routes.insert(0, Route("/v1/chat/completions", chat, methods=["POST"]))

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


def _run_jobs_with(app: FastAPI, jobs: Jobs, recipes: RecipeLoop | None, records: RecordStore) -> None:
    """Wrap the app's lifespan (the worlds' session reaper) so that, inside it, interrupted jobs resume and
    the recipe loop runs at start-up, and both stop at shutdown, the records answered last stored then."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            await jobs.resume_interrupted()
            loop = asyncio.create_task(recipes.run()) if recipes is not None else None
            try:
                yield state
            finally:
                if loop is not None:
                    loop.cancel()
                    with suppress(asyncio.CancelledError):
                        await loop
                await jobs.close()
                await asyncio.to_thread(records.close)

    app.router.lifespan_context = lifespan


def run_service(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    token: str | None = None,
    log_level: str = "warning",
    workers: int = 1,
    **options: Any,
) -> None:
    """Serve until interrupted (what `optimize serve` runs); refuses a non-loopback host without a token.

    `workers` > 1 answers from that many processes on one port (uvicorn's supervisor starts them and starts
    again one that dies), each with the app `create_service_app(**options)` builds there, over the one runs
    store (`store`, or its default): each process journals and stores its own records, and SQLite (WAL, a
    busy timeout, one writer thread per process) orders the writes. `options` must then survive pickling,
    as uvicorn sends them to the workers: a model by name, or a Model whose parts are importable there.
    World sessions live in the process that opened them, so serve worlds with one worker (`worlds=[]`)."""
    import uvicorn

    check_bind(host, token)
    check_token(token)
    # Connections still sending a request may hold a quarter of the capacity, never all of it.
    limit, max_waiting = connection_limits(
        options.get("max_in_flight", 64) + options.get("max_sessions", 256)
    )
    served = {
        "host": host,
        "port": port,
        "log_level": log_level,
        "limit_concurrency": limit,
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
    }
    if workers == 1:
        app = create_service_app(token=token, **options)
        uvicorn.run(app, http=guarded_protocol(max_waiting=max_waiting), **served)
        return
    from ._workers import serve_workers

    store = options.pop("store", None)
    options |= {"token": token, "store": None if store is None else store.path}
    serve_workers(options, workers=workers, max_waiting=max_waiting, **served)
