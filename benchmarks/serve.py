"""How fast the OpenEnv-compatible server opens sessions and answers tool calls.

The server runs in its own process on 127.0.0.1 (so client and server do not share a GIL);
the load comes from one asyncio client process over raw WebSockets, speaking the same frames
OpenEnv's clients send. Two phases, both bounded in count and time:

- sessions: N WebSocket sessions, C at a time, each connect → reset → close;
- tool calls: C sessions open at once, each making K calls (alternating a read and a write).

Figures: sessions per second and tool calls per second, with p50 and p99 latency of one
session (connect to close) and of one call (send to reply). By default the world is a
one-table counter world defined here, so the figures measure the server, not a world's tools;
`--world helpdesk --fixture small_shop --call 'get_order {"order_id": "ORD-1001"}'` measures a
real one.

Run: python benchmarks/serve.py [--sessions 1000] [--concurrency 100] [--calls 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.worlds import FixtureContext, ToolContext, World

ROOT = Path(__file__).resolve().parent.parent

BENCH = World(
    name="bench",
    schema="CREATE TABLE counters (id TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    description="Counters, for measuring the server rather than a world.",
)


@BENCH.tool(writes=False)
def read_counter(ctx: ToolContext, counter_id: str) -> dict:
    """Read a counter.

    Args:
        counter_id: The counter, e.g. "c1".
    """
    return ctx.one("SELECT * FROM counters WHERE id = ?", (counter_id,)) or {}


@BENCH.tool(writes=True)
def bump(ctx: ToolContext, counter_id: str) -> dict:
    """Add one to a counter.

    Args:
        counter_id: The counter, e.g. "c1".
    """
    ctx.execute("UPDATE counters SET value = value + 1 WHERE id = ?", (counter_id,))
    return {"ok": True}


@BENCH.fixture("ten", epoch="2026-03-02 09:00:00")
def ten(fx: FixtureContext) -> None:
    fx.insert("counters", [{"id": f"c{i}", "value": 0} for i in range(10)])


def serve(port: int, world: str) -> None:
    from atoll.worlds.serve import run_server

    run_server(port=port, worlds=[BENCH if world == "bench" else world], max_sessions=512)


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def one_session(url: str, reset: dict) -> float:
    from websockets.asyncio.client import connect

    started = time.perf_counter()
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": reset}))
        reply = json.loads(await ws.recv())
        if reply["type"] != "observation":
            raise RuntimeError(f"reset failed: {reply}")
        await ws.send(json.dumps({"type": "close"}))
    return time.perf_counter() - started


async def sessions_phase(url: str, reset: dict, total: int, concurrency: int) -> tuple[float, list[float]]:
    gate = asyncio.Semaphore(concurrency)

    async def bounded() -> float:
        async with gate:
            return await one_session(url, reset)

    started = time.perf_counter()
    latencies = await asyncio.gather(*(bounded() for _ in range(total)))
    return time.perf_counter() - started, latencies


async def calling_session(url: str, reset: dict, calls: list[dict], ready: asyncio.Barrier) -> list[float]:
    from websockets.asyncio.client import connect

    latencies = []
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": reset}))
        await ws.recv()
        await ready.wait()
        for action in calls:
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "step", "data": action}))
            reply = json.loads(await ws.recv())
            latencies.append(time.perf_counter() - started)
            if reply["type"] != "observation" or reply["data"]["observation"].get("error"):
                raise RuntimeError(f"call failed: {reply}")
    return latencies


async def calls_phase(
    url: str, reset: dict, calls: list[dict], concurrency: int
) -> tuple[float, list[float]]:
    ready = asyncio.Barrier(concurrency + 1)
    tasks = [asyncio.create_task(calling_session(url, reset, calls, ready)) for _ in range(concurrency)]
    await ready.wait()
    started = time.perf_counter()
    per_session = await asyncio.gather(*tasks)
    return time.perf_counter() - started, [x for latencies in per_session for x in latencies]


def wait_until_up(base: str, server: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("the server exited before answering")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not answer /health in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions opened and closed in phase 1")
    parser.add_argument("--concurrency", type=int, default=100, help="WebSocket sessions at once")
    parser.add_argument("--calls", type=int, default=100, help="tool calls per session in phase 2")
    parser.add_argument("--world", default="bench", help="world to serve (default: the counter world here)")
    parser.add_argument("--fixture", default="ten")
    parser.add_argument("--call", default=None, help="one call for phase 2: 'TOOL {\"arg\": ...}'")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.world)
        return

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base, url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
    command = [sys.executable, __file__, "--serve", str(port), "--world", args.world]
    server = subprocess.Popen(command, env=os.environ | {"PYTHONPATH": str(ROOT)})
    try:
        wait_until_up(base, server)
        reset = {"world": args.world, "fixture": args.fixture}
        if args.call:
            tool, _, arguments = args.call.partition(" ")
            calls = [
                {"type": "call_tool", "tool_name": tool, "arguments": json.loads(arguments or "{}")}
            ] * args.calls
        else:
            pair = [
                {"type": "call_tool", "tool_name": "read_counter", "arguments": {"counter_id": "c1"}},
                {"type": "call_tool", "tool_name": "bump", "arguments": {"counter_id": "c1"}},
            ]
            calls = (pair * args.calls)[: args.calls]
        asyncio.run(asyncio.wait_for(sessions_phase(url, reset, 50, 10), 60))  # warm up: imports, fixture
        opened_in, session_latencies = asyncio.run(
            asyncio.wait_for(sessions_phase(url, reset, args.sessions, args.concurrency), 300)
        )
        called_in, call_latencies = asyncio.run(
            asyncio.wait_for(calls_phase(url, reset, calls, args.concurrency), 300)
        )
    finally:
        server.terminate()
        server.wait(timeout=10)

    table = Table(
        title=f"OpenEnv server on loopback, {args.concurrency} concurrent WebSocket sessions ({os.cpu_count()} cores)"
    )
    for column in ("phase", "count", "seconds", "per second", "p50 ms", "p99 ms"):
        table.add_column(column, justify="right" if column != "phase" else "left")
    for phase, count, seconds, latencies in (
        ("sessions opened+closed", args.sessions, opened_in, session_latencies),
        ("tool calls", len(call_latencies), called_in, call_latencies),
    ):
        table.add_row(
            phase,
            str(count),
            f"{seconds:.2f}",
            f"{count / seconds:,.0f}",
            f"{percentile(latencies, 50) * 1000:.2f}",
            f"{percentile(latencies, 99) * 1000:.2f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
