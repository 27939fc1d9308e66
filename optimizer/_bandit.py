"""Which proposer goes next: Thompson sampling over each one's record of getting past the screen.

Round-robin spends as many proposals on an operator that never gets a candidate past the screen
as on one that often does. Each proposer keeps a Beta posterior of its success rate; every
iteration draws once from each (with the iteration's own seeded RNG, so a run repeats and a
resumed run makes the same choices) and tries them best draw first, falling through those with
nothing to propose.

Rewards. A candidate that passes the screen scores 1 success; one the gate then accepts scores
1 more (2 in all), because an accepted variant is what the run exists for. A candidate screened
out or invalid scores 1 failure, and so does a slot spent on nothing but repeats of candidates
already tried (a repeat passed over for a new proposal is not recorded and scores nothing). The
bandit only orders the proposers: what a proposer sees (train episodes) and how the gate judges
(the unchanged rule on val) do not depend on it, and the accept bonus is one operator-level bit
per decision.

Priors: the same counts from past runs on the same harness name, at half weight (they started
from other incumbents), fixed when the run starts so a resume reads the same ones.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

SCREEN_PASS = 1.0
ACCEPT_BONUS = 1.0
FAILURE = 1.0
PAST_WEIGHT = 0.5
PASSED_SCREEN = ("reject", "void")
FAILED = ("screened_out", "invalid", "none", "duplicate")

Counts = dict[str, tuple[float, float]]


def reward(verdict: str | None) -> tuple[float, float] | None:
    """(successes, failures) a proposal's verdict adds to its operator; None if undecided."""
    if verdict == "accept":
        return SCREEN_PASS + ACCEPT_BONUS, 0.0
    if verdict in PASSED_SCREEN:
        return SCREEN_PASS, 0.0
    if verdict in FAILED:
        return 0.0, FAILURE
    return None


def tally(steps: Iterable[tuple[str, str | None]], weight: float = 1.0) -> Counts:
    """Per operator, weighted (successes, failures) over (operator, verdict) pairs."""
    counts: Counts = {}
    for operator, verdict in steps:
        gained = reward(verdict)
        if gained is None or operator == "none":
            continue
        wins, losses = counts.get(operator, (0.0, 0.0))
        counts[operator] = (wins + weight * gained[0], losses + weight * gained[1])
    return counts


class Bandit:
    """Thompson sampling over named proposers with Beta(1 + successes, 1 + failures) posteriors."""

    def __init__(self, names: Sequence[str], priors: Mapping[str, Sequence[float]] | None = None) -> None:
        self.names = list(dict.fromkeys(names))
        self.counts: Counts = {name: (0.0, 0.0) for name in self.names}
        for name, (wins, losses) in (priors or {}).items():
            if name in self.counts:
                self.counts[name] = (float(wins), float(losses))

    def record(self, operator: str, verdict: str | None) -> None:
        for name, (wins, losses) in tally([(operator, verdict)]).items():
            if name in self.counts:
                before = self.counts[name]
                self.counts[name] = (before[0] + wins, before[1] + losses)

    def order(self, rng: random.Random) -> list[str]:
        """The proposers to try, best posterior draw first; equal draws keep the given order."""
        draws = {
            name: rng.betavariate(1.0 + wins, 1.0 + losses) for name, (wins, losses) in self.counts.items()
        }
        return sorted(self.names, key=lambda name: -draws[name])
