"""Throughput of the batch runner against the ideal, with a model that only waits.

A scripted model that sleeps 200 ms per call (ScriptedModel latency_s=0.2) drives the shipped
support_agent harness on the helpdesk world: each episode makes 3 model calls (track_shipment,
get_order, then the reply), is graded (reply check, no_other_writes, matches_reference) and
written to a runs store in a temporary folder, as `optimize eval` does. With c episodes in flight
the ideal is c / (3 × 0.2 s) episodes per second; the gap is the runner's own cost (instances,
tool calls, prompt rendering, grading, the store) on this machine's CPU. Concurrency 1 is measured
on a sample and extrapolated to the whole batch (it would take 500 × 0.6 s = 5 minutes).

Episode reuse: the same batch run fresh (into an empty store), fresh again with a model that answers at
once (what a full response-cache replay costs at best), and then again into the same store, where every
episode is copied from the first run and graded again instead of played; medians of --repeats runs.

With --local, and when evals/helpdesk has a val split and the embedded model is installed, it also
times the val split at k=1 on local/gemma-3-270m.

Run: python benchmarks/evals.py [--episodes 500] [--sample 20] [--reuse-episodes 100 --repeats 5]
     [--local [--local-tasks N]]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import re
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from atoll.evals import RunStore, evaluate_batch, load_suite
from atoll.harnesses import load_harness
from atoll.harnesses.models import ModelRequest, ScriptedModel
from atoll.worlds import get_world

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harnesses" / "support_agent"
SHIPPED_SUITE = ROOT / "evals" / "helpdesk"
LATENCY_S = 0.2
CALLS_PER_EPISODE = 3
SEEDS = 10


def write_suite(folder: Path, tasks: int) -> Path:
    """A suite of order-status questions about the first `tasks` orders of small_shop."""
    with get_world("helpdesk").instance("small_shop") as instance:
        orders = [row["id"] for row in instance.query("SELECT id FROM orders ORDER BY id LIMIT ?", (tasks,))]
    (folder / "tasks").mkdir(parents=True)
    (folder / "suite.yaml").write_text(
        yaml.safe_dump({"name": "bench", "world": "helpdesk", "default_seeds": list(range(SEEDS))})
    )
    (folder / "tasks" / "status.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "id": f"status-{order}",
                    "split": "val",
                    "fixture": "small_shop",
                    "user": {"message": f"Where is my order {order}?"},
                    "reference": [{"get_order": {"order_id": order}}],
                    "expect": {"no_other_writes": True, "matches_reference": True, "reply_contains": [order]},
                }
                for order in orders
            ],
            sort_keys=False,
        )
    )
    return folder


def answer(request: ModelRequest) -> dict | str:
    """Look the order up twice, then say where it is: three calls, whatever the seed."""
    order = re.search(r"ORD-\d+", next(m["content"] for m in request.messages if m["role"] == "user")).group()
    results = sum(m["role"] == "tool" for m in request.messages)
    if results == 0:
        return {"tool_calls": [{"name": "track_shipment", "arguments": {"order_id": order}}]}
    if results == 1:
        return {"tool_calls": [{"name": "get_order", "arguments": {"order_id": order}}]}
    return f"Your order {order} is on its way."


async def measure(
    harness, suite, store: RunStore, concurrency: int, episodes: int, latency: float, reuse: bool = False
) -> float:
    """Seconds to run `episodes` episodes (the first tasks × seeds) at `concurrency`; with `reuse`, episodes
    the store already holds are copied instead (off by default: throughput measures playing them)."""
    tasks = [task.id for task in suite.tasks][: max(1, episodes // SEEDS)]
    seeds = list(range(min(SEEDS, episodes)))
    model = ScriptedModel(fn=answer, latency_s=latency)
    started = time.perf_counter()
    result = await evaluate_batch(
        harness,
        suite,
        model=model,
        tasks=tasks,
        seeds=seeds,
        concurrency=concurrency,
        store=store,
        reuse=reuse,
    )
    elapsed = time.perf_counter() - started
    assert len(result.results) == len(tasks) * len(seeds), "the batch ran fewer episodes than planned"
    assert result.reused == (len(result.results) if reuse else 0), "every episode should be reused, or none"
    assert result.metrics.pass_k[1] == 1.0, "the scripted agent should pass every task"
    return elapsed


async def throughput(episodes: int, sample: int, console: Console) -> None:
    harness = load_harness(HARNESS)
    with tempfile.TemporaryDirectory() as folder:
        suite = load_suite(write_suite(Path(folder) / "suite", episodes // SEEDS))
        with RunStore(Path(folder) / "runs.sqlite") as store:
            await measure(harness, suite, store, 16, 20, 0.0)  # warm up: fixture, prompts, imports
            cpu = await measure(harness, suite, store, 1, episodes, 0.0) / episodes
            table = Table(
                title=f"Batch throughput, {episodes} episodes, {CALLS_PER_EPISODE} calls × {LATENCY_S} s"
            )
            for column in ("concurrency", "episodes run", "wall", "episodes/s", "ideal/s", "% of ideal"):
                table.add_column(column, justify="right")
            for concurrency in (1, 16, 128):
                run = sample if concurrency == 1 else episodes
                elapsed = await measure(harness, suite, store, concurrency, run, LATENCY_S)
                rate = run / elapsed
                ideal = concurrency / (CALLS_PER_EPISODE * LATENCY_S)
                shown = (
                    f"{elapsed:.2f} s"
                    if run == episodes
                    else f"{elapsed:.2f} s (→ {episodes / rate:.0f} s for {episodes})"
                )
                table.add_row(
                    str(concurrency),
                    str(run),
                    shown,
                    f"{rate:.2f}",
                    f"{ideal:.2f}",
                    f"{100 * rate / ideal:.1f}%",
                )
    console.print(table)
    console.print(f"runner's own cost per episode (no model latency, concurrency 1): {1000 * cpu:.1f} ms")


async def reuse(episodes: int, repeats: int, console: Console) -> None:
    """The same batch fresh, fresh on an instant model, and again with every episode reused; medians."""
    harness = load_harness(HARNESS)
    times: dict[str, list[float]] = {"fresh": [], "instant": [], "reused": []}
    with tempfile.TemporaryDirectory() as folder:
        suite = load_suite(write_suite(Path(folder) / "suite", episodes // SEEDS))
        for repeat in range(repeats + 1):  # the first round warms up fixtures, prompts and imports
            with RunStore(Path(folder) / f"runs-{repeat}.sqlite") as store:
                fresh = await measure(harness, suite, store, 16, episodes, LATENCY_S)
                instant = await measure(harness, suite, store, 16, episodes, 0.0)
                reused = await measure(harness, suite, store, 16, episodes, LATENCY_S, reuse=True)
            if repeat:
                for name, seconds in (("fresh", fresh), ("instant", instant), ("reused", reused)):
                    times[name].append(seconds)
    median = {name: statistics.median(values) for name, values in times.items()}
    table = Table(
        title=f"Episode reuse: the same {episodes} episodes, concurrency 16, median of {repeats}",
        caption=f"fresh: {CALLS_PER_EPISODE} model calls × {LATENCY_S} s an episode, into an empty store; "
        "instant: the same on a model that answers at once (a response-cache replay at best); "
        "reused: copied from the store and graded again",
    )
    for column in ("fresh", "fresh, instant model", "reused", "reused vs fresh", "per reused episode"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{median['fresh']:.2f} s",
        f"{median['instant']:.2f} s",
        f"{median['reused']:.3f} s",
        f"{median['fresh'] / median['reused']:.0f}× faster",
        f"{1000 * median['reused'] / episodes:.2f} ms",
    )
    console.print(table)


async def local_val(console: Console, limit: int | None) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        console.print("local model: llama-cpp-python is not installed (pip install -e '.[local]'); skipped")
        return
    if not (SHIPPED_SUITE / "suite.yaml").exists():
        console.print(f"local model: no suite at {SHIPPED_SUITE.relative_to(ROOT)}; skipped")
        return
    suite = load_suite(SHIPPED_SUITE)
    tasks = [task.id for task in suite.select(split="val")]
    if not tasks:
        console.print("local model: the shipped suite has no val split; skipped")
        return
    chosen = tasks[:limit] if limit else tasks
    # The one in-process model answers one call at a time: concurrency 1 keeps each episode's time its own.
    with tempfile.TemporaryDirectory() as folder, RunStore(Path(folder) / "runs.sqlite") as store:
        started = time.perf_counter()
        result = await evaluate_batch(
            HARNESS, suite, model="local/gemma-3-270m", tasks=chosen, k=1, concurrency=1, store=store
        )
        elapsed = time.perf_counter() - started
    metrics = result.metrics
    calls = sum(r.episode.usage.model_calls for r in result.results)
    cached = sum(r.episode.usage.cached_calls for r in result.results)
    whole = (
        f" (→ about {elapsed / len(chosen) * len(tasks):.0f} s for all {len(tasks)} val tasks)"
        if limit
        else ""
    )
    console.print(
        f"local/gemma-3-270m, val split, k=1: {metrics.episodes} episodes in {elapsed:.1f} s{whole}; "
        f"{calls} model calls ({cached} from the response cache), {elapsed / max(calls - cached, 1):.1f} s a call; "
        f"mean score {metrics.mean_score:.3f}, pass^1 {metrics.pass_1:.1%}, {metrics.errors} errors"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--sample", type=int, default=20, help="episodes measured at concurrency 1")
    parser.add_argument("--local", action="store_true", help="also time the val split on the local model")
    parser.add_argument("--local-tasks", type=int, help="time only this many val tasks and extrapolate")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--reuse-episodes", type=int, default=100, help="batch size of the reuse table")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each kind in the reuse table")
    parser.add_argument("--skip-reuse", action="store_true")
    options = parser.parse_args()
    console = Console()
    if not options.skip_throughput:
        asyncio.run(throughput(options.episodes, options.sample, console))
    if not options.skip_reuse:
        asyncio.run(reuse(options.reuse_episodes, options.repeats, console))
    if options.local:
        asyncio.run(local_val(console, options.local_tasks))


if __name__ == "__main__":
    main()
