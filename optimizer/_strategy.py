"""Parent selection: which harness the next proposal starts from.

Greedy always improves the incumbent. Pareto (GEPA's idea) keeps every candidate that leads on some
val task and draws parents from them, so a change that helped one kind of task is not lost because it
did not win overall. A strategy is a small protocol: pass your own to `optimize(strategy=...)`.
"""

from __future__ import annotations

import random
from typing import Protocol

from atoll.evals import BatchResult
from atoll.harnesses import Harness

Candidate = tuple[Harness, BatchResult]  # a harness with its val evaluation


class ParentStrategy(Protocol):
    """Chooses the parent of the next proposal from the incumbent and the candidates evaluated on val."""

    name: str

    def choose(self, incumbent: Candidate, pool: list[Candidate], rng: random.Random) -> Harness: ...


class Greedy:
    """Always the incumbent: the simplest hill climb."""

    name = "greedy"

    def choose(self, incumbent: Candidate, pool: list[Candidate], rng: random.Random) -> Harness:
        return incumbent[0]


class Pareto:
    """A harness leading on at least one val task, drawn with weight by how many tasks it leads."""

    name = "pareto"

    def choose(self, incumbent: Candidate, pool: list[Candidate], rng: random.Random) -> Harness:
        if not pool:
            return incumbent[0]
        entries = [incumbent, *pool]
        means = [
            {
                task: sum(s or 0.0 for s in scores) / len(scores) if scores else 0.0
                for task, scores in gate.scores().items()
            }
            for _, gate in entries
        ]
        best = {task: max(m.get(task, 0.0) for m in means) for task in means[0]}
        leads = [sum(1 for task, top in best.items() if m.get(task, 0.0) >= top) for m in means]
        if not any(leads):
            return incumbent[0]
        return rng.choices([harness for harness, _ in entries], weights=leads)[0]


STRATEGIES: dict[str, ParentStrategy] = {strategy.name: strategy for strategy in (Greedy(), Pareto())}
