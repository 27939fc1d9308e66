"""`optimize`: the command line of Atoll.

Each command parses its input, calls the library and renders the result; logic lives in
the packages. Results go to stdout, diagnostics to stderr. Heavy imports (litellm, dspy)
happen inside the commands that call a model, so `optimize --help` starts at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

if TYPE_CHECKING:
    from pydantic import ValidationError


class _Commands(TyperGroup):
    """The one error handler: an AtollError raised by any layer under any command is one line on stderr
    and its exit code (2 usage or configuration, 3 the run failed), never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            from worlds import AtollError  # imported here: `optimize --help` stays instant

            if isinstance(error, AtollError):
                fail(str(error), code=error.exit_code)
            raise


app = typer.Typer(
    cls=_Commands,
    help="Atoll: optimize agent harnesses against private SQLite worlds, graded by what the agent changed.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_show_locals=False,  # locals can hold API keys
)
world_app = typer.Typer(
    help="Explore worlds: their tables, tools, fixtures and documents.", no_args_is_help=True
)
app.add_typer(world_app, name="world")

out = Console()
err = Console(stderr=True)

# Options several commands share, defined once so they read and behave the same everywhere.
SuiteOption = Annotated[
    Path | None,
    typer.Option(
        help="Eval suite folder; default harness.yaml's suite, else evals/WORLD in the nearest folder above the harness."
    ),
]
ModelOption = Annotated[
    str | None, typer.Option(help="Agent model (any litellm name); default $ATOLL_MODEL, else the harness's.")
]
ConcurrencyOption = Annotated[
    int, typer.Option(help="Episodes in flight at once (a local model runs one at a time).")
]
ReuseOption = Annotated[
    bool,
    typer.Option(
        "--reuse/--no-reuse", help="Reuse episodes already stored for the same harness, model and task."
    ),
]
ClockOption = Annotated[str, typer.Option(help="fixed, tick, wall, or fixed@YYYY-MM-DD HH:MM:SS.")]
HostOption = Annotated[str, typer.Option(help="Address to bind; anything but loopback needs --token.")]
TokenOption = Annotated[
    str | None, typer.Option(envvar="ATOLL_TOKEN", help="Bearer token every HTTP request must carry.")
]
SessionsOption = Annotated[int, typer.Option(help="Most sessions (instances) alive at once.")]
IdleOption = Annotated[float, typer.Option(help="Seconds after which an idle session is closed.")]


USAGE_ERROR = 2  # as worlds.USAGE_ERROR, without importing it for `--help`


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """One clear line on stderr and a non-zero exit, no traceback."""
    # Escaped: error text (a YAML path like agents[desk], a provider's message) is not markup.
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # paths stay whole
    raise typer.Exit(code)


# Config fields whose command-line option is spelled differently.
_OPTION_NAMES = {"max_cost_usd": "--max-cost"}


def option_errors(error: ValidationError) -> str:
    """One line per invalid option, named as the user typed it (not pydantic's block with a URL)."""
    lines = []
    for item in error.errors():
        field = str(item["loc"][-1]) if item["loc"] else ""
        option = _OPTION_NAMES.get(field, "--" + field.replace("_", "-")) if field else ""
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{option}: {message}" if option else message)
    return "\n".join(lines)


def _print_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


@world_app.command("list")
def world_list() -> None:
    """List the worlds shipped with Atoll.

    Example: `optimize world list`
    """
    from worlds import get_world, list_worlds

    table = Table("world", "version", "tables", "tools", "fixtures", "description")
    for name in list_worlds():
        try:
            world = get_world(name)
        except Exception as error:  # one broken world must not hide the others
            table.add_row(name, "", "", "", "", f"[red]cannot load: {error}[/]")
            continue
        table.add_row(
            name,
            world.version,
            str(len(world.tables)),
            str(len(world.tools)),
            ", ".join(world.fixtures),
            world.description,
        )
    out.print(table)


