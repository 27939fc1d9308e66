"""The server's memory under issue 35's REST attack: one key, or a few, posting the largest bodies they may.

    python benchmarks/rest_memory.py                  # the issue's 60 posts, then the same under the bound
    python benchmarks/rest_memory.py --posts 120 --keys 16

The server is `optimize serve --world payments` in its own process on 127.0.0.1, as a user runs it; its
resident memory (VmRSS, Linux) is read after each phase. The issue's attack, 60 posts of 900 KB on one key,
grew the server from 105 to 378 MB in 1.1 s and made that key's state 216 MB. Now a REST operation takes at
most 256 KiB of parameters (413), an instance holds at most 4 MiB of calls and answers as
`Session.charge` counts them, and all sessions together 128 MiB (then 429 instance_full until a key is reset
or closed), so the phases below show what is left to an attacker: the 900 KB posts are refused whole, and
250 KB posts fill one key's share, then `--keys` keys' shares up to the server's total. Every phase is bounded
in requests (`--posts` a key) and the whole run in time (`--deadline`).

Measured on a shared two-core machine: started at 85 MiB; the issue's 60 posts of 900 KB, 413 x60, 86 MiB;
250 KB posts on one key, 200 x6 then 429, 98 MiB, its state 6.0 MB; on 40 keys, 173 accepted in all (the
server's total), 294 MiB.
"""

from __future__ import annotations

import argparse
import socket
import time
from collections import Counter
from pathlib import Path

import httpx
from rest import start_server  # the sibling script: run as python benchmarks/rest_memory.py
from rich.console import Console
from rich.table import Table

FORM = {"authorization": "Bearer sk_test_bench", "content-type": "application/x-www-form-urlencoded"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss_mib(pid: int) -> float:
    """The process's resident memory now, in MiB (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc: this benchmark reads Linux's process status")


def attack(client: httpx.Client, keys: list[str], posts: int, size: int, until: float) -> tuple[Counter, int]:
    """`posts` posts of a `size`-byte description on each key (fewer if `until` passes); the answers' statuses,
    and the largest state document one of the keys then returns (0: no key has an instance)."""
    statuses: Counter = Counter()
    for key in keys:
        for n in range(posts):
            if time.monotonic() > until:
                break
            body = f"description={n}" + "x" * size
            statuses[
                client.post(f"/rest/payments/{key}/v1/customers", content=body, headers=FORM).status_code
            ] += 1
    states = [client.get(f"/rest/payments/{key}") for key in keys]
    return statuses, max((len(state.content) for state in states if state.status_code == 200), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=60, help="posts on each key (the issue's: 60)")
    parser.add_argument("--keys", type=int, default=8, help="keys of the last phase")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds the attack may take in all")
    args = parser.parse_args()

    port = free_port()
    server = start_server(port)
    until = time.monotonic() + args.deadline
    table = Table("phase", "posts", "answers", "RSS MiB", "largest state")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            table.add_row("started", "", "", f"{rss_mib(server.pid):.0f}", "")
            phases = [
                ("900 KB posts, one key (the issue's)", ["k900"], 900_000),
                ("250 KB posts, one key", ["k250"], 250_000),
                (f"250 KB posts, {args.keys} keys", [f"many{n}" for n in range(args.keys)], 250_000),
            ]
            for label, keys, size in phases:
                started = time.monotonic()
                statuses, state = attack(client, keys, args.posts, size, until)
                answers = ", ".join(f"{status} x{count}" for status, count in sorted(statuses.items()))
                table.add_row(
                    f"{label} ({time.monotonic() - started:.1f} s)",
                    str(sum(statuses.values())),
                    answers,
                    f"{rss_mib(server.pid):.0f}",
                    f"{state / 1e6:.1f} MB" if state else "no instance",
                )
    finally:
        server.terminate()
        server.wait(timeout=30)
    Console().print(table)


if __name__ == "__main__":
    main()
