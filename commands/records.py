"""`optimize records`: what the served harness was asked, what it answered, and the feedback it got."""

from __future__ import annotations

import typer

records_app = typer.Typer(
    help="List, show and export served calls with their feedback; draft tasks from them.",
    no_args_is_help=True,
)
