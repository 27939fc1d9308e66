"""`optimize serve` and `optimize mcp`: worlds for other agents, over HTTP, WebSocket or MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from atoll.commands._shared import (
    ClockOption,
    HostOption,
    IdleOption,
    SessionsOption,
    TokenOption,
    err,
    fail,
)


def mcp_command(
    world_name: Annotated[
        str, typer.Argument(metavar="WORLD", help="World name, e.g. `helpdesk` (see `optimize world list`).")
    ],
    fixture: Annotated[
        str | None,
        typer.Option(
            "--fixture", "-f", help="Fixture every session starts from; default the world's default."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Instance seed: picks the ids that tools generate.")] = 0,
    clock: ClockOption = "fixed",
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port for --http.")] = 8765,
    token: TokenOption = None,
    max_sessions: SessionsOption = 256,
    idle_timeout: IdleOption = 600.0,
) -> None:
    """Serve a world's tools over MCP, one private instance per session.

    Example: `optimize mcp helpdesk` (stdio, default fixture), or add `--fixture big_retailer --http --port 8765`.
    """
    from atoll.worlds import get_world
    from atoll.worlds.serve import check_port, run_mcp

    world = get_world(world_name)
    try:
        if http:
            check_port(host, port)
        run_mcp(
            world,
            fixture or world.default_fixture,
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


def serve_command(
    harnesses: Annotated[
        list[Path] | None,
        typer.Option(
            "--harness",
            "-H",
            help="Serve this harness's released head at /v1/chat/completions (repeatable); calls are "
            "recorded in the runs store.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Model for the served harnesses; default each agent's own, else $ATOLL_MODEL."),
    ] = None,
    max_in_flight: Annotated[
        int, typer.Option(min=1, help="Chat requests answered at once; one more gets 429.")
    ] = 64,
    recipe: Annotated[
        Path | None,
        typer.Option(
            help="A recipe file (YAML) that starts optimization jobs for the served harnesses on its own, "
            "e.g. examples/recipes/evolve_on_feedback.yaml (needs --harness).",
        ),
    ] = None,
    check_every: Annotated[
        float, typer.Option(min=1.0, help="Seconds between two checks of the recipe.")
    ] = 60.0,
    worlds: Annotated[
        list[str] | None,
        typer.Option("--world", "-w", help="World to offer (repeatable); default: every world found here."),
    ] = None,
    fixture: Annotated[
        str | None,
        typer.Option("--fixture", "-f", help="Default fixture for resets that name none (with one --world)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Default instance seed.")] = 0,
    clock: ClockOption = "fixed",
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to bind.")] = 8000,
    token: TokenOption = None,
    max_sessions: SessionsOption = 256,
    idle_timeout: IdleOption = 600.0,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Processes answering the harness endpoint, over the one runs store (needs --harness; no "
            "worlds are served then: a world session lives in the process that opened it).",
        ),
    ] = 1,
) -> None:
    """Serve worlds over HTTP and WebSocket (OpenEnv-compatible) with a web console at /, and with
    --harness a harness behind an OpenAI-compatible endpoint at /v1.

    Example: `optimize serve --world helpdesk --fixture small_shop`, then open http://127.0.0.1:8000/

    Example: `optimize serve --harness harnesses/support_agent`, then point any OpenAI client at
    http://127.0.0.1:8000/v1 with model `support_agent`; each answer carries its record id in the
    `x-atoll-record-id` header, for `POST /feedback`. `optimize release` switches what is served.

    Example: `optimize serve --harness harnesses/support_agent --recipe examples/recipes/evolve_on_feedback.yaml`
    drafts tasks from negative feedback, optimizes, gates and releases on its own; `/jobs` shows the jobs.

    Example: `optimize serve --harness harnesses/support_agent --workers 4` answers from four processes.
    """
    from atoll.worlds import Clock, get_world
    from atoll.worlds.serve import ResetRequest, check_bind, check_port, run_server

    try:
        check_bind(host, token)  # before anything says "serving"
    except ValueError as error:
        fail(str(error))
    if harnesses:
        _check_served(harnesses)  # a harness that cannot load stops here, before anything says "serving"
    if recipe is not None:
        if not harnesses:
            fail("--recipe starts jobs for the served harnesses, so name at least one --harness with it")
        from atoll.service import load_recipe

        load_recipe(recipe)  # a wrong recipe file stops here, before anything says "serving"
    if workers > 1 and not harnesses:
        fail("--workers answers the harness endpoint from several processes: name a --harness with it")
    if workers > 1 and worlds:
        fail(
            "--workers serves no worlds (a world session lives in the process that opened it): drop --world, "
            "and serve the worlds from another `optimize serve --world ...` with one worker"
        )
    if fixture and len(worlds or []) != 1:
        fail("--fixture sets the default instance, so name exactly one --world with it")
    for name in worlds or []:
        world = get_world(name)
        if fixture and fixture not in world.fixtures:
            fail(f"world {world.name!r} has no fixture {fixture!r}; it has: {', '.join(world.fixtures)}")
    try:
        Clock.parse(clock)
        check_port(host, port)  # last: a port in use is one line, not "serving" and then uvicorn's ERROR
    except ValueError as error:
        fail(str(error))
    defaults = ResetRequest(
        world=worlds[0] if worlds and len(worlds) == 1 else None, fixture=fixture, seed=seed, clock=clock
    )
    shown = f"http://{host}:{port}/" + ("?token=…" if token else "")
    if workers == 1:
        err.print(
            f"serving {', '.join(worlds) if worlds else 'every world found here'} on {shown} (Ctrl-C stops)"
        )
    if harnesses:
        from atoll.service import run_service

        answered = f" from {workers} processes (Ctrl-C stops)" if workers > 1 else ""
        err.print(f"serving {', '.join(str(h) for h in harnesses)} at http://{host}:{port}/v1{answered}")
        try:
            run_service(
                host,
                port,
                token=token,
                harnesses=harnesses,
                model=model,
                max_in_flight=max_in_flight,
                recipe=recipe,
                check_every=check_every,
                worlds=worlds if workers == 1 else [],
                defaults=defaults,
                max_sessions=max_sessions,
                idle_seconds=idle_timeout,
                workers=workers,
            )
        except ValueError as error:
            fail(str(error))
        return
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


def _check_served(harnesses: list[Path]) -> None:
    """Load each harness and the records policy they are served under, so a wrong one fails at once."""
    from atoll.harnesses import load_harness
    from atoll.service import load_record_policy

    for path in harnesses:
        load_harness(path)  # a HarnessError is one line, from the CLI's error handler
    policy = load_record_policy(harnesses[0])
    redacted = ", ".join(policy.redact) if policy.redact else "nothing ([records] redact = [])"
    err.print(f"records: redacting {redacted}", highlight=False)
