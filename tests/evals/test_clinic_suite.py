"""The shipped clinic suite and its start harness: a second world the optimizer knows nothing about.

Every task's reference solution must pass the task at every seed, an agent that does nothing or writes
one row too many must fail, and the policy violations a task is about (the wrong vet, a fee waived for
work, a change before the identity check) must fail. The start harness loads and drives the world.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from suite_episodes import played

from atoll.evals import Grade, ReferenceCall, Task, evaluate, grade_episode, load_suite, replay_reference
from atoll.harnesses import Episode, load_harness, run_episode
from atoll.harnesses.models import LOCAL_DEFAULT_MODEL, ScriptedModel

TEXT_MODEL = "local/gemma-3-270m"  # an embedded base model: the text protocol

ROOT = Path(__file__).resolve().parents[2]
SUITE = load_suite(ROOT / "evals" / "clinic")
HARNESS = ROOT / "harnesses" / "clinic_agent"
THEMES = {
    "lookup",
    "booking",
    "cancellation",
    "reschedule",
    "fee",
    "refund",
    "identity",
    "refusal",
    "emergency",
}
DIFFICULTIES = {"easy", "medium", "hard"}
STATE_KINDS = {"inserted", "updated", "deleted", "unchanged", "no_other_writes", "matches_reference"}
GENERIC_REPLY = "Thanks for calling Harborview! Let me look into that for you."


def run(task: Task, seed: int, calls: list[ReferenceCall], replies: list[str]) -> Episode:
    return played(SUITE, task, seed, calls, replies)


def fitting_reply(task: Task) -> str:
    """A reply that says what the task asks to be said: its phrases, a decline."""
    said = list(task.expect.reply_contains)
    for spec in task.expect.graders:
        if spec.name == "reply_mentions":
            said.append(spec.args["any_of"][0])
        elif spec.name == "declines":
            said.append("I'm unable to do that")
    return ". ".join(said) + "."


def failed_kinds(grade: Grade) -> set[str]:
    return {check.kind for check in grade.failed_checks}


def call(tool: str, **arguments: Any) -> ReferenceCall:
    return ReferenceCall(tool=tool, arguments=arguments)


# -- size and coverage ---------------------------------------------------------------------------


def test_the_suite_has_36_tasks_split_14_11_11_on_one_fixture() -> None:
    ids = [task.id for task in SUITE.tasks]
    assert len(ids) == 36 and len(set(ids)) == 36
    assert Counter(task.split for task in SUITE.tasks) == {"train": 14, "val": 11, "test": 11}
    assert {task.fixture for task in SUITE.tasks} == {"harborview"}


def test_every_task_names_its_themes_and_one_difficulty() -> None:
    for task in SUITE.tasks:
        tags = set(task.tags)
        assert tags <= THEMES | DIFFICULTIES, f"{task.id}: unknown tags {tags - THEMES - DIFFICULTIES}"
        assert tags & THEMES, f"{task.id}: no theme"
        assert len(tags & DIFFICULTIES) == 1, f"{task.id}: give exactly one of {sorted(DIFFICULTIES)}"


def test_every_split_mixes_the_kinds_of_request() -> None:
    for split in ("train", "val", "test"):
        tags = Counter(tag for task in SUITE.select(split=split) for tag in task.tags)
        assert set(tags) >= THEMES, f"{split} lacks {sorted(THEMES - set(tags))}"
        assert tags["easy"] >= 2 and tags["hard"] >= 3, f"{split}: {tags['easy']} easy, {tags['hard']} hard"


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
        reply = fitting_reply(task)
        grade = grade_episode(SUITE, task, run(task, 0, task.reference, [reply]))
        assert grade.passed, f"{task.id} with reply {reply!r}:\n{grade.feedback()}"


# -- no task is vacuous ----------------------------------------------------------------------------


def test_an_agent_that_does_nothing_fails_every_task() -> None:
    for task in SUITE.tasks:
        grade = grade_episode(SUITE, task, run(task, 0, [], [GENERIC_REPLY]))
        assert not grade.passed, f"{task.id} passes without doing anything"
        if task.expect.inserted or task.expect.updated or task.expect.deleted:
            assert failed_kinds(grade) & STATE_KINDS, f"{task.id}: only the reply failed:\n{grade.feedback()}"


def test_a_stray_write_beside_the_reference_fails_every_task() -> None:
    stray = call("add_note", client_id="CLI-0030", body="Called about nothing in particular.")
    for task in SUITE.tasks:
        grade = grade_episode(SUITE, task, run(task, 0, [*task.reference, stray], [fitting_reply(task)]))
        assert "no_other_writes" in failed_kinds(grade), f"{task.id}:\n{grade.feedback()}"
        assert failed_kinds(grade) <= {"no_other_writes", "matches_reference"}, grade.feedback()


# Task → (how many of its reference calls to keep, what a careless agent does instead).
VIOLATIONS: dict[str, tuple[int, list[ReferenceCall]]] = {
    # Dr. Osei is free at the same time but does not see rabbits.
    "book-rabbit-exotics-vet": (
        4,
        [
            call(
                "book_appointment",
                pet_id="PET-0005",
                slot_id="SLT-0415-1100-01",
                service="checkup",
                reason="x",
            )
        ],
    ),
    # Dr. Berg, as asked, does not vaccinate.
    "book-vaccination-other-vet": (
        4,
        [
            call(
                "book_appointment",
                pet_id="PET-0007",
                slot_id="SLT-0416-1000-02",
                service="vaccination",
                reason="x",
            )
        ],
    ),
    "refuse-vaccine-too-young": (
        3,
        [
            call(
                "book_appointment",
                pet_id="PET-0006",
                slot_id="SLT-0415-1100-01",
                service="vaccination",
                reason="x",
            )
        ],
    ),
    "refuse-surgery-book-checkup": (
        4,
        [
            call(
                "book_appointment",
                pet_id="PET-0020",
                slot_id="SLT-0416-1400-02",
                service="surgery",
                reason="Spay",
            )
        ],
    ),
    # Work is not an emergency: the fee stands.
    "cancel-late-no-waiver-for-work": (
        4,
        [call("waive_fee", invoice_id="INV-4054", reason="Client asked")],
    ),
    "refuse-waive-forgot": (3, [call("waive_fee", invoice_id="INV-3001", reason="Forgot")]),
    # A duplicate $320 charge is the practice manager's, not the desk's.
    "refund-duplicate-to-manager": (3, [call("refund_payment", invoice_id="INV-3005", reason="Duplicate")]),
    # Two failed identity checks: nothing changes.
    "identity-wrong-zip-twice": (3, [call("cancel_appointment", appointment_id="APT-2008", reason="Asked")]),
    # An emergency is not booked into a routine slot.
    "emergency-chocolate": (
        1,
        [
            call(
                "book_appointment",
                pet_id="PET-0019",
                slot_id="SLT-0414-0900-01",
                service="checkup",
                reason="x",
            )
        ],
    ),
    # Thursday 11:00 with Dr. Berg is free, but he does not vaccinate.
    "reschedule-needs-vaccinating-vet": (
        4,
        [call("reschedule_appointment", appointment_id="APT-2015", slot_id="SLT-0416-1100-02")],
    ),
    # The other James Miller's appointment.
    "cancel-namesake-free": (3, [call("cancel_appointment", appointment_id="APT-2005", reason="Asked")]),
}


@pytest.mark.parametrize("task_id", list(VIOLATIONS))
def test_doing_what_the_policy_forbids_fails_the_task(task_id: str) -> None:
    task = SUITE.task(task_id)
    keep, instead = VIOLATIONS[task_id]
    grade = grade_episode(
        SUITE, task, run(task, 0, [*task.reference[:keep], *instead], [fitting_reply(task)])
    )
    assert not grade.passed and failed_kinds(grade) & STATE_KINDS, grade.feedback()


def test_a_change_made_before_the_identity_check_fails_even_when_the_end_state_is_right() -> None:
    task = SUITE.task("cancel-late-with-fee")
    find, verify, *rest = task.reference
    grade = grade_episode(SUITE, task, run(task, 0, [find, *rest, verify], [fitting_reply(task)]))
    (failed,) = grade.failed_checks
    assert failed.name == "verified CLI-0002 before changing anything"
    assert "cancel_appointment changed" in failed.feedback


def test_a_reply_that_leaks_another_clients_bill_fails() -> None:
    task = SUITE.task("refuse-partners-bill")
    grade = grade_episode(SUITE, task, run(task, 0, task.reference, ["I can't say much, but it was $320."]))
    assert [check.name for check in grade.failed_checks] == ["reply_excludes '320'"]


# -- the world's rules that the tasks rest on ------------------------------------------------------


def test_a_late_cancellation_adds_the_fee_and_an_early_one_does_not() -> None:
    with SUITE.world.instance("harborview") as instance:
        late = instance.call("cancel_appointment", appointment_id="APT-2002", reason="Work")
        early = instance.call("cancel_appointment", appointment_id="APT-2005", reason="Away")
        assert late.value["fee"] == {
            "invoice_id": "INV-4054",
            "kind": "late_cancellation",
            "amount": 35.0,
            "status": "open",
        }
        assert early.value["fee"] is None and early.value["hours_before_start"] == 25.5
        taken = instance.call(
            "book_appointment", pet_id="PET-0001", slot_id="SLT-0416-1000-01", service="checkup", reason="x"
        )
        assert not taken.ok and taken.error.type == "slot_taken"
        paid = instance.call("waive_fee", invoice_id="INV-3003", reason="x")
        assert not paid.ok and "refund_payment" in paid.error.message


# -- the start harness -----------------------------------------------------------------------------


def act(tool: str, **args: object) -> str:
    return " " + json.dumps({"tool": tool, "args": args})


def test_the_start_harness_loads_on_the_embedded_model_and_native_protocol() -> None:
    harness = load_harness(HARNESS)
    assert harness.world.name == "clinic" and harness.config.model == LOCAL_DEFAULT_MODEL
    assert harness.protocol_for("desk", LOCAL_DEFAULT_MODEL) == "native"
    assert harness.entry == "desk" and harness.agent("desk").delegates == ["appointments"]
    assert harness.protocol_for("desk", TEXT_MODEL) == "text"
    assert harness.protocol_for("appointments", "openai/gpt-4o-mini") == "native"


def test_no_demo_carries_a_val_or_test_client() -> None:
    """Demos are written after train tasks with made-up clients: nothing of a held-out task leaks."""
    harness = load_harness(HARNESS)
    demos = " ".join(harness.files()[f"demos/{name}.yaml"] for name in harness.demos).casefold()
    for task in SUITE.tasks:
        if task.split == "train":
            continue
        values = {v for call in task.reference for v in call.arguments.values() if isinstance(v, str)}
        identifying = {v for v in values if re.match(r"^[A-Z]{3}-\d|.*@|\(?\d{3}\)?[ -]\d{3}-\d{4}$", v)}
        names = {call.arguments["name"] for call in task.reference if "name" in call.arguments}
        for value in identifying | names:
            assert value.casefold() not in demos, f"a demo names {value!r} of {task.split} task {task.id}"


async def test_text_prompts_stay_small_and_chat_prompts_carry_the_whole_policy() -> None:
    harness = load_harness(HARNESS)
    for agent in harness.agents:
        single = harness.with_files(
            {"harness.yaml": harness.files()["harness.yaml"].replace("entry: desk", f"entry: {agent}")}
        )
        text = ScriptedModel([act("reply", message="ok")], name=TEXT_MODEL)
        chat = ScriptedModel(["ok"], name="openai/x")
        for model in (text, chat):
            with harness.world.instance("harborview") as instance:
                await run_episode(single, instance, model, "hello")
        prompt = "\n".join(m["content"] for m in text.requests[0].messages)
        assert len(prompt) < 5000, f"{agent}: the text prompt grew to {len(prompt)} characters"
        assert harness.world.documents["policy"].strip() in chat.requests[0].messages[0]["content"]


def test_a_scripted_model_passes_a_train_task_through_the_delegate() -> None:
    """The whole path: desk finds and verifies, hands the cancellation to the appointments agent, replies."""
    model = ScriptedModel(
        [
            act("find_client", email="marcus.webb@outlook.com"),
            act("verify_client", client_id="CLI-0002", phone="206-555-0183", zip_code="98117"),
            act(
                "delegate_to_appointments",
                request="Verified client CLI-0002 cancels Rocket's appointment today.",
            ),
            act("list_appointments", client_id="CLI-0002"),
            act("cancel_appointment", appointment_id="APT-2002", reason="Work came up"),
            act("reply", message="Cancelled APT-2002; the $35 late-cancellation fee applies."),
            act(
                "reply",
                message="Rocket's appointment is cancelled. It was less than 24 hours ahead, so a $35 fee applies.",
            ),
        ],
        name=TEXT_MODEL,
    )
    result = evaluate(HARNESS, SUITE, model=model, tasks=["cancel-late-with-fee"], seeds=[0])
    (episode,) = result.results
    assert episode.passed, episode.grade.feedback()
    assert [c.tool for c in episode.episode.calls] == [
        "find_client",
        "verify_client",
        "list_appointments",
        "cancel_appointment",
    ]
