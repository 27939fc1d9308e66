"""The HTTP protocol every Atoll server runs under uvicorn (`optimize serve`, with or without a harness, and
`optimize mcp --http`): uvicorn's own, with a deadline on request headers and a bounded share for slow clients.

uvicorn counts every open connection against `limit_concurrency` before anything is authenticated, and has no
bound on the time a request's headers take: 400 connections that each trickle a partial header made every
other request a 503 for as long as they held, no token needed. Here a connection is *waiting* from the moment
it may send a request (its first, or the next on a kept-alive connection) until that request has arrived
whole, headers and body: its headers get `header_timeout_s` (the app's guard bounds the body's time), and at
most `max_waiting` connections wait at once. Past that, the waiting connection that has sent the fewest bytes
a second is closed (the newest first among equals, and never the one just accepted), so a burst of silent
connections closes its own members before a client halfway through its headers, and trickling clients,
headers or body, never hold more than that share: the rest of the capacity is kept for requests that came
whole.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

HEADER_TIMEOUT_S = 10.0  # the longest a request's headers may take to arrive, whole
GRACE_S = 1.0  # a connection's rate counts its bytes over at least this long: a new one is not fast yet
EXTRA_CONNECTIONS = 64  # connections beyond the busy ones: keep-alives, probes, the console


def _base() -> type[asyncio.Protocol]:
    """uvicorn's fastest HTTP protocol here: httptools when it is installed, else h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol


def connection_limits(busy: int) -> tuple[int, int]:
    """(uvicorn's `limit_concurrency`, `max_waiting`) for a server that answers `busy` requests or sessions
    at once: waiting connections may hold a quarter of the capacity, never all of it."""
    limit = busy + EXTRA_CONNECTIONS
    return limit, max(16, limit // 4)


def check_port(host: str, port: int) -> None:
    """ValueError, in one line, when `host:port` cannot be bound (another server holds it, or the address is
    not this machine's): checked before a server says it is serving, where uvicorn would log an ERROR."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is free
            probe.bind(address)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValueError(
            f"cannot serve on {host}:{port}: {reason} (is another server using the port? pick one with --port)"
        ) from None


def _no_delay(transport: asyncio.Transport) -> None:
    """Send small writes at once (TCP_NODELAY). asyncio sets it only on connections accepted from a socket it
    made itself; the socket uvicorn binds for its worker processes (`--workers`) is made without naming TCP,
    so each response waited for the client's delayed ACK: 40 ms a request."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def guarded_protocol(*, max_waiting: int, header_timeout_s: float = HEADER_TIMEOUT_S) -> type[Any]:
    """A uvicorn HTTP protocol class (`uvicorn.run(..., http=...)`) whose connections may wait for a request's
    headers at most `header_timeout_s`, at most `max_waiting` of them waiting for a whole request at once."""
    base: Any = _base()
    # Each waiting connection, with its header deadline (None once the headers came and the body is awaited).
    waiting: dict[Any, asyncio.TimerHandle | None] = {}

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        _since = 0.0  # when this connection began to wait
        _received = 0  # the bytes it has sent since

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self._wait()

        def data_received(self, data: bytes) -> None:
            self._received += len(data)
            super().data_received(data)
            self._check_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # Kept alive: the next request gets the same deadline and share, unless it came whole already
            # (pipelined) and is being answered.
            if not self.transport.is_closing() and not self._check_request():
                self._wait()
                self._check_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait(self) -> None:
            """Start this connection's wait for a request, closing the slowest waiting past `max_waiting`."""
            self._stop_waiting()
            self._since, self._received = time.monotonic(), 0
            waiting[self] = asyncio.get_running_loop().call_later(header_timeout_s, self._too_slow)
            while len(waiting) > max_waiting:
                _slowest(waiting, but=self)._too_slow()

        def _check_request(self) -> bool:
            """Whether the latest request came whole and is being answered (or the connection became a
            WebSocket): it waits no more. Its headers alone end the header deadline (the guard bounds the
            body's time), but not the wait."""
            if self.transport.get_protocol() is not self:  # upgraded: the WebSocket's own limits apply
                self._stop_waiting()
                return True
            cycle = getattr(self, "cycle", None)
            if cycle is None or cycle.response_complete:  # no request since the last answer
                return False
            timer = waiting.get(self)
            if timer is not None:
                timer.cancel()
                waiting[self] = None
            if cycle.more_body:
                return False
            self._stop_waiting()
            return True

        def _stop_waiting(self) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def _too_slow(self) -> None:
            self._stop_waiting()
            if self.transport.get_protocol() is self and not self.transport.is_closing():
                self.transport.close()

    return GuardedProtocol


def _slowest(waiting: dict[Any, Any], *, but: Any) -> Any:
    """The waiting connection that has sent the fewest bytes a second (over at least GRACE_S), the newest
    among equals; never `but`, the connection just accepted, unless it waits alone."""
    now = time.monotonic()
    others = [connection for connection in waiting if connection is not but] or [but]
    return min(
        others,
        key=lambda c: (c._received / max(now - c._since, GRACE_S), -c._since),
    )
