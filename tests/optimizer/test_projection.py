"""ProjectResults: learn from passing train episodes and train tasks' reference solutions which result
fields each agent used, and show it only those (tools.yaml `fields`), for the tool where that hides the
most.

The episodes are real runs of a helpdesk desk harness under scripted models, so their results are
the world's: a field is used when its value turns up later in the same agent's calls or replies.
"""

from __future__ import annotations

import asyncio
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from atoll.evals import EpisodeResult, Grade, Task, load_suite
from atoll.harnesses import Harness, ScriptedUser, content_hash, run_episode
from atoll.harnesses._tools import project
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import FailureReport, ProposalContext
from atoll.optimizer._operators import ProjectResults
from atoll.optimizer._operators._projection import _appears, choose_fields, gather, leaves, options
from atoll.worlds import get_world

sys.path.insert(0, str(Path(__file__).parent))
from test_operators import context_for, desk_files, write_suite

HELPDESK = get_world("helpdesk")


def files(tools: dict[str, Any] | None = None, refunds: dict[str, Any] | None = None) -> dict[str, str]:
    """A desk agent (and, given its tools, a refunds agent the desk delegates to)."""
    agents: dict[str, Any] = {"desk": {"prompt": "prompts/agent.md.j2"}}
    tools_yaml: dict[str, Any] = {
        "desk": tools or {"get_order": None, "find_customer": None, "track_shipment": None}
    }
    if refunds is not None:
        agents["desk"]["delegates"] = ["refunds"]
        agents["refunds"] = {"prompt": "prompts/agent.md.j2", "description": "Refunds."}
        tools_yaml["refunds"] = refunds
    config = {
        "name": "desk",
        "world": "helpdesk",
        "protocols": {"*": "native"},
        "limits": {"turns": 8},
        "entry": "desk",
        "agents": agents,
    }
    return {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump(tools_yaml, sort_keys=False),
        "prompts/agent.md.j2": "You help customers of the shop.\n{{ tools }}\n",
    }


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": args}]}


def order(order_id: str) -> dict[str, Any]:
    with HELPDESK.instance("small_shop") as instance:
        return instance.call("get_order", order_id=order_id).value


def passed(harness: Harness, message: str, *answers: object) -> EpisodeResult:
    """A passing train episode: the scripted answers run on a fresh instance."""
    with HELPDESK.instance("small_shop") as instance:
        episode = asyncio.run(
            run_episode(harness, instance, ScriptedModel(list(answers)), ScriptedUser(message))
        )
    assert episode.stop_reason == "reply", episode.error
    task = re.search(r"ORD-\d+", message)
    return EpisodeResult(
        task_id=f"ask-{task.group() if task else message}",
        seed=0,
        sample=0,
        episode=episode,
        grade=Grade(score=1.0, passed=True),
    )


def context(harness: Harness, episodes: list[EpisodeResult]) -> ProposalContext:
    return ProposalContext(
        files=harness.files(),
        harness_hash=harness.hash,
        harness=harness,
        passing_episodes=episodes,
        world_tools=list(HELPDESK.tools),
        rng=random.Random(0),
    )


def status_episode(harness: Harness, order_id: str) -> EpisodeResult:
    """Look the order up, track it by the id it read, and reply with its status and first item."""
    found = order(order_id)
    item = found["items"][0]
    reply = (
        f"{found['id']} is {found['status']}: {item['quantity']} x {item['product_name']}, "
        f"worth ${item['refund_value']:.2f} if refunded."
    )
    return passed(
        harness,
        f"Where is {order_id}?",
        call("get_order", order_id=order_id),
        call("track_shipment", order_id=found["id"]),
        reply,
    )


def refundable_episode(harness: Harness, order_id: str) -> EpisodeResult:
    found = order(order_id)
    return passed(
        harness,
        f"How much can you still refund on {order_id}?",
        call("get_order", order_id=order_id),
        f"Up to ${found['refundable']} can still be refunded.",
    )


def proposed_tools(proposal: Any) -> dict[str, Any]:
    assert proposal is not None
    Harness.from_files(proposal.files, world=HELPDESK)  # the proposal loads
    return yaml.safe_load(proposal.files["tools.yaml"])


