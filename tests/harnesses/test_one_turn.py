"""What is measured is what is served: one scripted conversation, played as an eval episode and through
the OpenAI-compatible endpoint's `next_message` (a client running the world tools on its own instance of
the same fixture), sends the model the same requests and makes the same world calls, with each guard on
and off: the turn is one piece of code, and serving rebuilds what the guards know from the client's
messages."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from atoll.harnesses import DELEGATE_PREFIX, Harness, ScriptedUser, next_message, run_episode
from atoll.harnesses.models import ModelRequest, ScriptedModel

GUARDS = ("repeat_notice", "reply_nudge", "preconditions", "look_first", "grounded_args")
USERS = ["Who is C1?", "Please delete order 1.", "Thanks."]
# What the model answers, in order: ("reply", text), ("call", tool, arguments), ("bad arguments",),
# ("broken",) or ("cut reply", text): a reply in a loop, cut before its message closed.
SCRIPT: list[tuple[Any, ...]] = [
    ("reply", "C1 is Ada."),  # look_first holds it back
    ("call", "get_customer", {"customer_id": "C1"}),  # the client runs it; tools.yaml projects the result
    ("call", "get_customer", {"customer_id": "C1"}),  # repeat_notice refuses it
    ("call", "load_skill", {"name": "tone"}),  # answered inside
    ("reply", "C1 is Customer 1."),
    ("call", "delete_order", {"order_id": 1}),  # preconditions refuse it until set_status succeeded
    ("broken",),  # an unreadable answer: an error (with reply_nudge, a reminder to reply)
    ("broken",),  # the same again: not shown, the next answer is sampled afresh
    ("call", "drop_tables", {}),  # an unknown tool: answered inside
    ("bad arguments",),  # the world refuses them (text) or they are no JSON, answered inside (native)
    ("call", "get_customer", {"customer_id": "C404"}),  # fails (grounded_args: nobody said 404)
    ("call", "get_customer", {"customer_id": "C404"}),  # fails again (or is refused as a repeat)
    ("call", "get_customer", {"customer_id": "C404"}),  # failed twice: not run, sampled afresh
    ("call", "set_status", {"order_id": 2, "status": "shipped"}),  # a write
    ("call", "delete_order", {"order_id": 1}),
    ("reply", "Done."),
    ("cut reply", "You are welcome. You are welcome. You are"),  # read as "You are welcome."
]


def harness(protocol: str, guards: dict[str, bool], tool_choice: str) -> Harness:
    front = {
        "prompt": "prompts/front.md.j2",
        "demos": ["lookup"],
        "skills": ["tone"],
        "skill_tool": True,
        "guards": guards,
        "tool_choice": tool_choice,
    }
    config = {
        "name": "desk",
        "world": "shop",
        "protocols": {"*": protocol},
        "limits": {"turns": len(SCRIPT), "tool_calls": 40, "observation_chars": 200},
        "entry": "front",
        "agents": {"front": front},
    }
    tools = {
        "front": {
            "get_customer": {"fields": ["id", "name"]},
            "set_status": {},
            "delete_order": {"requires": ["set_status"]},
        }
    }
    lookup = {
        "title": "Look up a customer",
        "steps": [
            {"user": "Who is C2?"},
            {"call": "get_customer", "args": {"customer_id": "C2"}, "result": {"id": "C2"}},
            {"reply": "C2 is Customer 2."},
        ],
    }
    files = {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump(tools),
        "prompts/front.md.j2": "You help shop customers. It is {{ now }}.\n{{ tools }}\n\n{{ demos }}\n",
        "skills/tone.md": "# Tone\nBe brief.\n",
        "demos/lookup.yaml": yaml.safe_dump(lookup),
    }
    return Harness.from_files(files, source="desk", world=shop)


def answers(protocol: str) -> list[str | dict]:
    """The script as a model of `protocol` writes it."""
    written: list[str | dict] = []
    for kind, *rest in SCRIPT:
        if protocol == "text":
            action = {"tool": "reply", "args": {"message": rest[0]}} if kind == "reply" else None
            if kind == "cut reply":
                written.append(' {"tool": "reply", "args": {"message": "' + rest[0])
                continue
            if kind == "call":
                action = {"tool": rest[0], "args": rest[1]}
            elif kind == "bad arguments":
                action = {"tool": "get_customer", "args": {"customer_id": 7}}
            written.append(" I should look it up" if action is None else " " + json.dumps(action))
        elif kind in ("reply", "cut reply"):
            written.append(rest[0])
        elif kind == "call":
            written.append({"tool_calls": [{"name": rest[0], "arguments": rest[1]}]})
        elif kind == "bad arguments":
            written.append({"tool_calls": [{"name": "get_customer", "arguments": "{not json"}]})
        else:
            written.append("")  # an empty answer: neither a call nor a reply
    return written


async def served(
    harness: Harness, model: ScriptedModel, instance: Any, users: list[str] = USERS, agent: str = "front"
) -> list[str]:
    """The conversation through the endpoint's step, the client running each world call on `instance`
    and sending the world's whole result back, and each hand-off as a conversation of its own with the
    agent it names, sending back that agent's reply; `agent`'s replies."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": users[0]}]
    users, replies = list(users[1:]), []
    while True:
        answer = await next_message(harness, agent, model, messages, now=instance.now())
        if answer.finish_reason == "stop":
            replies.append(answer.content)
            messages.append({"role": "assistant", "content": answer.content})
            if not users:
                return replies
            messages.append({"role": "user", "content": users.pop(0)})
            continue
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in answer.tool_calls
        ]
        messages.append({"role": "assistant", "content": answer.content, "tool_calls": calls})
        for call in answer.tool_calls:
            arguments = json.loads(call.arguments)
            if call.name.startswith(DELEGATE_PREFIX):
                target = call.name.removeprefix(DELEGATE_PREFIX)
                (content,) = await served(harness, model, instance, [arguments["request"]], agent=target)
            else:
                result = instance.call(call.name, **arguments)
                content = json.dumps(result.value) if result.ok else result.for_model()
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def sent(request: ModelRequest) -> dict[str, Any]:
    return {
        "messages": request.messages,
        "tools": request.tools,
        "params": request.params,
        "sample": request.sample,
    }


