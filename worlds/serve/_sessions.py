"""Sessions: one private world instance per client, bounded in number and freed when idle.

A server holds many clients at once. Each gets its own in-memory instance, so no client sees
another's writes; an abandoned client must not pin memory for ever, so a session idle for
longer than `idle_seconds` is closed, and no more than `max_sessions` live at once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import Clock, Instance, World

from ._catalog import WorldCatalog

log = logging.getLogger(__name__)

# What one session's instance may hold: its rows, call log and kept answers grow with what its client sends and
# is answered, so they are counted (`Session.charge`) and capped; 60 posts of 900 KB on one REST key grew the
# server by 273 MB. All sessions together hold at most MAX_TOTAL_BYTES, whatever the number of keys.
MAX_INSTANCE_BYTES = 4 << 20
MAX_TOTAL_BYTES = 128 << 20


Face = Literal["ws", "mcp", "rest"]


class SessionLimitReached(Exception):
    """Every session slot is taken, or every one of a share (`share` names whose); the client may retry once
    another closes or expires."""

    def __init__(self, live: int, limit: int, share: str | None = None) -> None:
        where = (
            f"{share} hold {live} sessions, their share of this server's"
            if share is not None
            else f"{live} sessions are live, the most this server allows"
        )
        super().__init__(
            f"{where}; close one or wait for idle ones to expire (raise the limit with --max-sessions)"
        )
        self.live = live
        self.limit = limit


class InstanceFull(Exception):
    """The session's instance holds as many bytes of calls as one client may keep (or all sessions together as
    many as the server keeps); reset it, or wait for idle sessions to close."""

    def __init__(self, used: int, limit: int, *, everyone: bool = False) -> None:
        held = "the sessions of this server hold" if everyone else "this instance holds"
        super().__init__(
            f"{held} {used} bytes of calls and answers, the most kept ({limit}); reset the instance "
            "(PUT /rest/{world}/{key}, or a reset message) to start afresh, or wait for idle sessions to close"
        )
        self.used = used
        self.limit = limit


class UnknownSession(Exception):
    """No live session has that id: it was closed, expired, or never existed."""


class NoInstance(Exception):
    """The session has no world instance yet and the server has no default world to open."""


class ResetRequest(BaseModel):
    """Which instance a session should hold: any field left out comes from the server's defaults."""

    model_config = ConfigDict(extra="forbid")

    world: str | None = Field(None, description="World name, e.g. `helpdesk`.")
    fixture: str | None = Field(
        None, description="Fixture to start from, e.g. `small_shop`; default the world's default fixture."
    )
    seed: int | None = Field(None, ge=0, description="Instance seed: picks the ids that tools generate.")
    clock: str | None = Field(None, description="fixed, tick, wall, or fixed@YYYY-MM-DD HH:MM:SS.")
    episode_id: str | None = Field(None, max_length=255, description="Your name for this episode.")

    def over(self, defaults: ResetRequest) -> ResetRequest:
        """This request with every missing field taken from `defaults`."""
        return defaults.model_copy(update=self.model_dump(exclude_none=True))


