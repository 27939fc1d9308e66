"""An episode: one agent run on one world instance, as every later stage reads it.

The runtime writes it, graders score it, the runs store keeps it and reports show it, so
it carries everything needed to judge and replay the run without the live instance: the
transcript as events, the world calls with their row changes, and the net diff.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from atoll.worlds import CallRecord, Diff

from ._format import SKILL_TOOL
from ._grounding import digit_runs, ungrounded
from ._prompt import PromptPart
from .models import ModelUsage

EPISODE_VERSION = 1

# "assistant" is a message to the user; "thought" is text the model wrote alongside tool calls;
# "notice" is what a guard told the agent unasked (a reminder to reply).
EventKind = Literal[
    "user", "assistant", "thought", "tool_call", "tool_result", "delegate", "return", "error", "notice"
]
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


# Recurring failures an optimizer reads from an episode (see Episode.patterns), in a fixed order.
PATTERNS = (
    "no_reply",  # the last message of the user got no reply (a stop tool ending the episode is a reply)
    "repeat_call",  # a call identical to a successful one of the same agent, the world unchanged since
    "unknown_tool",
    "invalid_arguments",
    "malformed_action",  # an answer that was neither an action nor a reply
    "precondition_refused",
    "turn_limit",
    "unlooked_reply",  # the first agent replied before it had called any tool
    "ungrounded_argument",  # a call quoted digits (a PIN, an id) no user message or result had given
)


# Failures a repeat does not meet again: the repeat guard's own refusal, and a bug in the world.
NOT_REMEMBERED = ("repeat_call", "world_bug")


class CallMemory:
    """Each agent's calls that make an identical call a repeat: what makes a call a repeat.

    A successful call stays remembered until the world changes (a read after a write may see what
    the write changed). A failed call stays remembered until any call succeeds: retrying it at once
    meets the same error (small models retry a refused write many times), while a success in between
    may have met its precondition. The runtime's repeat guard and `Episode.patterns` share this, so
    both call the same calls repeats.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], Any] = {}
        self._failed: dict[tuple[str, str, str], Any] = {}

    def copy(self) -> CallMemory:
        copied = CallMemory()
        copied._seen, copied._failed = dict(self._seen), dict(self._failed)
        return copied

    @staticmethod
    def _key(agent: str, tool: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
        return agent, tool, json.dumps(arguments, sort_keys=True, default=str)

    def is_repeat(self, agent: str, tool: str, arguments: dict[str, Any] | None) -> bool:
        if arguments is None:
            return False
        key = self._key(agent, tool, arguments)
        return key in self._seen or key in self._failed

    def earlier(self, agent: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """Whether the identical earlier call succeeded, and its result or error (ask `is_repeat` first)."""
        key = self._key(agent, tool, arguments)
        return (True, self._seen[key]) if key in self._seen else (False, self._failed[key])

    def succeeded(self, agent: str, tool: str, arguments: dict[str, Any], result: Any, wrote: bool) -> None:
        if wrote:
            self._seen.clear()
        self._failed.clear()
        self._seen[self._key(agent, tool, arguments)] = result

    def failed(self, agent: str, tool: str, arguments: dict[str, Any], error: Any) -> None:
        self._failed[self._key(agent, tool, arguments)] = error


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
    # sha256 of the system messages sent (see `harnesses.prompt_hash`); None for an episode recorded
    # before prompts were, or one where no agent was asked anything.
    prompt_hash: str | None = None
    # The messages themselves, each agent's once (the entry agent's first). The runs store keeps each text
    # once per hash, apart from the episode, and fills this back in; empty where it holds no text for it.
    prompts: list[PromptPart] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    diff: Diff = Field(default_factory=Diff)
    stop_reason: StopReason
    error: str | None = None  # set when the episode is errored (model outage, world bug)
    usage: ModelUsage = Field(default_factory=ModelUsage)
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
    def patterns(self) -> dict[str, int]:
        """How often each failure of PATTERNS occurred, every key present; computed from the events and
        calls, so episodes stored before it existed have it too. Errored episodes count like any other."""
        counts = dict.fromkeys(PATTERNS, 0)
        memory = CallMemory()
        # Successful tool results other than skill loads are the successful world calls, in order
        # (delegations and guard refusals give none), so they pair with `calls` to say which wrote.
        writes = iter([bool(call.changes) for call in self.calls if call.ok])
        last_call: Event | None = None
        heard = ""  # the digit runs any agent was told so far (the task context is not in the events)
        for event in self.events:
            if event.kind in ("user", "delegate") and event.content:
                heard += " " + digit_runs([event.content])
            elif event.kind == "tool_result" and event.ok:
                heard += " " + digit_runs([json.dumps(event.result, default=str)])
            if event.kind == "tool_call":
                last_call = event
                if memory.is_repeat(event.agent, event.tool or "", event.arguments):
                    counts["repeat_call"] += 1
                if ungrounded(event.arguments or {}, heard):
                    counts["ungrounded_argument"] += 1
            elif event.kind == "tool_result":
                kind = (event.error or {}).get("type")
                if kind in ("unknown_tool", "invalid_arguments", "precondition_refused"):
                    counts[kind] += 1
                if last_call is not None and last_call.arguments is not None:
                    if event.ok:
                        wrote = event.tool != SKILL_TOOL and next(writes, False)
                        memory.succeeded(
                            event.agent, event.tool or "", last_call.arguments, event.result, wrote
                        )
                    elif kind not in NOT_REMEMBERED:
                        memory.failed(event.agent, event.tool or "", last_call.arguments, event.error)
            elif event.kind == "error" and (event.error or {}).get("type") == "malformed_action":
                counts["malformed_action"] += 1
        if self.stop_reason != "stop_tool":
            said = [e.kind for e in self.events if e.kind in ("user", "assistant") and e.agent == self._entry]
            counts["no_reply"] = int(not said or said[-1] != "assistant")
        counts["turn_limit"] = int(self.stop_reason == "turn_limit")
        first = next((e.kind for e in self.events if e.kind in ("assistant", "tool_call", "delegate")), None)
        counts["unlooked_reply"] = int(first == "assistant")
        return counts

    @property
    def _entry(self) -> str:
        return next((e.agent for e in self.events if e.kind == "user"), "")
