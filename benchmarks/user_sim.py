"""How a model does as τ²'s user simulator: does it stay the customer, say only what its task lets it
know, and end the conversation when it is done?

A weak simulated user changes every score (it invents an email, answers as the agent, or never stops),
so this checks the role alone: each of the first --tasks train tasks of a τ² suite is played against
the same fixed, scripted agent (a greeting, a request for identity, a question about the order, then
"done, anything else?"), and the simulated user's replies are judged by rules:

- in character: no reply reads as the agent (offering help, apologising for a policy, tool or JSON talk);
- known info only: every email, order id, user id and ZIP code it writes appears in the task's own
  instructions (what it knows, its goal), and it shares at least one of them when the agent asks who it is;
- ends: it writes the stop token once the agent has said the work is done, and not before.

Each reply is printed, so a reader can judge what the rules miss. No response cache: every call is made.

Run: python benchmarks/user_sim.py [--model local/qwen2.5-coder-1.5b] [--suite evals/tau2_retail] [--tasks 10]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.evals import STOP_TOKEN, SimulatedUser, load_suite
from atoll.harnesses import Event
from atoll.harnesses.models import check_model, get_model

ROOT = Path(__file__).resolve().parents[1]
AGENT_TURNS = (
    "Hello! How can I help you today?",
    "I can help with that. To find your account, please tell me your name and ZIP code, or your email.",
    "Thank you, I found your account. Which order is this about, and what exactly should I do?",
    "Done: I have made that change for you. Is there anything else I can help you with?",
)
DONE_TURN = len(AGENT_TURNS) - 1  # the agent's turn after which the user should stop
AGENT_VOICE = re.compile(
    r"how (?:can|may) i (?:help|assist)|i can help you|glad i could help|anything else (?:you need|i can)"
    r"|could you (?:please )?provide|i don't have (?:enough|any) information|as an ai|tool_call|function|[{}]"
    r"|let me (?:check|look)|i(?:'ve| have) (?:updated|processed|found your)",
    re.IGNORECASE,
)
FACTS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|#W\d+|\b[a-z]+_[a-z]+_\d{4}\b|\b\d{5}\b")


def judge(replies: list[str | None], instructions: str) -> tuple[bool, list[str], bool, str]:
    """(in character, facts it wrote that its task does not give, whether it shared one it was given,
    how it ended)."""
    said = [reply for reply in replies if reply]
    in_character = not any(AGENT_VOICE.search(reply) for reply in said)
    written = {fact for reply in said for fact in FACTS.findall(reply)}
    invented = sorted(fact for fact in written if fact not in instructions)
    shared = any(fact in instructions for fact in written)
    stopped_at = next((turn for turn, reply in enumerate(replies) if reply is None), None)
    if stopped_at is None:
        ended = "never stopped"
    elif stopped_at < DONE_TURN:
        ended = f"stopped early (after agent turn {stopped_at + 1})"
    else:
        ended = "stopped when done"
    return in_character, invented, shared, ended


async def play(user: SimulatedUser, opening: str) -> list[str | None]:
    """The user's reply to each agent turn (None once it wrote the stop token)."""
    events = [Event(kind="user", agent="agent", content=opening)]
    replies: list[str | None] = []
    for line in AGENT_TURNS:
        events.append(Event(kind="assistant", agent="agent", content=line))
        reply = await user.respond(events)
        replies.append(reply)
        if reply is None:
            break
        events.append(Event(kind="user", agent="agent", content=reply))
    return replies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b", help="the model that plays the user")
    parser.add_argument("--suite", default="evals/tau2_retail", help="a suite whose users are simulated")
    parser.add_argument("--tasks", type=int, default=10, help="train tasks to play")
    args = parser.parse_args()
    console = Console(width=200)
    check_model(args.model)
    model = get_model(args.model)
    suite = load_suite(ROOT / args.suite)
    tasks = [task for task in suite.select(split="train") if task.user.simulated][: args.tasks]
    table = Table(
        "task",
        "in character",
        "facts not in its task",
        "shared a known fact",
        "ended",
        "s",
        title=f"{args.model} as the user",
    )
    totals = {"in character": 0, "no invented facts": 0, "shared a known fact": 0, "stopped when done": 0}
    for task in tasks:
        user = SimulatedUser(
            model,
            opening=task.user.message,
            persona=task.user.persona,
            goal=task.user.goal,
            facts=task.user.facts,
        )
        started = time.perf_counter()
        replies = await play(user, task.user.message)
        seconds = time.perf_counter() - started
        in_character, invented, shared, ended = judge(replies, user.system)
        totals["in character"] += in_character
        totals["no invented facts"] += not invented
        totals["shared a known fact"] += shared
        totals["stopped when done"] += ended == "stopped when done"
        console.print(f"[bold]{task.id}[/] goal: {(task.user.goal or '')[:160]}")
        for line, reply in zip(AGENT_TURNS, replies, strict=False):
            console.print(f"  agent: {line}\n  user:  {reply if reply is not None else STOP_TOKEN}")
        table.add_row(
            task.id,
            "yes" if in_character else "no",
            ", ".join(invented) or "-",
            "yes" if shared else "no",
            ended,
            f"{seconds:.0f}",
        )
    console.print(table)
    console.print(", ".join(f"{name}: {count}/{len(tasks)}" for name, count in totals.items()))


if __name__ == "__main__":
    asyncio.run(main())
