"""The HTTP protocol the service runs under uvicorn: uvicorn's own, with a deadline on request headers.

uvicorn counts every open connection against `limit_concurrency` before anything is authenticated, and has no
bound on the time a request's headers take: 400 connections that each trickle a partial header made every
other request a 503 for as long as they held, no token needed. Here a connection waiting for a request's
headers (its first, or the next on a kept-alive connection) is closed once it has waited `header_timeout_s`,
and at most `max_waiting` connections wait at once: past that, the one that has waited longest is closed.
Connections waiting for headers therefore hold at most that share of the capacity; the rest is kept for
requests whose headers came, which the app's guard then authenticates before reading any body (the guard
bounds the time a body takes).
"""

from __future__ import annotations

import asyncio
import socket
from collections import OrderedDict
from typing import Any

HEADER_TIMEOUT_S = 10.0  # the longest a request's headers may take to arrive, whole


def _base() -> type[asyncio.Protocol]:
    """uvicorn's fastest HTTP protocol here: httptools when it is installed, else h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol


def _no_delay(transport: asyncio.Transport) -> None:
    """Send small writes at once (TCP_NODELAY). asyncio sets it only on connections accepted from a socket it
    made itself; the socket uvicorn binds for its worker processes (`--workers`) is made without naming TCP,
    so each response waited for the client's delayed ACK: 40 ms a request."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def guarded_protocol(*, max_waiting: int, header_timeout_s: float = HEADER_TIMEOUT_S) -> type[Any]:
    """A uvicorn HTTP protocol class (`uvicorn.run(..., http=...)`) whose connections may wait for a request's
    headers at most `header_timeout_s`, at most `max_waiting` of them at once (the oldest goes first)."""
    base: Any = _base()
    waiting: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        _answered: object = None  # the request cycle whose headers came last

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self._wait()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._check_headers()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self._check_headers():
                self._wait()  # kept alive: the next request's headers get the same deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait(self) -> None:
            """Start this connection's wait for headers, closing the longest waiting past `max_waiting`."""
            self._stop_waiting()
            waiting[self] = asyncio.get_running_loop().call_later(header_timeout_s, self._too_slow)
            while len(waiting) > max_waiting:
                oldest, _ = next(iter(waiting.items()))
                oldest._too_slow()

        def _check_headers(self) -> bool:
            """Whether a new request's headers have come (or the connection became a WebSocket); stops the
            wait if so."""
            cycle = getattr(self, "cycle", None)
            upgraded = self.transport.get_protocol() is not self
            fresh = cycle is not None and cycle is not self._answered and not cycle.response_complete
            if fresh or upgraded:
                self._answered = cycle
                self._stop_waiting()
            return fresh or upgraded

        def _stop_waiting(self) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def _too_slow(self) -> None:
            self._stop_waiting()
            if self.transport.get_protocol() is self and not self.transport.is_closing():
                self.transport.close()

    return GuardedProtocol
