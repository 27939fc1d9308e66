"""Score a ceiling harness on a held-out handful of TRAIN tasks, with those tasks' own demos taken out
of every demo pool (so a task never sees its own reference), and print a compact trace per episode.

    python benchmarks/ceilings/dev_eval.py benchmarks/ceilings/support_agent_qwen [task ...]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from atoll.evals import RunStore, evaluate

DEV = [
    "status-in-transit",
    "cancel-processing-order",
    "refund-damaged-plates",
    "refuse-return-outside-window",
    "partial-refund-chipped-containers",
    "address-change-pending",
    "escalate-refund-over-500",
    "credit-balance",
    "refuse-cancel-shipped",
    "exchange-sweater-size",
]


def held_out_copy(harness: Path, tasks: list[str]) -> Path:
    out = Path(tempfile.mkdtemp(prefix="ceil_")) / harness.name
    shutil.copytree(harness, out)
    drop = {"t_" + t.replace("-", "_") for t in tasks}
    config = yaml.safe_load((out / "harness.yaml").read_text())
    for agent in config["agents"].values():
        if "demo_pool" in agent:
            agent["demo_pool"] = [d for d in agent["demo_pool"] if d not in drop]
            agent["retrieve_demos"] = min(agent.get("retrieve_demos", 0), len(agent["demo_pool"]))
        agent["demos"] = [d for d in agent.get("demos", []) if d not in drop]
    (out / "harness.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def trace(result) -> str:
    lines = []
    for event in result.episode.events:
        if event.kind == "tool_call":
            lines.append(f"    {event.agent}> {event.tool} {event.arguments}")
        elif event.kind == "tool_result" and not event.ok:
            lines.append(f"      ! {str(event.error)[:160]}")
        elif event.kind in ("assistant", "user", "delegate", "return", "notice", "error"):
            lines.append(f"    [{event.kind}:{event.agent}] {(event.content or '')[:200]}")
    return "\n".join(lines)


def main() -> None:
    harness = Path(sys.argv[1])
    tasks = sys.argv[2:] or DEV
    copy = held_out_copy(harness, tasks)
    started = time.time()
    result = evaluate(
        copy,
        "evals/helpdesk",
        tasks=tasks,
        seeds=[0],
        concurrency=int(os.environ.get("CONC", "1")),
        store=RunStore(),
    )
    took = time.time() - started
    passed = 0
    for r in sorted(result.results, key=lambda r: r.task_id):
        passed += r.grade.passed
        print(
            f"{'PASS' if r.grade.passed else 'fail'} {r.grade.score:.2f} {r.task_id} ({r.episode.stop_reason}, {r.episode.duration_s:.0f}s)"
        )
        for check in r.grade.checks:
            if not check.passed:
                print(f"      x {check.name}: {check.feedback[:200]}")
        print(trace(r))
    n = len(result.results)
    mean = sum(r.grade.score for r in result.results) / n
    print(
        f"\n{harness.name}: {passed}/{n} passed, mean {mean:.3f}, {took:.0f}s wall, {took / n:.1f}s/episode"
    )


if __name__ == "__main__":
    main()