CASES = [
    pytest.param({}, "auto", id="no-guard"),
    *(pytest.param({guard: True}, "auto", id=guard) for guard in GUARDS),
    pytest.param(dict.fromkeys(GUARDS, True), "first", id="every-guard-and-tool-choice-first"),
]


@pytest.mark.parametrize("protocol", ["text", "native"])
@pytest.mark.parametrize(("guards", "tool_choice"), CASES)
def test_one_conversation_sends_the_same_requests_and_makes_the_same_calls_in_evaluation_and_serving(
    protocol: str, guards: dict[str, bool], tool_choice: str
) -> None:
    desk = harness(protocol, guards, tool_choice)
    evaluated = ScriptedModel(answers(protocol))
    with shop.instance("tiny", seed=1) as instance:
        episode = asyncio.run(run_episode(desk, instance, evaluated, ScriptedUser(USERS[0], USERS[1:])))
    assert episode.stop_reason == "reply"

    serving = ScriptedModel(answers(protocol))
    with shop.instance("tiny", seed=1) as instance:
        replies = asyncio.run(served(desk, serving, instance))
        ran = [(call.tool, call.arguments, call.ok) for call in instance.log]

    assert [sent(r) for r in serving.requests] == [sent(r) for r in evaluated.requests]
    assert ran == [(call.tool, call.arguments, call.ok) for call in episode.calls]
    assert replies == episode.replies
    if protocol == "text" and len(serving.requests) == len(SCRIPT):  # the cut reply was reached
        assert replies[-1] == "You are welcome."


def test_an_answer_with_calls_atoll_answers_and_calls_the_client_runs_reads_back_in_call_order() -> None:
    """One answer asks for a skill (Atoll's), a lookup (the client's) and an unknown tool (Atoll's): the
    next request shows their results in the order asked, as the episode does."""
    both = {"name": "load_skill", "arguments": {"name": "tone"}}
    look = {"name": "get_customer", "arguments": {"customer_id": "C1"}}
    script = [{"tool_calls": [both, look, {"name": "drop_tables", "arguments": {}}]}, "C1 is Customer 1."]
    desk = harness("native", dict.fromkeys(GUARDS, True), "auto")
    evaluated, serving = ScriptedModel(list(script)), ScriptedModel(list(script))
    with shop.instance("tiny", seed=1) as instance:
        asyncio.run(run_episode(desk, instance, evaluated, ScriptedUser(USERS[0])))
    with shop.instance("tiny", seed=1) as instance:
        asyncio.run(served(desk, serving, instance, users=USERS[:1]))

    assert [sent(r) for r in serving.requests] == [sent(r) for r in evaluated.requests]
    shown = [m.get("tool_call_id") for m in serving.requests[1].messages if m["role"] == "tool"][-3:]
    assert shown == ["call_1_0", "call_1_1", "call_1_2"]


