"""`next_message`: one served answer in either protocol, with the client running the tools. A text-
protocol model's action lines come back as OpenAI tool calls, what only Atoll can answer never reaches
the client, and a tool result is shaped as tools.yaml says before the model reads it."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses import ConversationError, Harness, UnusableAnswer, next_message
from atoll.harnesses.models import ModelRequest, ScriptedModel
from atoll.worlds import get_world

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def desk(protocol: str = "text", fields: str = "") -> Harness:
    files = {
        "harness.yaml": (
            "name: desk\nworld: helpdesk\nmodel: scripted\nentry: front\n"
            f"agents:\n  front:\n    prompt: prompts/front.md.j2\n    protocol: {protocol}\n"
        ),
        "tools.yaml": f"front:\n  get_order:\n    description: One order.\n{fields}",
        "prompts/front.md.j2": "You are the desk.\n{{ tools }}\n",
    }
    return Harness.from_files(files, source="desk", world=get_world("helpdesk"))


def ask(harness: Harness, model: ScriptedModel, messages: list[dict]):
    return asyncio.run(next_message(harness, "front", model, messages, now=NOW))


def test_a_text_protocol_action_line_becomes_an_openai_tool_call_and_a_reply_its_content() -> None:
    model = ScriptedModel(
        responses=[
            'Action: {"tool": "get_order", "args": {"order_id": "ORD-1001"}}',
            'Action: {"tool": "reply", "args": {"message": "It shipped."}}',
        ]
    )
    harness = desk()
    opening = [{"role": "user", "content": "Where is ORD-1001?"}]

    first = ask(harness, model, opening)
    (call,) = first.tool_calls
    assert first.finish_reason == "tool_calls" and call.name == "get_order"
    assert json.loads(call.arguments) == {"order_id": "ORD-1001"}

    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": "get_order", "arguments": call.arguments},
            }
        ],
    }
    result = {"role": "tool", "tool_call_id": call.id, "content": '{"id": "ORD-1001", "status": "shipped"}'}
    second = ask(harness, model, [*opening, assistant, result])
    assert second.content == "It shipped." and second.finish_reason == "stop"
    transcript = model.requests[1].messages[-1]["content"]
    assert 'Observation: {"id":"ORD-1001","status":"shipped"}' in transcript


def test_null_arguments_the_tool_does_not_take_never_reach_the_client() -> None:
    model = ScriptedModel(
        responses=['Action: {"tool": "get_order", "args": {"order_id": "ORD-1001", "amount": null}}']
    )

    (call,) = ask(desk(), model, [{"role": "user", "content": "Where is ORD-1001?"}]).tool_calls

    assert json.loads(call.arguments) == {"order_id": "ORD-1001"}


def test_unusable_answers_and_unknown_tools_are_answered_inside_and_retried() -> None:
    model = ScriptedModel(
        responses=[
            "I think the order is fine",  # no action: the runtime's error, another try
            'Action: {"tool": "cancel_everything", "args": {}}',  # no such tool: its error, another try
            'Action: {"tool": "reply", "args": {"message": "Let me check."}}',
        ]
    )
    answer = ask(desk(), model, [{"role": "user", "content": "Hi"}])
    assert answer.content == "Let me check." and answer.model_calls == 3
    assert "unknown_tool" in model.requests[2].messages[-1]["content"]


def test_a_model_that_never_answers_usably_is_an_error_naming_the_turn_limit() -> None:
    model = ScriptedModel(fn=lambda _: "no action here")
    with pytest.raises(UnusableAnswer, match="limits.turns"):
        ask(desk(), model, [{"role": "user", "content": "Hi"}])


def test_a_tool_result_is_projected_to_the_fields_tools_yaml_lists() -> None:
    seen: list[ModelRequest] = []

    def reply(request: ModelRequest) -> str:
        seen.append(request)
        return "Done."

    harness = desk("native", fields="    fields: [id, status]\n")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_order", "arguments": '{"order_id": "ORD-1"}'},
    }
    messages = [
        {"role": "user", "content": "Status?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": json.dumps({"id": "ORD-1", "status": "open", "items": [1, 2]}),
        },
    ]
    ask(harness, ScriptedModel(fn=reply), messages)
    assert json.loads(seen[0].messages[-1]["content"]) == {"id": "ORD-1", "status": "open"}


@given(
    st.lists(st.sampled_from(["user", "assistant", "system", "tool", "robot", None]), min_size=1, max_size=6)
)
def test_any_message_list_is_answered_or_refused_with_an_error_naming_a_message(roles: list) -> None:
    messages = [{"role": role, "content": "x", "tool_call_id": "nope"} for role in roles]
    model = ScriptedModel(fn=lambda _: "Fine.")
    try:
        answer = ask(desk("native"), model, messages)
    except ConversationError as error:
        assert str(error).startswith("messages")
    else:
        assert answer.content == "Fine."


def test_one_conversation_sends_the_model_the_same_requests_in_evaluation_and_in_serving() -> None:
    """The same scripted conversation, played as an eval episode and through the endpoint's step (the
    client running the world tool and sending its result back): every model request, its messages
    (prompt, demos as conversations) and its sampling (tool_choice: first until a call succeeds), is
    the same."""
    from atoll.harnesses import run_episode

    demo = "title: Look up\nsteps:\n  - user: Where is ORD-1001?\n  - call: get_order\n    args: {order_id: ORD-1001}\n    result: {status: shipped}\n  - reply: It shipped.\n"
    files = {
        "harness.yaml": (
            "name: desk\nworld: helpdesk\nmodel: scripted\nentry: front\nagents:\n  front:\n"
            "    prompt: prompts/front.md.j2\n    protocol: native\n    demos: [look]\n    tool_choice: first\n"
        ),
        "tools.yaml": "front: [get_order]\n",
        "prompts/front.md.j2": "You are the desk. Today is {{ now }}.\n{{ tools }}\n{{ demos }}\n",
        "demos/look.yaml": demo,
    }
    harness = Harness.from_files(files, source="desk", world=get_world("helpdesk"))
    script = [
        {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "ORD-1042"}}]},
        "It is on its way.",
    ]
    evaluated = ScriptedModel(list(script))
    with harness.world.instance(harness.world.default_fixture, clock="fixed") as instance:
        now = instance.now()
        episode = asyncio.run(run_episode(harness, instance, evaluated, "Where is ORD-1042?"))
    assert episode.reply == "It is on its way."

    served = ScriptedModel(list(script))
    opening = [{"role": "user", "content": "Where is ORD-1042?"}]
    first = asyncio.run(next_message(harness, "front", served, opening, now=now))
    (call,) = first.tool_calls
    result = evaluated.requests[1].messages[-1]  # what the runtime showed the model of the world's answer
    asked = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    turn = [
        {"role": "assistant", "content": None, "tool_calls": [asked]},
        {**result, "tool_call_id": call.id},
    ]
    second = asyncio.run(next_message(harness, "front", served, [*opening, *turn], now=now))

    assert second.content == "It is on its way."
    assert [r.params for r in served.requests] == [r.params for r in evaluated.requests]
    assert [r.params.tool_choice for r in served.requests] == ["required", None]
    assert served.requests[0].messages == evaluated.requests[0].messages
    assert served.requests[1].messages == evaluated.requests[1].messages
