"""Harness settings for small models: retrieved demos, rules, guards, and the failure patterns they address."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import bm25s
import pytest
import yaml
from rich.console import Console

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from atoll.harnesses import PATTERNS, Episode, Harness, HarnessError, run_episode
from atoll.harnesses._retrieval import DemoIndex, demo_words
from atoll.harnesses.models import ScriptedModel
from atoll.views.episode import render_episode


def demo(title: str, user: str, tool: str, args: dict[str, Any], reply: str) -> str:
    steps = [{"user": user}, {"call": tool, "args": args, "result": {"ok": True}}, {"reply": reply}]
    return yaml.safe_dump({"title": title, "steps": steps})


DEMOS = {
    "demos/lookup.yaml": demo(
        "Look up a customer", "Who is customer C1?", "get_customer", {"customer_id": "C1"}, "C1."
    ),
    "demos/order.yaml": demo(
        "Place an order", "Order 20 dollars of goods for C2", "place_order", {}, "Done."
    ),
    "demos/ship.yaml": demo(
        "Ship an order", "Mark order 3 as shipped", "set_status", {"order_id": 3}, "Shipped."
    ),
    "demos/cancel.yaml": demo(
        "Delete an order", "Cancel my order 4 please", "delete_order", {"order_id": 4}, "Gone."
    ),
}
FRONT_TOOLS = ["get_customer", "place_order", "set_status", "delete_order"]


def files(protocol: str = "text", turns: int = 8, tools: Any = None, **front: Any) -> dict[str, str]:
    config = {
        "name": "levers",
        "world": "shop",
        "protocols": {"*": protocol},
        "limits": {"turns": turns, "tool_calls": 10},
        "entry": "front",
        "agents": {"front": {"prompt": "prompts/front.md.j2", "demos": ["lookup"], **front}},
    }
    return {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump(tools or {"front": FRONT_TOOLS}),
        "prompts/front.md.j2": "You help shop customers.\n{{ tools }}\n\n{{ demos }}\n",
        **DEMOS,
    }


def levers(protocol: str = "text", turns: int = 8, tools: Any = None, **front: Any) -> Harness:
    return Harness.from_files(files(protocol, turns, tools, **front), world=shop)


def load_error(harness_files: dict[str, str]) -> str:
    with pytest.raises(HarnessError) as raised:
        Harness.from_files(harness_files, source="harnesses/levers", world=shop)
    return str(raised.value)


def act(tool: str, **args: object) -> str:
    return " " + json.dumps({"tool": tool, "args": args})


def say(message: str) -> str:
    return act("reply", message=message)


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": args}]}


def lookup_and_reply(protocol: str, reply: str) -> tuple[str | dict, str]:
    """A get_customer call and a reply, each as a scripted model answers in `protocol`."""
    if protocol == "text":
        return act("get_customer", customer_id="C1"), say(reply)
    return call("get_customer", customer_id="C1"), reply


async def episode(harness: Harness, model: ScriptedModel, message: str, **options: Any) -> Episode:
    with shop.instance("tiny", seed=1) as instance:
        return await run_episode(harness, instance, model, message, **options)


def titles(request: Any, harness: Harness) -> list[str]:
    """The demos a native-protocol request shows, by title, in order: each is an earlier conversation
    between the prompt and the live one, known by its opening user message."""
    by_opening = {demo.steps[0].user: demo.title for demo in harness.demos.values()}
    users = [m["content"] for m in request.messages if m["role"] == "user"][:-1]  # the last one is live
    return [by_opening[text] for text in users if text in by_opening]


def shown(ep: Episode) -> str:
    console = Console(record=True, width=200)
    console.print(render_episode(ep))
    return console.export_text()


def errors(ep: Episode) -> list[str]:
    return [e.error["type"] for e in ep.events if e.kind == "tool_result" and not e.ok]


# -- retrieved demos ------------------------------------------------------------------------------


async def test_retrieved_demos_follow_the_fixed_ones_with_the_most_similar_last() -> None:
    harness = levers("native", demo_pool=["order", "ship", "cancel"], retrieve_demos=2)
    model = ScriptedModel(["ok"])
    await episode(harness, model, "Could you mark order 5 as shipped?")
    assert titles(model.requests[0], harness) == ["Look up a customer", "Delete an order", "Ship an order"]


async def test_a_demo_is_found_by_the_tools_it_calls_as_well_as_its_words() -> None:
    index = DemoIndex({n: levers().demos[n] for n in ("order", "ship", "cancel")})
    assert demo_words(levers().demos["ship"])[-2:] == ["set", "status"]
    assert index.closest("please set the status", 1) == ["ship"]
    assert index.closest("delete it", 1) == ["cancel"]


def test_ties_and_wordless_queries_are_ranked_by_name_so_retrieval_is_deterministic() -> None:
    same = levers().demos["order"]
    index = DemoIndex({"b": same, "c": same, "a": same})
    assert index.closest("order goods", 3) == ["c", "b", "a"], "equal scores: by name, the first name last"
    assert index.closest("?!", 2) == ["b", "a"]
    assert DemoIndex({}).closest("anything", 2) == []


async def test_each_task_in_a_batch_gets_the_demos_of_its_own_opening_message() -> None:
    # The prompt memo is keyed by task context; two tasks with the same (empty) context must not share demos.
    harness = levers("native", demo_pool=["order", "ship", "cancel"], retrieve_demos=1)
    model = ScriptedModel(["ok", "ok", "ok"])
    await episode(harness, model, "Please cancel my order 4")
    await episode(harness, model, "Mark order 5 as shipped")
    await episode(harness, model, "Cancel order 2")
    shown = [titles(request, harness) for request in model.requests]
    assert [s[-1] for s in shown] == ["Delete an order", "Ship an order", "Delete an order"]


async def test_retrieved_demos_come_after_a_prompt_that_is_the_same_for_every_task() -> None:
    # A local model reads a prompt it has already read for free: retrieval must not change it per task.
    for protocol in ("native", "text"):
        harness = levers(protocol, demo_pool=["order", "ship", "cancel"], retrieve_demos=1)
        model = ScriptedModel(["ok", "ok"] if protocol == "native" else [say("ok"), say("ok")])
        await episode(harness, model, "Please cancel my order 4")
        await episode(harness, model, "Mark order 5 as shipped")
        first, second = (request.messages for request in model.requests)
        assert first[0] == second[0], protocol
        if protocol == "text":
            assert first[1]["role"] == second[1]["role"] == "system"
        assert first[1:-1] != second[1:-1], "each task still gets its own closest demo"


async def test_the_index_is_built_once_per_harness_not_per_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    built = []
    original = bm25s.BM25.index
    monkeypatch.setattr(bm25s.BM25, "index", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    harness = levers(demo_pool=["order", "ship", "cancel"], retrieve_demos=1)
    for message in ("Cancel order 1", "Ship order 2", "Order goods"):
        await episode(harness, ScriptedModel([say("ok")]), message)
    assert len(built) == 1


async def test_a_sub_agent_retrieves_for_the_request_delegated_to_it() -> None:
    harness_files = files(demos=[], delegates=["clerk"])
    config = yaml.safe_load(harness_files["harness.yaml"])
    config["agents"]["clerk"] = {
        "prompt": "prompts/front.md.j2",
        "description": "Changes orders.",
        "demo_pool": ["ship", "cancel"],
        "retrieve_demos": 1,
    }
    harness_files["harness.yaml"] = yaml.safe_dump(config)
    harness_files["tools.yaml"] = yaml.safe_dump({"front": ["get_customer"], "clerk": FRONT_TOOLS})
    model = ScriptedModel([act("delegate_to_clerk", request="Delete order 4"), say("Deleted."), say("Done.")])
    await episode(
        Harness.from_files(harness_files, world=shop), model, "Mark order 4 as shipped, no wait, drop it"
    )
    clerk_prompt = "\n".join(m["content"] for m in model.requests[1].messages[:2])
    assert '"delete_order"' in clerk_prompt and '"set_status"' not in clerk_prompt


async def test_a_pool_without_retrieval_leaves_the_prompt_exactly_as_before() -> None:
    plain, pooled = ScriptedModel([say("ok")]), ScriptedModel([say("ok")])
    await episode(levers(), plain, "Ship order 2")
    await episode(levers(demo_pool=["order", "ship"], guards={}, rules=[]), pooled, "Ship order 2")
    assert plain.requests[0].messages == pooled.requests[0].messages


def test_pool_names_duplicates_and_k_are_checked_at_load_naming_the_field() -> None:
    error = load_error(files(demo_pool=["ship", "nope", "ship"], retrieve_demos=3))
    assert "harnesses/levers/harness.yaml: agents.front.demo_pool[1]: no demo 'nope'" in error
    assert "agents.front.demo_pool[2]: 'ship' is listed twice" in error
    assert "agents.front.retrieve_demos: 3 is more than the 2 demo_pool demos not already in demos" in error
    assert "agents.front.retrieve_demos: Input should be greater than or equal to 0" in load_error(
        files(demo_pool=["ship"], retrieve_demos=-1)
    )


def test_a_pool_demo_calling_a_tool_the_agent_lacks_is_named() -> None:
    error = load_error(files(tools={"front": ["get_customer"]}, demo_pool=["ship"], retrieve_demos=1))
    assert (
        "harnesses/levers/demos/ship.yaml: steps[1].call: agent 'front' (which shows this demo) has no tool"
        in error
    )


# -- rules ----------------------------------------------------------------------------------------


async def test_rules_are_appended_to_the_system_prompt_under_a_heading() -> None:
    model = ScriptedModel([say("ok")])
    await episode(levers(rules=["Look the order up first.", "  Be brief. "]), model, "hi")
    system = model.requests[0].messages[0]["content"]
    assert system.index("Rules:") > system.index("Example 1"), "after the demos, before the conversation"
    assert system.endswith("Rules:\n- Look the order up first.\n- Be brief.\n\nConversation")


def test_a_rule_is_one_non_empty_line() -> None:
    error = load_error(files(rules=["ok", "two\nlines", " "]))
    assert "agents.front.rules[1]: a rule is one non-empty line of text" in error
    assert "agents.front.rules[2]: a rule is one non-empty line of text" in error
    assert "rules[0]" not in error


# -- guards ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("guarded", [True, False])
async def test_an_identical_successful_call_is_not_run_again_and_the_agent_is_told(guarded: bool) -> None:
    harness = levers(guards={"repeat_notice": guarded})
    model = ScriptedModel(
        [
            act("get_customer", customer_id="C1"),
            act("get_customer", customer_id="C1"),
            say("C1 is Customer 1."),
        ]
    )
    ep = await episode(harness, model, "Who is C1?")
    assert ep.patterns["repeat_call"] == 1, "counted whether or not the guard stopped it"
    assert len(ep.calls) == (1 if guarded else 2)
    transcript = model.requests[2].messages[1]["content"]
    if guarded:
        assert errors(ep) == ["repeat_call"]
        assert transcript.endswith(
            'Observation: {"error":{"type":"repeat_call","message":"You already called get_customer with these '
            'arguments; its result is below. Do not call it again: use that result, or reply.","details":'
            '{"result":{"id":"C1","name":"Customer 1","credit":0.0}}}}\nAction:'
        )
    else:
        assert errors(ep) == [] and "repeat_call" not in transcript


async def test_a_failed_call_retried_at_once_is_not_run_again_until_something_succeeds() -> None:
    tools = {"front": {"get_customer": {}, "delete_order": {"requires": ["get_customer"]}}}
    harness = levers(tools=tools, demos=[], guards={"repeat_notice": True, "preconditions": True})
    model = ScriptedModel(
        [
            act("delete_order", order_id=1),
            act("delete_order", order_id=1),  # the same refusal again: not run, the agent is told
            act("get_customer", customer_id="C2"),
            act("delete_order", order_id=1),  # its precondition is met now: it runs
            say("Deleted."),
        ]
    )
    ep = await episode(harness, model, "Delete order 1")
    assert errors(ep) == ["precondition_refused", "repeat_call"]
    assert [c.tool for c in ep.calls] == ["get_customer", "delete_order"]
    assert ep.patterns["repeat_call"] == 1
    notice = [e for e in ep.events if e.kind == "tool_result" and not e.ok][1].error
    assert notice["message"].startswith("You already called delete_order with these arguments and it failed")
    assert notice["details"]["error"]["type"] == "precondition_refused"


async def test_a_read_after_a_write_is_no_repeat_since_the_world_changed() -> None:
    harness = levers(guards={"repeat_notice": True})
    model = ScriptedModel(
        [
            act("set_status", order_id=1, status="shipped"),
            act("get_customer", customer_id="C2"),
            act("set_status", order_id=2, status="shipped"),
            act("get_customer", customer_id="C2"),
            act("get_customer", customer_id="C3"),
            act("get_customer", customer_id="C3"),
            say("done"),
        ]
    )
    ep = await episode(harness, model, "Ship orders 1 and 2")
    assert [c.tool for c in ep.calls] == [
        "set_status",
        "get_customer",
        "set_status",
        "get_customer",
        "get_customer",
    ]
    assert errors(ep) == ["repeat_call"] and ep.patterns["repeat_call"] == 1


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_a_reply_before_any_lookup_is_held_back_once_with_look_first(protocol: str) -> None:
    lookup, done = lookup_and_reply(protocol, "C1 is Customer 1.")
    guess = say("C1 is Ada.") if protocol == "text" else "C1 is Ada."
    model = ScriptedModel([guess, lookup, done])
    ep = await episode(levers(protocol, guards={"look_first": True}), model, "Who is C1?")
    assert ep.reply == "C1 is Customer 1." and [c.tool for c in ep.calls] == ["get_customer"]
    assert "Ada" not in json.dumps(model.requests[1].messages), "the unfounded answer is not shown again"
    notices = [e.content for e in ep.events if e.kind == "notice"]
    assert len(notices) == 1 and "(held back: C1 is Ada.)" in notices[0]
    assert ep.patterns["unlooked_reply"] == 0

    # Off, the guess is the reply, and the pattern says so; on, a second unfounded reply stands.
    ep = await episode(levers(protocol), ScriptedModel([guess]), "Who is C1?")
    assert ep.reply == "C1 is Ada." and ep.patterns["unlooked_reply"] == 1
    ep = await episode(
        levers(protocol, guards={"look_first": True}), ScriptedModel([guess, guess]), "Who is C1?"
    )
    assert ep.reply == "C1 is Ada." and ep.patterns["unlooked_reply"] == 1


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_a_call_quoting_digits_nobody_gave_is_refused_with_grounded_args(protocol: str) -> None:
    # A small model fills an id it was not given: with the guard the world never sees it, the agent is
    # told to ask (without the value, which would ground it), and the pattern counts it either way.
    made_up, lookup = (
        (act("get_customer", customer_id="C4821"), act("get_customer", customer_id="C1"))
        if protocol == "text"
        else (call("get_customer", customer_id="C4821"), call("get_customer", customer_id="C1"))
    )
    done = say("C1 is Customer 1.") if protocol == "text" else "C1 is Customer 1."
    model = ScriptedModel([made_up, lookup, done])
    ep = await episode(levers(protocol, guards={"grounded_args": True}), model, "Who is C1?")
    assert [c.tool for c in ep.calls] == ["get_customer"] and ep.calls[0].arguments == {"customer_id": "C1"}
    assert errors(ep) == ["ungrounded_argument"] and ep.patterns["ungrounded_argument"] == 1
    sent = model.requests[1].messages[-1]["content"]
    refusal = sent[sent.index('"ungrounded_argument"') :]
    assert "Nobody gave you customer_id. Call get_customer again without it" in refusal
    assert "4821" not in refusal
    assert ep.reply == "C1 is Customer 1."

    ep = await episode(levers(protocol), ScriptedModel([made_up, done]), "Who is C1?")
    assert errors(ep) == ["not_found"] and ep.patterns["ungrounded_argument"] == 1  # off: it runs


async def test_grounded_args_runs_digits_the_user_a_result_or_the_task_context_gave() -> None:
    guarded = levers(guards={"grounded_args": True})
    said = ScriptedModel([act("get_customer", customer_id="C4821"), say("No such customer.")])
    ep = await episode(guarded, said, "Who is customer C4821?")
    assert errors(ep) == ["not_found"] and ep.patterns["ungrounded_argument"] == 0

    context = ScriptedModel([act("get_customer", customer_id="C4821"), say("No such customer.")])
    ep = await episode(guarded, context, "Who am I?", task_context={"account": "C4821"})
    assert errors(ep) == ["not_found"]

    # A run of digits inside a longer one counts (the last four of a phone number); a number argument
    # (an amount the model computed) is never checked, nor are runs shorter than three digits.
    read = ScriptedModel(
        [
            act("get_customer", customer_id="C3456"),
            act("place_order", customer_id="C1", total=1234.5),
            say("Ordered."),
        ]
    )
    ep = await episode(guarded, read, "Order goods for C1, phone 555-0123456 please")
    assert [c.tool for c in ep.calls] == ["get_customer", "place_order"] and errors(ep) == ["not_found"]


async def test_look_first_never_holds_back_a_reply_made_on_the_last_turn() -> None:
    # Holding it back there would end the episode at the turn limit with no reply at all.
    model = ScriptedModel([" not an action", say("C1 is Customer 1.")])
    ep = await episode(levers(turns=2, guards={"look_first": True}), model, "Who is C1?")
    assert (ep.stop_reason, ep.reply) == ("reply", "C1 is Customer 1.")


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_the_last_model_turn_comes_with_a_reminder_to_reply(protocol: str) -> None:
    lookup, done = lookup_and_reply(protocol, "C1 is Customer 1.")
    model = ScriptedModel([lookup, lookup, done])
    ep = await episode(levers(protocol, turns=3, guards={"reply_nudge": True}), model, "Who is C1?")
    assert ep.stop_reason == "reply" and ep.patterns["no_reply"] == 0
    notices = [e for e in ep.events if e.kind == "notice"]
    assert len(notices) == 1 and notices[0].content.startswith("This is your last step. Reply now")
    assert "(runtime to front) This is your last step. Reply now" in shown(ep)
    before, last = model.requests[1].messages, model.requests[2].messages
    if protocol == "text":
        assert "notice" not in before[1]["content"]
        assert last[1]["content"].endswith(
            'Observation: {"notice": "This is your last step. Reply now with what you have found, '
            'with the reply tool."}\nAction:'
        )
    else:
        assert last[-1] == {
            "role": "user",
            "content": "(runtime) This is your last step. Reply now with what you have found, "
            "in a message, without calling a tool.",
        }


async def test_an_answer_that_is_neither_action_nor_reply_is_met_with_a_reminder_to_reply() -> None:
    model = ScriptedModel([" I will look it up", say("Sorry, I could not find C9.")])
    ep = await episode(levers(guards={"reply_nudge": True}), model, "Who is C9?")
    assert ep.reply == "Sorry, I could not find C9." and ep.patterns["malformed_action"] == 1
    assert "no JSON action found" in model.requests[1].messages[1]["content"]
    assert (
        "Reply now with what you have found, with the reply tool." in model.requests[1].messages[1]["content"]
    )


async def test_without_the_guard_nothing_reminds_the_agent_and_the_episode_runs_out() -> None:
    model = ScriptedModel([act("get_customer", customer_id="C1")] * 2 + [" hmm"])
    ep = await episode(levers(turns=3), model, "Who is C1?")
    assert ep.stop_reason == "turn_limit" and not [e for e in ep.events if e.kind == "notice"]
    assert "Reply now" not in model.requests[2].messages[1]["content"]


@pytest.mark.parametrize("guarded", [True, False])
async def test_a_tool_with_requirements_is_refused_until_one_of_them_succeeded(guarded: bool) -> None:
    tools = {
        "front": {
            "get_customer": {},
            "set_status": {},
            "delete_order": {"requires": ["get_customer", "set_status"]},
        }
    }
    model = ScriptedModel(
        [
            act("delete_order", order_id=1),
            act("get_customer", customer_id="C99"),  # fails: a failed call satisfies nothing
            act("delete_order", order_id=1),
            act("get_customer", customer_id="C2"),
            act("delete_order", order_id=1),
            say("Deleted."),
        ]
    )
    ep = await episode(
        levers(tools=tools, demos=[], guards={"preconditions": guarded}), model, "Delete order 1"
    )
    if guarded:
        assert errors(ep) == ["precondition_refused", "not_found", "precondition_refused"]
        assert [c.tool for c in ep.calls] == ["get_customer", "get_customer", "delete_order"]
        assert ep.patterns["precondition_refused"] == 2
        refusal = next(e for e in ep.events if not e.ok and e.kind == "tool_result").error["message"]
        assert (
            refusal
            == "delete_order runs only after get_customer or set_status has succeeded. Call one of them first."
        )
    else:
        assert errors(ep) == ["not_found"]
        assert [c.tool for c in ep.calls] == [
            "delete_order",
            "get_customer",
            "delete_order",
            "get_customer",
            "delete_order",
        ]
    assert ep.diff.summary()["orders"]["deleted"] == 1


def test_requirements_must_be_other_tools_of_the_same_agent() -> None:
    tools = {"front": {"get_customer": {}, "delete_order": {"requires": ["delete_order", "place_order"]}}}
    error = load_error(files(tools=tools, demos=[]))
    assert (
        "harnesses/levers/tools.yaml: front.delete_order.requires[0]: a tool cannot require itself" in error
    )
    assert (
        "front.delete_order.requires[1]: 'place_order' is not among the tools tools.yaml gives agent 'front'"
        in error
    )


# -- failure patterns -----------------------------------------------------------------------------


async def test_an_episode_counts_its_failure_patterns_and_keeps_them_when_stored() -> None:
    model = ScriptedModel(
        [
            act("drop_tables"),
            act("get_customer"),
            " not an action",
            act("get_customer", customer_id="C1"),
            act("get_customer", customer_id="C1"),
        ]
    )
    ep = await episode(levers(turns=5), model, "Who is C1?")
    assert ep.patterns == {
        "no_reply": 1,
        "repeat_call": 1,
        "unknown_tool": 1,
        "invalid_arguments": 1,
        "malformed_action": 1,
        "precondition_refused": 0,
        "turn_limit": 1,
        "unlooked_reply": 0,
        "ungrounded_argument": 0,
    }
    assert list(ep.patterns) == list(PATTERNS)
    stored = json.loads(ep.model_dump_json())
    assert Episode.model_validate(stored).patterns == ep.patterns


async def test_a_clean_episode_and_one_ended_by_a_stop_tool_have_no_patterns() -> None:
    ep = await episode(
        levers(), ScriptedModel([act("get_customer", customer_id="C1"), say("C1.")]), "Who is C1?"
    )
    assert set(ep.patterns.values()) == {0}
    stopping = levers(stop_tools=["delete_order"])
    ep = await episode(stopping, ScriptedModel([act("delete_order", order_id=1)]), "Delete order 1")
    assert ep.stop_reason == "stop_tool" and ep.patterns["no_reply"] == 0
