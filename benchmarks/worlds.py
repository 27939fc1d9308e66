"""Figures for the world engine: instance creation, tool calls, diff, and memory for many live instances.

    python benchmarks/worlds.py            # prints one table

Instance creation is timed to the first query (SQLite parses the schema then), several ways
side by side: Atoll cold (a fresh connection on the fixture's shared bytes), Atoll pooled (a
warm connection rolled back to the fixture, as in a batch), a bare `deserialize` of the bytes,
and the plain approach (copy the fixture file, open it). Cold, plain copy and the bare
`deserialize` are timed in turns, ten of each per round, so that a busy machine slows both alike (one of each would time
every cold instance right after a copy of the whole fixture had flushed the CPU's caches); the
plain copy is the baseline a cold instance must beat. The calls of a five-call episode include the transaction
guard every statement a tool prepares passes through.
"""

from __future__ import annotations

import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.worlds import get_world
from atoll.worlds._capture import KIND as CAPTURE_KIND
from atoll.worlds._pool import ConnectionPool

WORLD = "helpdesk"
BLOCK = 10  # timings of one kind per turn


def median_ms(action: Callable[[], object], repeats: int) -> float:
    return statistics.median(elapsed(action) for _ in range(repeats)) * 1000


def elapsed(action: Callable[[], object], pool: ConnectionPool | None = None) -> float:
    """Seconds `action` took; for a cold instance, emptying `pool` first is not counted."""
    if pool is not None:
        while pool.idle:
            pool.idle.pop().connection.close()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def creation_figures(fixture: str, repeats: int) -> dict[str, float]:
    world = get_world(WORLD)
    data = world.load_fixture(fixture)
    blob = data.parts["main"]

    def deserialize_only() -> None:
        connection = sqlite3.connect(":memory:")
        connection.deserialize(blob)
        connection.execute("SELECT 1 FROM customers LIMIT 1").fetchall()
        connection.close()

    pool = ConnectionPool.of(data)

    def atoll_cold() -> None:  # the pool emptied first: a fresh connection, its schema parsed on first use
        with world.instance(fixture) as instance:
            instance.query("SELECT 1 FROM customers LIMIT 1")

    def atoll_pooled() -> None:
        with world.instance(fixture) as instance:
            instance.query("SELECT 1 FROM customers LIMIT 1")

    scratch = Path(tempfile.mkdtemp())
    source = scratch / "fixture.sqlite"
    source.write_bytes(blob)

    def plain_copy() -> None:
        target = scratch / "copy.sqlite"
        shutil.copyfile(source, target)
        connection = sqlite3.connect(target)
        connection.execute("SELECT 1 FROM customers LIMIT 1").fetchall()
        connection.close()

    cold, plain, bare = [], [], []
    for _ in range(repeats // BLOCK):
        cold += [elapsed(atoll_cold, pool) for _ in range(BLOCK)]
        plain += [elapsed(plain_copy) for _ in range(BLOCK)]
        bare += [elapsed(deserialize_only) for _ in range(BLOCK)]
    figures = {
        "bytes": len(blob),
        "deserialize_only": statistics.median(bare) * 1000,
        "atoll_cold": statistics.median(cold) * 1000,
        "plain_copy": statistics.median(plain) * 1000,
        "atoll_pooled": median_ms(atoll_pooled, repeats),
    }
    shutil.rmtree(scratch)
    return figures


def episode_figures(repeats: int) -> dict[str, float]:
    """Medians, in ms, of the five calls of an episode on big_retailer and of the diff after them."""
    world = get_world(WORLD)
    with world.instance("big_retailer") as probe:
        order = probe.query(
            "SELECT o.id, o.customer_id, c.email FROM orders o JOIN customers c ON c.id = o.customer_id "
            "WHERE o.status = 'delivered' ORDER BY o.id LIMIT 1"
        )[0]
    calls, diffs = [], []
    for _ in range(repeats):
        with world.instance("big_retailer") as instance:
            started = time.perf_counter()
            instance.call("find_customer", email=order["email"])
            instance.call("get_order", order_id=order["id"])
            instance.call("add_order_note", order_id=order["id"], note="Customer called about the delivery.")
            instance.call(
                "issue_store_credit", customer_id=order["customer_id"], amount=10.0, reason="late delivery"
            )
            instance.call("partial_refund", order_id=order["id"], amount=5.0, reason="scratched lid")
            calls.append(time.perf_counter() - started)
            started = time.perf_counter()
            diff = instance.diff()
            diffs.append(time.perf_counter() - started)
            assert diff.summary(), "the episode should have changed the world"
    return {"calls": statistics.median(calls) * 1000, "diff": statistics.median(diffs) * 1000}


MEMORY_PROBE = """
import gc, sys
from atoll.worlds import get_world
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096
world = get_world('helpdesk')
world.load_fixture('small_shop')
with world.instance('small_shop') as warm:
    warm.call('add_order_note', order_id='ORD-1001', note='warm-up')
gc.collect()
before = rss()
instances = [world.instance('small_shop', seed=i) for i in range(1000)]
for instance in instances:
    instance.call('add_order_note', order_id='ORD-1001', note='one write each')
gc.collect()
print(rss() - before)
"""


def memory_for_1000_instances() -> int:
    completed = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE], capture_output=True, text=True, check=True
    )
    return int(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    console = Console()
    get_world(WORLD).load_fixture("big_retailer")  # build outside the timings
    table = Table(title=f"World engine figures ({WORLD}; medians; change capture: {CAPTURE_KIND})")
    for column in ("figure", "small_shop", "big_retailer", "target"):
        table.add_column(column, justify="right" if column != "figure" else "left")
    small, big = creation_figures("small_shop", 300), creation_figures("big_retailer", 40)
    table.add_row("fixture size", f"{small['bytes'] / 1024:.0f} KiB", f"{big['bytes'] / 2**20:.1f} MiB", "")
    table.add_row(
        "create: Atoll cold (fresh connection)",
        f"{small['atoll_cold']:.3f} ms",
        f"{big['atoll_cold']:.3f} ms",
        "≤ 0.5 / 3 ms",
    )
    table.add_row(
        "create: plain file copy + open (baseline)",
        f"{small['plain_copy']:.3f} ms",
        f"{big['plain_copy']:.3f} ms",
        "",
    )
    table.add_row(
        "  cold / plain copy",
        f"{small['atoll_cold'] / small['plain_copy']:.2f}",
        f"{big['atoll_cold'] / big['plain_copy']:.2f}",
        "< 1",
    )
    table.add_row(
        "create: Atoll pooled (batch reuse)",
        f"{small['atoll_pooled']:.3f} ms",
        f"{big['atoll_pooled']:.3f} ms",
        "",
    )
    table.add_row(
        "create: deserialize + parse only",
        f"{small['deserialize_only']:.3f} ms",
        f"{big['deserialize_only']:.3f} ms",
        "",
    )
    episode = episode_figures(40)
    table.add_row("calls of a 5-call episode", "", f"{episode['calls']:.3f} ms", "")
    table.add_row("diff after a 5-call episode", "", f"{episode['diff']:.3f} ms", "≤ 5 ms")
    table.add_row(
        "memory, 1,000 live instances", f"{memory_for_1000_instances() / 2**20:.0f} MiB", "", "< 300 MiB"
    )
    console.print(table)


if __name__ == "__main__":
    main()
