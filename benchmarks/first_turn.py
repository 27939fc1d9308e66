"""What an embedded model's first answer is, on the val openings of a suite: a call of a tool its agent
is offered, a call of one it is not, a reply, or an answer that cannot be read, beside the same with
the entry agent on `tool_choice: first` (issue 25's target: a well-formed call of an offered tool, or a
reply on a refusal task, in at least 90% of tasks).

Each task's opening message is played for one model call (limits.turns 1) on the shipped harness, on
the native protocol, with no response cache, so every call is really made; the engine reads the
agent's prompt once and restores it for the others. Nothing else should use the cores while it runs.

Run: python benchmarks/first_turn.py [--model local/qwen2.5-coder-1.5b] [--harness harnesses/support_agent]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table
from ruamel.yaml import YAML

from atoll.evals import load_suite, suite_for
from atoll.harnesses import Harness, Limits, load_harness, run_episode
from atoll.harnesses.models import check_model, get_model

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("offered call", "refusal reply", "other reply", "unoffered call", "unreadable")


def forced(harness: Harness) -> Harness:
    """The harness with its entry agent on tool_choice: first."""
    yaml = YAML()
    config = yaml.load(harness.files()["harness.yaml"])
    config["agents"][harness.entry]["tool_choice"] = "first"
    out = io.StringIO()
    yaml.dump(config, out)
    return harness.with_files({"harness.yaml": out.getvalue()})


def kind_of(episode, offered: set[str], refusal: bool) -> str:
    first = next(
        (e for e in episode.events if e.kind in ("assistant", "tool_call", "delegate", "error")), None
    )
    if first is None or first.kind == "error":
        return "unreadable"
    if first.kind == "assistant":
        return "refusal reply" if refusal else "other reply"
    return "offered call" if (first.tool or "") in offered or first.kind == "delegate" else "unoffered call"


async def first_turns(harness: Harness, model, tasks) -> Counter[str]:
    offered = set(harness.tools.get(harness.entry, {}))
    counts: Counter[str] = Counter()
    for task in tasks:
        seed = (task.seeds or [0])[0]
        with harness.world.instance(task.fixture, seed=seed, clock=task.clock) as instance:
            episode = await run_episode(
                harness, instance, model, task.user.message, limits=Limits(turns=1), task_context=task.context
            )
        counts[kind_of(episode, offered, "refusal" in task.tags)] += 1
    return counts


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--harness", type=Path, default=ROOT / "harnesses" / "support_agent")
    parser.add_argument("--split", default="val")
    args = parser.parse_args()
    check_model(args.model)
    model = get_model(args.model)  # no cache: every call is made
    shipped = load_harness(args.harness)
    tasks = load_suite(suite_for(shipped)).select(split=args.split)
    table = Table(
        title=f"first answers on {len(tasks)} {args.split} openings, {args.model}", title_justify="left"
    )
    table.add_column("harness")
    for kind in KINDS:
        table.add_column(kind, justify="right")
    table.add_column("target share", justify="right")
    table.add_column("seconds", justify="right")
    for label, harness in (("shipped", shipped), ("tool_choice: first", forced(shipped))):
        began = time.perf_counter()
        counts = await first_turns(harness, model, tasks)
        good = counts["offered call"] + counts["refusal reply"]
        table.add_row(
            label,
            *(str(counts[kind]) for kind in KINDS),
            f"{good / len(tasks):.0%}",
            f"{time.perf_counter() - began:.0f}",
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    asyncio.run(main())
