"""The OpenAI chat-completions wire format, as far as the endpoint speaks it.

Requests are validated here (bounded, with errors that name the field); responses and stream chunks
are built here in the shapes the official `openai` client parses. Fields a client sends that Atoll
does not use (`tools`, `tool_choice`, `logprobs`, ...) are accepted and kept in the record: the
harness decides the tools, so a client's own are not offered to the model.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import from_json
from starlette.requests import Request

from atoll.evals import MAX_SEED
from atoll.harnesses import StepAnswer

MAX_MESSAGES = 512


class ChatRequest(BaseModel):
    """A `POST /v1/chat/completions` body."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200, description="A served harness, or `<harness>/<agent>`.")
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int = Field(1, ge=1, le=1, description="One answer per request.")
    metadata: dict[str, Any] | None = Field(
        None,
        description="`atoll_context` (an object, or its JSON text) is what the prompt template sees as "
        "`task`; `atoll_session` groups calls into a session; `atoll_fixture` names the world fixture "
        "the application's state corresponds to (drafted tasks start from it).",
    )
    user: str | None = None

    @field_validator("messages")
    @classmethod
    def _roles(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, message in enumerate(messages):
            if not isinstance(message.get("role"), str):
                raise ValueError(f"messages[{i}] has no role")
            calls = message.get("tool_calls")
            for j, call in enumerate(calls if isinstance(calls, list) else []):
                function = call.get("function") if isinstance(call, dict) else None
                arguments = function.get("arguments") if isinstance(function, dict) else None
                if isinstance(arguments, str) and _too_deep(arguments):
                    raise ValueError(
                        f"messages[{i}].tool_calls[{j}].function.arguments: JSON nested deeper than any "
                        "tool takes"
                    )
        return messages

    @field_validator("metadata")
    @classmethod
    def _atoll_fields(cls, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """Checked before the model is paid: a session id goes back in a header, and a seed into task files."""
        metadata = metadata or {}
        if metadata.get("atoll_session") not in (None, ""):
            session_id(metadata["atoll_session"], "metadata.atoll_session")
        if metadata.get("atoll_seed") is not None:
            seed = metadata["atoll_seed"]
            if isinstance(seed, bool) or not re.fullmatch(r"\d{1,19}", str(seed)) or int(seed) > MAX_SEED:
                raise ValueError(
                    f"metadata.atoll_seed: an integer from 0 to {MAX_SEED}; got {str(seed)[:40]!r}"
                )
        return metadata or None

    def sampling(self) -> dict[str, Any]:
        """The client's sampling parameters, which override the harness's."""
        given = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_completion_tokens or self.max_tokens,
            "stop": [self.stop] if isinstance(self.stop, str) else self.stop,
            "seed": self.seed,
        }
        return {name: value for name, value in given.items() if value is not None}

    def context(self) -> dict[str, Any]:
        """`metadata.atoll_context` as an object (an OpenAI client may only send strings in metadata)."""
        value = (self.metadata or {}).get("atoll_context")
        if value is None:
            return {}
        if isinstance(value, str):
            try:  # pydantic's parser bounds the depth: JSON text nested past it is refused, not a crash
                value = from_json(value)
            except ValueError as error:
                raise RequestError(f"metadata.atoll_context: not JSON ({error})") from None
        if not isinstance(value, dict):
            raise RequestError("metadata.atoll_context: must be a JSON object")
        return value

    def session(self, header: str | None) -> str | None:
        """The session the client named: the `x-atoll-session` header, else `metadata.atoll_session`
        (checked when the request was parsed); RequestError naming the header when it is no session id."""
        if header:
            try:
                return session_id(header, "x-atoll-session")
            except ValueError as error:
                raise RequestError(f"header {error}") from None
        named = (self.metadata or {}).get("atoll_session")
        return str(named) if named not in (None, "") else None


def _too_deep(text: str) -> bool:
    """Whether JSON text nests past pydantic's parser's depth (about 200): the harness reads a resent tool
    call's arguments with Python's recursive parser, which such text crashes."""
    try:
        from_json(text)
    except ValueError as error:
        return "recursion limit" in str(error)
    return False


_SESSION_ID = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?")


def session_id(value: Any, where: str) -> str:
    """`value` as a session id: 1 to 200 visible ASCII characters (spaces inside), a string or a number, so
    that it goes back in the `x-atoll-session` header as it came; ValueError naming `where` otherwise."""
    text = str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None
    if text is None or not _SESSION_ID.fullmatch(text):
        raise ValueError(
            f"{where}: a session id is 1 to 200 visible ASCII characters (letters, digits, punctuation), "
            f"no control characters; got {str(value)[:40]!r}"
        )
    return text


class RequestError(ValueError):
    """A request the endpoint cannot serve; `status` and `code` go into the OpenAI-style error body, and
    `headers` name the record when the failed call was recorded."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        code: str = "invalid_request",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.headers = status, code, headers or {}


def parse_request(body: bytes) -> ChatRequest:
    """The body as a ChatRequest, or a RequestError naming the first wrong field."""
    try:
        return ChatRequest.model_validate_json(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        message = first["msg"].removeprefix("Value error, ")
        raise RequestError(message if message.startswith(f"{where}.") else f"{where}: {message}") from None


def query_params(request: Request) -> dict[str, str]:
    """A GET's query for its model, without `token`: docs/serving.md lets a GET carry the token as ?token=
    (the guard checks it), and the query models forbid keys they do not know."""
    return {key: value for key, value in request.query_params.items() if key != "token"}


ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def error_body(message: str, code: str, status: int = 400) -> dict[str, Any]:
    """The OpenAI error shape; its `type` follows the status as OpenAI's does (5xx: `server_error`)."""
    kind = "server_error" if status >= 500 else ERROR_TYPES.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _message(answer: StepAnswer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in answer.tool_calls
        ]
    return message


def _usage(answer: StepAnswer) -> dict[str, int]:
    return {
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": answer.usage.completion_tokens,
        "total_tokens": answer.usage.total_tokens,
    }


def completion(completion_id: str, model: str, answer: StepAnswer, fingerprint: str) -> dict[str, Any]:
    """The `chat.completion` body; `model` is the served name the client asked for."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [
            {"index": 0, "message": _message(answer), "finish_reason": answer.finish_reason, "logprobs": None}
        ],
        "usage": _usage(answer),
    }


def stream_events(body: dict[str, Any], *, include_usage: bool) -> Iterator[str]:
    """A finished completion as server-sent events: the role, the content, the tool calls, the finish
    reason, the usage when asked, then `[DONE]` (the model is asked whole, so it is streamed whole)."""
    choice = body["choices"][0]
    message = choice["message"]
    head = {key: body[key] for key in ("id", "created", "model", "system_fingerprint")}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        payload = {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **extra,
        }
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        yield chunk({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        usage = {**head, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"]}
        yield f"data: {json.dumps(usage)}\n\n"
    yield "data: [DONE]\n\n"
