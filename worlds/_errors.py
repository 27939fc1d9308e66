"""Errors of the world engine, split by who reads them.

`ToolError` is written for the agent: a tool raises it to refuse a request, the call is rolled
back and the agent reads the code and message. Everything else here is for the person who
wrote or runs the world, and stops the command that hit it; its base, `AtollError`, is every layer's
(`worlds.base`).
"""

from __future__ import annotations

from typing import Any

from .base import AtollError


class ToolError(Exception):
    """A tool refuses the request; the agent sees `code`, `message` and `details`."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


class ToolErrorAfterWrites(ToolError):
    """A refusal that keeps what the tool wrote before it: for a world that copies an engine whose tools
    change records in place and fail halfway without undoing (τ²-bench's do)."""


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
