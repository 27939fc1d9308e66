"""The user side of an eval episode: a script for tests and cheap runs, or a simulated user on a model.

The simulated user follows tau-bench: a model plays the customer from the task's persona, facts
and goal, sees only the conversation (never tool calls), and ends it by writing the stop token
once its goal is met or clearly cannot be. It runs on any model of the model layer; its calls use
the episode's sample index, so a rerun replays them from the response cache like the agent's.
"""

from __future__ import annotations

import json
from typing import Any

from atoll.harnesses import Event, ScriptedUser, UserSide
from atoll.harnesses.models import Model, ModelParams, ModelUsage

from ._suite import Task

STOP_TOKEN = "###STOP###"

_INSTRUCTIONS = """You are role-playing a customer who contacts a support agent. Stay in character.

{persona}

Your goal: {goal}

What you know (share a fact only when the agent asks for it or it is needed; never invent others):
{facts}

Rules:
- Write only your next message to the agent: one to three sentences, in the customer's voice.
- If the agent asks for something you do not know, say that you do not know it.
- Never act as the agent, and never describe tool calls or systems.
- When your goal is met, or the agent has clearly refused or cannot help further, reply with
  {stop} and nothing else."""


class SimulatedUser:
    """A customer played by a model (see the module docstring). Stateless between calls but for usage.

    Args:
        model: any model of the model layer.
        opening: the first message, written by the task (so every sample starts the same way).
        persona, goal, facts: who the customer is, what they want, and what they can tell.
        sample: the episode's sample index, passed to every call.
        params: sampling parameters (defaults: temperature 0, 200 tokens).
        stop_token: the text that ends the conversation.
    """

    def __init__(
        self,
        model: Model,
        *,
        opening: str,
        persona: str | None = None,
        goal: str | None = None,
        facts: dict[str, Any] | None = None,
        sample: int = 0,
        params: ModelParams | None = None,
        stop_token: str = STOP_TOKEN,
    ) -> None:
        self.model = model
        self.opening = opening
        self.sample = sample
        self.params = params or ModelParams(temperature=0.0, max_tokens=200)
        self.stop_token = stop_token
        self.usage = ModelUsage()
        self.system = _INSTRUCTIONS.format(
            persona=persona or "You are a customer of this business.",
            goal=goal or "get your problem solved.",
            facts="\n".join(f"- {k}: {_text(v)}" for k, v in (facts or {}).items())
            or "- (nothing in particular)",
            stop=stop_token,
        )

    def __repr__(self) -> str:
        return f"SimulatedUser(model={self.model.name!r}, sample={self.sample})"

    def messages(self, events: list[Event]) -> list[dict[str, str]]:
        """The conversation from the customer's side: their messages are the model's own turns."""
        entry = next((e.agent for e in events if e.kind == "user"), None)
        messages = [{"role": "system", "content": self.system}]
        for event in events:
            if event.kind == "user" and event.content:
                messages.append({"role": "assistant", "content": event.content})
            elif event.kind == "assistant" and event.agent == entry and event.content:
                messages.append({"role": "user", "content": event.content})
        return messages

    async def respond(self, events: list[Event]) -> str | None:
        """The customer's next message, or None once they wrote the stop token (or nothing)."""
        response = await self.model.complete(self.messages(events), params=self.params, sample=self.sample)
        self.usage.add(response)
        text = (response.content or "").strip()
        if not text or self.stop_token in text:
            return None
        return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def user_for(task: Task, *, model: Model | None, sample: int) -> UserSide:
    """The user side of one episode of `task`: scripted replies, or a simulated user on `model`."""
    spec = task.user
    if not spec.simulated:
        return ScriptedUser(spec.message, spec.replies)
    if model is None:
        raise ValueError(f"task {task.id!r} has a simulated user: pass a user model")
    return SimulatedUser(
        model, opening=spec.message, persona=spec.persona, goal=spec.goal, facts=spec.facts, sample=sample
    )
