"""A harness for minidesk and a scripted "agent" that solves its tasks, for batch tests and benchmarks."""

from __future__ import annotations

import json
import re
from pathlib import Path

from atoll.harnesses import Harness
from atoll.harnesses.models import ModelRequest, ScriptedModel

from .world import world

SUITE = Path(__file__).parents[1] / "suites" / "minidesk"

FILES = {
    "harness.yaml": """\
name: minidesk-agent
world: minidesk.world
protocols: {"*": native}
limits: {turns: 8, tool_calls: 8}
entry: desk
agents:
  desk:
    prompt: prompts/desk.md.j2
""",
    "tools.yaml": "desk: [get_order, refund_order, cancel_order, add_note]\n",
    "prompts/desk.md.j2": "You run the desk. {{ documents.policy }}\n{{ tools }}\n",
}


def harness(prompt: str | None = None) -> Harness:
    files = dict(FILES)
    if prompt is not None:
        files["prompts/desk.md.j2"] = prompt
    return Harness.from_files(files, world=world)


def solve(request: ModelRequest) -> dict | str:
    """A competent agent: refunds or cancels the order the customer names, refuses a change of mind."""
    messages = request.messages
    last = messages[-1]
    messages = [m for m in messages if not str(m.get("tool_call_id", "")).startswith("demo")]
    opening = [m["content"] for m in messages if m["role"] == "user"][-1]  # after any demo conversations
    order = re.search(r"ORD-\d+", opening)
    if last["role"] == "tool":
        result = json.loads(last["content"])
        if "amount" in result:
            return f"Done: your refund of {result['amount']:.2f} is on its way."
        return "Done: the order is cancelled."
    if any(m["role"] == "tool" for m in messages):
        return "You're welcome."
    if "changed my mind" in opening or order is None:
        return "Sorry, I can't refund an order for a change of mind."
    if "cancel" in opening.lower():
        return {"tool_calls": [{"name": "cancel_order", "arguments": {"order_id": order.group()}}]}
    return {
        "tool_calls": [
            {"name": "refund_order", "arguments": {"order_id": order.group(), "reason": "damaged"}}
        ]
    }


def solver(latency_s: float = 0.0) -> ScriptedModel:
    return ScriptedModel(fn=solve, name="scripted-solver", latency_s=latency_s)
