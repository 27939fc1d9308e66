"""Figures for the REST face: calls per second and latency of Stripe operations over HTTP, beside the same
operation as an in-process tool call on the payments world.

    python benchmarks/rest.py                 # one table; medians of three rounds
    python benchmarks/rest.py --calls 500 --rounds 5 --clients 8

The server is `optimize serve --world payments` in its own process, as a user runs it; the client keeps
one connection alive (httpx), or one per thread with --clients. A row's tool-call figures time
`Instance.request` on an open instance: what the HTTP path adds is the difference. The SDK row is the
official `stripe` package (its requests session, form encoding and object parsing) on the same server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from atoll.worlds import World, get_world
from atoll.worlds.payments.fixtures import fixed_id

AUTH = {"authorization": "Bearer sk_test_bench"}
FORM = {**AUTH, "content-type": "application/x-www-form-urlencoded"}
CUSTOMER = fixed_id("cus", "dana")
PACK = fixed_id("pi", "dana_pack")


@dataclass(frozen=True)
class Case:
    """One operation, as an HTTP request and as the in-process call it dispatches to."""

    label: str
    method: str
    path: str
    body: str
    operation: str
    arguments: dict


CASES = [
    Case(
        "retrieve a customer",
        "GET",
        f"/v1/customers/{CUSTOMER}",
        "",
        "GET /v1/customers/{customer}",
        {"customer": CUSTOMER},
    ),
    Case(
        "list payment intents, charges expanded",
        "GET",
        f"/v1/payment_intents?customer={CUSTOMER}&limit=10&expand[]=data.latest_charge",
        "",
        "GET /v1/payment_intents",
        {"customer": CUSTOMER, "limit": 10, "expand": ["data.latest_charge"]},
    ),
    Case(
        "create a customer",
        "POST",
        "/v1/customers",
        "name=Bench+Mark&email=bench@example.com&metadata[source]=bench",
        "POST /v1/customers",
        {"name": "Bench Mark", "email": "bench@example.com", "metadata": {"source": "bench"}},
    ),
    Case(
        "refund 1 cent",
        "POST",
        "/v1/refunds",
        f"payment_intent={PACK}&amount=1",
        "POST /v1/refunds",
        {"payment_intent": PACK, "amount": 1},
    ),
]


def percentiles(timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def timed(action: Callable[[], object], calls: int) -> tuple[float, float, float]:
    """(calls per second, p50 ms, p99 ms) of `calls` sequential runs."""
    timings = []
    started = time.perf_counter()
    for _ in range(calls):
        begun = time.perf_counter()
        action()
        timings.append(time.perf_counter() - begun)
    elapsed = time.perf_counter() - started
    return (calls / elapsed, *percentiles(timings))


def concurrent(base: str, case: Case, calls: int, clients: int) -> float:
    """Calls per second with `clients` threads, each on its own connection and its own instance key."""

    def one_client(n: int) -> None:
        with httpx.Client(base_url=f"{base}/rest/payments/bench-c{n}") as http:
            for _ in range(calls // clients):
                http.request(case.method, case.path, content=case.body, headers=FORM).raise_for_status()

    for n in range(clients):  # afresh: an instance answers a few MiB in all before it must be reset
        httpx.put(f"{base}/rest/payments/bench-c{n}", json={}).raise_for_status()
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one_client, range(clients)))
    return (calls // clients * clients) / (time.perf_counter() - started)


def start_server(port: int, *options: str) -> subprocess.Popen:
    """`optimize serve --world payments` on 127.0.0.1:`port` with `options`, once it answers /health."""
    command = [
        sys.executable,
        "-m",
        "atoll.cli",
        "serve",
        "--world",
        "payments",
        "--port",
        str(port),
        *options,
    ]
    server = subprocess.Popen(command, cwd=Path(__file__).resolve().parent.parent, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("optimize serve did not start within 60 s")


def measure(base: str, calls: int, rounds: int, clients: int) -> list[list[str]]:
    import stripe

    world = get_world("payments")
    rows = [_row(case.label, *_case_rounds(base, world, case, calls, rounds, clients)) for case in CASES]
    sdk = stripe.StripeClient(
        "sk_test_bench", base_addresses={"api": f"{base}/rest/payments/bench-sdk"}, max_network_retries=0
    )
    sdk_rounds = [timed(partial(sdk.v1.customers.retrieve, CUSTOMER), calls) for _ in range(rounds)]
    rows.append(_row("retrieve a customer, stripe SDK", sdk_rounds, [], []))
    return rows


def _case_rounds(base: str, world: World, case: Case, calls: int, rounds: int, clients: int) -> tuple:
    rest, tool, together = [], [], []
    for n in range(rounds):
        with httpx.Client(base_url=f"{base}/rest/payments/bench-{n}") as http:
            send = partial(http.request, case.method, case.path, content=case.body, headers=FORM)
            send().raise_for_status()  # opens the key's instance, outside the timing
            rest.append(timed(send, calls))
        with world.instance("lumen_studio", seed=n) as instance:
            tool.append(timed(partial(instance.request, case.operation, **case.arguments), calls))
        if clients > 1:
            together.append(concurrent(base, case, calls, clients))
    return rest, tool, together


def _row(label: str, rest: list, tool: list, together: list[float]) -> list[str]:
    def median(figures: list, index: int) -> float:
        return statistics.median(f[index] for f in figures)

    cells = [label, f"{median(rest, 0):,.0f}", f"{median(rest, 1):.2f}", f"{median(rest, 2):.2f}"]
    cells.append(f"{statistics.median(together):,.0f}" if together else "")
    if tool:
        cells += [f"{median(tool, 0):,.0f}", f"{median(tool, 1):.3f}", f"{median(tool, 2):.3f}"]
    else:
        cells += ["", "", ""]
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per operation per round (default 300)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds; the table shows their medians (default 3)"
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="threads for the concurrent column; 1 skips it"
    )
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()
    server = start_server(args.port, "--max-sessions", "64")
    try:
        rows = measure(f"http://127.0.0.1:{args.port}", args.calls, args.rounds, args.clients)
    finally:
        server.terminate()
        server.wait(timeout=10)
    table = Table(
        title=f"REST vs tool calls, payments world ({args.calls} calls x {args.rounds} rounds, medians)"
    )
    for column in (
        "operation",
        "REST calls/s",
        "REST p50 ms",
        "REST p99 ms",
        f"REST calls/s, {args.clients} clients",
    ):
        table.add_column(column, justify="left" if column == "operation" else "right")
    for column in ("tool calls/s", "tool p50 ms", "tool p99 ms"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    Console(width=None if sys.stdout.isatty() else 150).print(table)
    print(f"cores: {os.cpu_count()}; server and client share them", file=sys.stderr)


if __name__ == "__main__":
    main()
