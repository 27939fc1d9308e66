"""What the model is told: `render_prompt` shows exactly what the runtime sends, every episode records it
with its hash, and `optimize try --show-prompt` prints it (without calling a model when nothing runs)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from atoll.cli import app
from atoll.harnesses import (
    Episode,
    Harness,
    PromptPart,
    _try,
    load_harness,
    prompt_hash,
    render_prompt,
    run_episode,
)
from atoll.harnesses.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def demo(user: str, tool: str, reply: str) -> str:
    steps = [{"user": user}, {"call": tool, "args": {}, "result": {"ok": True}}, {"reply": reply}]
    return yaml.safe_dump({"title": user, "steps": steps})


def toy(
    protocol: str = "text", front_prompt: str = "You help shop customers on {{ now }}.\n{{ tools }}\n"
) -> Harness:
    """A front agent that retrieves a demo and has rules, delegating to an orders agent."""
    config = {
        "name": "toy",
        "world": "shop",
        "protocols": {"chat-*": "native", "*": protocol},
        "entry": "front",
        "agents": {
            "front": {
                "prompt": "prompts/front.md.j2",
                "delegates": ["orders"],
                "demo_pool": ["ship", "cancel"],
                "retrieve_demos": 1,
                "rules": ["Be brief."],
            },
            "orders": {"description": "Updates orders.", "prompt": "prompts/orders.md.j2"},
        },
    }
    files = {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump(
            {"front": ["get_customer", "set_status", "delete_order"], "orders": ["set_status"]}
        ),
        "prompts/front.md.j2": front_prompt,
        "prompts/orders.md.j2": "You update orders{% if task %} for task {{ task.ref }}{% endif %}.\n{{ tools }}\n",
        "demos/ship.yaml": demo("Mark order 3 as shipped", "set_status", "Shipped."),
        "demos/cancel.yaml": demo("Cancel my order 4", "delete_order", "Gone."),
    }
    return Harness.from_files(files, world=shop)


def script(protocol: str) -> list[str | dict[str, Any]]:
    """Front delegates, orders answers, front replies."""
    if protocol == "text":
        delegate = " " + json.dumps({"tool": "delegate_to_orders", "args": {"request": "Ship order 3"}})
        return [
            delegate,
            ' {"tool": "reply", "args": {"message": "Shipped."}}',
            ' {"tool": "reply", "args": {"message": "Done."}}',
        ]
    return [
        {"tool_calls": [{"name": "delegate_to_orders", "arguments": {"request": "Ship order 3"}}]},
        "Shipped.",
        "Done.",
    ]


async def played(harness: Harness, model: ScriptedModel, **options: Any) -> Episode:
    with shop.instance("tiny", seed=1) as instance:
        return await run_episode(harness, instance, model, "Please mark order 3 as shipped", **options)


def system_messages(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "system"]


def sent_ahead(request: Any, protocol: str) -> list[str]:
    """What a first request sends ahead of the live conversation, as the episode records it: the text
    protocol's system messages; the native prompt, then its demo conversations as JSON."""
    if protocol == "text":
        return system_messages(request)
    system, *examples, _opening = request.messages
    return [system["content"], *([json.dumps(examples, ensure_ascii=False)] if examples else [])]


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_the_episode_records_exactly_the_system_messages_each_agent_was_sent(protocol: str) -> None:
    harness = toy(protocol)
    model = ScriptedModel(script(protocol))
    ep = await played(harness, model, task_context={"ref": "T-1"})
    assert ep.replies == ["Done."]
    assert [(p.agent, p.kind) for p in ep.prompts] == [
        ("front", "system"),
        ("front", "demos"),
        ("orders", "system"),
    ]
    front, orders = model.requests[0], model.requests[1]
    assert sent_ahead(front, protocol) == [p.text for p in ep.prompts if p.agent == "front"]
    assert sent_ahead(orders, protocol) == [p.text for p in ep.prompts if p.agent == "orders"]
    assert "Rules:\n- Be brief." in ep.prompts[0].text and "Mark order 3 as shipped" in ep.prompts[1].text
    assert "for task T-1" in ep.prompts[2].text
    assert ep.prompt_hash == prompt_hash(ep.prompts) and len(ep.prompt_hash) == 64
    assert Episode.model_validate_json(ep.model_dump_json()) == ep


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_render_prompt_is_what_the_runtime_sends_without_asking_a_model(protocol: str) -> None:
    harness = toy(protocol)
    ep = await played(harness, ScriptedModel(script(protocol)), task_context={"ref": "T-1"})
    opening, request = "Please mark order 3 as shipped", "Ship order 3"
    model = "chat-x" if protocol == "native" else "base-x"  # the name picks the protocol, as in a run
    front = render_prompt(
        toy(protocol), task_context={"ref": "T-1"}, message=opening, seed=1, model_name=model
    )
    orders = render_prompt(
        toy(protocol), "orders", task_context={"ref": "T-1"}, message=request, seed=1, model_name=model
    )
    assert [*front, *orders] == ep.prompts
    assert "2026-03-02 09:00:00" in front[0].text, "`now` comes from the world's default fixture's clock"


