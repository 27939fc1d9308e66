"""Proposals: a candidate harness as a complete file set, with who made it, why, and the patch.

Every proposer — an LLM rewriting prompts or an operator reordering demos — returns the
same record, so the loop, the runs store and the commit message treat them alike.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, field_validator

from atoll.harnesses.models import ModelUsage


class FailureReport(BaseModel):
    """One failing train episode as a proposer reads it: text only, already rendered."""

    task_id: str
    score: float
    user_message: str
    transcript: str = Field(description="The conversation and tool calls, one line each.")
    diff: str = Field(description="What the agent changed in the world.")
    feedback: list[str] = Field(description="The grader's failed checks, one line each.")
    patterns: dict[str, int] = Field(
        default_factory=dict, description="The episode's failure patterns (harnesses.PATTERNS) by count."
    )


class Proposal(BaseModel):
    """A candidate harness: the complete files, the operator that made it, and why."""

    operator: str
    rationale: str
    files: dict[str, str]
    parent_hash: str
    patch: str
    targets: list[str] = Field(
        default_factory=list, description="Failing train tasks it aims to fix: the screen runs them first."
    )

    @classmethod
    def build(
        cls, *, operator: str, rationale: str, parent: dict[str, str], files: dict[str, str], parent_hash: str
    ) -> Proposal | None:
        """The proposal, or None when `files` equal `parent` (nothing to test)."""
        if files == parent:
            return None
        return cls(
            operator=operator,
            rationale=rationale,
            files=files,
            parent_hash=parent_hash,
            patch=unified_patch(parent, files),
        )


def unified_patch(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff over the whole file set (added and removed files included)."""
    chunks = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        chunks.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{name}" if old is not None else "/dev/null",
                tofile=f"b/{name}" if new is not None else "/dev/null",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)


class ProposalContext(BaseModel):
    """What a proposer may look at: the incumbent's files and how it did on train tasks."""

    model_config = {"arbitrary_types_allowed": True}

    files: dict[str, str]
    harness_hash: str
    harness: Any = Field(None, description="The parent harness, loaded (a harnesses.Harness).")
    failures: list[FailureReport] = Field(default_factory=list)
    passing_episodes: list[Any] = Field(
        default_factory=list, description="Episodes that passed (demo sources)."
    )
    train_tasks: list[Any] = Field(default_factory=list, description="Train tasks, with reference solutions.")
    world_tools: list[str] = Field(default_factory=list)
    rng: random.Random
    iteration: int = 0
    objective: str = Field(
        "quality", description="What the run improves: quality, or cost, latency or tokens with quality held."
    )
    models: list[str] = Field(
        default_factory=list, description="Models the run may give each agent; empty: keep the harness's."
    )
    agent_model: str = Field("", description="The model the agents run on: which protocol they speak.")
    tried: frozenset[str] = Field(
        frozenset(),
        description="Hashes of the candidates this run has tried: an operator with options offers another.",
    )

    @field_validator("train_tasks")
    @classmethod
    def _train_only(cls, tasks: list[Any]) -> list[Any]:
        # Val decides acceptance and test reports it: a proposer that saw either could fit them.
        held_out = [task.id for task in tasks if getattr(task, "split", "train") != "train"]
        if held_out:
            raise ValueError(f"proposers read train tasks only, not {', '.join(held_out)}")
        return tasks


Outcome = Literal["proposed", "no_answer", "no_parse", "dropped"]


class Attempt(BaseModel):
    """What one ask of a model-driven proposer came to: an edit, no answer, an answer that did not parse,
    or an edit that was dropped (and why). A proposer that sets `last_attempt` has each ask stored."""

    operator: str
    task_id: str = ""
    outcome: Outcome
    detail: str = ""
    answer: str = Field("", description="The model's answer (its start): what a no-parse looked like.")
    seconds: float = 0.0


class Proposer(Protocol):
    """Makes one candidate from the incumbent, or None when it has nothing to try. `usage` is the model
    spend of its calls so far (zero for an operator that calls no model): the loop counts what each
    proposal spent toward the run's budgets."""

    name: str

    @property
    def usage(self) -> ModelUsage: ...

    async def propose(self, context: ProposalContext) -> Proposal | None: ...


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def held_out_leak(
    demos: Mapping[str, Any], parent: Mapping[str, Any], held_out: Mapping[str, str]
) -> str | None:
    """Why a candidate is refused, if a demo it adds or changes quotes the opening message of a val or
    test task (`held_out`: task id -> message; whitespace and case aside); None if none does. Demos the
    parent already had passed this check, or are the harness author's."""
    messages = {task: _plain(message) for task, message in held_out.items()}
    for name, demo in demos.items():
        if parent.get(name) == demo:
            continue
        text = _plain(" ".join(_strings(demo.model_dump())))
        for task, message in messages.items():
            if message and message in text:
                return (
                    f"demo {name!r} quotes the opening message of held-out task {task!r}: "
                    "val and test are never demo material"
                )
    return None


def fenced(text: str, boundary: str, limit: int) -> str:
    """Recorded text fenced as data for a proposer model: every copy of the boundary token taken out of it
    (so it cannot close the fence early), cut in the middle to about `limit` characters."""
    while boundary in text:  # removing one copy may splice its neighbours into another
        text = text.replace(boundary, "")
    return f"<<<{boundary}\n{_clip(text, limit)}\n{boundary}>>>"


def _clip(text: str, limit: int) -> str:
    """`text` cut in the middle to about `limit` characters: the start and the end say the most."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[len(text) - limit // 2 :]
    return f"{head}\n… [{len(text) - len(head) - len(tail)} characters cut] …\n{tail}"
