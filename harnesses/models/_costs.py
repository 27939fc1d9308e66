"""Where an embedded model's call spends its time: tokens kept, restored and read, tokens written,
and the seconds of each, so a benchmark can say where an episode's seconds go.

The engine reports one `CallCost` per generation to whoever is watching (`watching()`); nobody
watches in a normal run, and then reporting costs nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

How = Literal["kept", "restored", "read"]


@dataclass(frozen=True)
class SegmentCost:
    """One prompt segment: its size, how the engine got it into the context, and how it begins
    (enough for a reader to tell a system head from a user turn or a tool result)."""

    tokens: int
    how: How
    opening: str


@dataclass
class CallCost:
    model: str
    segments: list[SegmentCost] = field(default_factory=list)
    written_tokens: int = 0
    restore_s: float = 0.0
    read_s: float = 0.0
    write_s: float = 0.0
    total_s: float = 0.0
    drafted_tokens: int = 0  # proposed by prompt lookup
    accepted_tokens: int = 0  # of those, the ones the model agreed with

    @property
    def read_tokens(self) -> int:
        return sum(s.tokens for s in self.segments if s.how == "read")

    @property
    def other_s(self) -> float:
        """Python's share: templates, tokenising, sampling, bookkeeping."""
        return max(0.0, self.total_s - self.restore_s - self.read_s - self.write_s)


_watchers: list[list[CallCost]] = []
_watchers_lock = threading.Lock()


@contextlib.contextmanager
def watching() -> Iterator[list[CallCost]]:
    """Collect the cost of every local generation made while inside."""
    seen: list[CallCost] = []
    with _watchers_lock:
        _watchers.append(seen)
    try:
        yield seen
    finally:
        with _watchers_lock:
            _watchers.remove(seen)


def watched() -> bool:
    return bool(_watchers)


def report(cost: CallCost) -> None:
    with _watchers_lock:
        for seen in _watchers:
            seen.append(cost)
