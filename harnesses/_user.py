"""The other side of the conversation: who the entry agent talks to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ._episode import Event
from .models import ModelUsage


@runtime_checkable
class UserSide(Protocol):
    """The person the entry agent talks to: a script, or a simulated user built on a model."""

    opening: str

    @property
    def usage(self) -> ModelUsage:
        """What its own model calls cost (nothing for a script); the episode's usage includes it."""
        ...

    async def respond(self, events: list[Event]) -> str | None:
        """The next message after the agent's reply (the transcript so far), or None: nothing more."""
        ...


class ScriptedUser:
    """A user who opens with `message` and answers the agent's replies with `replies`, in order.

    Stateful: build one per episode.
    """

    def __init__(self, message: str, replies: Iterable[str] = ()) -> None:
        self.opening = message
        self._replies = list(replies)

    def __repr__(self) -> str:
        return f"ScriptedUser({self.opening!r}, {len(self._replies)} replies left)"

    @property
    def usage(self) -> ModelUsage:
        return ModelUsage()

    async def respond(self, events: list[Event]) -> str | None:
        return self._replies.pop(0) if self._replies else None
