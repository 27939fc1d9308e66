"""`optimize run`, `report`, `history`, `diff`: improve a harness and read what happened."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from atoll.commands._shared import (
    ConcurrencyOption,
    ExecutorOption,
    HarnessArgument,
    ModelOption,
    ReuseOption,
    SuiteOption,
    before_first,
    err,
    fail,
    harness_or_default,
    option_errors,
    out,
    print_json,
)

RUN_ONLY = {"resume"}
"""`optimize run`'s options that are not the optimizer's settings (`OptimizeConfig`)."""


def run(
    ctx: typer.Context,
    harness: HarnessArgument = None,
    suite: SuiteOption = None,
    model: ModelOption = None,
    proposer: Annotated[
        str,
        typer.Option(
            help="The model-driven proposer beside the LLM-free operators: reflect (one small edit from one "
            "failing train episode: a rule, a tool-description sentence, a prompt part cut, a demo, a tool; "
            "a form a 1.5B model fills), rewrite (whole files, for a capable model) or off."
        ),
    ] = "reflect",
    proposer_model: Annotated[
        str | None, typer.Option(help="The proposer's model; default the agent's own (--model).")
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="greedy (incumbent chain) or pareto (GEPA-style parent pool).")
    ] = "greedy",
    k: Annotated[
        int, typer.Option("-k", help="Seeds per val task, the batch each variant is decided on.")
    ] = 1,
    max_proposals: Annotated[int, typer.Option(help="Stop after this many proposals.")] = 12,
    patience: Annotated[int | None, typer.Option(help="Stop after this many rejections in a row.")] = None,
    max_minutes: Annotated[
        float | None,
        typer.Option(
            envvar="ATOLL_MAX_MINUTES",
            help="Wall-time budget, checked between proposals (the start and the closing test scoring "
            "always run).",
        ),
    ] = 90.0,
    max_episodes: Annotated[int | None, typer.Option(help="Episode budget.")] = None,
    max_model_calls: Annotated[int | None, typer.Option(help="Model-call budget.")] = None,
    max_cost_usd: Annotated[float | None, typer.Option("--max-cost", help="Cost budget in USD.")] = None,
    min_effect: Annotated[
        float, typer.Option(help="Bootstrap lower bound of the mean gain must exceed this.")
    ] = 0.02,
    objective: Annotated[
        str,
        typer.Option(
            help="quality (raise the mean score), or cost, latency or tokens per episode: lowered while "
            "quality stays non-inferior (within --tolerance)."
        ),
    ] = "quality",
    min_reduction: Annotated[
        float,
        typer.Option(
            help="With --objective cost|latency|tokens: the lower bound of the cut must exceed this."
        ),
    ] = 0.10,
    tolerance: Annotated[
        float,
        typer.Option(
            help="With --objective cost|latency|tokens: how far mean quality may fall (0.05: the 95% lower "
            "bound of its change must stay at or above -0.05), as `optimize gate --tolerance`."
        ),
    ] = 0.05,
    models: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated models the optimizer may give each agent, e.g. "
            "`local/gemma-3-270m,local/smollm2-135m`; default keep the harness's."
        ),
    ] = None,
    val_looks: Annotated[
        int,
        typer.Option(
            help="Confirm a candidate on val in this many looks; one behind, or that cannot be accepted "
            "whatever the rest of val shows, stops at a look (1: play all of val each time)."
        ),
    ] = 4,
    screen_size: Annotated[
        int,
        typer.Option(
            help="Train tasks in the screen's first round; each round doubles it, up to --train-sample."
        ),
    ] = 3,
    train_sample: Annotated[
        int | None, typer.Option(help="Train tasks the proposers learn from (a seeded sample).")
    ] = 16,
    operators: Annotated[
        list[str] | None,
        typer.Option(
            "--operator",
            help="Operator to use by name (repeatable): Atoll's own, or an installed plug-in's "
            "(entry point group atoll.operators); default all.",
        ),
    ] = None,
    concurrency: ConcurrencyOption = 4,
    branch: Annotated[
        str | None, typer.Option(help="Commit accepted variants on this branch instead of the current one.")
    ] = None,
    commit: Annotated[
        bool, typer.Option("--commit/--no-commit", help="Commit accepted variants to git.")
    ] = True,
    seed: Annotated[int, typer.Option(help="Seed of the proposers' randomness.")] = 0,
    resume: Annotated[
        str | None, typer.Option(help="Resume an interrupted or paused run by id (or `latest`).")
    ] = None,
    reuse: ReuseOption = True,
    executor: ExecutorOption = "local",
) -> None:
    """Optimize a harness: propose variants, test each against the incumbent, commit only real wins.

    Each proposal is raced over growing batches of train tasks, then confirmed on the val split
    (paired: same tasks, seeds and model). It is kept only if a sign test gives p <= 0.05, the bootstrap lower
    bound of the mean gain exceeds `--min-effect`, and no always-passing task breaks. Every
    accepted variant is one git commit of the harness folder, with the figures in its message.

    With `--objective tokens` (or cost, latency) a variant is kept instead when quality is
    non-inferior (the gate's rule, within `--tolerance`) and the objective is lower on more tasks than
    not, with the bootstrap lower bound of the cut above `--min-reduction`; `--models` lets it choose a
    model per agent.

    Example: `optimize run harnesses/support_agent --max-proposals 6`
    or `optimize run harnesses/support_agent --objective tokens`
    """
    given = dict(locals())  # the options as typer converted them (ctx.params: click's raw `()`)
    import asyncio
    import contextlib

    from pydantic import ValidationError
    from rich.live import Live

    from atoll.optimizer import (
        OptimizeConfig,
        OptimizerEvent,
        OptimizerPaused,
        optimize,
        run_power,
    )
    from atoll.views.optimize import event_line, print_optimize_result, render_status
    from atoll.views.suite_check import power_warning

    try:  # the options are the config's fields, spelt flat (`OptimizeConfig.from_options`)
        options = {name: given[name] for name in ctx.params if name not in RUN_ONLY}
        config = OptimizeConfig.from_options({**options, "harness": harness_or_default(harness)})
    except ValidationError as error:
        fail(option_errors(error))
    if resume:
        err.print(f"resuming {resume} with the settings it was started with; other options are ignored")
    warning = None if resume else power_warning(run_power(config))  # a val split too small to accept anything
    if err.is_terminal:
        live: Any = Live(console=err, refresh_per_second=4, transient=False)

        def on_event(event: OptimizerEvent) -> None:
            live.update(render_status(event.status))
    else:  # a log, not a terminal: one line per step instead of a live panel
        live = contextlib.nullcontext()

        def on_event(event: OptimizerEvent) -> None:
            line = event_line(event)
            if line:
                err.print(line, highlight=False, soft_wrap=True)

    run_ids: list[str] = []  # the run's id, from its events: what an interrupt tells the user to resume

    def track(event: OptimizerEvent) -> None:
        run_ids[:] = [event.status.run_id]
        on_event(event)

    with live:
        try:
            result = asyncio.run(optimize(config, resume=resume, on_event=before_first(warning, err, track)))
        except OptimizerPaused as pause:
            fail(f"paused: {pause}", code=3)
        except KeyboardInterrupt:
            resume_with = f"; resume with: optimize run {harness} --resume {run_ids[0]}" if run_ids else ""
            fail(f"interrupted{resume_with}", code=130)
    print_optimize_result(out, result)  # tables on a terminal, plain lines in a log


def diff(
    a: Annotated[
        str, typer.Argument(help="A git ref, `worktree`, a run id (or `latest`), or a harness hash prefix.")
    ],
    b: Annotated[str, typer.Argument(help="The same kinds as A; prefixes git:, run:, hash: force the kind.")],
    harness: Annotated[Path | None, typer.Option(help="The harness folder, for git refs.")] = None,
    task: Annotated[
        str | None, typer.Option(help="With two runs: show this task's world diffs side by side.")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="With --task: which seed (default the first).")] = None,
) -> None:
    """Compare two harness versions or two runs: the file diff (prompts word by word, YAML by key),
    the tasks that flipped, and for one task the two world diffs side by side. Without colour (piped,
    in a CI log, or NO_COLOR set) changed words read `[-old-]{+new+}`, as in git's --word-diff=plain.

    Example: `optimize diff main worktree --harness harnesses/support_agent`
    """
    from atoll.evals import RunStore
    from atoll.optimizer import resolve_side
    from atoll.views.compare import render_comparison

    with RunStore() as store:
        left, right = resolve_side(a, harness, store), resolve_side(b, harness, store)
        out.print(render_comparison(left, right, store, task=task, seed=seed))


def report(
    run_ref: Annotated[
        str, typer.Argument(metavar="RUN", help="An optimization run id (or `latest`).")
    ] = "latest",
    html: Annotated[
        Path | None, typer.Option(help="Also write the report as one self-contained HTML page.")
    ] = None,
) -> None:
    """Show an optimization run: its score trajectory, every proposal with its statistics, spend,
    and the final harness diff.

    Example: `optimize report latest --html report.html`
    """
    from atoll.evals import RunStore
    from atoll.views.report import render_report, write_html_report

    with RunStore() as store:
        out.print(render_report(store, run_ref))
        if html:
            err.print(f"wrote {write_html_report(store, run_ref, html)}")


def history_(
    harness: Annotated[Path, typer.Argument(help="The harness folder.")],
    limit: Annotated[int, typer.Option(help="How many commits to read.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a harness's accepted variants (its Atoll commits) with their recorded figures.

    Example: `optimize history harnesses/support_agent`
    """
    from atoll.optimizer import history
    from atoll.views.history import render_history

    if as_json:
        print_json([entry.model_dump() for entry in history(harness, limit=limit)])
    else:
        out.print(render_history(harness, limit=limit))
