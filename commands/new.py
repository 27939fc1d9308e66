"""`optimize new world|suite|harness`: scaffold a repository's own world, suite and harness."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from atoll.commands._shared import out

NameArgument = Annotated[str, typer.Argument(help="A lower-case Python name, e.g. `mydesk`.")]
IntoOption = Annotated[
    Path | None,
    typer.Option(
        "--into",
        help="Project folder to write into (and its atoll.toml); default the nearest atoll.toml's, else here.",
    ),
]


def new_world(name: NameArgument, into: IntoOption = None) -> None:
    """Scaffold a world package in worlds/NAME (schema, tools, a fixture, a policy, with comments that
    teach the format) and register the worlds/ folder in atoll.toml, so `NAME` is found by name.

    Example: `optimize new world mydesk`, then `optimize world show mydesk`
    """
    from atoll.worlds import new_world as scaffold

    made = scaffold(name, root=into)
    _report(made.written, f"optimize world show {name}", f"optimize new suite {name}")


def new_suite(
    world: Annotated[str, typer.Argument(help="The world the suite tests.")], into: IntoOption = None
) -> None:
    """Scaffold the eval suite evals/WORLD: a task per tool that works on the world's default fixture,
    its reference found by trying the tool, so every reference passes on the first try.

    Example: `optimize new suite mydesk`, then `optimize suite check evals/mydesk`
    """
    from atoll.evals import display_path, load_suite
    from atoll.evals import new_suite as scaffold

    made = scaffold(world, root=into)
    load_suite(made.folder)
    _report(
        made.written,
        f"optimize suite check {display_path(made.folder)}",
        f"optimize new harness {world}_agent --world {world}",
    )


def new_harness(
    name: NameArgument,
    world: Annotated[str, typer.Option("--world", "-w", help="The world the harness acts on.")],
    into: IntoOption = None,
) -> None:
    """Scaffold the harness harnesses/NAME: one agent with every tool of the world, a prompt and a
    policy skill; it becomes atoll.toml's default harness when none is set.

    Example: `optimize new harness mydesk_agent --world mydesk`, then `optimize try --show-prompt`
    """
    from atoll.evals import display_path
    from atoll.harnesses import new_harness as scaffold

    made = scaffold(name, world=world, root=into)
    folder = display_path(made.folder)
    _report(made.written, f"optimize try {folder} --show-prompt", f"optimize eval {folder}")


def _report(written: list[Path], *next_steps: str) -> None:
    from atoll.evals import display_path

    for path in written:
        out.print(f"  wrote {display_path(path)}", highlight=False)
    out.print("next: " + "   then: ".join(f"[bold]{step}[/]" for step in next_steps), highlight=False)
