"""An episode: one agent run on one world instance, as every later stage reads it.

The runtime writes it, graders score it, the runs store keeps it and reports show it, so
it carries everything needed to judge and replay the run without the live instance: the
transcript as events, the world calls with their row changes, and the net diff.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from worlds import CallRecord, Diff

EPISODE_VERSION = 1

# "assistant" is a message to the user; "thought" is text the model wrote alongside tool calls.
EventKind = Literal["user", "assistant", "thought", "tool_call", "tool_result", "delegate", "return", "error"]
StopReason = Literal[
    "reply",  # the agent answered and the user side had nothing more to say
    "stop_tool",  # the agent called its stop tool
    "user_done",  # the (simulated or scripted) user ended the conversation
    "turn_limit",
    "tool_limit",
    "token_limit",
    "model_error",  # the model stayed unreachable after retries: the episode is errored
    "world_bug",  # a tool crashed inside the world: the author's bug, reported, not graded as the agent's
]


class Event(BaseModel):
    """One entry of the transcript, in order. Which fields are set depends on `kind`."""

    kind: EventKind
    agent: str
    content: str | None = None  # user / assistant text, error description
    tool: str | None = None  # tool_call / tool_result / delegate
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    ok: bool | None = None
    error: dict[str, Any] | None = None  # {"type": ..., "message": ...}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    at: float = 0.0  # seconds since the episode started


class EpisodeUsage(BaseModel):
    """What the episode's model calls cost."""

    model_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Episode(BaseModel):
    """A finished run: transcript, world calls and diff, and why it stopped."""

    version: int = EPISODE_VERSION
    harness: str
    harness_hash: str
    model: str
    world: str
    fixture: str
    seed: int
    clock: str = "fixed"
    task_id: str | None = None
    events: list[Event] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    diff: Diff = Field(default_factory=Diff)
    stop_reason: StopReason
    error: str | None = None  # set when the episode is errored (model outage, world bug)
    usage: EpisodeUsage = Field(default_factory=EpisodeUsage)
    duration_s: float = 0.0

    @property
    def errored(self) -> bool:
        return self.error is not None

    @property
    def replies(self) -> list[str]:
        """Everything the entry agent said to the user, in order."""
        return [
            e.content for e in self.events if e.kind == "assistant" and e.content and e.agent == self._entry
        ]

    @property
    def reply(self) -> str | None:
        """The agent's last message to the user."""
        replies = self.replies
        return replies[-1] if replies else None

    @property
    def _entry(self) -> str:
        return next((e.agent for e in self.events if e.kind == "user"), "")