def test_it_shows_only_the_fields_passing_episodes_used_and_never_hides_one():
    harness = Harness.from_files(files(), world=HELPDESK)
    episodes = [
        status_episode(harness, "ORD-1003"),
        status_episode(harness, "ORD-1005"),
        refundable_episode(harness, "ORD-1004"),
    ]
    ctx = context(harness, episodes)
    proposal = asyncio.run(ProjectResults().propose(ctx))

    fields = proposed_tools(proposal)["desk"]["get_order"]["fields"]
    # Used: id (a later call's argument), status, items.product_name and items.refund_value (a reply),
    # refundable (the third episode's reply); payments.amount equals the total refundable by coincidence.
    assert {"id", "status", "items.product_name", "items.refund_value", "refundable"} <= set(fields)
    shown = project(order("ORD-1003"), fields)
    for hidden in ("ship_zip", "placed_at", "notes", "customer"):
        assert hidden not in shown
    assert set(shown["items"][0]) == {"product_name", "refund_value"}  # quantity 1 is too trivial to count
    # No value a passing episode used is hidden by the projection.
    for (agent, tool), evidence in gather(ctx).items():
        if (agent, tool) != ("desk", "get_order"):
            continue
        kept = {path for value in evidence.shown for path, _ in leaves(project(value, fields))}
        assert set(evidence.used) <= kept
    assert proposal.rationale.startswith("get_order for agent 'desk': show id, status, ")
    assert "(used by 3 of the 3 passing train episodes that call it" in proposal.rationale
    assert re.search(r"hides \d+ fields, ~\d+ characters per call\.$", proposal.rationale)
    assert "refundable 1" in proposal.rationale and "id 2" in proposal.rationale


def test_the_biggest_saving_goes_first_and_a_projected_tool_is_not_proposed_again():
    harness = Harness.from_files(files(), world=HELPDESK)
    script = [
        ("ORD-1003", "Darius Nwosu", "CUS-0034"),
        ("ORD-1004", "Grace Liu", None),
    ]
    episodes = []
    for order_id, name, customer in script:
        found = order(order_id)
        episodes.append(
            passed(
                harness,
                f"I am {name}, what about {order_id}?",
                call("find_customer", name=name),
                call("get_order", order_id=order_id),
                f"{name}, your order {found['id']} is {found['status']}"
                + (f" (account {customer})." if customer else "."),
            )
        )
    first = asyncio.run(ProjectResults().propose(context(harness, episodes)))
    assert list(proposed_tools(first)["desk"]["get_order"]) == ["fields"]  # ~1500 characters beat ~100

    projected = Harness.from_files(first.files, world=HELPDESK)
    second = asyncio.run(ProjectResults().propose(context(projected, episodes)))
    tools = proposed_tools(second)["desk"]
    assert tools["get_order"] == yaml.safe_load(first.files["tools.yaml"])["desk"]["get_order"]
    assert tools["find_customer"] == {"fields": ["id", "name"]}  # email, city and state hidden
    third = Harness.from_files(second.files, world=HELPDESK)
    assert asyncio.run(ProjectResults().propose(context(third, episodes))) is None  # nothing left to hide


def test_a_narrower_projection_stays_inside_the_current_one():
    harness = Harness.from_files(files({"get_order": {"fields": ["id", "status", "items"]}}), world=HELPDESK)
    episodes = [
        refundable_episode(harness, o) for o in ("ORD-1003", "ORD-1004")
    ]  # the agent saw no refundable
    assert asyncio.run(ProjectResults().propose(context(harness, episodes))) is None  # it used nothing it saw

    episodes = [status_episode(harness, o) for o in ("ORD-1003", "ORD-1005")]
    proposal = asyncio.run(ProjectResults().propose(context(harness, episodes)))
    fields = proposed_tools(proposal)["desk"]["get_order"]["fields"]
    assert {"id", "status", "items.product_name", "items.refund_value"} <= set(fields)
    assert all(f in ("id", "status") or f.startswith("items.") for f in fields)


