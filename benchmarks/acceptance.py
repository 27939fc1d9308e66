"""How often each acceptance rule keeps a candidate that is no better, and how often one that is.

Simulated, no model. In each trial every task gets a true pass rate p ~ Uniform(0, 1); the incumbent's
episodes pass with probability p and the candidate's with min(p + effect, 1), independently per seed,
on the same tasks and seeds, with scores 0 or 1. The effect raises *every* task (clipped at 1, so the
true mean gain is a little under the nominal one: 0.095 for +10 points, 0.18 for +20). The three
scenarios share their draws (common random numbers), and the three rules judge the same draws:

- Atoll: `optimizer.stats.decide` with its default rule, called as the optimizer calls it;
- "mean went up": the candidate's mean score is above the incumbent's;
- "more wins than losses": more tasks improve than get worse.

Run: python benchmarks/acceptance.py [--trials 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# benchmarks/evals.py shadows the `evals` package when this folder leads sys.path: put the repository first.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from optimizer.stats import PairedScores, decide  # noqa: E402

TASKS = (20, 30, 50)
SEEDS = (1, 3, 5)
EFFECTS = (0.0, 0.10, 0.20)
RULES = ("Atoll", "mean up", "wins>losses")
ROWS = {
    "Atoll": "Atoll",
    "broken only": "  vetoed by broken task",
    "mean up": "mean went up",
    "wins>losses": "more wins than losses",
}


def run_cell(tasks: int, seeds: int, trials: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Acceptance counts per rule and effect, plus how often Atoll rejected only for a broken task."""
    accepted = {rule: np.zeros(len(EFFECTS), dtype=int) for rule in RULES}
    accepted["broken only"] = np.zeros(len(EFFECTS), dtype=int)
    names = [f"t{i}" for i in range(tasks)]
    for _ in range(trials):
        rates = rng.uniform(0.0, 1.0, size=tasks)
        incumbent = (rng.uniform(size=(tasks, seeds)) < rates[:, None]).astype(float)
        draws = rng.uniform(size=(tasks, seeds))
        for e, effect in enumerate(EFFECTS):
            candidate = (draws < np.minimum(rates + effect, 1.0)[:, None]).astype(float)
            decision = decide(
                PairedScores(
                    incumbent=dict(zip(names, incumbent.tolist(), strict=True)),
                    candidate=dict(zip(names, candidate.tolist(), strict=True)),
                )
            )
            deltas = candidate.mean(axis=1) - incumbent.mean(axis=1)
            accepted["Atoll"][e] += decision.accepted
            accepted["mean up"][e] += deltas.mean() > 0
            accepted["wins>losses"][e] += (deltas > 0).sum() > (deltas < 0).sum()
            accepted["broken only"][e] += len(decision.reasons) == 1 and bool(decision.broken_tasks)
    return accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="simulated comparisons per cell and effect")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    console = Console()

    table = Table(title=f"Acceptance rate, % of {args.trials} trials (simulated, seed {args.seed})")
    for name in ("tasks", "seeds", "rule"):
        table.add_column(name, justify="left" if name == "rule" else "right")
    for effect in EFFECTS:
        table.add_column("no better" if effect == 0 else f"+{effect * 100:.0f} pts", justify="right")

    started = time.perf_counter()
    for tasks in TASKS:
        for seeds in SEEDS:
            accepted = run_cell(tasks, seeds, args.trials, rng)
            for row, (rule, label) in enumerate(ROWS.items()):
                cells = [f"{100 * count / args.trials:.1f}" for count in accepted[rule]]
                last = row == len(ROWS) - 1
                table.add_row(
                    str(tasks) if row == 0 else "",
                    str(seeds) if row == 0 else "",
                    label,
                    *cells,
                    end_section=last,
                )
    console.print(table)
    console.print(
        f"{args.trials} trials per cell and effect; a 5% rate is measured to about ±1.4 points (2 s.e.). "
        "Atoll = decide() with alpha 0.05, min effect 0.02, 2,000 bootstrap resamples; "
        "'vetoed by broken task': trials that passed the sign test and the bound but broke a task "
        "the incumbent always passed. "
        f"Took {time.perf_counter() - started:.0f} s."
    )


if __name__ == "__main__":
    main()
