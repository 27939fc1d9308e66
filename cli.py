"""`optimize`: the command line of Atoll, assembled from the command groups in `commands/`.

Each command parses its input, calls the library and renders the result with `views`; logic
lives in the packages. Results go to stdout, diagnostics to stderr. Heavy imports (litellm, dspy)
happen inside the commands that call a model, so `optimize --help` starts at once.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from atoll.commands import episodes, fail, gate, new, optimize, serve, suites, worlds
from atoll.commands.records import records_app
from atoll.commands.release import release_app


class _Commands(TyperGroup):
    """The one error handler: an AtollError raised by any layer under any command is one line on stderr
    and its exit code (2 usage or configuration, 3 the run failed), never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            from atoll.worlds import AtollError  # imported here: `optimize --help` stays instant

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
suite_app = typer.Typer(
    help="Check eval suites: references, blind spots, and whether val can accept anything.",
    no_args_is_help=True,
)
app.add_typer(suite_app, name="suite")
new_app = typer.Typer(
    help="Scaffold your own world, suite and harness: each loads and passes its checks at once.",
    no_args_is_help=True,
)
app.add_typer(new_app, name="new")
app.add_typer(release_app, name="release")
app.add_typer(records_app, name="records")

# In the order `optimize --help` lists them.
world_app.command("list")(worlds.world_list)
world_app.command("show")(worlds.world_show)
world_app.command("call")(worlds.world_call)
suite_app.command("check")(suites.suite_check)
new_app.command("world")(new.new_world)
new_app.command("suite")(new.new_suite)
new_app.command("harness")(new.new_harness)
app.command("try")(episodes.try_)
app.command("eval")(episodes.eval_)
app.command("runs")(episodes.runs)
app.command("show")(episodes.show)
app.command("run")(optimize.run)
app.command("gate")(gate.gate)
app.command("diff")(optimize.diff)
app.command("report")(optimize.report)
app.command("history")(optimize.history_)
app.command("mcp")(serve.mcp_command)
app.command("serve")(serve.serve_command)


if __name__ == "__main__":
    app()