def test_a_sub_agents_answer_to_its_caller_counts_as_use():
    harness = Harness.from_files(files({"find_customer": None}, refunds={"get_order": None}), world=HELPDESK)
    episodes = []
    for order_id in ("ORD-1003", "ORD-1005"):
        value = order(order_id)["items"][0]["refund_value"]
        episodes.append(
            passed(
                harness,
                f"Refund the first item of {order_id}.",
                call(
                    "delegate_to_refunds", request=f"What would refunding the first item of {order_id} cost?"
                ),
                call("get_order", order_id=order_id),
                f"It would cost ${value}.",  # the refunds agent's answer to the desk (a `return` event)
                "It is noted.",
            )
        )
    proposal = asyncio.run(ProjectResults().propose(context(harness, episodes)))
    assert proposed_tools(proposal)["refunds"]["get_order"]["fields"] == ["items.refund_value"]
    assert proposal.rationale.startswith(
        "get_order for agent 'refunds': show items.refund_value (used by 2 of the 2"
    )


def test_no_proposal_without_evidence():
    harness = Harness.from_files(files(), world=HELPDESK)
    one = [status_episode(harness, "ORD-1003")]
    assert asyncio.run(ProjectResults().propose(context(harness, one))) is None  # one episode is no evidence
    assert asyncio.run(ProjectResults().propose(context(harness, []))) is None
    unused = [
        passed(harness, f"Hello about {o}", call("get_order", order_id=o), "Thanks, all good.")
        for o in ("ORD-1003", "ORD-1004")
    ]
    assert (
        asyncio.run(ProjectResults().propose(context(harness, unused))) is None
    )  # nothing used: no evidence


