"""Who may talk to a world server: this machine by default, token holders anywhere else.

A world server runs tools on request, so it binds to loopback unless told otherwise, and
binding elsewhere needs a token that every request carries. Without a token, requests must
name a loopback host (a web page that rebinds its DNS name to 127.0.0.1 must not reach the
server) and browsers may only call it from its own origin. Request bodies are bounded so no
client can make the server buffer without limit.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from urllib.parse import urlsplit

from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 1 << 20


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token."""
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
    """ASGI middleware: token check, loopback Host check, same-origin check and a body-size bound."""

    def __init__(
        self, app: ASGIApp, *, token: str | None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ) -> None:
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message = refusal
            if scope["type"] == "websocket":
                # Closing before accepting makes the server answer the handshake with 403.
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            else:
                await _send_json(send, status, {"error": message}, bearer=status == 401)
            return
        if scope["type"] == "http":
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
                await _send_json(send, 413, {"error": self._too_large(int(length))})
                return
            await self._serve_bounded(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _serve_bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the whole body first (chunked uploads carry no length), refusing it once it passes the limit."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_body_bytes:
                await _send_json(send, 413, {"error": self._too_large(seen)})
                return
            if not message.get("more_body", False):
                break
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
        if self.token is None:
            if not is_loopback(_hostname(host)):
                return (
                    403,
                    f"host {host!r} is not loopback; this server (started without --token) serves only 127.0.0.1",
                )
        elif not self._has_token(scope, headers):
            return (
                401,
                "missing or wrong token: send `Authorization: Bearer TOKEN` (or ?token=TOKEN on a WebSocket)",
            )
        origin = headers.get("origin")
        if origin and _netloc(origin) != host:  # "null" (sandboxed frames, files) is foreign too
            return 403, f"origin {origin!r} is not this server's; the console must be opened from {host}"
        return None

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


async def _send_json(send: Send, status: int, payload: dict, *, bearer: bool = False) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
