import asyncio
import json
import time

import pytest

from atoll.harnesses.models import (
    Model,
    ModelParams,
    ModelResponse,
    ModelUnavailable,
    ScriptedModel,
    ScriptExhausted,
    Usage,
)

USER = [{"role": "user", "content": "where is my order 42?"}]


async def test_scripted_replies_come_back_in_order_as_text_and_tool_calls():
    model = ScriptedModel(
        responses=[
            {"content": None, "tool_calls": [{"name": "get_order", "arguments": {"order_id": 42}}]},
            "It shipped yesterday.",
        ]
    )

    first = await model.complete(USER)
    second = await model.complete(USER)

    assert first.tool_calls[0].name == "get_order"
    assert json.loads(first.tool_calls[0].arguments) == {"order_id": 42}
    assert first.finish_reason == "tool_calls"
    assert second.content == "It shipped yesterday."
    assert second.tool_calls == []
    assert second.finish_reason == "stop"


async def test_tool_arguments_given_as_text_stay_exactly_as_written():
    model = ScriptedModel(responses=[{"tool_calls": [{"name": "refund", "arguments": '{"id": 1,}'}]}])

    response = await model.complete(USER)

    assert response.tool_calls[0].arguments == '{"id": 1,}'


async def test_an_exception_in_the_script_is_raised_and_the_script_goes_on():
    model = ScriptedModel(responses=[ModelUnavailable("rate limited"), "recovered"])

    with pytest.raises(ModelUnavailable, match="rate limited"):
        await model.complete(USER)
    assert (await model.complete(USER)).content == "recovered"


async def test_running_out_of_replies_says_which_call_had_no_answer():
    model = ScriptedModel(responses=["only one"])
    await model.complete(USER)

    with pytest.raises(ScriptExhausted, match="call 2"):
        await model.complete(USER)


async def test_a_function_script_sees_the_whole_request():
    model = ScriptedModel(fn=lambda request: f"sample {request.sample}: {request.messages[-1]['content']}")

    response = await model.complete(USER, params=ModelParams(temperature=0.7), sample=3)

    assert response.content == "sample 3: where is my order 42?"
    assert response.sample == 3
    assert model.requests[0].params.temperature == 0.7


async def test_an_async_function_script_is_awaited():
    async def answer(request):
        return {"content": "async answer"}

    assert (await ScriptedModel(fn=answer).complete(USER)).content == "async answer"


async def test_every_request_is_recorded_with_its_tools():
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {}}}]
    model = ScriptedModel(responses=["a", "b"])

    await model.complete(USER, tools=tools)
    await model.complete([*USER, {"role": "assistant", "content": "a"}], sample=1)

    assert [len(r.messages) for r in model.requests] == [1, 2]
    assert model.requests[0].tools == tools
    assert model.requests[1].sample == 1


async def test_a_scripted_model_response_is_returned_unchanged():
    canned = ModelResponse(model="x", content="hi", finish_reason="stop", usage=Usage(prompt_tokens=5))

    assert await ScriptedModel(responses=[canned]).complete(USER) == canned


async def test_scripted_calls_report_rough_token_counts():
    response = await ScriptedModel(responses=["three word reply"]).complete(USER)

    assert response.usage.prompt_tokens == 5
    assert response.usage.completion_tokens == 3
    assert response.usage.total_tokens == 8


async def test_scripted_latency_overlaps_across_concurrent_calls():
    model = ScriptedModel(fn=lambda request: "ok", latency_s=0.05)

    started = time.monotonic()
    responses = await asyncio.gather(*(model.complete(USER, sample=i) for i in range(20)))

    assert time.monotonic() - started < 0.5
    assert all(r.latency_s == 0.05 for r in responses)


def test_a_scripted_model_is_a_model():
    assert isinstance(ScriptedModel(responses=[]), Model)


def test_a_script_needs_exactly_one_source_of_replies():
    with pytest.raises(ValueError, match="exactly one"):
        ScriptedModel()
    with pytest.raises(ValueError, match="exactly one"):
        ScriptedModel(responses=["a"], fn=lambda request: "b")


async def test_a_reply_of_the_wrong_type_names_the_type():
    with pytest.raises(TypeError, match="int"):
        await ScriptedModel(responses=[42]).complete(USER)
