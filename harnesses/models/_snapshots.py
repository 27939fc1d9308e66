"""Saved evaluated states of an embedded model's context, so a prompt read once is never read again.

One llama.cpp context holds one conversation. An episode of a harness with sub-agents alternates
between agents whose heads (system prompt, tool schemas, demos) differ, and a batch alternates
between episodes: each switch used to throw away what the context had read. A `Snapshot` is the
KV state of some leading segments of a prompt, with the tokens and segment bounds it was
evaluated for; `Snapshots` keeps the most recently used ones within a byte budget and finds the
one that holds the most leading segments of a new prompt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

# Room for a few agents' heads and conversations: a 3k-token state of the 1.5B model is ~85 MB.
SNAPSHOT_BYTES = 1 << 30


@dataclass(frozen=True)
class Snapshot:
    """The state after evaluating `tokens`, segment by segment, cut at `bounds` (cumulative ends)."""

    tokens: tuple[int, ...]
    bounds: tuple[int, ...]
    data: bytes

    def segments_of(self, bounds: Sequence[int], tokens: Sequence[int]) -> int:
        """How many leading segments of a prompt (`bounds`, `tokens`) this state holds exactly."""
        held = 0
        for mine, theirs in zip(self.bounds, bounds, strict=False):
            if mine != theirs or mine > len(tokens):
                break
            start = self.bounds[held - 1] if held else 0
            if tuple(tokens[start:mine]) != self.tokens[start:mine]:
                break
            held += 1
        return held


class Snapshots:
    """The most recently used snapshots, at most `budget` bytes of state in all."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._kept: OrderedDict[tuple[tuple[int, ...], tuple[int, ...]], Snapshot] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def holds(self, tokens: tuple[int, ...], bounds: Sequence[int]) -> bool:
        return (tokens, tuple(bounds)) in self._kept

    def put(self, snapshot: Snapshot) -> None:
        """Keep `snapshot`, dropping the least recently used ones past the budget (and itself, if alone too big)."""
        key = (snapshot.tokens, snapshot.bounds)
        self._kept[key] = snapshot
        self._kept.move_to_end(key)
        while self._kept and sum(len(kept.data) for kept in self._kept.values()) > self.budget:
            self._kept.popitem(last=False)

    def best(self, bounds: Sequence[int], tokens: Sequence[int]) -> tuple[Snapshot | None, int]:
        """The snapshot holding the most leading segments of the prompt, and how many; (None, 0) if none."""
        found, most = None, 0
        for snapshot in self._kept.values():
            held = snapshot.segments_of(bounds, tokens)
            if held > most:
                found, most = snapshot, held
        if found is not None:
            self._kept.move_to_end((found.tokens, found.bounds))
        return found, most
