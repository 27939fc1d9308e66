"""Errors of the world engine, split by who reads them.

`ToolError` is written for the agent: a tool raises it to refuse a request, the call is rolled
back and the agent reads the code and message. Everything else here is for the person who
wrote or runs the world, and stops the command that hit it. `AtollError` is the base of every such error in every layer.
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A tool refuses the request; the agent sees `code`, `message` and `details`."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


# Exit codes of the command line: a usage or configuration error a person fixes, or a run that broke
# on the way (a model down, a paused optimization). 1 is not an error: a gate's regression verdict.
USAGE_ERROR = 2
RUN_FAILED = 3


class AtollError(Exception):
    """Base of every error a person must act on, from any layer; the CLI prints it as one line and exits
    with its `exit_code`. The world engine is the bottom layer, so the base lives here."""

    exit_code: int = USAGE_ERROR


class WorldError(AtollError):
    """Base of every error about a world, its fixtures or its tools that a person must fix."""


class WorldDefinitionError(WorldError):
    """The world package itself is wrong: a bad schema, a tool that cannot be registered."""


class UnknownWorld(WorldError):
    """No world with that name could be imported."""


class UnknownFixture(WorldError):
    """The world has no fixture with that name."""


class InstanceClosed(WorldError):
    """The instance was closed (its connection went back to the pool): open a new one."""
