"""The agent loop on the two-table shop world, driven by scripted models in both protocols."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from atoll.harnesses import Episode, Harness, Limits, ScriptedUser, UserSide, run_episode
from atoll.harnesses._protocols import without_repeats
from atoll.harnesses.models import ModelUnavailable, ScriptedModel
from atoll.views.episode import render_episode

HARNESS_YAML = """\
name: toy
world: shop
protocols: {{"*": {protocol}}}
params: {{temperature: 0.0, max_tokens: 64}}
limits: {{turns: 10, tool_calls: 10, observation_chars: 400}}
entry: front
agents:
  front:
    prompt: prompts/front.md.j2
    delegates: [orders]
    demos: [lookup]
    skills: [tone]
    skill_tool: true
  orders:
    description: Places and updates orders.
    prompt: prompts/orders.md.j2
    params: {{max_tokens: 32}}
    stop_tools: [delete_order]
"""
FILES = {
    "tools.yaml": """\
front:
  get_customer:
    description: Find a customer by id (harness wording).
    parameters: {customer_id: Like C1 (harness wording).}
  credit_then_fail: {}
  sql_today: {}
orders: [place_order, set_status, delete_order]
""",
    "prompts/front.md.j2": "You help shop customers ({{ documents.policy }}).\n{{ tools }}\n\n{{ demos }}\n",
    "prompts/orders.md.j2": "You place orders{% if task %} for task {{ task.ref }}{% endif %}.\n{{ tools }}\n",
    "skills/tone.md": "# Tone\nBe brief.\n",
    "demos/lookup.yaml": """\
steps:
  - user: Who is C1?
  - call: get_customer
    args: {customer_id: C1}
    result: {id: C1, name: Customer 1}
  - reply: C1 is Customer 1.
