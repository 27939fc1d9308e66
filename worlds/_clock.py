"""The instance clock: what tools and SQL date functions see as "now".

Runs must be reproducible, so the default clock is frozen at the fixture's epoch; `tick`
advances a fixed step per tool call, and only `wall` reads the real time (for people
poking a world by hand).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from .base import TIMESTAMP_FORMAT as TIMESTAMP_FORMAT  # the clock's text form, read here by the instance

ClockMode = Literal["fixed", "tick", "wall"]


def parse_timestamp(text: str | datetime) -> datetime:
    """Accept `YYYY-MM-DD HH:MM:SS`, ISO 8601 or a datetime; return a naive UTC datetime."""
    if isinstance(text, datetime):
        moment = text
    else:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0)


class Clock(BaseModel):
    """How an instance's time moves. `start` defaults to the fixture's epoch."""

    mode: ClockMode = "fixed"
    start: datetime | None = None
    step_seconds: float = 60.0

    @classmethod
    def parse(cls, spec: str | Clock | None) -> Clock:
        """`"fixed"`, `"tick"`, `"wall"`, `"fixed@2026-03-02 09:00:00"` or a Clock."""
        if spec is None:
            return cls()
        if isinstance(spec, Clock):
            return spec
        mode, _, start = spec.partition("@")
        if mode not in ("fixed", "tick", "wall"):
            raise ValueError(
                f"clock {spec!r}: the mode must be fixed, tick or wall (e.g. 'tick@2026-03-02 09:00')"
            )
        return cls(mode=mode, start=parse_timestamp(start) if start else None)

    def at(self, epoch: datetime, calls_made: int) -> datetime:
        """The time seen after `calls_made` tool calls on an instance whose fixture epoch is `epoch`."""
        if self.mode == "wall":
            return datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        start = self.start or epoch
        if self.mode == "tick":
            return start + timedelta(seconds=self.step_seconds * calls_made)
        return start
