"""`optimize try`, `eval`, `runs`, `show`: play and score episodes, and read them back."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from atoll.commands._shared import (
    ConcurrencyOption,
    ExecutorOption,
    HarnessArgument,
    ModelOption,
    ReuseOption,
    SuiteOption,
    err,
    fail,
    harness_or_default,
    out,
    print_json,
)


def try_(
    harness: HarnessArgument = None,
    message: Annotated[str | None, typer.Option("--message", "-m", help="What the user says.")] = None,
    task: Annotated[
        str | None, typer.Option(help="Run an eval task instead (its fixture, user and grade).")
    ] = None,
    suite: SuiteOption = None,
    fixture: Annotated[
        str | None,
        typer.Option(help="The world fixture to start from; default: the world's default fixture."),
    ] = None,
    model: ModelOption = None,
    seed: Annotated[int, typer.Option(help="Instance seed and sample index.")] = 0,
    reply: Annotated[
        list[str] | None, typer.Option("--reply", help="A follow-up user message (repeatable, in order).")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the model again instead of replaying cached answers.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the episode as JSON (its prompts and prompt_hash included).")
    ] = False,
    show_prompt: Annotated[
        bool,
        typer.Option(
            "--show-prompt",
            help="First print the system messages each agent that ran was sent, exactly. Without "
            "--message or --task: print the entry agent's prompt for --fixture and --model, and run nothing.",
        ),
    ] = False,
) -> None:
    """Run one episode of a harness and show it: the conversation, each tool call and the world diff
    (with --task, also the grader's verdicts).

    With --show-prompt, the system messages each agent was sent come first, as sent: its rendered prompt
    and, when it retrieves demos, those (a message of their own). With --show-prompt and neither --message
    nor --task, only the entry agent's prompt is rendered (no model is called, retrieved demos are not
    shown as they depend on the request) and the command exits 0.

    Example: `optimize try harnesses/support_agent --message "Where is my order ORD-1092?"`
    or `optimize try harnesses/support_agent --task status-delivered`
    or `optimize try harnesses/support_agent --show-prompt`
    """
    import asyncio

    from atoll.evals import grade_episode, load_suite, suite_for, user_for
    from atoll.harnesses import load_harness, prompt_hash, render_prompt, try_episode
    from atoll.views.episode import render_episode, render_prompts
    from atoll.views.evals import render_grade

    if message is not None and task is not None:
        fail("give --message TEXT or --task ID (one of them)")
    harness = harness_or_default(harness)
    if message is None and task is None:
        if not show_prompt:
            fail("give --message TEXT or --task ID (one of them), or --show-prompt alone to see the prompt")
        parts = render_prompt(load_harness(harness), model_name=model, fixture=fixture, seed=seed)
        if as_json:
            print_json({"prompt_hash": prompt_hash(parts), "prompts": [p.model_dump() for p in parts]})
        else:
            out.print(render_prompts(parts, prompt_hash(parts)), crop=False)  # whole lines, as sent
        return
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
        print_json(episode.model_dump(mode="json") | ({"grade": grade.model_dump()} if grade else {}))
    else:
        if show_prompt:
            out.print(render_prompts(episode.prompts, episode.prompt_hash), crop=False)
        out.print(render_episode(episode))
        if grade is not None:
            out.print(render_grade(grade))
    if episode.errored:
        raise typer.Exit(1)


def eval_(
    harness: HarnessArgument = None,
    suite: SuiteOption = None,
    split: Annotated[str | None, typer.Option(help="train, val or test; default all tasks.")] = None,
    k: Annotated[
        int | None, typer.Option("-k", help="Seeds per task (pass^k is reported); default each task's own.")
    ] = None,
    model: ModelOption = None,
    user_model: Annotated[
        str | None,
        typer.Option(
            help="Model that plays the simulated users of tasks with a persona (the tau2 suites); default "
            "the agent's model. A weaker simulated user changes every score."
        ),
    ] = None,
    concurrency: ConcurrencyOption = 8,
    resume: Annotated[
        str | None, typer.Option(help="Finish an interrupted eval run (id or `latest`).")
    ] = None,
    reuse: ReuseOption = True,
    executor: ExecutorOption = "local",
) -> None:
    """Score a harness on an eval suite, graded by state diffs; prints per-task and overall scores
    and stores every episode (see `optimize runs` and `optimize show`).

    Example: `optimize eval harnesses/support_agent --split val -k 3`
    """
    from atoll.evals import RunStore, evaluate, suite_for
    from atoll.evals import resume as resume_run
    from atoll.harnesses import load_harness
    from atoll.views.evals import progress_bar, render_eval_result
    from atoll.worlds.base import new_run_id

    if resume is None:
        harness = harness_or_default(harness)
    run_id: str | None = None
    try:
        with RunStore() as store, progress_bar(err) as on_progress:
            if resume:
                # `latest` is the newest eval left unfinished, not whatever ran last (a gate, a finished eval).
                latest = resume in ("latest", "last")
                run_id = store.latest_unfinished("eval") if latest else store.resolve(resume)
                result = resume_run(
                    run_id,
                    store=store,
                    user_model=user_model,
                    concurrency=concurrency,
                    on_progress=on_progress,
                    executor=executor,
                )
            else:
                suite = suite or suite_for(load_harness(harness))
                run_id = new_run_id("eval")
                result = evaluate(
                    harness,
                    suite,
                    model=model,
                    user_model=user_model,
                    split=split,
                    k=k,
                    concurrency=concurrency,
                    store=store,
                    run_id=run_id,
                    reuse=reuse,
                    on_progress=on_progress,
                    executor=executor,
                )
    except KeyboardInterrupt:
        with RunStore() as store:  # interrupted before the run was stored: nothing to resume
            saved = run_id is not None and store.has_run(run_id)
        resume_with = f"; resume with: optimize eval --resume {run_id}" if saved else ""
        fail(f"interrupted{resume_with}", code=130)
    out.print(render_eval_result(result))


def runs(
    limit: Annotated[int, typer.Option(help="How many runs to list, newest first.")] = 20,
    kind: Annotated[
        str | None, typer.Option(help="Only runs of this kind (eval, gate, optimize-gate, ...).")
    ] = None,
) -> None:
    """List stored runs: id, kind, harness, model, scores.

    Example: `optimize runs --kind eval`
    """
    from atoll.evals import RunStore
    from atoll.views.evals import render_runs

    with RunStore() as store:
        out.print(render_runs(store.runs(limit=limit, kind=kind)))


def show(
    run_ref: Annotated[
        str, typer.Argument(metavar="RUN", help="A run id, a unique part of one, or `latest`.")
    ],
    task: Annotated[str | None, typer.Argument(help="A task id: show its episode in full.")] = None,
    seed: Annotated[int | None, typer.Option(help="Which seed of the task (default the first).")] = None,
    prompt: Annotated[
        bool, typer.Option("--prompt", help="Also print the system messages the task's episodes were sent.")
    ] = False,
) -> None:
    """Show a stored run, or one episode of it: transcript (headed by the prompt's hash), world diff and
    the grader's verdicts; with --prompt, the prompt text too.

    Example: `optimize show latest refund-damaged-blender --prompt`
    """
    from atoll.evals import RunStore
    from atoll.views.evals import render_run

    if prompt and task is None:
        fail("--prompt shows one task's prompt: name the task, e.g. `optimize show latest TASK --prompt`")
    with RunStore() as store:
        out.print(render_run(store, run_ref, task, seed, prompt=prompt), crop=not prompt)
