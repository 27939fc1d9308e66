"""How long the built-in redactors take on 1 MiB of adversarial text: one chat message each, shaped to make
a backtracking pattern retry long runs (the email redactor once took 19 s on 64,000 `a` characters).

Each body is redacted by every built-in (email, card, phone) through `redact_text`, the best of `--repeat`
runs; the issue's bar is well under a second for any of them.

Run: python benchmarks/redact.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from atoll.service import redact_text  # after the path line: runs from anywhere

MIB = 1 << 20
BODIES = {
    "one local part (a…)": "a" * MIB,
    "at signs (a@a@…)": "a@" * (MIB // 2),
    "dots (a.a.…)": "a." * (MIB // 2),
    "digits (111…)": "1" * MIB,
    "spaced digits (1 1 …)": "1 " * (MIB // 2),
    "dashed digits (1-1-…)": "1-" * (MIB // 2),
    "plus signs (+1+1…)": "+1" * (MIB // 2),
    "address literals (a@[1…)": "a@[1" * (MIB // 4),
    "cards (4111… )": "4111111111111111 " * (MIB // 17),
}
REDACTORS = ["email", "phone", "card"]


def best_time(text: str, repeat: int) -> float:
    """The fastest of `repeat` redactions of `text`, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        redact_text(text, REDACTORS)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="Runs per body; the best is shown.")
    args = parser.parse_args()
    print(f"{'body (1 MiB)':<28} {'seconds':>8}")
    worst = 0.0
    for name, text in BODIES.items():
        took = best_time(text, args.repeat)
        worst = max(worst, took)
        print(f"{name:<28} {took:>8.3f}")
    print(f"{'worst':<28} {worst:>8.3f}")


if __name__ == "__main__":
    main()
