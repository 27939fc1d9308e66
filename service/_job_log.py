"""A job's events in this process: what `GET /jobs/{id}/events` replays to a late subscriber, then
streams live."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

EVENT_LOG = 2000  # events kept per job for late subscribers; older ones are dropped


class JobLog:
    """A job's events in this process: a bounded history, and a wake-up for those following it live.
    Events may come from a worker thread (a progress callback), so they are appended under a lock and
    the followers are woken in the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: deque[dict[str, Any]] = deque(maxlen=EVENT_LOG)
        self.task: asyncio.Task[None] | None = None
        self.cancelling = False  # cancelled by request (status cancelled), not by a stopping service
        self.done = False
        self._seq = 0
        self._lock = threading.Lock()
        self._changed = asyncio.Event()

    def add(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            self.events.append({"id": self._seq, "event": event, "data": data})
        self.loop.call_soon_threadsafe(self._wake)

    @property
    def last(self) -> int:
        """The id of the newest event so far."""
        with self._lock:
            return self._seq

    def close(self) -> None:
        self.done = True
        self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[dict[str, Any]]:
        while True:
            changed = self._changed  # taken before reading, so an event added meanwhile still wakes us
            with self._lock:
                new = [event for event in self.events if event["id"] > after]
            for event in new:
                after = event["id"]
                yield event
            if self.done and not new:
                return
            if not new:
                await changed.wait()
