"""Acting episodes on the embedded engine, an earlier engine beside this checkout, side by side.

Each side plays the first --tasks val tasks of evals/helpdesk once (k=1, no response cache, so every
model call is really made; as many episodes in flight as the side's engine writes answers at once,
at most --concurrency) with the shipped support agent of its own tree, its triage agent made to act
(`tool_choice: first`, what `require_first_call` proposes) unless --as-shipped. "before" is a git
worktree of --before (default: the engine as issue 34 found it, with only its cost reporting
added), "after" is this checkout. Each side runs in a child process of its own, with its tree
first on the import path and a fresh cache folder (the model files linked).

Printed per side: minutes for the batch, seconds an episode, pass^1; tokens read and written an
episode and the tokens read by source (the agent's head and demos, read once per agent and process;
user turns and hand-offs; tool results; the agent's own earlier answers; the answer's opening); the
seconds of an episode spent restoring snapshots, reading, writing, in the engine's Python and
outside the engine; the rates reached while reading and writing. Then how many tasks passed or failed
alike on both sides. Only one process should use the cores while it runs.

Run: python benchmarks/episodes.py [--tasks 50] [--model local/qwen2.5-coder-1.5b] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.worlds import cache_dir

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "7031247"  # the engine issue 34 started from, with its cost reporting added
SOURCES = ("head and demos", "user turn or hand-off", "tool result", "own earlier answer", "answer opening")

# Runs in the child, inside the tree it measures: prints one JSON line.
PLAY = r"""
import asyncio, json, shutil, sys, tempfile, time
from pathlib import Path
import yaml
from atoll.evals import evaluate_batch, load_suite
from atoll.harnesses.models import _costs, get_model

model, count, acting, concurrency = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
harness = Path(tempfile.mkdtemp()) / "support_agent"
shutil.copytree("harnesses/support_agent", harness)
if acting:
    spec = yaml.safe_load((harness / "harness.yaml").read_text())
    spec["agents"][spec["entry"]]["tool_choice"] = "first"
    (harness / "harness.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
tasks = [t.id for t in load_suite("evals/helpdesk").select(split="val")][:count]


def source(cost, index, segment):
    if index == len(cost.segments) - 1:
        return "answer opening"
    if cost.segments[0].how == "read":
        return "head and demos"
    if "<tool_response>" in segment.opening[:60]:
        return "tool result"
    if "assistant" in segment.opening[:30]:
        return "own earlier answer"
    return "user turn or hand-off"


started = time.perf_counter()
with _costs.watching() as seen:
    result = asyncio.run(evaluate_batch(str(harness), "evals/helpdesk", model=get_model(model),
                                        tasks=tasks, k=1, concurrency=concurrency, reuse=False))
wall = time.perf_counter() - started
by_source = {}
for cost in seen:
    for i, segment in enumerate(cost.segments):
        if segment.how == "read":
            key = source(cost, i, segment)
            by_source[key] = by_source.get(key, 0) + segment.tokens
print(json.dumps({
    "wall": wall,
    "passed": {r.task_id: r.passed for r in result.results},
    "episode_s": sum(r.episode.duration_s for r in result.results),
    "calls": len(seen),
    "read": sum(c.read_tokens for c in seen),
    "written": sum(c.written_tokens for c in seen),
    "restored": sum(s.tokens for c in seen for s in c.segments if s.how == "restored"),
    "by_source": by_source,
    **{key: sum(getattr(c, key) for c in seen) for key in ("restore_s", "read_s", "write_s", "total_s", "other_s")},
}))
"""


def play(tree: Path, model: str, tasks: int, acting: bool, concurrency: int) -> dict:
    """One side's batch, in a child process with `tree` first on the path and an empty response cache."""
    with tempfile.TemporaryDirectory(prefix="atoll-episodes-") as fresh:
        for shared in ("models", "engine"):
            if (cache_dir() / shared).exists():
                os.symlink(cache_dir() / shared, Path(fresh) / shared)
        env = os.environ | {"PYTHONPATH": str(tree / ".package"), "ATOLL_CACHE_DIR": fresh}
        done = subprocess.run(
            [sys.executable, "-c", PLAY, model, str(tasks), "1" if acting else "0", str(concurrency)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{model} in {tree}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def rows(figures: dict[str, dict]) -> list[tuple[str, ...]]:
    def each(label: str, value) -> tuple[str, ...]:
        return (label, *(value(f, len(f["passed"])) for f in figures.values()))

    return [
        each("minutes for the batch", lambda f, n: f"{f['wall'] / 60:.1f}"),
        each("episodes a minute", lambda f, n: f"{n / f['wall'] * 60:.2f}"),
        each("seconds an episode (its own clock)", lambda f, n: f"{f['episode_s'] / n:.1f}"),
        each("pass^1", lambda f, n: f"{sum(f['passed'].values())}/{n}"),
        each("model calls an episode", lambda f, n: f"{f['calls'] / n:.1f}"),
        each("tokens read an episode", lambda f, n: f"{f['read'] / n:.0f}"),
        *(
            each(f"  {name}", lambda f, n, name=name: f"{f['by_source'].get(name, 0) / n:.0f}")
            for name in SOURCES
        ),
        each("tokens restored an episode", lambda f, n: f"{f['restored'] / n:.0f}"),
        each("tokens written an episode", lambda f, n: f"{f['written'] / n:.0f}"),
        each("s restoring an episode", lambda f, n: f"{f['restore_s'] / n:.2f}"),
        each("s reading an episode", lambda f, n: f"{f['read_s'] / n:.1f}"),
        each("s writing an episode", lambda f, n: f"{f['write_s'] / n:.1f}"),
        each("s in the engine's Python", lambda f, n: f"{f['other_s'] / n:.2f}"),
        each("s outside the engine", lambda f, n: f"{(f['episode_s'] - f['total_s']) / n:.2f}"),
        each("read tokens/s", lambda f, n: f"{f['read'] / f['read_s']:.0f}"),
        each("written tokens/s", lambda f, n: f"{f['written'] / f['write_s']:.1f}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=50, help="val tasks per side")
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--before", default=BEFORE, help="the git revision measured as before")
    parser.add_argument("--as-shipped", action="store_true", help="leave triage's tool_choice as shipped")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="episodes in flight, at most; each engine caps it at the answers it writes at once",
    )
    args = parser.parse_args()
    console = Console(width=200)
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="atoll-before-") as scratch:
        before = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(before), args.before],
            check=True,
        )
        try:
            for side, tree in ((f"before ({args.before})", before), ("after (this checkout)", ROOT)):
                console.print(f"[dim]{side} ...[/]")
                figures[side] = play(tree, args.model, args.tasks, not args.as_shipped, args.concurrency)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False
            )
    acting = "as shipped" if args.as_shipped else "triage with tool_choice: first"
    table = Table(
        "",
        *figures,
        title=f"support_agent ({acting}) on {args.model}, the first {args.tasks} helpdesk val tasks, "
        f"no cache, up to {args.concurrency} in flight",
        title_justify="left",
    )
    for line in rows(figures):
        table.add_row(*line)
    console.print(table)
    first, second = figures.values()
    alike = sum(first["passed"][task] == second["passed"].get(task) for task in first["passed"])
    console.print(f"same pass/fail on {alike} of {len(first['passed'])} tasks")


if __name__ == "__main__":
    main()
