"""Episodes a minute on the embedded models, the engine before issue 25 beside the engine now.

Each side plays the first --tasks val tasks of evals/helpdesk once (k=1, one at a time) with the
shipped harness of its own tree, no response cache and no runs store, so every model call is really
made: "before" is a git worktree of --before (default: the commit before the engine kept evaluated
prompts, e42d19e~1), "after" is this checkout. Each side runs in a child process of its own, with
that tree first on the import path and a fresh cache folder (the model files linked, not rebuilt).

What changed between the two: the engine saves and restores each agent's evaluated prompt (no
re-reading across steps, hand-offs and episodes), a local call's timeout counts after its prompt is
read, a hermes call ends at `</tool_call>`, native demos are conversations, and a failed answer is
never replayed. A model the "before" tree does not know (local/qwen2.5-coder-1.5b was added after it)
is measured after only; its before is the issue's own probe (17 val episodes in 17.6 minutes).

Only one process should use the cores while it runs.

Run: python benchmarks/episodes.py [--tasks 6] [--model local/gemma-3-270m ...] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.harnesses.models._catalog import CATALOG
from atoll.worlds import cache_dir

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "e42d19e~1"

# Runs in the child, inside the tree it measures: prints one JSON line.
PLAY = """
import asyncio, json, sys, time
from atoll.evals import evaluate_batch, load_suite
from atoll.harnesses.models import get_model
model, count = sys.argv[1], int(sys.argv[2])
tasks = [t.id for t in load_suite("evals/helpdesk").select(split="val")][:count]
started = time.perf_counter()
result = asyncio.run(evaluate_batch("harnesses/support_agent", "evals/helpdesk", model=get_model(model),
                                    tasks=tasks, k=1, concurrency=1, reuse=False))
print(json.dumps({
    "wall": time.perf_counter() - started,
    "durations": [r.episode.duration_s for r in result.results],
    "calls": [r.episode.usage.model_calls for r in result.results],
    "passed": sum(r.grade.passed for r in result.results),
}))
"""


def knows(tree: Path, model: str) -> bool:
    catalog = (tree / "harnesses" / "models" / "_catalog.py").read_text()
    return f'name="{model.removeprefix("local/")}"' in catalog


def play(tree: Path, model: str, tasks: int) -> dict:
    """One side's batch, in a child process with `tree` first on the path and an empty response cache."""
    with tempfile.TemporaryDirectory(prefix="atoll-episodes-") as fresh:
        for shared in ("models", "engine"):
            if (cache_dir() / shared).exists():
                os.symlink(cache_dir() / shared, Path(fresh) / shared)
        env = os.environ | {"PYTHONPATH": str(tree), "ATOLL_CACHE_DIR": fresh}
        done = subprocess.run(
            [sys.executable, "-c", PLAY, model, str(tasks)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{model} in {tree}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(side: str, model: str, figures: dict) -> list[str]:
    episodes = len(figures["durations"])
    return [
        model,
        side,
        f"{episodes / figures['wall'] * 60:.2f}",
        f"{figures['wall'] / episodes:.1f}",
        f"{statistics.median(figures['durations']):.1f}",
        f"{statistics.median(figures['calls']):g}",
        f"{figures['passed']}/{episodes}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=6, help="val tasks per side")
    parser.add_argument("--model", action="append", help="embedded models (default: every one)")
    parser.add_argument("--before", default=BEFORE, help="the git revision measured as before")
    args = parser.parse_args()
    console = Console(width=200)
    table = Table(
        "model",
        "engine",
        "episodes / min",
        "s / episode (wall)",
        "median episode s",
        "median model calls",
        "passed",
        title=f"The shipped harness on the first {args.tasks} helpdesk val tasks, no cache, one at a time",
    )
    with tempfile.TemporaryDirectory(prefix="atoll-before-") as scratch:
        before = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(before), args.before],
            check=True,
        )
        try:
            for model in args.model or [f"local/{name}" for name in CATALOG]:
                for side, tree in (("before", before), ("after", ROOT)):
                    if not knows(tree, model):
                        console.print(f"[dim]{model}: not in the {side} tree's catalog[/]")
                        continue
                    console.print(f"[dim]{model} {side} ...[/]")
                    table.add_row(*row(side, model, play(tree, model, args.tasks)))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False
            )
    console.print(table)


if __name__ == "__main__":
    main()