""",
}


def toy(protocol: str = "text") -> Harness:
    return Harness.from_files({"harness.yaml": HARNESS_YAML.format(protocol=protocol), **FILES}, world=shop)


def act(tool: str, **args: object) -> str:
    """What a base model writes after `Action:` in the text protocol."""
    return " " + json.dumps({"tool": tool, "args": args})


def say(message: str) -> str:
    return act("reply", message=message)


def call(tool: str, **args: object) -> dict:
    """A native tool-calling answer."""
    return {"tool_calls": [{"name": tool, "arguments": args}]}


async def episode(harness: Harness, model: ScriptedModel, user: UserSide | str, **options) -> Episode:
    with shop.instance("tiny", seed=1) as instance:
        return await run_episode(harness, instance, model, user, **options)


def rendered(ep: Episode) -> str:
    console = Console(record=True, width=140)
    console.print(render_episode(ep))
    return console.export_text()


async def test_a_delegated_multi_turn_conversation_changes_the_world_as_scripted() -> None:
    model = ScriptedModel(
        [
            act("get_customer", customer_id="C2"),
            act("delegate_to_orders", request="Place an order of 12.50 for C2"),
            act("place_order", customer_id="C2", total=12.5),
            say("Placed order 6."),
            say("Your order 6 is placed."),
            act("delegate_to_orders", request="Mark order 6 as shipped"),
            act("set_status", order_id=6, status="shipped"),
            say("Order 6 is shipped."),
            say("Order 6 is on its way."),
        ]
    )
    user = ScriptedUser("Please order 12.50 for C2", replies=["Great, ship it please"])
    ep = await episode(toy(), model, user, task_id="t1", sample=3)
    assert ep.stop_reason == "reply" and not ep.errored
    assert ep.replies == ["Your order 6 is placed.", "Order 6 is on its way."]
    orders = ep.diff.table("orders")
    assert [(r["id"], r["customer_id"], r["total"], r["status"]) for r in orders.inserted] == [
        (6, "C2", 12.5, "shipped")
    ]
    assert ep.diff.summary() == {"orders": {"inserted": 1, "updated": 0, "deleted": 0}}
    assert [c.tool for c in ep.calls] == ["get_customer", "place_order", "set_status"]
    kinds = [(e.kind, e.agent) for e in ep.events]
    assert kinds[:8] == [
        ("user", "front"),
        ("tool_call", "front"),
        ("tool_result", "front"),
        ("delegate", "front"),
        ("tool_call", "orders"),
        ("tool_result", "orders"),
        ("return", "orders"),
        ("assistant", "front"),
    ]
    assert ep.usage.model_calls == 9 and ep.usage.prompt_tokens > 0
    assert {r.sample for r in model.requests} == {3}
    assert ep.task_id == "t1" and ep.fixture == "tiny" and ep.seed == 1
    # The sub-agent's answer came back to the caller as the tool's result.
    assert 'Observation: {"answer":"Placed order 6."}' in model.requests[4].messages[1]["content"]
    assert Episode.model_validate_json(ep.model_dump_json()) == ep


async def test_the_native_protocol_runs_the_same_conversation_with_tool_calls() -> None:
    model = ScriptedModel(
        [
            {"content": "Let me hand this over.", **call("delegate_to_orders", request="Order 12.50 for C2")},
            call("place_order", customer_id="C2", total=12.5),
            "Placed order 6.",
            "Your order 6 is placed.",
        ]
    )
    ep = await episode(toy("native"), model, "Please order 12.50 for C2")
    assert ep.stop_reason == "reply"
    assert ep.reply == "Your order 6 is placed."
    assert ep.diff.summary() == {"orders": {"inserted": 1, "updated": 0, "deleted": 0}}
    assert [e.kind for e in ep.events][:3] == ["user", "thought", "delegate"]
    last = model.requests[3].messages
    assert last[-2]["tool_calls"][0]["function"]["name"] == "delegate_to_orders"
    assert last[-1] == {
        "role": "tool",
        "tool_call_id": last[-2]["tool_calls"][0]["id"],
        "content": '{"answer":"Placed order 6."}',
    }


async def test_the_model_reads_the_harness_wording_of_a_tool_in_both_protocols() -> None:
    native = ScriptedModel(["hi"])
    await episode(toy("native"), native, "hello")
    schema = next(t for t in native.requests[0].tools if t["function"]["name"] == "get_customer")["function"]
    assert schema["description"] == "Find a customer by id (harness wording)."
    assert schema["parameters"]["properties"]["customer_id"]["description"] == "Like C1 (harness wording)."
    text = ScriptedModel([say("hi")])
    await episode(toy(), text, "hello")
    prompt = text.requests[0].messages[0]["content"]
    assert (
        "- get_customer(customer_id): Find a customer by id (harness wording). customer_id: Like C1" in prompt
    )
    assert text.requests[0].tools is None


async def test_the_text_prompt_shows_demos_in_the_live_format_and_ends_with_the_action_prefix() -> None:
    model = ScriptedModel([say("hi")])
    await episode(toy(), model, "hello")
    system, conversation = (m["content"] for m in model.requests[0].messages)
    assert (
        'Action: {"tool": "get_customer", "args": {"customer_id": "C1"}}\nObservation: {"id":"C1"' in system
    )
    assert 'Action: {"tool": "reply", "args": {"message": "C1 is Customer 1."}}' in system
    assert conversation == "User: hello\nAction:"
    assert model.requests[0].params.stop == ["\n"]
    assert model.requests[0].params.max_tokens == 64


async def test_malformed_text_actions_become_observations_the_agent_recovers_from() -> None:
    model = ScriptedModel(
        [
            " I think I should look",
            ' {"tool": "get_customer", "args": {"customer_id": ',
            act("get_customer"),
            say("ok"),
        ]
    )
    ep = await episode(toy(), model, "Who is C3?")
    assert ep.stop_reason == "reply" and ep.reply == "ok"
    errors = [e for e in ep.events if e.kind == "error"]
    assert [e.error["type"] for e in errors] == ["malformed_action", "malformed_action"]
    assert errors[0].content == "I think I should look"
    transcript = model.requests[3].messages[1]["content"]
    assert 'Action: I think I should look\nObservation: {"error":{"type":"malformed_action"' in transcript
    assert '"type":"invalid_arguments","message":"customer_id: Field required"' in transcript


async def test_a_reply_cut_before_its_message_closed_is_the_reply_it_began_without_its_loop() -> None:
    """A small model falls into a loop of one sentence until max_tokens cuts the JSON: asked again, it
    loops again. What it said before the loop is its reply, and the transcript keeps what it wrote."""
    looping = " I'm sorry, I can't ship it there. I'll check with the team. I'll check with the team. I'll ch"
    model = ScriptedModel([' {"tool": "reply", "args": {"message": "' + looping.strip()])

    ep = await episode(toy(), model, "Can you ship ORD-1 to my aunt?")

    assert ep.stop_reason == "reply" and len(model.requests) == 1
    assert ep.reply == "I'm sorry, I can't ship it there. I'll check with the team."
    (notice,) = [e.content for e in ep.events if e.kind == "notice"]
    assert notice.startswith("a reply cut before its message closed") and "I'll ch" in notice
    assert ep.patterns["malformed_action"] == 0


@pytest.mark.parametrize(
    "written",
    [
        ' {"tool": "get_customer", "args": {"customer_id": "C',  # a cut call is no reply
        ' {"tool": "reply", "args": {"message": "',  # nor is an empty message
        ' {"tool": "reply", "args": {"text": "Hi',  # nor one in another field
    ],
)
async def test_only_a_reply_with_a_message_is_read_from_a_cut_action(written: str) -> None:
    model = ScriptedModel([written, say("ok")])
    ep = await episode(toy(), model, "Who is C1?")
    assert ep.reply == "ok" and ep.patterns["malformed_action"] == 1


@given(
    sentences=st.lists(
        st.text(alphabet="abc xyz,'", min_size=1, max_size=12).map(lambda s: s.strip().capitalize() + "."),
        min_size=1,
        max_size=5,
        unique_by=lambda s: " ".join(s.split()).casefold(),
    ).filter(lambda ss: all(len(s) > 1 for s in ss)),
    repeats=st.integers(1, 3),
    cut=st.integers(0, 8),
)
def test_without_repeats_keeps_what_was_said_before_the_loop(sentences: list[str], repeats: int, cut: int):
    looped = " ".join(sentences + sentences[:1] * repeats)
    assert without_repeats(looped + " " + sentences[0][:cut]) == " ".join(sentences)


async def test_tool_choice_first_asks_for_calls_until_one_succeeds_then_lets_the_model_choose() -> None:
    harness = Harness.from_files(
        {
            "harness.yaml": HARNESS_YAML.format(protocol="native").replace(
                "    skill_tool: true\n", "    skill_tool: true\n    tool_choice: first\n"
            ),
            **FILES,
        },
        world=shop,
    )
    model = ScriptedModel(
        [call("get_customer", customer_id="C404"), call("get_customer", customer_id="C1"), "done"]
    )

    ep = await episode(harness, model, "Who is C1?")

    assert ep.reply == "done"
    asked = [request.params.tool_choice for request in model.requests]
    assert asked == ["required", "required", None]  # C404 failed: still required; C1 succeeded: free


async def test_without_tool_choice_requests_are_what_they_always_were() -> None:
    model = ScriptedModel(["hi"])

    await episode(toy("native"), model, "hello")

    assert model.requests[0].params.tool_choice is None


async def test_an_answer_that_repeats_a_failure_is_not_shown_again_and_the_next_is_sampled_afresh() -> None:
    broken = ' {"tool": "get_customer", "args": {"customer_id": "C'  # cut at max_tokens
    model = ScriptedModel([broken, broken, broken, say("Your order shipped.")])

    ep = await episode(toy(), model, "Where is my order?")

    assert ep.stop_reason == "reply" and ep.reply == "Your order shipped."
    first, second, third, fourth = model.requests
    assert second.messages == third.messages == fourth.messages  # the repeats were never fed back
    assert (first.params.temperature, second.params.temperature) == (0.0, 0.0)
    assert (third.params.temperature, fourth.params.temperature) == (0.7, 1.0)  # sampled afresh, warmer...
    assert len({second.sample, third.sample, fourth.sample}) == 3  # ...each with a seed of its own
    notices = [e.content for e in ep.events if e.kind == "notice"]
    assert len(notices) == 2 and all("repeated one that already failed" in n for n in notices)


async def test_a_call_that_failed_twice_is_not_run_a_third_time_and_the_next_answer_is_sampled_afresh() -> (
    None
):
    missing = call("get_customer", customer_id="C404")
    model = ScriptedModel([missing, missing, missing, "Sorry, no customer C404."])

    ep = await episode(toy("native"), model, "Who is C404?")

    assert ep.reply == "Sorry, no customer C404."
    assert len([e for e in ep.events if e.kind == "tool_call"]) == 2  # the third ask never ran
    third, fourth = model.requests[2:]
    assert third.messages == fourth.messages  # ...nor was it shown
    assert (third.params.temperature, fourth.params.temperature) == (0.0, 0.7)
    notices = [e.content for e in ep.events if e.kind == "notice"]
    assert len(notices) == 1 and "get_customer" in notices[0]


async def test_null_arguments_the_tool_does_not_take_are_dropped_not_refused() -> None:
    model = ScriptedModel(
        [call("get_customer", customer_id="C1", amount=None, reason=None), "C1 is Customer 1."]
    )

    ep = await episode(toy("native"), model, "Who is C1?")

    (result,) = [e for e in ep.events if e.kind == "tool_result"]
    assert result.ok and [c.arguments for c in ep.calls] == [{"customer_id": "C1"}]


async def test_unknown_tools_and_bad_arguments_are_errors_the_agent_sees_not_crashes() -> None:
    model = ScriptedModel(
        [
            call("drop_database"),
            call("place_order", customer_id="C1", total=3),  # front cannot place orders
            {"tool_calls": [{"name": "get_customer", "arguments": "{not json"}]},
            call("get_customer", customer_id=7),
            "Sorry, I could not look that up.",
        ]
    )
    ep = await episode(toy("native"), model, "Who is C1?")
    results = [e for e in ep.events if e.kind == "tool_result"]
    assert [r.error["type"] for r in results] == [
        "unknown_tool",
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
    ]
    assert (
        "Your tools: get_customer, credit_then_fail, sql_today, delegate_to_orders, load_skill"
        in results[0].error["message"]
    )
    assert ep.stop_reason == "reply" and ep.diff.is_empty
    assert [c.tool for c in ep.calls] == ["get_customer"], (
        "only the well-formed call of a known tool reached the world"
    )


async def test_a_tool_crashing_inside_the_world_is_shown_to_the_agent_and_errors_the_episode() -> None:
    model = ScriptedModel(
        [act("credit_then_fail", customer_id="C1", amount=5), say("Something broke, sorry.")]
    )
    ep = await episode(toy(), model, "Give C1 five dollars")
    assert ep.stop_reason == "world_bug"
    assert ep.errored and "bug after a write" in ep.error
    assert ep.diff.is_empty, "the crashed call was rolled back"
    assert ep.reply == "Something broke, sorry."
    assert '"type":"world_bug"' in model.requests[1].messages[1]["content"]
    assert any(e.kind == "error" and e.error["type"] == "world_bug" for e in ep.events)


async def test_an_unreachable_model_gives_an_errored_episode_not_an_exception() -> None:
    model = ScriptedModel(
        [act("get_customer", customer_id="C1"), ModelUnavailable("rate limited after 5 attempts")]
    )
    ep = await episode(toy(), model, "Who is C1?")
    assert ep.stop_reason == "model_error"
    assert "rate limited" in ep.error
    assert [c.tool for c in ep.calls] == ["get_customer"]
    assert ep.events[-1].kind == "error"


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        (Limits(turns=3), "turn_limit"),
        (Limits(tool_calls=2), "tool_limit"),
        (Limits(tokens=200), "token_limit"),
    ],
)
async def test_an_agent_that_never_answers_is_cut_off_by_its_limits(limits: Limits, reason: str) -> None:
    model = ScriptedModel(fn=lambda request: act("get_customer", customer_id="C1"))
    ep = await episode(toy(), model, "Who is C1?", limits=limits)
    assert ep.stop_reason == reason and not ep.errored
    assert ep.usage.model_calls <= 4


async def test_a_stop_tool_ends_its_agents_run_and_the_entry_agents_ends_the_episode() -> None:
    model = ScriptedModel(
        [
            act("delegate_to_orders", request="delete order 2"),
            act("delete_order", order_id=2),
            act("sql_today"),
        ]
    )
    front_stops = HARNESS_YAML.replace(
        "    skill_tool: true\n", "    skill_tool: true\n    stop_tools: [sql_today]\n"
    )
    harness = Harness.from_files({"harness.yaml": front_stops.format(protocol="text"), **FILES}, world=shop)
    ep = await episode(harness, model, "Delete my order 2")
    assert ep.stop_reason == "stop_tool"
    assert ep.diff.summary() == {"orders": {"inserted": 0, "updated": 0, "deleted": 1}}
    assert [e.kind for e in ep.events][-3:] == ["return", "tool_call", "tool_result"]
    assert 'Observation: {"answer":"{\\"ok\\":true}"}' in model.requests[2].messages[1]["content"]


async def test_skills_load_through_the_skill_tool_and_task_context_reaches_prompts() -> None:
    model = ScriptedModel(
        [
            act("load_skill", name="tone"),
            act("delegate_to_orders", request="nothing"),
            say("none"),
            say("done"),
        ]
    )
    ep = await episode(toy(), model, "hi", task_context={"ref": "T-9"})
    skill = next(e for e in ep.events if e.kind == "tool_result")
    assert skill.result == {"skill": "tone", "text": "# Tone\nBe brief.\n"}
    assert model.requests[2].messages[0]["content"].startswith("You place orders for task T-9.")
    assert model.requests[2].params.max_tokens == 32, "the agent's own params override the harness's"


async def test_long_tool_results_are_cut_before_the_model_reads_them() -> None:
    model = ScriptedModel([act("drop_database"), say("ok")])
    ep = await episode(toy(), model, "x", limits=Limits(observation_chars=100))
    assert len(ep.events[2].error["message"]) > 100, "the episode keeps the whole result"
    observation = model.requests[1].messages[1]["content"].splitlines()[-2]
    assert observation.startswith("Observation: ") and observation.endswith(" …(truncated)")
    assert len(observation) == len("Observation: ") + 100 + len(" …(truncated)")


async def test_an_agent_with_its_own_model_is_answered_by_it() -> None:
    files = {
        "harness.yaml": HARNESS_YAML.format(protocol="text")
        .replace("    params: {max_tokens: 32}", "    model: helper/m")
        .replace('protocols: {"*": text}', 'protocols: {"helper/*": native, "*": text}'),
        **FILES,
    }
    harness = Harness.from_files(files, world=shop)
    main = ScriptedModel([act("delegate_to_orders", request="nothing"), say("done")])
    helper = ScriptedModel(["the helper answers in native style"], name="helper/m")
    ep = await episode(harness, main, "hi", models={"helper/m": helper})
    assert len(helper.requests) == 1 and helper.requests[0].tools is not None, (
        "a chat model name picks native"
    )
    assert ep.events[-2].content == "the helper answers in native style"


async def test_the_scripted_user_satisfies_the_user_side_protocol() -> None:
    user = ScriptedUser("hi", replies=["more"])
    assert isinstance(user, UserSide)
    assert await user.respond([]) == "more"
    assert await user.respond([]) is None


async def test_an_episode_renders_its_conversation_calls_errors_and_diff() -> None:
    model = ScriptedModel(
        [
            "not an action",
            act("delegate_to_orders", request="Order 12.50 for C2"),
            act("place_order", customer_id="C2", total=12.5),
            say("Placed order 6."),
            say("Done: order 6."),
        ]
    )
    text = rendered(await episode(toy(), model, "Please order 12.50 for C2"))
    for expected in [
        "User: Please order 12.50 for C2",
        "! malformed_action (front)",
        "⇢ front asks orders: Order 12.50 for C2",
        '    → place_order(customer_id="C2", total=12.5)',
        "⇠ orders answers: Placed order 6.",
        "Agent (front): Done: order 6.",
        "World diff",
        "│ + │ orders",
        "stopped: reply",
    ]:
        assert expected in text, f"{expected!r} missing from:\n{text}"


async def test_an_errored_episode_says_why_when_rendered() -> None:
    model = ScriptedModel([act("credit_then_fail", customer_id="C1", amount=5), ModelUnavailable("down")])
    text = rendered(await episode(toy(), model, "x"))
    assert "✗ world_bug" in text
    assert "episode errored (model_error)" in text
