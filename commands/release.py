"""`optimize release`: publish a harness version that passed the gate, list, show and roll back releases."""

from __future__ import annotations

import typer

release_app = typer.Typer(
    help="Publish evaluated harness versions and move the served head.", no_args_is_help=True
)
