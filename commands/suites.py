"""`optimize suite …`: check an eval suite before spending a model call on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from atoll.commands._shared import err, harness_or_default, out, print_json

BROKEN = 1  # a reference fails its own task: the suite needs fixing, like a failing test


def suite_check(
    suite: Annotated[
        Path | None,
        typer.Argument(help="The suite folder (with suite.yaml); default the suite of --harness."),
    ] = None,
    harness: Annotated[
        Path | None,
        typer.Option(
            help="Check this harness's suite (when SUITE is not given; default atoll.toml's `harness`) "
            "and list the reference tools it shows none of its agents."
        ),
    ] = None,
    k: Annotated[
        int,
        typer.Option("-k", min=1, help="Seeds per val task, as `optimize run -k`, for the power figures."),
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole report as JSON.")] = False,
) -> None:
    """Check a suite without a model: does every task's reference solution pass it at every seed, what
    do careless agents score, and can `optimize run` accept anything on its val split?

    - **References**: each task's reference is replayed and graded at every seed; a failing task is named
      with the checks it fails (or the call that failed).
    - **Blind spots**: a do-nothing agent (no tool call, one generic reply) should fail every task and
      score low; its mean score is what checks award for writing nothing. A stray-write agent (the
      reference, then another task's) should fail every task: one it passes misses collateral damage.
    - **Harness**: with --harness, the reference tools none of its agents sees (tasks it cannot solve
      the reference's way).
    - **Power**: the sign test counts val tasks; at alpha 0.05 five must improve with none worse, so a
      small val split can accept nothing whatever the optimizer finds. More seeds (-k) do not lower
      that count; more val tasks do.

    Exit 0 when every reference passes, 1 when any fails, 2 when the suite does not load.

    Example: `optimize suite check evals/helpdesk`
    """
    from rich.markup import escape

    from atoll.evals import check_suite, suite_for
    from atoll.harnesses import load_harness
    from atoll.views.suite_check import render_suite_check

    if suite is None and harness is None:
        harness = harness_or_default(None)  # the project's harness, else a clear error
    loaded = load_harness(harness) if harness is not None else None
    if suite is None:
        suite = suite_for(loaded)
    check = check_suite(suite, harness=loaded, k=k)
    if as_json:
        print_json(check.model_dump(mode="json"))
    else:
        out.print(render_suite_check(check))
    if not check.ok:
        err.print(
            f"[bold red]error:[/] the reference of {len(check.broken_references)} task(s) fails its own task: "
            + escape(", ".join(check.broken_references)),
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(BROKEN)
