"""What the harness endpoint adds to a model call: p50 and p99 latency at 1 and 50 concurrent clients.

Two servers, each in processes of its own, answer `POST /v1/chat/completions` with the same zero-latency,
zero-cost model (`Canned`: one answer, built without reading the request, as a provider reads the prompt on its
own machine; a scripted model that counts the prompt's words would charge Atoll's side for the longer prompt):

- direct: a bare FastAPI route under uvicorn, one process, that hands the client's messages to the model
  and returns its answer in the OpenAI shape — the HTTP stack and the model call, nothing else;
- atoll: the service serving harnesses/support_agent as `optimize serve --harness ... --workers N` does
  (`--workers`, default 2) — the release head read, the prompt, demos and tool specs rendered around the
  messages, the answer parsed, and the call recorded (with its session) in a runs store on disk, the
  record journaled before the answer and stored after it by each process's writer.

A client process sends the same opening request to each in turn (keep-alive connections, `--rounds`
alternations so drift hits both alike) and prints the medians side by side; "added" is atoll minus
direct. The issue's target (24, item 15): under 5 ms added at p50 with 50 clients. With 50 clients a server
is a queue, so its latency is mostly the CPU each request costs on the cores it shares with the client: the
table also gives the CPU time each server's processes spent per request (from /proc, Linux only), a figure
that other work on the machine disturbs far less than latency.

Run: python benchmarks/service.py [--requests 400] [--rounds 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from rich.console import Console
from rich.table import Table

from atoll.harnesses.models import ModelParams, ModelResponse, Usage

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harnesses" / "support_agent"
REQUEST = {
    "model": "support_agent",
    "messages": [{"role": "user", "content": "Hi, where is my order ORD-1042? It was due last week."}],
}


ANSWER = "Your order is on its way."


class Canned:
    """The model both servers call: the same answer to every request, at no cost; at module level, so it
    pickles to the service's worker processes."""

    name = "canned"

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        params: ModelParams | None = None,
        sample: int = 0,
    ) -> ModelResponse:
        return ModelResponse(
            model=self.name,
            content=ANSWER,
            finish_reason="stop",
            usage=Usage(completion_tokens=6),
            sample=sample,
        )


def _direct_app() -> Any:
    model = Canned()
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        body = await request.json()
        answer = await model.complete(body["messages"])
        return {
            "id": "chatcmpl-direct",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    return app


def _serve(kind: str, port: int, store_path: str, workers: int) -> None:
    if kind == "direct":
        import uvicorn

        uvicorn.run(_direct_app(), host="127.0.0.1", port=port, log_level="warning", limit_concurrency=1000)
        return
    from atoll.evals import RunStore
    from atoll.service import run_service

    run_service(
        "127.0.0.1",
        port,
        harnesses=[HARNESS],
        worlds=[],
        store=RunStore(store_path),
        model=Canned(),
        workers=workers,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=5).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} did not come up")


WARM_UP = 20  # requests on each client's connections before the timed ones


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) that process `pid` and its descendants have used; None without
    /proc (not Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    used, children = {}, {}
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
        children.setdefault(int(fields[1]), []).append(int(entry))
        used[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    if pid not in used:
        return None
    total, todo = 0.0, [pid]
    while todo:
        process = todo.pop()
        total += used.get(process, 0.0)
        todo += children.get(process, [])
    return total


async def _latencies(url: str, clients: int, requests: int) -> list[float]:
    """Seconds per request, `clients` at a time, after a warm-up."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        for _ in range(WARM_UP):
            (await client.post("/v1/chat/completions", json=REQUEST)).raise_for_status()
        queue = iter(range(requests))
        seen: list[float] = []

        async def worker() -> None:
            for _ in queue:
                began = time.perf_counter()
                (await client.post("/v1/chat/completions", json=REQUEST)).raise_for_status()
                seen.append(time.perf_counter() - began)

        await asyncio.gather(*(worker() for _ in range(clients)))
        return seen


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per server, clients and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the two servers")
    parser.add_argument("--workers", type=int, default=2, help="processes of the atoll server (--workers)")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="atoll-service-bench-") as scratch:
        urls, servers = {}, {}
        for kind in ("direct", "atoll"):
            port = _free_port()
            store = str(Path(scratch) / "runs.sqlite")
            server = context.Process(target=_serve, args=(kind, port, store, args.workers))
            server.start()
            servers[kind] = server
            urls[kind] = f"http://127.0.0.1:{port}"
        try:
            for url in urls.values():
                _wait_up(url)
            seen: dict[tuple[str, int], list[float]] = {}
            cpu: dict[tuple[str, int], float] = {}  # server CPU seconds, summed over the rounds (with /proc)
            for _ in range(args.rounds):
                for clients in (1, 50):
                    for kind, url in urls.items():
                        before = _cpu_seconds(servers[kind].pid)
                        batch = asyncio.run(_latencies(url, clients, args.requests))
                        after = _cpu_seconds(servers[kind].pid)
                        seen.setdefault((kind, clients), []).extend(batch)
                        if before is not None and after is not None:
                            cpu[kind, clients] = cpu.get((kind, clients), 0.0) + after - before
        finally:
            for server in servers.values():
                server.terminate()
                server.join()
    table = Table(
        title=f"chat completion latency, zero-latency model ({args.requests} x {args.rounds} requests each; "
        f"atoll: {args.workers} workers, direct: 1)"
    )
    for column in (
        "clients",
        "direct p50 ms",
        "atoll p50 ms",
        "added p50 ms",
        "direct p99 ms",
        "atoll p99 ms",
        "added p99 ms",
        "direct cpu ms/req",
        "atoll cpu ms/req",
    ):
        table.add_column(column, justify="right")
    served = (WARM_UP + args.requests) * args.rounds  # requests each server answered per row
    for clients in (1, 50):
        direct, atoll = seen[("direct", clients)], seen[("atoll", clients)]
        p50 = (statistics.median(direct) * 1000, statistics.median(atoll) * 1000)
        p99 = (_percentile(direct, 0.99) * 1000, _percentile(atoll, 0.99) * 1000)
        used = [cpu.get((kind, clients)) for kind in ("direct", "atoll")]
        table.add_row(
            str(clients),
            f"{p50[0]:.2f}",
            f"{p50[1]:.2f}",
            f"{p50[1] - p50[0]:+.2f}",
            f"{p99[0]:.2f}",
            f"{p99[1]:.2f}",
            f"{p99[1] - p99[0]:+.2f}",
            *("-" if spent is None else f"{spent * 1000 / served:.2f}" for spent in used),
        )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