@world_app.command("show")
def world_show(
    name: Annotated[str, typer.Argument(help="World name, e.g. `helpdesk`, or a module path.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Show a world: tables with row counts per fixture, tools with their parameters, fixtures, documents.

    Example: `optimize world show helpdesk`
    """
    from worlds import get_world

    world = get_world(name)
    counts = {fixture: world.load_fixture(fixture).row_counts for fixture in world.fixtures}
    if as_json:
        _print_json(
            {
                "name": world.name,
                "version": world.version,
                "description": world.description,
                "tables": {
                    label: {
                        "columns": [c.model_dump() for c in t.columns],
                        "primary_key": t.primary_key,
                        "rows": {f: counts[f].get(label) for f in counts},
                    }
                    for label, t in world.tables.items()
                },
                "tools": [
                    tool.schema()["function"] | {"writes": tool.writes} for tool in world.tools.values()
                ],
                "fixtures": {
                    n: {"epoch": str(f.epoch), "seed": f.seed, "description": f.description}
                    for n, f in world.fixtures.items()
                },
                "documents": {n: len(text) for n, text in world.documents.items()},
            }
        )
        return
    out.print(f"[bold]{world.name}[/] v{world.version} — {world.description}")
    tables = Table("table", "primary key", "columns", *counts, title="Tables")
    for label, info in world.tables.items():
        tables.add_row(
            label,
            ", ".join(info.primary_key),
            ", ".join(c.name for c in info.columns),
            *(str(counts[f].get(label, "")) for f in counts),
        )
    out.print(tables)
    tools = Table("tool", "writes", "parameters", "description", title="Tools")
    for tool in world.tools.values():
        schema = tool.parameters_schema()
        required = set(schema.get("required", []))
        params = ", ".join(f"{p}{'' if p in required else '?'}" for p in schema.get("properties", {}))
        tools.add_row(tool.name, "yes" if tool.writes else "", params, tool.description.split("\n")[0])
    out.print(tools)
    fixtures = Table("fixture", "epoch", "seed", "description", title="Fixtures")
    for fixture in world.fixtures.values():
        fixtures.add_row(fixture.name, str(fixture.epoch), str(fixture.seed), fixture.description)
    out.print(fixtures)
    documents = Table("document", "characters", "first line", title="Documents")
    for doc_name, text in world.documents.items():
        documents.add_row(doc_name, str(len(text)), text.strip().splitlines()[0] if text.strip() else "")
    out.print(documents)


@world_app.command("call")
def world_call(
    world_name: Annotated[str, typer.Argument(metavar="WORLD", help="World name, e.g. `helpdesk`.")],
    fixture: Annotated[str, typer.Argument(help="Fixture to start from, e.g. `small_shop`.")],
    tool: Annotated[str, typer.Argument(help="Tool to call, e.g. `get_order`.")],
    args: Annotated[
        str, typer.Option("--args", help='Arguments as a JSON object, e.g. \'{"order_id": "ORD-1001"}\'.')
    ] = "{}",
    seed: Annotated[int, typer.Option(help="Instance seed: picks the ids that tools generate.")] = 0,
    clock: ClockOption = "fixed",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result and diff as JSON.")] = False,
) -> None:
    """Call one tool on a fresh instance of a fixture; print its result and the world diff.

    Example: `optimize world call helpdesk small_shop get_order --args '{"order_id": "ORD-1001"}'`
    """
    from worlds import Clock, get_world

    world = get_world(world_name)
    if tool not in world.tools:
        fail(f"world {world.name!r} has no tool {tool!r}; tools: {', '.join(world.tools)}")
    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as error:
        fail(
            f'--args is not valid JSON ({error.msg} at column {error.colno}); pass an object like \'{{"order_id": "ORD-1001"}}\''
        )
    if not isinstance(arguments, dict):
        fail('--args must be a JSON object, like \'{"order_id": "ORD-1001"}\'')
    try:
        instance = world.instance(fixture, seed=seed, clock=Clock.parse(clock))
    except ValueError as error:
        fail(str(error))
    with instance:
        result = instance.call(tool, **arguments)
        diff = instance.diff()
    if as_json:
        _print_json({"result": result.model_dump(), "diff": diff.model_dump()})
    else:
        from views.world_diff import render_diff, render_value

        if result.ok:
            out.print(render_value(result.value, title=f"{tool} → result"))
        else:
            err.print(f"[bold red]{tool} failed[/] [{result.error.type}] {result.error.message}")
        out.print(render_diff(diff))
    if not result.ok and result.error.type == "invalid_arguments":
        raise typer.Exit(USAGE_ERROR)


@app.command("try")
def try_(
    harness: Annotated[Path, typer.Argument(help="The harness folder, e.g. `harnesses/support_agent`.")],
    message: Annotated[str | None, typer.Option("--message", "-m", help="What the user says.")] = None,
    task: Annotated[
        str | None, typer.Option(help="Run an eval task instead (its fixture, user and grade).")
    ] = None,
    suite: SuiteOption = None,
    fixture: Annotated[str, typer.Option(help="The world fixture to start from.")] = "small_shop",
    model: ModelOption = None,
    seed: Annotated[int, typer.Option(help="Instance seed and sample index.")] = 0,
    reply: Annotated[
        list[str] | None, typer.Option("--reply", help="A follow-up user message (repeatable, in order).")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the model again instead of replaying cached answers.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the episode as JSON.")] = False,
) -> None:
    """Run one episode of a harness and show it: the conversation, each tool call and the world diff
    (with --task, also the grader's verdicts).

    Example: `optimize try harnesses/support_agent --message "Where is my order ORD-1092?"`
    or `optimize try harnesses/support_agent --task status-delivered`
    """
    import asyncio

    from evals import grade_episode, load_suite, suite_for, user_for
    from harnesses import load_harness, try_episode
    from views.episode import render_episode
    from views.evals import render_grade

    if (message is None) == (task is None):
        fail("give --message TEXT or --task ID (one of them)")
    options: dict[str, Any] = {"fixture": fixture, "message": message or "", "replies": reply or []}
    if task is not None:
        evals_suite = load_suite(suite or suite_for(load_harness(harness)))
        chosen = evals_suite.task(task)
        options = {
            "fixture": chosen.fixture,
            "message": chosen.user.message,
            "clock": chosen.clock,
            "task_id": chosen.id,
            "task_context": chosen.context,
            "user": lambda agent_model: user_for(chosen, model=agent_model, sample=seed),
        }
    episode = asyncio.run(try_episode(harness, model_name=model, seed=seed, cache=not no_cache, **options))
    grade = grade_episode(evals_suite, chosen, episode) if task is not None else None
    if as_json:
        _print_json(episode.model_dump(mode="json") | ({"grade": grade.model_dump()} if grade else {}))
    else:
        out.print(render_episode(episode))
        if grade is not None:
            out.print(render_grade(grade))
    if episode.errored:
        raise typer.Exit(1)


@app.command("eval")
def eval_(
    harness: Annotated[
        Path | None, typer.Argument(help="The harness folder, e.g. `harnesses/support_agent`.")
    ] = None,
    suite: SuiteOption = None,
    split: Annotated[str | None, typer.Option(help="train, val or test; default all tasks.")] = None,
    k: Annotated[
        int | None, typer.Option("-k", help="Seeds per task (pass^k is reported); default each task's own.")
    ] = None,
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 8,
    resume: Annotated[
        str | None, typer.Option(help="Finish an interrupted eval run (id or `latest`).")
    ] = None,
    reuse: ReuseOption = True,
) -> None:
    """Score a harness on an eval suite, graded by state diffs; prints per-task and overall scores
    and stores every episode (see `optimize runs` and `optimize show`).

    Example: `optimize eval harnesses/support_agent --split val -k 3`
    """
    from evals import RunStore, evaluate, new_run_id, suite_for
    from evals import resume as resume_run
    from harnesses import load_harness
    from views.evals import progress_bar, render_eval_result

    if harness is None and resume is None:
        fail("name a harness folder (e.g. harnesses/support_agent) or --resume RUN")
    run_id: str | None = None
    try:
        with RunStore() as store, progress_bar(err) as on_progress:
            if resume:
                # `latest` is the newest eval left unfinished, not whatever ran last (a gate, a finished eval).
                latest = resume in ("latest", "last")
                run_id = store.latest_unfinished("eval") if latest else store.resolve(resume)
                result = resume_run(run_id, store=store, concurrency=concurrency, on_progress=on_progress)
            else:
                suite = suite or suite_for(load_harness(harness))
                run_id = new_run_id("eval")
                result = evaluate(
                    harness,
                    suite,
                    model=model,
                    split=split,
                    k=k,
                    concurrency=concurrency,
                    store=store,
                    run_id=run_id,
                    reuse=reuse,
                    on_progress=on_progress,
                )
    except KeyboardInterrupt:
        with RunStore() as store:  # interrupted before the run was stored: nothing to resume
            saved = run_id is not None and store.has_run(run_id)
        resume_with = f"; resume with: optimize eval --resume {run_id}" if saved else ""
        fail(f"interrupted{resume_with}", code=130)
    out.print(render_eval_result(result))


@app.command("runs")
def runs(
    limit: Annotated[int, typer.Option(help="How many runs to list, newest first.")] = 20,
    kind: Annotated[
        str | None, typer.Option(help="Only runs of this kind (eval, gate, optimize-gate, ...).")
    ] = None,
) -> None:
    """List stored runs: id, kind, harness, model, scores.

    Example: `optimize runs --kind eval`
    """
    from evals import RunStore
    from views.evals import render_runs

    with RunStore() as store:
        out.print(render_runs(store.runs(limit=limit, kind=kind)))


@app.command("show")
def show(
    run_ref: Annotated[
        str, typer.Argument(metavar="RUN", help="A run id, a unique part of one, or `latest`.")
    ],
    task: Annotated[str | None, typer.Argument(help="A task id: show its episode in full.")] = None,
    seed: Annotated[int | None, typer.Option(help="Which seed of the task (default the first).")] = None,
) -> None:
    """Show a stored run, or one episode of it: transcript, world diff and the grader's verdicts.

    Example: `optimize show latest refund-damaged-blender`
    """
    from evals import RunStore
    from views.evals import render_run

    with RunStore() as store:
        out.print(render_run(store, run_ref, task, seed))


@app.command("run")
def run(
    harness: Annotated[
        Path, typer.Argument(help="The harness folder to improve, e.g. `harnesses/support_agent`.")
    ],
    suite: SuiteOption = None,
    model: ModelOption = None,
    proposer_model: Annotated[
        str | None, typer.Option(help="Model for the LLM proposer; without it only LLM-free operators run.")
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="greedy (incumbent chain) or pareto (GEPA-style parent pool).")
    ] = "greedy",
    k: Annotated[int, typer.Option("-k", help="Seeds per val task in the gate set.")] = 1,
    max_proposals: Annotated[int, typer.Option(help="Stop after this many proposals.")] = 12,
    patience: Annotated[int | None, typer.Option(help="Stop after this many rejections in a row.")] = None,
    max_minutes: Annotated[
        float | None, typer.Option(help="Wall-time budget (checked between proposals).")
    ] = 15.0,
    max_episodes: Annotated[int | None, typer.Option(help="Episode budget.")] = None,
    max_model_calls: Annotated[int | None, typer.Option(help="Model-call budget.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Cost budget in USD.")] = None,
    min_effect: Annotated[
        float, typer.Option(help="Bootstrap lower bound of the mean gain must exceed this.")
    ] = 0.02,
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
) -> None:
    """Optimize a harness: propose variants, test each against the incumbent, commit only real wins.

    Each proposal is raced over growing batches of train tasks, then confirmed on the val split
    (paired: same tasks, seeds and model). It is kept only if a sign test gives p <= 0.05, the bootstrap lower
    bound of the mean gain exceeds `--min-effect`, and no always-passing task breaks. Every
    accepted variant is one git commit of the harness folder, with the figures in its message.

    Example: `optimize run harnesses/support_agent --max-proposals 6`
    """
    import asyncio
    import contextlib

    from pydantic import ValidationError
    from rich.live import Live

    from optimizer import AcceptanceRule, OptimizeConfig, OptimizerEvent, OptimizerPaused, optimize
    from views.optimize import event_line, render_optimize_result, render_status

    try:
        config = OptimizeConfig(
            harness=harness,
            suite=suite,
            model=model,
            proposer_model=proposer_model,
            strategy=strategy,
            operators=operators,
            k=k,
            screen_size=screen_size,
            train_sample=train_sample,
            max_proposals=max_proposals,
            patience=patience,
            max_episodes=max_episodes,
            max_model_calls=max_model_calls,
            max_cost_usd=max_cost,
            max_minutes=max_minutes,
            concurrency=concurrency,
            branch=branch,
            commit=commit,
            seed=seed,
            rule=AcceptanceRule(min_effect=min_effect),
            reuse=reuse,
        )
    except ValidationError as error:
        fail(option_errors(error))
    if resume:
        err.print(f"resuming {resume} with the settings it was started with; other options are ignored")
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
            result = asyncio.run(optimize(config, resume=resume, on_event=track))
        except OptimizerPaused as pause:
            fail(f"paused: {pause}", code=3)
        except KeyboardInterrupt:
            resume_with = f"; resume with: optimize run {harness} --resume {run_ids[0]}" if run_ids else ""
            fail(f"interrupted{resume_with}", code=130)
    out.print(render_optimize_result(result))


@app.command("gate")
def gate(
    harness: Annotated[
        Path, typer.Argument(help="The harness folder; its working-tree files are the candidate.")
    ],
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
        float, typer.Option(help="Fail if the 95% lower bound of the mean change is below this.")
    ] = -0.05,
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
    import asyncio

    from pydantic import ValidationError

    from optimizer import GateConfig, run_gate, write_json
    from optimizer import save_baseline as store_baseline
    from views.gate import append_step_summary, gate_progress, render_gate, write_junit

    try:
        config = GateConfig(
            harness=harness,
            base=base,
            baseline=baseline,
            suite=suite,
            model=model,
            split=split,
            k=k,
            tolerance=tolerance,
            alpha=alpha,
            max_error_rate=max_error_rate,
            concurrency=concurrency,
            reuse=reuse,
            accept_suite_changes=accept_suite_changes,
        )
    except ValidationError as error:
        fail(option_errors(error))
    try:
        with gate_progress(err) as progress:
            report = asyncio.run(run_gate(config, on_progress=progress))
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


@app.command("diff")
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
    the tasks that flipped, and for one task the two world diffs side by side.

    Example: `optimize diff main worktree --harness harnesses/support_agent`
    """
    from evals import RunStore
    from optimizer import resolve_side
    from views.compare import render_comparison

    with RunStore() as store:
        left, right = resolve_side(a, harness, store), resolve_side(b, harness, store)
        out.print(render_comparison(left, right, store, task=task, seed=seed))


@app.command("report")
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
    from evals import RunStore
    from views.report import render_report, write_html_report

    with RunStore() as store:
        out.print(render_report(store, run_ref))
        if html:
            err.print(f"wrote {write_html_report(store, run_ref, html)}")


@app.command("history")
def history_(
    harness: Annotated[Path, typer.Argument(help="The harness folder.")],
    limit: Annotated[int, typer.Option(help="How many commits to read.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a harness's accepted variants (its Atoll commits) with their recorded figures.

    Example: `optimize history harnesses/support_agent`
    """
    from optimizer import history
    from views.history import render_history

    if as_json:
        _print_json([entry.model_dump() for entry in history(harness, limit=limit)])
    else:
        out.print(render_history(harness, limit=limit))


@app.command("mcp")
def mcp_command(
    world_name: Annotated[
        str, typer.Argument(metavar="WORLD", help="World name, e.g. `helpdesk`, or a module path.")
    ],
    fixture: Annotated[
        str, typer.Option("--fixture", "-f", help="Fixture every session starts from, e.g. `small_shop`.")
    ],
    seed: Annotated[int, typer.Option(help="Instance seed: picks the ids that tools generate.")] = 0,
    clock: ClockOption = "fixed",
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http.")] = 8765,
    token: TokenOption = None,
    max_sessions: SessionsOption = 256,
    idle_timeout: IdleOption = 600.0,
) -> None:
    """Serve a world's tools over MCP, one private instance per session.

    Example: `optimize mcp helpdesk --fixture small_shop` (stdio), or add `--http --port 8765`.
    """
    from worlds import get_world
    from worlds.serve import run_mcp

    world = get_world(world_name)
    try:
        run_mcp(
            world,
            fixture,
            seed,
            clock=clock,
            http=http,
            host=host,
            port=port,
            token=token,
            max_sessions=max_sessions,
            idle_seconds=idle_timeout,
        )
    except ValueError as error:
        fail(str(error))


@app.command("serve")
def serve_command(
    worlds: Annotated[
        list[str] | None,
        typer.Option("--world", "-w", help="World to offer (repeatable); default: all shipped."),
    ] = None,
    fixture: Annotated[
        str | None,
        typer.Option("--fixture", "-f", help="Default fixture for resets that name none (with one --world)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Default instance seed.")] = 0,
    clock: ClockOption = "fixed",
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
    token: TokenOption = None,
    max_sessions: SessionsOption = 256,
    idle_timeout: IdleOption = 600.0,
) -> None:
    """Serve worlds over HTTP and WebSocket (OpenEnv-compatible), with a web console at /.

    Example: `optimize serve --world helpdesk --fixture small_shop`, then open http://127.0.0.1:8000/
    """
    from worlds import Clock, get_world
    from worlds.serve import ResetRequest, check_bind, run_server

    try:
        check_bind(host, token)  # before anything says "serving"
    except ValueError as error:
        fail(str(error))
    if fixture and len(worlds or []) != 1:
        fail("--fixture sets the default instance, so name exactly one --world with it")
    for name in worlds or []:
        world = get_world(name)
        if fixture and fixture not in world.fixtures:
            fail(f"world {world.name!r} has no fixture {fixture!r}; it has: {', '.join(world.fixtures)}")
    try:
        Clock.parse(clock)
    except ValueError as error:
        fail(str(error))
    defaults = ResetRequest(
        world=worlds[0] if worlds and len(worlds) == 1 else None, fixture=fixture, seed=seed, clock=clock
    )
    shown = f"http://{host}:{port}/" + ("?token=…" if token else "")
    err.print(f"serving {', '.join(worlds) if worlds else 'every shipped world'} on {shown} (Ctrl-C stops)")
    try:
        run_server(
            host,
            port,
            token=token,
            worlds=worlds,
            defaults=defaults,
            max_sessions=max_sessions,
            idle_seconds=idle_timeout,
        )
    except ValueError as error:
        fail(str(error))


if __name__ == "__main__":
    app()