class Session:
    """One client's private instance, replaced on every reset."""

    def __init__(self, session_id: str, manager: SessionManager, face: Face = "ws") -> None:
        self.id = session_id
        self.face = face
        self.instance: Instance | None = None
        self.request: ResetRequest | None = None
        self.closed = False
        self.used_bytes = 0  # what the current instance holds, as `charge` counts it
        self._manager = manager
        self.created = self.last_used = manager.clock()

    def touch(self) -> None:
        self.last_used = self._manager.clock()

    def check_room(self) -> None:
        """InstanceFull once the instance holds its share of bytes, or all sessions the server's: asked before
        each call."""
        manager = self._manager
        if self.used_bytes >= manager.max_instance_bytes:
            raise InstanceFull(self.used_bytes, manager.max_instance_bytes)
        if manager.used_bytes >= manager.max_total_bytes:
            raise InstanceFull(manager.used_bytes, manager.max_total_bytes, everyone=True)

    def charge(self, request: int, answer: int, *, kept: int = 0) -> None:
        """Count a call against the instance's share: its request is held twice (logged, and as the rows it
        wrote, which the diff shows again), its answer once (logged), and `kept` bytes more (a reply kept to
        replay)."""
        size = 2 * request + answer + kept
        self.used_bytes += size
        self._manager.used_bytes += size

    def _release_bytes(self) -> None:
        self._manager.used_bytes -= self.used_bytes
        self.used_bytes = 0

    def plan(self, request: ResetRequest) -> ResetRequest:
        """`request` completed from this session's last reset (so a bare reset restarts the same
        fixture), else from the server's defaults, else the world's default fixture; raises NoInstance
        when it names no world."""
        base = (
            self.request.model_copy(update={"episode_id": None}) if self.request else self._manager.defaults
        )
        if request.world and base is not None and request.world != base.world:
            base = base.model_copy(update={"fixture": None})  # another world's fixture means nothing here
        merged = request.over(base)
        if merged.world and not merged.fixture:
            world = self._manager.catalog.get(merged.world)
            merged = merged.model_copy(update={"fixture": world.default_fixture})
        if not merged.world or not merged.fixture:
            missing = " and ".join(f"`{f}`" for f in ("world", "fixture") if not getattr(merged, f))
            raise NoInstance(
                f"reset needs {missing} (this server has no default); "
                f"worlds: {', '.join(self._manager.catalog.names)}"
            )
        return merged

    def reset(self, request: ResetRequest) -> Instance:
        """Open a fresh instance (closing the previous one); raises for an unknown world, fixture or clock."""
        merged = self.plan(request)
        world = self._manager.catalog.get(merged.world)
        instance = world.instance(merged.fixture, seed=merged.seed or 0, clock=Clock.parse(merged.clock))
        previous, self.instance, self.request = self.instance, instance, merged
        self._release_bytes()
        if previous is not None:
            previous.close()
        self.touch()
        return instance

    def world(self) -> World:
        """The world this session's tools come from; known before any reset when the server has a default."""
        if self.instance is not None:
            return self.instance.world
        return self._manager.catalog.get(self.plan(ResetRequest()).world)

    def require(self) -> Instance:
        """The current instance, opening the server's default one on first use."""
        if self.instance is None:
            return self.reset(ResetRequest())
        self.touch()
        return self.instance

    def state(self) -> dict[str, Any]:
        """The state document: what the instance is, every call made on it, and the diff so far."""
        instance, request = self.instance, self.request
        if instance is None or request is None:
            return {"episode_id": None, "session_id": self.id, "step_count": 0, "world": None}
        diff = instance.diff()
        return {
            "episode_id": request.episode_id or self.id,
            "session_id": self.id,
            "step_count": len(instance.log),
            "world": request.world,
            "fixture": request.fixture,
            "seed": request.seed or 0,
            "clock": request.clock or "fixed",
            "now": instance.now().isoformat(sep=" "),
            "calls": [record.model_dump(mode="json") for record in instance.log],
            "diff": diff.model_dump(mode="json"),
            "diff_summary": diff.summary(),
            "row_counts": instance.row_counts(),
        }

    def close(self) -> None:
        self.closed = True
        self._release_bytes()
        if self.instance is not None:
            self.instance.close()
            self.instance = None


class SessionManager:
    """Opens, finds, expires and closes sessions; the one place that bounds how many live."""

    def __init__(
        self,
        catalog: WorldCatalog,
        *,
        defaults: ResetRequest | None = None,
        max_sessions: int = 256,
        idle_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        max_instance_bytes: int = MAX_INSTANCE_BYTES,
        max_total_bytes: int = MAX_TOTAL_BYTES,
        rest_share: int | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        if idle_seconds <= 0:
            raise ValueError(f"idle_seconds must be positive, not {idle_seconds}")
        self.catalog = catalog
        self.defaults = defaults or ResetRequest()
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.clock = clock
        self.max_instance_bytes = max_instance_bytes
        self.max_total_bytes = max_total_bytes
        self.used_bytes = 0  # what every live session's instance holds (`Session.charge`)
        # The sessions REST keys may hold: by default half the slots. Any request under a new key opens one, so
        # without a share 22 keys on 20 sessions kept every WebSocket and /mcp client out for the idle timeout;
        # a WebSocket or an /mcp session is opened on purpose, one at a time, and may use every free slot.
        self.rest_share = rest_share or max(1, -(-max_sessions // 2))
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def load(self, request: ResetRequest) -> None:
        """Load (or build) the fixture a planned reset needs: slow the first time, so servers call it in a
        thread before `Session.reset`, which then takes about a millisecond."""
        self.catalog.get(request.world).load_fixture(request.fixture)

    def open(self, face: Face = "ws") -> Session:
        """A new empty session for a client of `face`; raises SessionLimitReached when every slot is taken,
        or (REST keys) every one of their share."""
        self.reap()
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitReached(len(self._sessions), self.max_sessions)
        if face == "rest":
            held = sum(session.face == "rest" for session in self._sessions.values())
            if held >= self.rest_share:
                raise SessionLimitReached(held, self.rest_share, "REST keys")
        session = Session(secrets.token_urlsafe(12), self, face)
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"no live session {session_id!r}: it was closed, expired or never opened")
        session.touch()
        return session

    def close(self, session_id: str) -> bool:
        """Close one session; False when it was already gone."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def reap(self) -> list[str]:
        """Close every session idle for longer than `idle_seconds`; return their ids."""
        deadline = self.clock() - self.idle_seconds
        expired = [sid for sid, s in self._sessions.items() if s.last_used < deadline]
        for session_id in expired:
            self.close(session_id)
        return expired

    async def reap_forever(self) -> None:
        """Reap on a timer, for a server's lifetime: an idle client's instance must go on time even when
        no other request arrives to notice it."""
        period = min(30.0, self.idle_seconds / 4)
        while True:
            await asyncio.sleep(period)
            expired = self.reap()
            if expired:
                log.info("closed %d idle sessions", len(expired))

    def close_all(self) -> None:
        for session_id in list(self._sessions):
            self.close(session_id)
