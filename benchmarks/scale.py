"""Episodes per second on the local executor and on Ray with 1, 2 and 4 worker processes, and what Ray adds
to each episode.

The model only waits: a ScriptedModel sleeping 200 ms per call (latency_s=0.2) drives the shipped
support_agent harness on the helpdesk world, 3 calls an episode (track_shipment, get_order, the reply), so
with c episodes in flight the ideal is c / 0.6 s episodes per second. Every batch is graded and written to
a runs store, as `optimize eval` does; reuse is off, so every episode is played. The Ray cluster is started
in this process (`ray.init(num_cpus=4)`) on this machine's cores, the workers being separate processes;
each row warms its pool up first (worker start, imports, fixtures), as a long optimization or gate would.

Ray's own cost per episode is measured with a model that answers at once, one episode at a time: the
difference per episode between a Ray worker and this process is the dispatch, the task and the episode
crossing between processes as JSON, and the worker's event loop.

Run: python benchmarks/scale.py [--episodes 400] [--concurrency 16 64] [--overhead-episodes 60]
(docs/scale.md turns these figures into the cost of a gate on N nodes.)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from pathlib import Path

import ray
import yaml
from rich.console import Console
from rich.table import Table

from atoll.evals import Executor, LocalExecutor, RayExecutor, RunStore, Suite, evaluate_batch, load_suite
from atoll.harnesses import Harness, load_harness
from atoll.harnesses.models import ModelRequest, ScriptedModel
from atoll.worlds import get_world

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harnesses" / "support_agent"
LATENCY_S = 0.2
CALLS_PER_EPISODE = 3
SEEDS = 10
WORKERS = (1, 2, 4)


def answer(request: ModelRequest) -> dict | str:
    """Look the order up twice, then say where it is: three calls, whatever the seed. A function of the
    request, so the same on every worker (a list of replies would be split between their copies)."""
    order = re.search(r"ORD-\d+", next(m["content"] for m in request.messages if m["role"] == "user")).group()
    results = sum(m["role"] == "tool" for m in request.messages)
    if results == 0:
        return {"tool_calls": [{"name": "track_shipment", "arguments": {"order_id": order}}]}
    if results == 1:
        return {"tool_calls": [{"name": "get_order", "arguments": {"order_id": order}}]}
    return f"Your order {order} is on its way."


def write_suite(folder: Path, tasks: int) -> Path:
    """A suite of order-status questions about the first `tasks` orders of small_shop, SEEDS seeds each."""
    with get_world("helpdesk").instance("small_shop") as instance:
        orders = [row["id"] for row in instance.query("SELECT id FROM orders ORDER BY id LIMIT ?", (tasks,))]
    (folder / "tasks").mkdir(parents=True)
    (folder / "suite.yaml").write_text(
        yaml.safe_dump({"name": "scale", "world": "helpdesk", "default_seeds": list(range(SEEDS))})
    )
    tasks_yaml = [
        {
            "id": f"status-{order}",
            "split": "val",
            "fixture": "small_shop",
            "user": {"message": f"Where is my order {order}?"},
            "reference": [{"get_order": {"order_id": order}}],
            "expect": {"no_other_writes": True, "matches_reference": True, "reply_contains": [order]},
        }
        for order in orders
    ]
    (folder / "tasks" / "status.yaml").write_text(yaml.safe_dump(tasks_yaml, sort_keys=False))
    return folder


async def seconds(
    executor: Executor,
    harness: Harness,
    suite: Suite,
    store: RunStore,
    episodes: int,
    concurrency: int,
    latency: float,
) -> float:
    """Wall seconds for the first `episodes` (task, seed) pairs at `concurrency`, every episode played."""
    tasks = [task.id for task in suite.tasks][: max(1, episodes // SEEDS)]
    seeds = list(range(min(SEEDS, episodes)))
    started = time.perf_counter()
    result = await evaluate_batch(
        harness,
        suite,
        model=ScriptedModel(fn=answer, latency_s=latency),
        tasks=tasks,
        seeds=seeds,
        concurrency=concurrency,
        store=store,
        reuse=False,
        executor=executor,
    )
    elapsed = time.perf_counter() - started
    assert len(result.results) == len(tasks) * len(seeds), "the batch ran fewer episodes than planned"
    assert result.metrics.pass_k[1] == 1.0, "the scripted agent should pass every task"
    return elapsed


async def main(episodes: int, concurrencies: list[int], overhead_episodes: int, console: Console) -> None:
    harness = load_harness(HARNESS)
    ray.init(address="local", num_cpus=max(WORKERS), include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as folder, RunStore(Path(folder) / "runs.sqlite") as store:
        suite = load_suite(write_suite(Path(folder) / "suite", max(1, episodes // SEEDS)))
        table = Table(
            title=f"Episodes per second, {episodes} episodes, {CALLS_PER_EPISODE} calls × {LATENCY_S} s"
        )
        for column in ("executor", "workers", "concurrency", "wall", "episodes/s", "ideal/s", "% of ideal"):
            table.add_column(column, justify="right")
        executors: list[tuple[str, int, Executor]] = [("local", 1, LocalExecutor())]
        executors += [("ray", n, RayExecutor(workers=n)) for n in WORKERS]
        overhead: dict[str, float] = {}
        for label, workers, executor in executors:
            await seconds(executor, harness, suite, store, 2 * SEEDS * workers, 8 * workers, 0.0)  # warm up
            overhead[f"{label}{workers}"] = (
                await seconds(executor, harness, suite, store, overhead_episodes, 1, 0.0) / overhead_episodes
            )
            for concurrency in concurrencies:
                elapsed = await seconds(executor, harness, suite, store, episodes, concurrency, LATENCY_S)
                rate, ideal = episodes / elapsed, concurrency / (CALLS_PER_EPISODE * LATENCY_S)
                table.add_row(
                    label,
                    str(workers),
                    str(concurrency),
                    f"{elapsed:.2f} s",
                    f"{rate:.1f}",
                    f"{ideal:.1f}",
                    f"{100 * rate / ideal:.0f}%",
                )
            if isinstance(executor, RayExecutor):
                executor.close()  # frees its CPUs for the next row's pool
    ray.shutdown()
    console.print(table)
    local, remote = 1000 * overhead["local1"], 1000 * overhead["ray1"]
    console.print(
        f"one episode at a time on an instant model ({overhead_episodes} episodes): {local:.1f} ms in this "
        f"process, {remote:.1f} ms on a Ray worker: Ray adds {remote - local:.1f} ms an episode"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400, help="episodes per measured batch")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64], help="episodes in flight")
    parser.add_argument("--overhead-episodes", type=int, default=60, help="episodes timed one at a time")
    options = parser.parse_args()
    asyncio.run(main(options.episodes, options.concurrency, options.overhead_episodes, Console()))
