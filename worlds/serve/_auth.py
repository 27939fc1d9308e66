"""Who may talk to a world server: this machine by default, token holders anywhere else.

A world server runs tools on request, so it binds to loopback unless told otherwise, and
binding elsewhere needs a token that every request carries. Without a token, requests must
name a loopback host (a web page that rebinds its DNS name to 127.0.0.1 must not reach the
server) and browsers may only call it from its own origin. A server bound to loopback checks the Host
even with a token, and an empty token is refused. Request bodies are bounded in size and in the
time they take, so no client can make the server buffer without limit or hold a slot by trickling.
Refusals come in the OpenAI error shape.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from urllib.parse import urlsplit

from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_BODY_TIMEOUT_S = 30.0  # the longest a request's body may take to arrive, whole
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
FRAMING_HEADERS = [(b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'")]


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str | None) -> None:
    """Refuse a token that is empty or blank (`--token "$SECRET"` with the variable unset): a client sending an
    empty bearer would match it, and with a token the server would stop checking that requests name loopback."""
    if token is not None and not token.strip():
        raise ValueError(
            "the token is empty: pass --token SECRET with a secret (is its variable unset?), or no --token to "
            "serve only this machine"
        )


def check_bind(host: str, token: str | None) -> None:
    """Refuse an empty token, and to serve beyond this machine without a token."""
    check_token(token)
    if not is_loopback(host) and not token:
        raise ValueError(
            f"binding to {host} lets other machines run world tools; pass --token SECRET (clients then send "
            "`Authorization: Bearer SECRET`, or ?token=SECRET on a WebSocket) or bind to 127.0.0.1"
        )


def _hostname(authority: str) -> str:
    try:
        return urlsplit(f"//{authority}").hostname or ""
    except ValueError:  # a malformed Host header ("[::1"): no host at all, so refused
        return ""


def _netloc(url: str) -> str | None:
    try:
        return urlsplit(url).netloc
    except ValueError:
        return None


class Guard:
    """ASGI middleware: token check, loopback Host check, same-origin check, a body-size and body-time bound,
    and headers that keep every page out of other sites' frames."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    ) -> None:
        check_token(token)
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _unframed(send)
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message = refusal
            if scope["type"] == "websocket":
                # Closing before accepting makes the server answer the handshake with 403.
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            else:
                await _send_json(send, status, message, bearer=status == 401)
            return
        if scope["type"] == "http":
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
                await _send_json(send, 413, self._too_large(int(length)))
                return
            await self._serve_bounded(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _serve_bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the whole body first (chunked uploads carry no length), refusing it once it passes the limit."""
        chunks: list[bytes] = []
        seen = 0
        try:
            async with asyncio.timeout(self.body_timeout_s):  # a client trickling its body holds a slot
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client went away
                    chunks.append(message.get("body", b""))
                    seen += len(chunks[-1])
                    if seen > self.max_body_bytes:
                        await _send_json(send, 413, self._too_large(seen))
                        return
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await _send_json(
                send, 408, f"the request body took over {self.body_timeout_s:g} s to arrive; send it at once"
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _refusal(self, scope: Scope, headers: Headers) -> tuple[int, str] | None:
        host = headers.get("host", "")
        server = scope.get("server")
        # Bound to loopback, only loopback names reach it, token or not: a rebinding page is refused at once.
        loopback_bind = server is not None and is_loopback(str(server[0]))
        if (self.token is None or loopback_bind) and not is_loopback(_hostname(host)):
            return (
                403,
                f"host {host!r} is not loopback; this server serves only 127.0.0.1 (bind another address, "
                "with --token, to serve other names)",
            )
        if self.token is not None and not self._has_token(scope, headers):
            return (
                401,
                "missing or wrong token: send `Authorization: Bearer TOKEN` (or ?token=TOKEN on a WebSocket)",
            )
        origin = headers.get("origin")
        if origin and _netloc(origin) != host:  # "null" (sandboxed frames, files) is foreign too
            return 403, f"origin {origin!r} is not this server's; the console must be opened from {host}"
        return _cross_site(scope, headers)

    def _has_token(self, scope: Scope, headers: Headers) -> bool:
        assert self.token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode()):
            return True
        # Browsers cannot set headers on WebSockets, page loads or script tags: those may use ?token=.
        if scope["type"] == "websocket" or scope.get("method") == "GET":
            query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
            return hmac.compare_digest(query.get("token", "").encode(), self.token.encode())
        return False

    def _too_large(self, size: int) -> str:
        return f"request body is {size} bytes; this server accepts at most {self.max_body_bytes}"


def _cross_site(scope: Scope, headers: Headers) -> tuple[int, str] | None:
    """A state-changing request another site could have made without the Origin header: one the browser says
    is cross-site, or a form's body (the only kinds a page may post elsewhere without asking first)."""
    if scope["type"] != "http" or scope.get("method") in SAFE_METHODS:
        return None
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return 403, "a request from another site may not change anything here"
    kind = headers.get("content-type", "").partition(";")[0].strip().lower()
    # A form post from a page never carries an Authorization header (one that does needs CORS, never granted
    # here), so a form body with one is a program's: a vendor SDK sending Stripe-style forms to /rest/.
    if kind in FORM_TYPES and "authorization" not in headers:
        return (
            415,
            f"a {kind} body is not taken here (a page on any site can post one): send application/json",
        )
    return None


def _unframed(send: Send) -> Send:
    """`send` with headers that forbid framing every response (a foreign page could frame the console and
    trick clicks on Roll back or Approve), unless the app set its own."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name, value) for name, value in FRAMING_HEADERS if name not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


# A refusal's OpenAI error `type` and `code`, by status.
REFUSALS = {
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    408: ("invalid_request_error", "request_timeout"),
    413: ("invalid_request_error", "request_too_large"),
    415: ("invalid_request_error", "unsupported_media_type"),
}


async def _send_json(send: Send, status: int, message: str, *, bearer: bool = False) -> None:
    """A refusal in the OpenAI error shape, which the harness endpoint's clients already read."""
    kind, code = REFUSALS[status]
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
