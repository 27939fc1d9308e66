"""Result projection (tools.yaml `fields`): the agent reads only the listed fields of a tool's
result, while the world's result, the episode's calls and events, and so the graders, keep it all."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import yaml

from atoll.harnesses import Harness, HarnessError, ScriptedUser, run_episode
from atoll.harnesses._tools import project
from atoll.harnesses.models import ScriptedModel
from atoll.worlds import get_world

HELPDESK = get_world("helpdesk")
ORDER_FIELDS = ["id", "status", "customer.name", "items.product_name", "items.refund_value", "refundable"]


def desk(tools: Any = None, protocol: str = "native", **limits: Any) -> dict[str, str]:
    config = {
        "name": "desk",
        "world": "helpdesk",
        "protocols": {"*": protocol},
        "limits": {"turns": 6, **limits},
        "entry": "desk",
        "agents": {"desk": {"prompt": "prompts/desk.md.j2"}},
    }
    if tools is None:
        tools = {"get_order": {"fields": ORDER_FIELDS}, "find_customer": {"fields": ["id", "name"]}}
    return {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump({"desk": tools}, sort_keys=False),
        "prompts/desk.md.j2": "You help customers of the shop.\n{{ tools }}\n",
    }


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": args}]}


def run(files: dict[str, str], *answers: object) -> tuple[Any, ScriptedModel]:
    harness = Harness.from_files(files, world=HELPDESK)
    model = ScriptedModel(list(answers))
    with HELPDESK.instance("small_shop") as instance:
        episode = asyncio.run(run_episode(harness, instance, model, ScriptedUser("What about ORD-1003?")))
    return episode, model


def observations(model: ScriptedModel) -> list[str]:
    """The tool results the model read, in order (native protocol: the `tool` messages)."""
    return [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]


def full_order() -> dict[str, Any]:
    with HELPDESK.instance("small_shop") as instance:
        return instance.call("get_order", order_id="ORD-1003").value


def test_the_agent_reads_only_the_listed_fields_and_the_episode_keeps_the_whole_result():
    episode, model = run(
        desk(),
        call("get_order", order_id="ORD-1003"),
        call("find_customer", name="Darius"),
        "ORD-1003 was delivered.",
    )

    order, customers = (json.loads(text) for text in observations(model))
    assert order == {
        "id": "ORD-1003",
        "status": "delivered",
        "customer": {"name": "Darius Nwosu"},
        "items": [
            {"product_name": "Cast Iron Skillet, 12-inch", "refund_value": 57.78},
            {"product_name": "Chef's Knife, 8-inch", "refund_value": 95.23},
        ],
        "refundable": 153.01,
    }
    assert customers == [{"id": "CUS-0034", "name": "Darius Nwosu"}]
    whole = full_order()
    assert {"payments", "shipments", "ship_zip"} <= whole.keys()
    # The world's call log and the transcript keep everything: graders and proposers read these.
    assert episode.calls[0].value == whole
    results = [e.result for e in episode.events if e.kind == "tool_result"]
    assert results[0] == whole and results[1][0]["email"] == "darius_nwosu@gmail.com"
    assert episode.stop_reason == "reply"


def test_the_projection_comes_before_the_cut_to_observation_chars():
    cut = desk(tools=["get_order"], observation_chars=300)
    _, model = run(cut, call("get_order", order_id="ORD-1003"), "Done.")
    assert observations(model)[0].endswith("…(truncated)")

    _, model = run(desk(observation_chars=300), call("get_order", order_id="ORD-1003"), "Done.")
    [text] = observations(model)
    assert not text.endswith("…(truncated)") and json.loads(text)["refundable"] == 153.01


def test_without_fields_the_whole_result_is_shown():
    _, model = run(
        desk(tools=["get_order"], observation_chars=5000), call("get_order", order_id="ORD-1003"), "Ok."
    )
    assert json.loads(observations(model)[0]) == full_order()
    harness = Harness.from_files(desk(tools=["get_order"]), world=HELPDESK)
    assert harness.tools["desk"]["get_order"].fields is None


def test_an_error_is_shown_whole():
    episode, model = run(desk(), call("get_order", order_id="ORD-0000"), "No such order.")
    [text] = observations(model)
    assert json.loads(text)["error"]["type"] == "not_found"
    assert episode.calls[0].ok is False


def test_a_repeat_notice_shows_the_projected_result_the_agent_saw():
    files = desk()
    config = yaml.safe_load(files["harness.yaml"])
    config["agents"]["desk"]["guards"] = {"repeat_notice": True}
    files["harness.yaml"] = yaml.safe_dump(config)
    twice = call("get_order", order_id="ORD-1003")
    _, model = run(files, twice, twice, "Delivered.")

    first, repeat = observations(model)
    error = json.loads(repeat)["error"]
    assert error["type"] == "repeat_call" and error["details"]["result"] == json.loads(first)
    assert "payments" not in repeat


def test_the_text_protocol_reads_the_projection_too():
    answer = 'Action: {"tool": "find_customer", "args": {"name": "Darius"}}'
    _, model = run(desk(protocol="text"), answer, 'Action: {"tool": "reply", "args": {"message": "Found."}}')
    last = json.dumps(model.requests[-1].messages, ensure_ascii=False)
    assert "CUS-0034" in last and "Darius Nwosu" in last
    assert "darius_nwosu@gmail.com" not in last and "Milwaukee" not in last


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ([], "desk.get_order.fields", "an empty list would hide the whole result"),
        (["id", "id"], "desk.get_order.fields", "'id' is listed twice"),
        (["items.sku", "items"], "desk.get_order.fields", "'items.sku' is inside 'items'"),
        (["id", "items..sku"], "desk.get_order.fields[1]", "'items..sku' is not a field path"),
        (["items. sku"], "desk.get_order.fields[0]", "is not a field path"),
        ("id", "desk.get_order.fields", "list"),
        ([{"items": "sku"}], "desk.get_order.fields[0]", "string"),
    ],
)
def test_bad_fields_fail_the_load_naming_the_file_and_field(fields: Any, field: str, problem: str):
    files = desk(tools={"get_order": {"fields": fields}})
    with pytest.raises(HarnessError) as raised:
        Harness.from_files(files, source="harnesses/desk", world=HELPDESK)
    [line] = [line for line in str(raised.value).splitlines() if "fields" in line]
    assert line.startswith(f"harnesses/desk/tools.yaml: {field}: ") and problem in line


def test_project_walks_mappings_and_lists():
    value = {
        "id": 1,
        "customer": {"name": "Ann", "email": "a@x"},
        "items": [{"sku": "A", "qty": 2, "tags": [{"k": "x", "v": 1}]}, {"sku": "B", "qty": 1}],
        "note": None,
        "notes": [],
    }
    shown = project(value, ["items.sku", "items.tags.k", "customer.name", "note.text", "notes.body", "gone"])
    assert shown == {
        "customer": {"name": "Ann"},
        "items": [{"sku": "A", "tags": [{"k": "x"}]}, {"sku": "B"}],
        "note": None,  # a plain value met before the path's end is kept
        "notes": [],
    }
    assert list(shown) == ["customer", "items", "note", "notes"]  # the world's key order
    assert project([{"id": 1, "x": 2}, {"id": 3}], ["id"]) == [{"id": 1}, {"id": 3}]
    assert project("plain text", ["id"]) == "plain text"
    assert project({"a": {"b": 1, "c": 2}}, ["a.b", "a"]) == {"a": {"b": 1, "c": 2}}
