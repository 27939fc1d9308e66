"""The instance clock: what tools and SQL date functions see as "now".

Runs must be reproducible, so the default clock is frozen at the fixture's epoch; `tick`
advances a fixed step per tool call, and only `wall` reads the real time (for people
poking a world by hand).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from .base import TIMESTAMP_FORMAT as TIMESTAMP_FORMAT  # the clock's text form, read here by the instance

ClockMode = Literal["fixed", "tick", "wall"]
# The times a clock may start at: tools subtract spans (30 days, a year) and tick clocks add one step per call,
# so a start near year 1 or 9999 (`fixed@0001-01-01`, `tick@9999-12-31`) would break a later call.
EARLIEST = datetime(1900, 1, 1)
LATEST = datetime(9000, 12, 31, 23, 59, 59)
MAX_STEP_SECONDS = 86_400.0  # a day per call


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
    step_seconds: float = Field(60.0, gt=0, le=MAX_STEP_SECONDS, allow_inf_nan=False)

    @field_validator("start")
    @classmethod
    def _in_range(cls, start: datetime | None) -> datetime | None:
        if start is not None and not EARLIEST <= start.replace(tzinfo=None) <= LATEST:
            raise ValueError(
                f"clock start {start.isoformat(sep=' ')}: a clock starts between {EARLIEST:%Y-%m-%d} and "
                f"{LATEST:%Y-%m-%d}"
            )
        return start

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
        try:
            return cls(mode=mode, start=parse_timestamp(start) if start else None)
        except (TypeError, ValueError) as error:  # ValidationError is a ValueError
            if not isinstance(error, ValidationError):
                raise ValueError(f"clock {spec!r}: {start!r} is not a time (YYYY-MM-DD HH:MM:SS)") from None
            raise ValueError(
                f"clock {spec!r}: {error.errors()[0]['msg'].removeprefix('Value error, ')}"
            ) from None

    def at(self, epoch: datetime, calls_made: int) -> datetime:
        """The time seen after `calls_made` tool calls on an instance whose fixture epoch is `epoch`."""
        if self.mode == "wall":
            return datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        start = self.start or epoch
        if self.mode == "tick":
            try:
                return start + timedelta(seconds=self.step_seconds * calls_made)
            except OverflowError:  # millions of calls a day apart: time stops at the last second there is
                return datetime.max.replace(microsecond=0)
        return start
