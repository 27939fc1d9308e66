"""What every command shares: the consoles, one-line failures, and the options several commands take."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from pydantic import ValidationError

out = Console()
err = Console(stderr=True)

# Arguments and options several commands share, defined once so they read and behave the same everywhere.
HarnessArgument = Annotated[
    Path | None,
    typer.Argument(
        help="The harness folder, e.g. `harnesses/support_agent`; default the `harness` of atoll.toml."
    ),
]
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
ExecutorOption = Annotated[
    str,
    typer.Option(
        envvar="ATOLL_EXECUTOR",
        help="Where episodes run: local (this process), ray (the Ray cluster $RAY_ADDRESS names or "
        "`ray start` runs here, else a new one), or ray://HOST:PORT; add ?workers=N to set the worker "
        "processes (docs/scale.md).",
    ),
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

P = ParamSpec("P")

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


def harness_or_default(harness: Path | None) -> Path:
    """The harness the user named, else the project's default (atoll.toml `harness`), else a clear error."""
    if harness is not None:
        return harness
    from atoll.worlds import PROJECT_FILE, find_project

    project = find_project()
    if project is None or project.harness is None:
        fail(f"name a harness folder (e.g. harnesses/support_agent), or set `harness` in {PROJECT_FILE}")
    return project.harness


def before_first(warning: str | None, console: Console, callback: Callable[P, None]) -> Callable[P, None]:
    """`callback`, printing `warning` on `console` just before its first call (a run's first event):
    the warning shows once the run is under way, so a run that cannot start says only why."""
    if warning is None:
        return callback
    pending = [warning]

    def warned(*args: P.args, **kwargs: P.kwargs) -> None:
        while pending:
            console.print(pending.pop(), highlight=False, soft_wrap=True)
        callback(*args, **kwargs)

    return warned


def print_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
