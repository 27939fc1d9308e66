"""`optimize world …`: look into a world (its tables, tools, fixtures, documents) and call one tool."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from atoll.commands._shared import (
    USAGE_ERROR,
    ClockOption,
    err,
    fail,
    out,
    print_json,
)

WORLD_HELP = (
    "World name: a shipped one (`helpdesk`), an installed one (entry point `atoll.worlds`), a package in a "
    "world folder of atoll.toml or $ATOLL_WORLDS_PATH, or a dotted module path. See `optimize world list`."
)


def world_list() -> None:
    """List the worlds Atoll finds from here: shipped ones, installed ones (entry points in the group
    `atoll.worlds`), and packages in the world folders of `atoll.toml` (`worlds = ["worlds"]`) or
    `$ATOLL_WORLDS_PATH`. The default fixture is listed first.

    Example: `optimize world list`
    """
    from atoll.worlds import find_worlds, get_world

    table = Table("world", "version", "tables", "tools", "fixtures", "from", "description")
    for name, origin in sorted(find_worlds().items()):
        try:
            world = get_world(name)
        except Exception as error:  # one broken world must not hide the others
            table.add_row(name, "", "", "", "", escape(origin), f"[red]cannot load: {escape(str(error))}[/]")
            continue
        fixtures = [world.default_fixture, *(f for f in world.fixtures if f != world.default_fixture)]
        table.add_row(
            name,
            world.version,
            str(len(world.tables)),
            str(len(world.tools)),
            ", ".join(fixtures),
            escape(origin),
            world.description,
        )
    out.print(table)


def world_show(
    name: Annotated[str, typer.Argument(help=WORLD_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Show a world: tables with row counts per fixture, tools with their parameters, fixtures, documents.

    Example: `optimize world show helpdesk`
    """
    from atoll.worlds import get_world

    world = get_world(name)
    counts = {fixture: world.load_fixture(fixture).row_counts for fixture in world.fixtures}
    if as_json:
        print_json(
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


def world_call(
    world_name: Annotated[str, typer.Argument(metavar="WORLD", help=WORLD_HELP)],
    tool: Annotated[str, typer.Argument(help="Tool to call, e.g. `get_order`.")],
    args: Annotated[
        str, typer.Option("--args", help='Arguments as a JSON object, e.g. \'{"order_id": "ORD-1001"}\'.')
    ] = "{}",
    fixture: Annotated[
        str | None,
        typer.Option("--fixture", "-f", help="Fixture to start from; default the world's default."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Instance seed: picks the ids that tools generate.")] = 0,
    clock: ClockOption = "fixed",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result and diff as JSON.")] = False,
) -> None:
    """Call one tool on a fresh instance of a fixture; print its result and the world diff. Exits 1 when
    the tool refuses or fails (the error's type and message are printed), 2 on invalid arguments.

    Example: `optimize world call helpdesk get_order --args '{"order_id": "ORD-1001"}'`
    """
    from atoll.worlds import Clock, get_world

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
        instance = world.instance(fixture or world.default_fixture, seed=seed, clock=Clock.parse(clock))
    except ValueError as error:
        fail(str(error))
    with instance:
        result = instance.call(tool, **arguments)
        diff = instance.diff()
    if as_json:
        print_json({"result": result.model_dump(), "diff": diff.model_dump()})
    else:
        from atoll.views.world_diff import render_diff, render_value

        if result.ok:
            out.print(render_value(result.value, title=f"{tool} → result"))
        else:
            err.print(
                f"[bold red]{tool} failed:[/] {escape(result.error.type)}: {escape(result.error.message)}"
            )
        out.print(render_diff(diff))
    if not result.ok:
        raise typer.Exit(USAGE_ERROR if result.error.type == "invalid_arguments" else 1)
