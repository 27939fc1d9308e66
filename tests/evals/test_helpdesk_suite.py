"""The shipped helpdesk suite: its size and coverage, and that every task is consistent and not vacuous.

Every task's reference solution must pass the task at every seed (a task its own solution fails is
broken), an agent that does nothing must fail every task, and the policy violations a task is about
(refunding what must be escalated, crediting over the cap, acting before the identity check) must fail.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from suite_episodes import played

from atoll.evals import Grade, ReferenceCall, Task, grade_episode, load_suite, replay_reference
from atoll.harnesses import Episode

SUITE_DIR = Path(__file__).resolve().parents[2] / "evals" / "helpdesk"
SUITE = load_suite(SUITE_DIR)
THEMES = {
    "status",
    "refund",
    "partial_refund",
    "cancellation",
    "address",
    "exchange",
    "store_credit",
    "identity",
    "escalation",
    "refusal",
}
DIFFICULTIES = {"easy", "medium", "hard"}
STATE_KINDS = {"inserted", "updated", "deleted", "unchanged", "no_other_writes", "matches_reference"}
GENERIC_REPLY = "Thanks for reaching out! Let me look into that for you."


def run(task: Task, seed: int, calls: list[ReferenceCall], replies: list[str]) -> Episode:
    return played(SUITE, task, seed, calls, replies)


def fitting_reply(task: Task, reference: Episode) -> str:
    """A reply that says what the task asks to be said: its phrases, a decline, the refund amounts."""
    said = list(task.expect.reply_contains)
    for spec in task.expect.graders:
        if spec.name == "reply_mentions":
            said.append(spec.args["any_of"][0])
        elif spec.name == "declines":
            said.append("I'm unable to do that")
        elif spec.name == "mentions_refund_amount":
            said += [f"${row['amount']:.2f}" for row in reference.diff.table("refunds").inserted]
    return ". ".join(said) + "."


def failed_kinds(grade: Grade) -> set[str]:
    return {check.kind for check in grade.failed_checks}


def call(tool: str, **arguments: Any) -> ReferenceCall:
    return ReferenceCall(tool=tool, arguments=arguments)


# -- size and coverage ---------------------------------------------------------------------------


def test_the_suite_has_at_least_a_hundred_and_twenty_tasks_with_unique_ids() -> None:
    ids = [task.id for task in SUITE.tasks]
    assert len(ids) >= 120
    assert len(set(ids)) == len(ids)
    assert {task.fixture for task in SUITE.tasks} == {"small_shop"}


def test_every_task_names_its_themes_and_one_difficulty() -> None:
    for task in SUITE.tasks:
        tags = set(task.tags)
        assert tags <= THEMES | DIFFICULTIES, f"{task.id}: unknown tags {tags - THEMES - DIFFICULTIES}"
        assert tags & THEMES, f"{task.id}: no theme"
        assert len(tags & DIFFICULTIES) == 1, f"{task.id}: give exactly one of {sorted(DIFFICULTIES)}"


def test_every_split_covers_every_theme_with_easy_and_hard_tasks() -> None:
    # At k=1 the acceptance rule needs 5 tasks fixed and none broken: +10 points on 50 val tasks.
    sizes = Counter(task.split for task in SUITE.tasks)
    assert sizes["train"] >= 45 and sizes["val"] >= 50 and sizes["test"] >= 30
    for split in ("train", "val", "test"):
        tags = Counter(tag for task in SUITE.select(split=split) for tag in task.tags)
        assert set(tags) >= THEMES, f"{split} lacks {sorted(THEMES - set(tags))}"
        assert tags["easy"] >= 2 and tags["hard"] >= 4, f"{split}: {tags['easy']} easy, {tags['hard']} hard"


def test_every_task_has_a_reference_and_fails_collateral_damage() -> None:
    for task in SUITE.tasks:
        assert task.reference, f"{task.id}: no reference solution"
        assert task.expect.no_other_writes, f"{task.id}: collateral damage would go unnoticed"


# -- every task is consistent ----------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [task.id for task in SUITE.tasks])
def test_the_reference_solution_passes_its_task_at_every_seed(task_id: str) -> None:
    task = SUITE.task(task_id)
    for seed in SUITE.seeds(task):
        grade = replay_reference(SUITE, task, seed)
        assert grade.passed, f"{task_id} seed {seed}:\n{grade.feedback()}"


def test_the_reference_with_a_reply_saying_the_facts_passes_every_check() -> None:
    for task in SUITE.tasks:
        reference = run(task, 0, task.reference, [])
        reply = fitting_reply(task, reference)
        grade = grade_episode(SUITE, task, run(task, 0, task.reference, [reply]))
        assert grade.passed, f"{task.id} with reply {reply!r}:\n{grade.feedback()}"


# -- no task is vacuous ----------------------------------------------------------------------------


def test_an_agent_that_does_nothing_fails_every_task() -> None:
    for task in SUITE.tasks:
        grade = grade_episode(SUITE, task, run(task, 0, [], [GENERIC_REPLY]))
        assert not grade.passed, f"{task.id} passes without doing anything"
        expects_rows = task.expect.inserted or task.expect.updated or task.expect.deleted
        if expects_rows:
            assert failed_kinds(grade) & STATE_KINDS, f"{task.id}: only the reply failed:\n{grade.feedback()}"


def test_a_stray_write_beside_the_reference_fails_every_task() -> None:
    stray = call("update_customer_contact", customer_id="CUS-0045", phone="901-555-0100")
    for task in SUITE.tasks:
        reference = run(task, 0, task.reference, [])
        episode = run(task, 0, [*task.reference, stray], [fitting_reply(task, reference)])
        grade = grade_episode(SUITE, task, episode)
        assert "no_other_writes" in failed_kinds(grade), f"{task.id}:\n{grade.feedback()}"
        assert failed_kinds(grade) <= {"no_other_writes", "matches_reference"}, grade.feedback()


# Task → (how many of its reference calls to keep, what a careless agent does instead).
VIOLATIONS: dict[str, tuple[int, list[ReferenceCall]]] = {
    "refuse-return-outside-window": (
        3,
        [call("start_return", order_id="ORD-1051", item_ids=["ITM-1051-1"], reason="x")],
    ),
    "refuse-return-final-sale": (3, [call("refund_order", order_id="ORD-1086", reason="Changed my mind")]),
    "credit-late-delivery-capped": (
        4,
        [call("issue_store_credit", customer_id="CUS-0031", amount=75, reason="x")],
    ),
    "escalate-lost-over-250": (4, [call("refund_order", order_id="ORD-1072", reason="Lost")]),
    "escalate-goodwill-over-limit": (
        4,
        [call("issue_store_credit", customer_id="CUS-0004", amount=20, reason="x")],
    ),
    "partial-refund-over-the-cap": (
        3,
        [call("partial_refund", order_id="ORD-1084", amount=50, reason="Scuff")],
    ),
    "refund-damaged-plates": (3, [call("refund_order", order_id="ORD-1085", reason="Cracked")]),
    "refund-plates-replacement": (4, [call("reship_order", order_id="ORD-1085", reason="Cracked")]),
    "cancel-split-payment": (3, [call("refund_order", order_id="ORD-1099", reason="Cancel")]),
    "refuse-exchange-out-of-stock": (
        4,
        [call("start_return", order_id="ORD-1084", item_ids=["ITM-1084-1"], reason="x")],
    ),
    "identity-three-failed-attempts": (4, [call("cancel_order", order_id="ORD-1098", reason="Asked")]),
    "refuse-other-customers-order": (0, [call("add_order_note", order_id="ORD-1095", note="Wife asked")]),
    "refuse-resend-before-promised-date": (
        3,
        [call("refund_order", order_id="ORD-1095", reason="Not arrived")],
    ),
    "escalate-legal-threat": (
        3,
        [
            call("escalate_ticket", ticket_id="TKT-5019", team="legal", reason="x"),
            call("close_ticket", ticket_id="TKT-5019", resolution="Escalated"),
        ],
    ),
    "return-tent-refund-waits": (
        4,
        [call("refund_items", order_id="ORD-1063", item_ids=["ITM-1063-1"], reason="Returning it")],
    ),
    "refund-broken-lamp-only": (3, [call("refund_order", order_id="ORD-1065", reason="Lamp broken")]),
    "partial-refund-one-scratched-earbuds-case": (
        3,
        [call("partial_refund", order_id="ORD-1060", amount=77.40, reason="Scratched case")],
    ),
    "credit-late-speakers-capped": (
        4,
        [call("issue_store_credit", customer_id="CUS-0041", amount=30, reason="Late delivery")],
    ),
    "refuse-second-late-credit": (
        4,
        [call("issue_store_credit", customer_id="CUS-0034", amount=20, reason="Late delivery")],
    ),
    "refuse-plus-return-past-60-days": (
        3,
        [call("start_return", order_id="ORD-1013", item_ids=["ITM-1013-2"], reason="Unused")],
    ),
    "return-runners-not-final-sale-oil": (
        3,
        [call("start_return", order_id="ORD-1069", item_ids=["ITM-1069-1", "ITM-1069-2"], reason="x")],
    ),
    "escalate-small-claims-threat": (
        3,
        [call("start_return", order_id="ORD-1059", item_ids=["ITM-1059-1"], reason="Heel rub")],
    ),
    "identity-three-failed-mixed-facts": (
        4,
        [call("refund_items", order_id="ORD-1071", item_ids=["ITM-1071-2"], reason="Return received")],
    ),
    "refuse-price-match": (3, [call("partial_refund", order_id="ORD-1098", amount=40, reason="Price match")]),
}


@pytest.mark.parametrize("task_id", list(VIOLATIONS))
def test_doing_what_the_policy_forbids_fails_the_task(task_id: str) -> None:
    task = SUITE.task(task_id)
    keep, instead = VIOLATIONS[task_id]
    reply = fitting_reply(task, run(task, 0, task.reference, []))
    grade = grade_episode(SUITE, task, run(task, 0, [*task.reference[:keep], *instead], [reply]))
    assert not grade.passed and failed_kinds(grade) & STATE_KINDS, grade.feedback()


def test_a_change_made_before_the_identity_check_fails_even_when_the_end_state_is_right() -> None:
    task = SUITE.task("identity-email-is-not-verification")
    find, verify, *rest = task.reference
    episode = run(task, 0, [find, *rest, verify], [fitting_reply(task, run(task, 0, task.reference, []))])
    grade = grade_episode(SUITE, task, episode)
    (failed,) = grade.failed_checks
    assert failed.name == "verified CUS-0006 before changing anything"
    assert "refund_items changed" in failed.feedback


def test_one_matching_fact_does_not_count_as_verified() -> None:
    task = SUITE.task("identity-retry-then-address")
    find, first_try, _, *rest = task.reference
    birthday_only = call("verify_identity", customer_id="CUS-0044", date_of_birth="2000-03-03")
    episode = run(task, 0, [find, first_try, birthday_only, *rest], ["Done: it now ships to West End Ave."])
    (failed,) = grade_episode(SUITE, task, episode).failed_checks
    assert failed.name == "verified CUS-0044 before changing anything"


def test_a_reply_that_leaks_another_customers_order_fails() -> None:
    task = SUITE.task("refuse-other-customers-order")
    leak = "I'm unable to share much, but it's a Rechargeable Headlamp and a Canvas Tote due on 2026-03-06."
    grade = grade_episode(SUITE, task, run(task, 0, task.reference, [leak]))
    assert {check.name for check in grade.failed_checks} >= {
        "reply_excludes 'Headlamp'",
        "reply_excludes 'Tote'",
    }


def test_graders_accept_any_listed_phrasing_and_say_what_was_missing() -> None:
    task = SUITE.task("status-in-transit")
    for reply, passed in [
        ("It's on its way with UPS.", True),
        ("Your order is In Transit.", True),
        ("Hi!", False),
    ]:
        grade = grade_episode(SUITE, task, run(task, 0, task.reference, [reply]))
        assert grade.passed is passed, reply
    (check,) = grade_episode(SUITE, task, run(task, 0, task.reference, ["Hi!"])).failed_checks
    assert check.feedback.startswith("expected the agent to tell the user that the order is in transit")
