"""Seconds per episode on the embedded models, in a batch, before and after the cost cuts of issue 11.

Each configuration plays the first --tasks val tasks of evals/helpdesk once (k=1, seed as the suite
says) with no response cache and no runs store, so every model call is really made, and reports the
batch's wall time per episode and the median episode's own duration, side by side in one run:

- `interleaved, c=4`: four episodes in flight on the one local model, as batches ran before (the
  model answers one request at a time, so their conversations evict each other's evaluated prefix);
- `one at a time`: what a batch does now (`evals.in_flight`: the local model's max_concurrency is 1);
- `retrieval`: benchmarks/ceilings/support_agent_qwen with one retrieved demo, now shown after the
  fixed prompt as its own message (before, it sat inside the prompt, so every task re-read the whole
  prompt: ~76 s for a one-call episode, benchmarks/ceilings/README.md).

Only one process should use the cores while it runs. Episodes that are skipped (a model not installed)
are said so.

Run: python benchmarks/episodes.py [--tasks 6] [--model local/qwen2.5-coder-0.5b ...]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path and would shadow the packages it measures.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from ruamel.yaml import YAML  # noqa: E402

from evals import evaluate_batch, load_suite  # noqa: E402
from harnesses import Harness, load_harness  # noqa: E402
from harnesses.models import ModelError, ModelResponse, get_model  # noqa: E402
from harnesses.models._catalog import CATALOG  # noqa: E402
from harnesses.models._local import check_available  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "harnesses" / "support_agent"
RETRIEVAL = ROOT / "benchmarks" / "ceilings" / "support_agent_qwen"


class Interleaved:
    """A model as batches used it before `max_concurrency`: c episodes in flight on it at once."""

    def __init__(self, model: Any) -> None:
        self.name = model.name
        self._model = model

    async def complete(self, messages: list[dict], **options: Any) -> ModelResponse:
        return await self._model.complete(messages, **options)


async def measure(harness: Path, model: Any, tasks: list[str], concurrency: int, retrieve: int) -> list[str]:
    loaded = load_harness(harness)
    if retrieve:
        loaded = with_retrieval(loaded, retrieve)
    started = time.perf_counter()
    result = await evaluate_batch(
        loaded,
        ROOT / "evals" / "helpdesk",
        model=model,
        tasks=tasks,
        k=1,
        concurrency=concurrency,
        reuse=False,
    )
    wall = time.perf_counter() - started
    durations = [r.episode.duration_s for r in result.results]
    calls = [r.episode.usage.model_calls for r in result.results]
    passed = sum(r.grade.passed for r in result.results)
    return [
        f"{wall / len(durations):.1f}",
        f"{statistics.median(durations):.1f}",
        f"{statistics.median(calls):g}",
        f"{passed}/{len(durations)}",
    ]


def with_retrieval(harness: Harness, k: int) -> Harness:
    """The harness with each agent retrieving k demos from all of its harness's demos."""
    yaml = YAML()
    config = yaml.load(harness.files()["harness.yaml"])
    for agent in config["agents"].values():
        agent["demo_pool"] = sorted(harness.demos)
        agent["retrieve_demos"] = k
    text = io.StringIO()
    yaml.dump(config, text)
    return harness.with_files({"harness.yaml": text.getvalue()})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=6, help="val tasks per configuration")
    parser.add_argument("--model", action="append", help="local models (default: every embedded one)")
    args = parser.parse_args()
    console = Console(width=200)
    tasks = [task.id for task in load_suite(ROOT / "evals" / "helpdesk").select(split="val")][: args.tasks]
    table = Table(
        "model",
        "harness",
        "batch",
        "s / episode (wall)",
        "median episode s",
        "median model calls",
        "passed",
        title=f"Seconds per episode, first {len(tasks)} helpdesk val tasks, no cache",
    )
    for name in args.model or [f"local/{m}" for m in CATALOG]:
        try:
            check_available(name.removeprefix("local/"))
        except ModelError as error:
            console.print(f"[dim]{name} skipped: {error}[/]")
            continue
        model = get_model(name)
        configs = [
            ("shipped", SHIPPED, "interleaved, c=4", Interleaved(model), 4, 0),
            ("shipped", SHIPPED, "one at a time", model, 4, 0),
        ]
        if "qwen" in name:
            configs.append(("ceiling + 1 retrieved demo", RETRIEVAL, "one at a time", model, 4, 1))
        for label, harness, batch, agent_model, concurrency, retrieve in configs:
            console.print(f"[dim]{name} {label} {batch} ...[/]")
            row = await measure(harness, agent_model, tasks, concurrency, retrieve)
            table.add_row(name, label, batch, *row)
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