def test_without_a_message_no_retrieved_demos_are_shown_as_they_depend_on_the_request() -> None:
    (part,) = render_prompt(toy("text"))
    assert part == PromptPart(agent="front", kind="system", text=part.text)
    assert part.text.rstrip().endswith("Conversation"), "the text protocol's system message, as sent"
    (native,) = render_prompt(toy("text"), model_name="chat-x")
    assert "Conversation" not in native.text and "Action:" not in native.text


async def test_the_hash_is_stable_across_runs_and_moves_with_the_prompt() -> None:
    first = await played(toy(), ScriptedModel(script("text")))
    again = await played(toy(), ScriptedModel(script("text")))
    edited = await played(toy(front_prompt="Be helpful.\n{{ tools }}\n"), ScriptedModel(script("text")))
    other_task = await played(toy(), ScriptedModel(script("text")), task_context={"ref": "T-2"})
    assert first.prompt_hash == again.prompt_hash
    assert len({first.prompt_hash, edited.prompt_hash, other_task.prompt_hash}) == 3


# -- optimize try --------------------------------------------------------------------------------


def no_model(*_args: Any, **_kwargs: Any) -> None:
    raise AssertionError("no model may be built to show a prompt")


def test_show_prompt_alone_renders_the_entry_prompt_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_try, "get_model", no_model)
    result = runner.invoke(app, ["try", "harnesses/support_agent", "--show-prompt"])
    assert result.exit_code == 0, result.output
    expected = render_prompt(load_harness(ROOT / "harnesses" / "support_agent"))
    assert "triage: system prompt" in result.stdout
    for part in expected:
        assert part.text.rstrip() in result.stdout, "every line whole, never wrapped or cut"
    assert f"prompt sha256 {prompt_hash(expected)}" in result.stdout
    as_json = json.loads(
        runner.invoke(app, ["try", "harnesses/support_agent", "--show-prompt", "--json"]).stdout
    )
    assert as_json == {"prompt_hash": prompt_hash(expected), "prompts": [p.model_dump() for p in expected]}


def test_show_prompt_with_a_message_prints_the_messages_sent_then_the_episode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ScriptedModel(["Hello! How can I help?", "Hello again."], name="openai/gpt-4o-mini")
    monkeypatch.setattr(_try, "get_model", lambda *_args, **_kwargs: model)
    args = ["try", "harnesses/support_agent", "-m", "hi", "--model", "scripted"]
    result = runner.invoke(app, [*args, "--show-prompt"])
    assert result.exit_code == 0, result.output
    sent = sent_ahead(model.requests[0], "native")
    assert sent[0].rstrip() in result.stdout
    prompt_at, episode_at = (
        result.stdout.index("triage: system prompt"),
        result.stdout.index("Agent (triage)"),
    )
    assert prompt_at < episode_at
    episode = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    kinds = ["system", "demos"][: len(sent)]
    parts = [PromptPart(agent="triage", kind=kind, text=text) for kind, text in zip(kinds, sent)]
    assert episode["prompt_hash"] == prompt_hash(parts)
    assert [p["text"] for p in episode["prompts"]] == sent
    assert re.search(r"prompt [0-9a-f]{12}", result.stdout), "the episode's header names the prompt"


def test_try_starts_from_the_worlds_default_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    # A harness on a world without `small_shop` (the old default) runs without --fixture.
    monkeypatch.setattr(_try, "load_harness", lambda _path: toy("native"))
    monkeypatch.setattr(_try, "get_model", lambda *_args, **_kwargs: ScriptedModel(["Hi."]))
    result = runner.invoke(app, ["try", "toy", "-m", "hi", "--model", "scripted", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fixture"] == shop.default_fixture == "tiny"
    assert "the world's default fixture" in runner.invoke(app, ["try", "--help"]).stdout
