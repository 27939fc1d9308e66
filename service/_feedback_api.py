"""The HTTP side of records: the application posts feedback against the record ids it was given
(`x-atoll-record-id`), and reads records back.

Errors come in the OpenAI error shape the rest of the endpoint uses, so a client's error handling
covers these routes too. SQLite calls block, so they run in a worker thread, never on the event loop.
The listing returns summaries (no request or response bodies) a page at a time, `after` the last id of the
previous page; the detail route returns the whole record.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._records import FeedbackIn, FeedbackLimit, RecordStore, UnknownRecord
from ._wire import error_body, query_params

MAX_LIST = 1000


class RecordQuery(BaseModel):
    """The query of `GET /v1/records`."""

    model_config = ConfigDict(extra="forbid")

    harness: str | None = None
    session: str | None = None
    with_feedback: bool | None = None
    limit: int = Field(50, ge=1, le=MAX_LIST)
    after: str | None = Field(None, description="The last record id of the previous page.")


def _invalid(error: ValidationError | ValueError, where: str) -> JSONResponse:
    if isinstance(error, ValidationError):
        message = "; ".join(
            f"{'.'.join(map(str, item['loc'])) or where}: {item['msg'].removeprefix('Value error, ')}"
            for item in error.errors()
        )
    else:
        message = f"{where}: {error}"
    return JSONResponse(error_body(message, "invalid_request"), status_code=400)


def _unknown(error: UnknownRecord) -> JSONResponse:
    return JSONResponse(error_body(str(error), "unknown_record"), status_code=404)


def records_router(records: RecordStore) -> APIRouter:
    """`POST /feedback`, `GET /v1/records` and `GET /v1/records/{id}` over `records`; auth is the app's."""
    router = APIRouter()

    @router.post("/feedback", response_model=None)
    async def post_feedback(request: Request) -> dict[str, Any] | JSONResponse:
        """Merge feedback into the rows of the records it names; returns what each merged row holds now,
        without the comment and correction (the caller has them: echoed once per record named, a reply was
        a hundred times the post)."""
        try:  # pydantic's own parser: a body nested past its depth limit is invalid JSON, not a RecursionError
            feedback = FeedbackIn.model_validate_json(await request.body())
        except ValidationError as error:  # not JSON, not UTF-8, too deep, or not a feedback post
            return _invalid(error, "body")
        try:
            merged = await asyncio.to_thread(records.add_feedback, feedback)
        except UnknownRecord as error:
            return _unknown(error)
        except FeedbackLimit as error:
            return JSONResponse(error_body(str(error), "too_many_sources", 409), status_code=409)
        texts = {"comment", "correction"}
        return {"object": "list", "data": [row.model_dump(mode="json", exclude=texts) for row in merged]}

    @router.get("/v1/records", response_model=None)
    def list_records(request: Request) -> dict[str, Any] | JSONResponse:
        """Record summaries, newest first (a session's: oldest first), each with its feedback; a page of
        `limit`, `has_more` saying whether another follows (ask for it with `after=<last_id>`)."""
        try:
            query = RecordQuery.model_validate(query_params(request))
        except ValidationError as error:
            return _invalid(error, "query")
        try:  # one more than asked: whether there is a next page
            found = records.list(**{**query.model_dump(), "limit": query.limit + 1})
        except UnknownRecord as error:
            return _unknown(error)
        page = found[: query.limit]
        return {
            "object": "list",
            "data": [record.model_dump(mode="json") for record in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": len(found) > query.limit,
        }

    @router.get("/v1/records/{record_id}", response_model=None)
    def get_record(record_id: str) -> dict[str, Any] | JSONResponse:
        """One whole record (request and response bodies) with its feedback."""
        try:
            return records.get(record_id).model_dump(mode="json")
        except UnknownRecord as error:
            return _unknown(error)

    return router
