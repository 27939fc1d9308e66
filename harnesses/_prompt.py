"""What an agent is sent before the conversation: its rendered prompt and, when it retrieves demos, those.

The runtime builds every agent's system messages with `system_prompt`, `example_messages` and
`sent_prompts`; `render_prompt` calls the same three without a model, so what a person is shown is
what the model gets. An episode records the messages (`Episode.prompts`) and their `prompt_hash`,
and the runs store keeps each text once per hash.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from atoll.worlds import TIMESTAMP_FORMAT

from ._harness import Harness
from ._protocols import PROTOCOLS, NativeProtocol, TextProtocol
from ._retrieval import retrieved_demos
from ._tools import tool_specs
from .models import resolve_model

Protocol = TextProtocol | NativeProtocol

PromptKind = Literal["system", "demos"]


class PromptPart(BaseModel):
    """One system message an agent is sent ahead of the conversation, exactly as sent."""

    agent: str
    # "system": the agent's rendered prompt; "demos": the demos sent after it (the text protocol's
    # retrieved ones, so the prompt stays the same for every task; the native protocol's as conversations).
    kind: PromptKind
    text: str


def prompt_hash(parts: Sequence[PromptPart]) -> str:
    """sha256 of the messages in order, with their agent and kind: the same prompt hashes the same in
    every run, so episodes that were told the same thing can be found and the text kept once."""
    return _hash_of(tuple((part.agent, part.kind, part.text) for part in parts))


@functools.lru_cache(maxsize=64)
def _hash_of(parts: tuple[tuple[str, str, str], ...]) -> str:
    """`prompt_hash` of (agent, kind, text) parts, kept for the prompts hashed lately: a served agent sends
    the same prompt with every request, and encoding its text cost more than the rest of the turn."""
    payload = json.dumps(
        [{"agent": agent, "kind": kind, "text": text} for agent, kind, text in parts],
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def system_prompt(harness: Harness, agent: str, protocol: Protocol, task: Mapping[str, Any], now: str) -> str:
    """The agent's template rendered for `task` at `now`, with its rules under it.

    It depends only on these, so it is kept in `harness.memo`: a batch renders it once per task, not per
    episode. Raises HarnessError when the template fails on this task's values.
    """
    task_key = json.dumps(dict(task), sort_keys=True, default=str)
    key = ("system", agent, protocol.name, task_key, now)
    system = harness.memo.get(key)
    if system is None:
        config = harness.agent(agent)
        specs = tool_specs(harness, agent)
        system = harness.memo[key] = _with_rules(
            harness.render_prompt(
                agent,
                {
                    "agent": agent,
                    "harness": harness.name,
                    "documents": harness.world.documents,
                    "task": dict(task),
                    "skills": {s: harness.skills[s] for s in config.skills},
                    "tools": protocol.render_tools(specs),
                    "demos": protocol.render_demos([harness.demos[d] for d in config.demos]),
                    "protocol": protocol.name,
                    "now": now,
                },
            ),
            config.rules,
        )
    return system


def example_messages(
    harness: Harness, agent: str, protocol: Protocol, opening: str | None
) -> list[dict[str, Any]]:
    """The messages that show an agent its demos after the prompt: for the text protocol the demos
    retrieved for a run opened by `opening` (its fixed demos are in the prompt); for the native
    protocol its fixed demos, then the retrieved ones, as earlier conversations of real tool calls.
    Numbered after the fixed demos; `opening` None: none retrieved (they depend on the request).

    They depend only on the demos, so they are built once per agent, protocol and retrieved demos (kept
    in `harness.memo`); each call gets its own copies, which the caller may change."""
    config = harness.agent(agent)
    retrieved = tuple(retrieved_demos(harness, agent, opening)) if opening is not None else ()
    key = ("examples", agent, protocol.name, retrieved)
    messages = harness.memo.get(key)
    if messages is None:
        demos = [harness.demos[d] for d in retrieved]
        if protocol.name == "text":
            messages = protocol.example_messages(demos, first=len(config.demos) + 1)
        else:
            messages = protocol.example_messages([*(harness.demos[d] for d in config.demos), *demos])
        harness.memo[key] = messages
    return _copied(messages)


def _copied(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with each message, tool call and function copied: what a protocol's example messages
    hold besides strings, which cannot change."""
    return [
        {
            **message,
            "tool_calls": [{**call, "function": {**call["function"]}} for call in message["tool_calls"]],
        }
        if "tool_calls" in message
        else {**message}
        for message in messages
    ]


def sent_prompts(
    agent: str, protocol: Protocol, system: str, examples: list[dict[str, Any]]
) -> list[PromptPart]:
    """What the protocol sends ahead of any turn, read from the messages it builds for a model call, so
    it is exactly what is sent: the prompt, then the demos if any (the text protocol's as their text,
    the native protocol's conversations as their messages in JSON)."""
    first, *rest = protocol.messages(system, [], examples)
    parts = [PromptPart(agent=agent, kind="system", text=first["content"])]
    if examples:
        text = rest[0]["content"] if protocol.name == "text" else json.dumps(examples, ensure_ascii=False)
        parts.append(PromptPart(agent=agent, kind="demos", text=text))
    return parts


def render_prompt(
    harness: Harness,
    agent: str | None = None,
    *,
    task_context: Mapping[str, Any] | None = None,
    message: str | None = None,
    model_name: str | None = None,
    fixture: str | None = None,
    seed: int = 0,
    clock: str = "fixed",
) -> list[PromptPart]:
    """The system messages `agent` (default the entry agent) is sent, rendered by the runtime's own code
    without calling any model: what `optimize try --show-prompt` prints.

    Args:
        task_context: shown to the template as `task`, as an eval task's `context` is.
        message: the request the agent is opened with; it picks retrieved demos. None: no retrieved
            demos are shown, as they depend on the request.
        model_name: picks the protocol (`model_name`, else $ATOLL_MODEL, else the harness's default;
            an agent with its own `model` uses that). Nothing is asked of it.
        fixture, seed, clock: the instance whose clock gives `now` (fixture default: the world's default).
    """
    name = agent or harness.entry
    model = harness.agent(name).model or resolve_model(model_name, harness.config.model)
    protocol = PROTOCOLS[harness.protocol_for(name, model)]
    chosen = fixture or harness.world.default_fixture
    with harness.world.instance(chosen, seed=seed, clock=clock) as instance:
        now = instance.now().strftime(TIMESTAMP_FORMAT)
    system = system_prompt(harness, name, protocol, task_context or {}, now)
    return sent_prompts(name, protocol, system, example_messages(harness, name, protocol, message))


def _with_rules(system: str, rules: list[str]) -> str:
    """The rendered prompt with the agent's rules under a heading; unchanged when it has none."""
    if not rules:
        return system
    lines = "\n".join(f"- {rule}" for rule in rules)
    return f"{system.rstrip()}\n\nRules:\n{lines}\n"