def test_each_guard_changes_the_conversation_it_is_tested_on() -> None:
    """The script above meets every guard: turned on, each changes what the model is sent."""
    plain = ScriptedModel(answers("text"))
    with shop.instance("tiny", seed=1) as instance:
        asyncio.run(
            run_episode(harness("text", {}, "auto"), instance, plain, ScriptedUser(USERS[0], USERS[1:]))
        )
    for guard in GUARDS:
        guarded = ScriptedModel(answers("text"))
        with shop.instance("tiny", seed=1) as instance:
            user = ScriptedUser(USERS[0], USERS[1:])
            asyncio.run(run_episode(harness("text", {guard: True}, "auto"), instance, guarded, user))
        assert [r.messages for r in guarded.requests] != [r.messages for r in plain.requests], guard


def test_a_process_that_did_not_give_the_earlier_answers_serves_from_the_clients_messages() -> None:
    """Another worker, or a restarted one, knows only what the client sent: what the guards know is
    rebuilt from it (here, a repeat of a call the client already ran is refused without the model
    ever having seen the refusal's cause in this process)."""
    desk = harness("native", {"repeat_notice": True}, "auto")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_customer", "arguments": '{"customer_id": "C1"}'},
    }
    messages = [
        {"role": "user", "content": "Who is C1?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": json.dumps({"id": "C1", "name": "Customer 1", "credit": 0}),
        },
    ]
    model = ScriptedModel(
        [{"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C1"}}]}, "C1."]
    )

    answer = asyncio.run(next_message(desk, "front", model, messages, now=shop_now()))

    assert answer.content == "C1." and answer.model_calls == 2
    refusal = model.requests[1].messages[-1]["content"]
    assert refusal.startswith('{"error":{"type":"repeat_call","message":"You already called get_customer')


def shop_now() -> Any:
    with shop.instance("tiny", seed=1) as instance:
        return instance.now()


def test_a_conversation_with_a_hand_off_sends_the_same_requests_in_evaluation_and_serving() -> None:
    """The front desk hands a lookup to a back office, which calls a world tool and answers; the front
    reads that answer and replies. Served, the client runs the hand-off as a conversation with the back
    office and sends its reply back: every request, world call and reply is the evaluation's."""
    config = {
        "name": "desk",
        "world": "shop",
        "protocols": {"*": "native"},
        "entry": "front",
        "agents": {
            "front": {"prompt": "prompts/front.md.j2", "delegates": ["back"], "tool_choice": "first"},
            "back": {
                "prompt": "prompts/back.md.j2",
                "description": "Looks customers up.",
                "guards": {"grounded_args": True, "repeat_notice": True},
            },
        },
    }
    files = {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump({"front": [], "back": {"get_customer": {"fields": ["id", "name"]}}}),
        "prompts/front.md.j2": "You answer shop customers.\n{{ tools }}\n",
        "prompts/back.md.j2": "You look customers up.\n{{ tools }}\n",
    }
    desk = Harness.from_files(files, source="desk", world=shop)
    hand_off = {"name": "delegate_to_back", "arguments": {"request": "Who is customer C1?"}}
    script = [
        {"tool_calls": [hand_off]},
        {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C9999"}}]},  # made up
        {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C1"}}]},
        "C1 is Customer 1.",
        "Customer C1 is Customer 1.",
    ]
    evaluated, serving = ScriptedModel(list(script)), ScriptedModel(list(script))
    with shop.instance("tiny", seed=1) as instance:
        episode = asyncio.run(run_episode(desk, instance, evaluated, ScriptedUser("Who is C1?")))
    with shop.instance("tiny", seed=1) as instance:
        replies = asyncio.run(served(desk, serving, instance, users=["Who is C1?"]))
        ran = [(call.tool, call.arguments, call.ok) for call in instance.log]

    assert [sent(r) for r in serving.requests] == [sent(r) for r in evaluated.requests]
    assert (
        ran
        == [(call.tool, call.arguments, call.ok) for call in episode.calls]
        == [("get_customer", {"customer_id": "C1"}, True)]
    )
    assert replies == episode.replies == ["Customer C1 is Customer 1."]
    front_reads = evaluated.requests[-1].messages[-1]["content"]
    assert front_reads == '{"answer":"C1 is Customer 1."}'
    refused = evaluated.requests[2].messages[-1]["content"]
    assert '"type":"ungrounded_argument"' in refused and "9999" not in refused
