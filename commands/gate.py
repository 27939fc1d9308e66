"""`optimize gate`: the CI regression check of a harness change."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from atoll.commands._shared import (
    ConcurrencyOption,
    ExecutorOption,
    ModelOption,
    ReuseOption,
    SuiteOption,
    before_first,
    err,
    fail,
    harness_or_default,
    option_errors,
    out,
)

GATE_ONLY = {"junit", "json_out", "save_baseline"}
"""`optimize gate`'s options that are not the gate's settings (`GateConfig`): where the report goes."""


def gate(
    ctx: typer.Context,
    harness: Annotated[
        Path | None,
        typer.Argument(
            help="The harness folder; its working-tree files are the candidate. Default atoll.toml's `harness`."
        ),
    ] = None,
    base: Annotated[
        str | None, typer.Option(help="Git ref of the base; default the merge base with the default branch.")
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="Compare with a stored result (--json or --save-baseline output) instead of a ref."
        ),
    ] = None,
    suite: SuiteOption = None,
    model: ModelOption = None,
    split: Annotated[str, typer.Option(help="Which split to score: train, val or test.")] = "val",
    k: Annotated[
        int | None, typer.Option("-k", help="Seeds per task; default each task's own seeds.")
    ] = None,
    tolerance: Annotated[
        float,
        typer.Option(
            help="How far the mean score may fall: fail if the 95% lower bound of the mean change is below "
            "minus this (0.05: below -0.05), as `optimize run --tolerance`. A negative value, the old "
            "spelling, reads as its size."
        ),
    ] = 0.05,
    alpha: Annotated[float, typer.Option(help="Fail if the sign test for losses gives p <= alpha.")] = 0.05,
    max_error_rate: Annotated[
        float, typer.Option(help="Above this share of errored episodes: exit 3.")
    ] = 0.2,
    concurrency: ConcurrencyOption = 8,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here (one test case per task).")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the full report as JSON here.")
    ] = None,
    save_baseline: Annotated[
        Path | None, typer.Option(help="Save the candidate's result as a baseline file.")
    ] = None,
    reuse: ReuseOption = True,
    executor: ExecutorOption = "local",
    accept_suite_changes: Annotated[
        bool,
        typer.Option(
            "--accept-suite-changes",
            help="When the suite differs from the base's, let the working tree's suite alone decide.",
        ),
    ] = False,
) -> None:
    """CI regression gate: is the working-tree harness no worse than the base? Exit 0 pass, 1 regression,
    2 usage or configuration error, 3 the evaluation itself failed.

    Both sides run the same tasks and seeds, paired, replaying cached model answers. When the change
    touches the suite, both sides are graded with the base's suite too and the worse verdict stands,
    unless --accept-suite-changes. Appends a Markdown summary to $GITHUB_STEP_SUMMARY when set; see
    examples/atoll-gate.yml.

    Example: `optimize gate harnesses/support_agent --base main --junit gate.xml`
    """
    given = dict(locals())  # the options as typer converted them (ctx.params: click's raw `()`)
    import asyncio

    from pydantic import ValidationError

    from atoll.optimizer import GateConfig, gate_power, run_gate, write_json
    from atoll.optimizer import save_baseline as store_baseline
    from atoll.views.gate import append_step_summary, gate_progress, render_gate, write_junit
    from atoll.views.suite_check import power_warning

    try:  # the options are the gate's settings (`GateConfig`), and where its report goes
        options = {name: given[name] for name in ctx.params if name not in GATE_ONLY}
        config = GateConfig.model_validate({**options, "harness": harness_or_default(harness)})
    except ValidationError as error:
        fail(option_errors(error))
    if tolerance < 0:
        err.print(f"note: --tolerance {tolerance:g} reads as {-tolerance:g}: how far the score may fall")
    warning = power_warning(gate_power(config))  # a split too small for the sign test for losses
    try:
        with gate_progress(err) as progress:
            report = asyncio.run(run_gate(config, on_progress=before_first(warning, err, progress)))
        out.print(render_gate(report))
        if junit:
            write_junit(report, junit)
        if json_out:
            write_json(report, json_out)
        if save_baseline:
            store_baseline(report, save_baseline)
        append_step_summary(report)
    except OSError as error:
        fail(f"cannot write {error.filename}: {error.strerror}")
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    raise typer.Exit(report.exit_code)
