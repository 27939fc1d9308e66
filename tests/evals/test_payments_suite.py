"""The shipped payments suite and its start harness: billing-support tasks graded by what changed in the
Stripe account. Every reference passes at every seed, an agent that does nothing or refunds the wrong charge
fails, and the harness drives the world through Stripe's MCP tool names."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from suite_episodes import played

from atoll.evals import ReferenceCall, evaluate, grade_episode, load_suite, replay_reference
from atoll.harnesses import load_harness
from atoll.harnesses.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
SUITE = load_suite(ROOT / "evals" / "payments")
HARNESS = ROOT / "harnesses" / "payments_agent"
THEMES = {"refund", "duplicate", "membership", "proration", "cancellation", "invoice", "customer", "refusal"}
DIFFICULTIES = {"easy", "medium", "hard"}


def test_the_suite_has_17_tasks_split_6_5_6_and_tagged():
    assert Counter(task.split for task in SUITE.tasks) == {"train": 6, "val": 5, "test": 6}
    for task in SUITE.tasks:
        tags = set(task.tags)
        assert tags <= THEMES | DIFFICULTIES and tags & THEMES and len(tags & DIFFICULTIES) == 1, task.id


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_every_reference_passes_its_task_at_every_seed(task):
    for seed in SUITE.seeds(task):
        verdict = replay_reference(SUITE, task.id, seed)
        assert verdict.passed, verdict.feedback()


def test_an_agent_that_does_nothing_fails_every_task():
    for task in SUITE.tasks:
        episode = played(SUITE, task, 0, [], ["Thanks for writing to Lumen Yoga! Let me look into that."])
        assert not grade_episode(SUITE, task, episode).passed, task.id


def test_refunding_the_first_of_two_duplicate_charges_fails():
    task = SUITE.task("refund-duplicate-class-pack")
    first = ReferenceCall(
        tool="create_refund",
        arguments={"payment_intent": "pi_ysMWTGrz5bHRCajn6fnNpwx1", "reason": "duplicate"},
    )
    grade = grade_episode(SUITE, task, played(SUITE, task, 0, [first], ["Refunded $180."]))
    assert not grade.passed and {c.kind for c in grade.failed_checks} >= {"inserted", "no_other_writes"}


def test_the_start_harness_sees_stripes_mcp_tools_and_the_whole_policy():
    harness = load_harness(HARNESS)
    assert harness.world.name == "payments" and harness.entry == "billing"
    seen = set(harness.tools["billing"])
    assert {"create_refund", "list_payment_intents", "update_subscription", "cancel_subscription"} <= seen
    assert {call.tool for task in SUITE.tasks for call in task.reference} <= seen


def test_a_scripted_model_making_the_reference_calls_passes_a_proration_task():
    task = SUITE.task("upgrade-basic-to-unlimited-billed-now")
    steps = [
        {"content": None, "tool_calls": [{"name": c.tool, "arguments": c.arguments}]} for c in task.reference
    ]
    model = ScriptedModel(
        [*steps, "Done: you are on Unlimited now; $24.87 was charged for the rest of November."]
    )
    result = evaluate(HARNESS, SUITE, model=model, tasks=[task.id], seeds=[0])
    (episode,) = result.results
    assert episode.passed, episode.grade.feedback()
    assert [c.tool for c in episode.episode.calls] == [c.tool for c in task.reference]
