"""FastAPI's own refusals (an unknown route, a method the route lacks, a path or body parameter of the wrong
type) in the error shape every other refusal of an Atoll server has: OpenAI's, which is Stripe's too
(`{"error": {"message", "type", "param", "code"}}`), never FastAPI's `{"detail": …}`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

_CODES = {404: "not_found", 405: "method_not_allowed"}


def error_shape(message: str, code: str, status: int, param: str | None = None) -> dict[str, Any]:
    """The OpenAI error body; its `type` follows the status (5xx: `server_error`)."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def answer_errors_in_shape(app: FastAPI) -> None:
    """Install the handlers that put FastAPI's refusals in the shape."""

    @app.exception_handler(HTTPException)
    async def refused(request: Request, error: HTTPException) -> JSONResponse:
        message = str(error.detail)
        if error.status_code == 404:
            message = f"no route {request.method} {request.url.path}"
        elif error.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return JSONResponse(
            error_shape(message, _CODES.get(error.status_code, "invalid_request"), error.status_code),
            status_code=error.status_code,
            headers=dict(error.headers or {}),
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        problems = error.errors()
        first = problems[0] if problems else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ())) or "request"
        message = f"{where}: {str(first.get('msg', 'invalid'))[:500]}"
        return JSONResponse(error_shape(message, "invalid_request", 400, where), status_code=400)