def test_choose_fields_names_a_wholly_used_mapping_once():
    seen = ["id", "customer.id", "customer.name", "items.sku", "items.qty", "notes"]
    assert choose_fields(seen, ["id", "customer.id", "customer.name", "items.sku"], None) == [
        "id",
        "customer",
        "items.sku",
    ]
    # Under a projection that shows only customer.name, naming `customer` whole would show the rest again.
    assert choose_fields(["customer.name"], ["customer.name"], ["customer.name"]) == ["customer.name"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_suite(write_suite(tmp_path_factory.mktemp("desk_suite")))


def test_on_real_train_episodes_the_projected_harness_still_passes(suite: Any):
    """The scripted desk of tests/optimizer/test_operators.py passes its note tasks by reading only
    the order's id; shown only that, it still passes them."""
    ctx = context_for(desk_files(), suite)
    proposal = asyncio.run(ProjectResults().propose(ctx))

    assert proposed_tools(proposal)["desk"]["get_order"] == {"fields": ["id"]}
    assert "(used by 2 of the 4 passing train episodes and reference solutions" in proposal.rationale
    after = context_for(proposal.files, suite)
    assert sorted(r.task_id for r in after.passing_episodes) == ["note-1003", "note-1004"]
    assert asyncio.run(ProjectResults().propose(after)) is None


def train_task(task_id: str, message: str, reference: list[dict[str, Any]], **expect: Any) -> Task:
    return Task.model_validate(
        {
            "id": task_id,
            "split": "train",
            "fixture": "small_shop",
            "user": {"message": message},
            "reference": reference,
            "expect": {"no_other_writes": True, **expect},
        }
    )


IDENTITY_TASKS = [
    train_task(
        "verify-by-pin",
        "I'm grace.liu@gmail.com, PIN 5530: please verify me.",
        [
            {"find_customer": {"email": "grace.liu@gmail.com"}},
            {"verify_identity": {"customer_id": "CUS-0029", "support_pin": "5530"}},
        ],
    ),
    train_task(
        "verify-by-facts",
        "Grace Liu here (grace.liu@gmail.com), born 1991-12-05, ZIP 98107: verify me please.",
        [
            {"find_customer": {"email": "grace.liu@gmail.com"}},
            {
                "verify_identity": {
                    "customer_id": "CUS-0029",
                    "date_of_birth": "1991-12-05",
                    "zip_code": "98107",
                }
            },
        ],
    ),
    train_task(
        "status", "Where is ORD-1003?", [{"get_order": {"order_id": "ORD-1003"}}], reply_contains=["shipped"]
    ),
]


def searched(task_id: str, *after: str) -> FailureReport:
    """A failing train episode in which the desk searched for a customer."""
    transcript = ['[desk] call find_customer {"email": "grace.liu@gmail.com"}', *after]
    return FailureReport(
        task_id=task_id, score=0.0, user_message="", transcript="\n".join(transcript), diff="{}", feedback=[]
    )


def reference_context(harness: Harness, tasks: list[Task], **fields: Any) -> ProposalContext:
    return context(harness, []).model_copy(update={"train_tasks": tasks, **fields})


def test_reference_solutions_are_evidence_for_a_lookup_whose_every_result_is_passed_on():
    """With no passing episode at all, the references show what a customer search is for: its id, which
    the next call passes on. An order lookup the status reference leaves unused (its reply is not part of
    a reference) is not projected on references alone."""
    harness = Harness.from_files(files(), world=HELPDESK)
    failing = searched("verify-by-pin", "[desk] assistant: You live in Seattle.")
    ctx = reference_context(harness, IDENTITY_TASKS, failures=[failing])
    proposal = asyncio.run(ProjectResults().propose(ctx))
    assert proposed_tools(proposal)["desk"] == {
        "get_order": None,
        "find_customer": {"fields": ["id"]},
        "track_shipment": None,
    }
    assert "(used by 2 of the 2 reference solutions that call it" in proposal.rationale
    assert proposal.targets == ["verify-by-pin"]  # the failing task whose agent read the search


def test_a_value_the_user_or_the_call_gave_is_no_evidence_of_reading_the_result():
    """verify_identity's result repeats the customer id it was given; the search's email is what the user
    typed. Neither shows the agent needed the field."""
    harness = Harness.from_files(files({"find_customer": None, "verify_identity": None}), world=HELPDESK)
    found = {o.tool: o.fields for o in options(reference_context(harness, IDENTITY_TASKS))}
    assert found == {"find_customer": ["id"]}


def test_a_tried_projection_gives_way_to_the_next_option():
    harness = Harness.from_files(files(), world=HELPDESK)
    episodes = [status_episode(harness, "ORD-1003"), status_episode(harness, "ORD-1005")]
    ctx = reference_context(harness, IDENTITY_TASKS, passing_episodes=episodes)
    first = asyncio.run(ProjectResults().propose(ctx))
    assert set(proposed_tools(first)["desk"]["get_order"]) == {"fields"}  # the biggest saving
    again = ctx.model_copy(update={"tried": frozenset({content_hash(first.files)})})
    second = asyncio.run(ProjectResults().propose(again))
    assert proposed_tools(second)["desk"] == {
        "get_order": None,
        "find_customer": None,
        "track_shipment": {"fields": ["order_id", "status", "events.status"]},
    }
    both = again.model_copy(update={"tried": again.tried | {content_hash(second.files)}})
    third = asyncio.run(ProjectResults().propose(both))
    assert proposed_tools(third)["desk"]["find_customer"] == {"fields": ["id"]}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("out_for_delivery", "It is out for delivery today."),
        ("2026-02-23T14:05:00", "It was delivered on 2026-02-23."),
        ("2026-02-23 14:05:00", "It was delivered on 2026-02-23."),
    ],
)
def test_a_value_counts_as_said_the_way_a_reply_says_it(value: str, said: str):
    assert _appears(value, said.casefold())


def test_for_quality_the_projection_aimed_at_the_most_failing_tasks_goes_first_for_cost_the_biggest():
    harness = Harness.from_files(files(), world=HELPDESK)
    episodes = [status_episode(harness, "ORD-1003"), status_episode(harness, "ORD-1005")]
    ctx = reference_context(
        harness, IDENTITY_TASKS, passing_episodes=episodes, failures=[searched("verify-by-facts")]
    )
    quality = asyncio.run(ProjectResults().propose(ctx))
    assert proposed_tools(quality)["desk"]["find_customer"] == {"fields": ["id"]}
    assert quality.targets == ["verify-by-facts"]
    cheaper = asyncio.run(ProjectResults().propose(ctx.model_copy(update={"objective": "tokens"})))
    assert set(proposed_tools(cheaper)["desk"]["get_order"]) == {"fields"}
