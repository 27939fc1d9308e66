"""The HTTP side of jobs: start one, list them, follow one's events, cancel it, approve its held release.

Errors come in the OpenAI error shape the rest of the service uses. Events are server-sent events: each
has an `id` (send it back as `Last-Event-ID` to skip what was seen), an `event` (the optimizer's kinds:
start, evaluate, progress, proposal, screen, decision, commit, paused, finish; `gate` for the gate's
progress; `job` for the job's own state) and a JSON `data`. The stream ends when the job does (at once for a
job this process does not run: its stored state is the one event); a client that reconnects after that,
as a browser's EventSource does, is answered 204, which tells an EventSource to stop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._job_models import JobError, JobOptions, JobPlan, JobRequest
from ._jobs import Jobs
from ._recipe_loop import RecipeLoop
from ._wire import error_body, query_params

MAX_LIST = 1000


class JobQuery(BaseModel):
    """The query of `GET /jobs`."""

    model_config = ConfigDict(extra="forbid")

    harness: str | None = None
    limit: int = Field(50, ge=1, le=MAX_LIST)


def _refused(error: JobError) -> JSONResponse:
    return JSONResponse(error_body(str(error), error.code), status_code=error.status)


def _invalid(error: ValidationError | ValueError, where: str) -> JSONResponse:
    if isinstance(error, ValidationError):
        message = "; ".join(
            f"{'.'.join(map(str, item['loc'])) or where}: "
            + (
                "unknown key"
                if item["type"] == "extra_forbidden"
                else item["msg"].removeprefix("Value error, ")
            )
            for item in error.errors()
        )
    else:
        message = f"{where}: {error}"
    return JSONResponse(error_body(message, "invalid_request"), status_code=400)


def _plan(body: JobRequest, recipes: RecipeLoop | None) -> JobPlan:
    """The job a request asks for: its kind and options, else the recipe's. A request's options keep the
    recipe's suite and may name no proposer model but the recipe's (`JobRequestOptions.job_options`)."""
    planned = (
        recipes.plan(body.harness) if recipes is not None and body.harness in recipes.harnesses else None
    )
    recipe_options = planned.options if planned is not None else None
    if body.kind is None:
        if planned is None:
            raise JobError(
                "give the job's kind (optimize, gate or evolve): no recipe plans jobs for this harness"
            )
        if body.options is None:
            return planned
        return planned.model_copy(update={"options": body.options.job_options(recipe_options)})
    if body.options is not None:
        options = body.options.job_options(recipe_options)
    else:
        options = recipe_options or JobOptions()
    return JobPlan(kind=body.kind, options=options)


def jobs_router(jobs: Jobs, recipes: RecipeLoop | None = None) -> APIRouter:
    """`/jobs` over `jobs`; `recipes` gives a request without a kind or options its plan. Auth is the app's."""
    router = APIRouter()

    @router.post("/jobs", status_code=202, response_model=None)
    async def start(request: Request) -> dict[str, Any] | JSONResponse:
        """Start a job; 409 while the harness has one running."""
        try:  # pydantic's own JSON parser: deep nesting is an invalid body, not a RecursionError
            body = JobRequest.model_validate_json(await request.body())
        except ValidationError as error:
            return _invalid(error, "body")
        try:
            job = await jobs.start(_plan(body, recipes), body.harness)
        except JobError as error:
            return _refused(error)
        return job.model_dump(mode="json")

    @router.get("/jobs", response_model=None)
    async def list_jobs(request: Request) -> dict[str, Any] | JSONResponse:
        """Jobs, newest first."""
        try:
            query = JobQuery.model_validate(query_params(request))
        except ValidationError as error:
            return _invalid(error, "query")
        found = jobs.list(harness=query.harness, limit=query.limit)
        return {"object": "list", "data": [job.model_dump(mode="json") for job in found]}

    @router.get("/jobs/{job_id}", response_model=None)
    async def get_job(job_id: str) -> dict[str, Any] | JSONResponse:
        try:
            return jobs.get(job_id).model_dump(mode="json")
        except JobError as error:
            return _refused(error)

    @router.get("/jobs/{job_id}/events", response_model=None)
    async def events(job_id: str, request: Request) -> StreamingResponse | JSONResponse:
        """The job's events as server-sent events: those kept so far, then live ones until it ends; 204 to a
        client reconnecting (`Last-Event-ID`) once the stream has ended and it has seen every event."""
        try:
            jobs.get(job_id)
            after = int(request.headers.get("last-event-id") or 0)
        except JobError as error:
            return _refused(error)
        except ValueError:
            return _invalid(ValueError("Last-Event-ID is not an event id"), "headers")
        if after > 0 and jobs.events_ended(job_id, after):
            # a reconnection after the stream ended (EventSource reconnects to any stream that ends):
            # 204 tells it to stop, instead of replaying nothing forever
            return Response(status_code=204, headers={"cache-control": "no-cache"})

        async def stream() -> AsyncIterator[str]:
            async for event in jobs.events(job_id, after=after):
                data = json.dumps(event["data"], ensure_ascii=False, default=str)
                yield f"id: {event['id']}\nevent: {event['event']}\ndata: {data}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    @router.post("/jobs/{job_id}/cancel", response_model=None)
    async def cancel(job_id: str) -> dict[str, Any] | JSONResponse:
        """Cancel a running job, or drop a held release or an interrupted job."""
        try:
            return (await jobs.cancel(job_id)).model_dump(mode="json")
        except JobError as error:
            return _refused(error)

    @router.post("/jobs/{job_id}/approve", response_model=None)
    async def approve(job_id: str) -> dict[str, Any] | JSONResponse:
        """Publish a held job's release; 409 when the head moved since its gate."""
        try:
            return jobs.approve(job_id).model_dump(mode="json")
        except JobError as error:
            return _refused(error)

    return router
