"""Every grader kind on hand-written diffs and transcripts: passing, failing, and the feedback lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minidesk.agent import SUITE
from minidesk.world import world

from atoll.evals import (
    Check,
    Grade,
    GraderDefinitionError,
    GraderError,
    Matcher,
    grade_episode,
    grader,
    load_suite,
    replay_reference,
    values_equal,
)
from atoll.evals.graders._reference import ReferenceCall, check_matches_reference, replay, solve
from atoll.evals.graders._replies import check_replies
from atoll.evals.graders._state import (
    Accounted,
    UpdateExpect,
    check_no_other_writes,
    check_rows,
    check_unchanged,
    check_updated,
)
from atoll.harnesses import Episode, Event
from atoll.worlds import Diff, RowUpdate, TableDiff

KEYS = {"refunds": ["id"], "orders": ["id"], "customers": ["id"], "notes": ["id"]}


def row(**values: object) -> dict[str, Matcher]:
    return {column: Matcher.model_validate(value) for column, value in values.items()}


def refund_diff(amount: float = 59.99, order: str = "ORD-1") -> Diff:
    return Diff(
        tables={
            "refunds": TableDiff(
                inserted=[{"id": "RF-AAAA", "order_id": order, "amount": amount, "reason": "damaged"}]
            ),
            "orders": TableDiff(
                updated=[
                    RowUpdate(key={"id": order}, before={"status": "delivered"}, after={"status": "refunded"})
                ]
            ),
        }
    )


# -- value matchers ------------------------------------------------------------------------------


def test_each_value_matcher_accepts_what_it_describes_and_rejects_the_rest() -> None:
    cases = [
        ({"approx": 59.99, "tol": 0.01}, 59.995, 59.5, "59.99±0.01"),
        ({"pattern": "^RF-"}, "RF-7K2M", "SC-1", "matching /^RF-/"),
        ({"one_of": ["refunded", "cancelled"]}, "cancelled", "shipped", "one of ['refunded', 'cancelled']"),
        ({"any": True}, "x", None, "any value"),
        ({"absent": True}, None, "x", "NULL"),
        ("ORD-1", "ORD-1", "ORD-2", "'ORD-1'"),
    ]
    for spec, good, bad, described in cases:
        matcher = Matcher.model_validate(spec)
        assert matcher.matches(good) and not matcher.matches(bad), spec
        assert matcher.describe() == described


def test_a_plain_number_matches_within_half_a_cent_and_its_text_form() -> None:
    assert values_equal(59.99, 59.994) and not values_equal(59.99, 59.996)
    assert values_equal(94110, "94110") and values_equal(1, True)
    assert not values_equal("1.0", "1") and not values_equal(None, 0)


@given(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-0.0049, 0.0049))
def test_numbers_closer_than_the_tolerance_are_equal(value: float, delta: float) -> None:
    assert values_equal(value, value + delta)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"approx": "a lot"}, "approx needs a number"),
        ({"pattern": "("}, "not a valid regular expression"),
        ({"any": False}, "write {any: true}"),
        ({"tol": 1, "pattern": "x"}, "'tol' goes with 'approx' only"),
        ({"approx": 1, "pattern": "x"}, "a value matcher is a plain value or one of"),
    ],
)
def test_a_malformed_matcher_says_what_is_wrong(spec: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Matcher.model_validate(spec)


# -- declarative state checks ------------------------------------------------------------------------


@given(
    st.lists(
        st.fixed_dictionaries(
            {"order_id": st.sampled_from(["ORD-1", "ORD-2"]), "amount": st.sampled_from([5.0, 9.5])}
        ),
        min_size=1,
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_expecting_any_subset_of_the_inserted_rows_in_any_order_passes(rows: list[dict], rng) -> None:
    inserted = [{"id": f"RF-{i}", **values} for i, values in enumerate(rows)]
    expected = [row(**r) for r in rng.sample(rows, rng.randint(1, len(rows)))]
    diff = Diff(tables={"refunds": TableDiff(inserted=inserted)})
    checks = check_rows("inserted", {"refunds": expected}, diff, KEYS, Accounted())
    assert all(check.passed for check in checks)


def test_an_expected_inserted_row_passes_when_a_new_row_matches_its_columns() -> None:
    accounted = Accounted()
    (check,) = check_rows(
        "inserted",
        {"refunds": [row(order_id="ORD-1", amount={"approx": 59.99})]},
        refund_diff(),
        KEYS,
        accounted,
    )
    assert check.passed and check.name == "inserted refunds[0]"
    assert check.feedback == "inserted refunds RF-AAAA with {order_id='ORD-1', amount=59.99±0.005}"
    assert accounted.inserted["refunds"] == {0}


def test_a_missing_inserted_row_names_the_closest_row_and_its_wrong_values() -> None:
    (check,) = check_rows(
        "inserted",
        {"refunds": [row(order_id="ORD-1", amount={"approx": 59.99, "tol": 0.01})]},
        refund_diff(49.99),
        KEYS,
        Accounted(),
    )
    assert not check.passed
    assert check.feedback == (
        "expected a refunds row with {order_id='ORD-1', amount=59.99±0.01} to be inserted; 1 refunds row(s) were "
        "inserted, the closest (RF-AAAA) has amount is 49.99, expected 59.99±0.01"
    )
    (nothing,) = check_rows("inserted", {"refunds": [row(order_id="ORD-1")]}, Diff(), KEYS, Accounted())
    assert nothing.feedback.endswith("; no refunds row was inserted")


def test_two_expected_rows_need_two_distinct_inserted_rows() -> None:
    checks = check_rows(
        "inserted",
        {"refunds": [row(order_id="ORD-1"), row(amount={"any": True})]},
        refund_diff(),
        KEYS,
        Accounted(),
    )
    assert [c.passed for c in checks].count(True) == 1


def test_an_expected_update_checks_the_changed_columns_of_the_keyed_row() -> None:
    good = UpdateExpect(key=row(id="ORD-1"), after=row(status="refunded"))
    (check,) = check_updated({"orders": [good]}, refund_diff(), KEYS, Accounted())
    assert check.passed and check.feedback == "updated orders ORD-1: status 'delivered'→'refunded'"

    wrong = UpdateExpect(key=row(id="ORD-1"), after=row(status="cancelled", total=0))
    (check,) = check_updated({"orders": [wrong]}, refund_diff(), KEYS, Accounted())
    assert not check.passed
    assert check.feedback == (
        "expected orders {id='ORD-1'} to change to {status='cancelled', total=0}; status became 'refunded', "
        "expected 'cancelled'; total did not change, expected 0"
    )
    (untouched,) = check_updated(
        {"orders": [UpdateExpect(key=row(id="ORD-9"), after=row(status="x"))]},
        refund_diff(),
        KEYS,
        Accounted(),
    )
    assert untouched.feedback.endswith("; it did not change")


def test_an_expected_deletion_matches_the_deleted_row_by_its_columns() -> None:
    diff = Diff(tables={"notes": TableDiff(deleted=[{"id": 1, "order_id": "ORD-1", "body": "gift wrap"}])})
    checks = check_rows("deleted", {"notes": [row(id=1), row(id=2)]}, diff, KEYS, Accounted())
    assert [c.passed for c in checks] == [True, False]
    assert checks[0].feedback == "deleted notes 1 with {id=1}"
    assert checks[1].feedback == (
        "expected a notes row with {id=2} to be deleted; 1 notes row(s) were deleted, the closest (1) has id is 1, expected 2"
    )


def test_a_table_that_must_not_change_fails_with_what_changed() -> None:
    checks = check_unchanged(["customers", "orders"], refund_diff(), KEYS)
    assert [c.passed for c in checks] == [True, False]
    assert (
        checks[1].feedback
        == "expected orders not to change; 1 updated (ORD-1: status 'delivered'→'refunded')"
    )


def test_collateral_damage_lists_the_writes_no_expectation_explains() -> None:
    diff = refund_diff()
    diff.tables["customers"] = TableDiff(
        updated=[RowUpdate(key={"id": "C2"}, before={"credit": 5.0}, after={"credit": 25.0})]
    )
    diff.tables["notes"] = TableDiff(deleted=[{"id": 1, "order_id": "ORD-1", "body": "gift wrap"}])
    accounted = Accounted()
    check_rows("inserted", {"refunds": [row(order_id="ORD-1")]}, diff, KEYS, accounted)
    check_updated(
        {"orders": [UpdateExpect(key=row(id="ORD-1"), after=row(status="refunded"))]}, diff, KEYS, accounted
    )
    check = check_no_other_writes(diff, accounted, KEYS)
    assert not check.passed
    assert (
        check.feedback
        == "expected no writes beyond the expected ones; also wrote ~customers C2 (credit 5→25), −notes 1"
    )
    assert check_no_other_writes(Diff(), Accounted(), KEYS).feedback == "the world was not changed"


# -- the reference replay ---------------------------------------------------------------------------

REFUND = [ReferenceCall.model_validate({"refund_order": {"order_id": "ORD-1", "reason": "damaged"}})]


def agent_diff(calls: list[dict], *, seed: int = 0, clock: str = "fixed") -> Diff:
    _, diff = replay(world, "tiny", seed, clock, [ReferenceCall.model_validate(c) for c in calls])
    return diff


def test_the_same_writes_in_another_order_match_the_reference_despite_other_ids() -> None:
    reference = solve(world, "tiny", 0, "fixed", REFUND, KEYS)
    # A note first shifts the integer key of the refund's note; a refund of another order, undone by
    # nothing, would not match, but here the agent only adds reads and reorders.
    diff = agent_diff(
        [{"get_order": {"order_id": "ORD-1"}}, {"refund_order": {"order_id": "ORD-1", "reason": "damaged"}}],
        seed=5,
    )
    assert diff.table("refunds").inserted[0]["id"] != reference.diff.table("refunds").inserted[0]["id"]
    check, accounted = check_matches_reference(reference, diff, {}, KEYS)
    assert check.passed, check.feedback
    assert check.feedback == "the end state matches the reference solution's (3 changed row(s))"
    assert accounted.inserted["refunds"] == {0} and accounted.inserted["notes"] == {0}


def test_clock_stamps_are_ignored_when_an_agent_made_more_calls_on_a_ticking_clock() -> None:
    reference = solve(world, "tiny", 0, "tick", REFUND, KEYS)
    assert reference.volatile == {"refunds": {"created_at"}, "orders": {"updated_at"}}
    diff = agent_diff(
        [
            {"get_order": {"order_id": "ORD-1"}},
            *[{"refund_order": {"order_id": "ORD-1", "reason": "damaged"}}],
        ],
        clock="tick",
    )
    check, _ = check_matches_reference(reference, diff, {}, KEYS)
    assert check.passed, check.feedback


def test_a_different_end_state_fails_with_each_difference() -> None:
    reference = solve(world, "tiny", 0, "fixed", REFUND, KEYS)
    diff = agent_diff(
        [
            {"refund_order": {"order_id": "ORD-1", "reason": "changed mind"}},
            {"give_credit": {"customer_id": "C2", "amount": 20}},
        ]
    )
    check, accounted = check_matches_reference(reference, diff, {}, KEYS)
    assert not check.passed
    assert check.feedback.startswith("the end state differs from the reference solution's: ")
    assert "customers C2: credit became 25, the reference leaves it" in check.feedback
    assert "reason is 'changed mind', expected 'damaged'" in check.feedback
    assert "customers" not in accounted.updated or not accounted.updated["customers"]


def test_a_missing_write_and_an_ignored_column_are_reported_and_skipped() -> None:
    reference = solve(world, "tiny", 0, "fixed", REFUND, KEYS)
    check, _ = check_matches_reference(reference, Diff(), {}, KEYS)
    assert "missing new refunds row {id='⟨new refunds⟩', order_id='ORD-1', amount=59.99" in check.feedback
    assert "orders ORD-1: expected status→'refunded', it did not change" in check.feedback
    other = agent_diff([{"refund_order": {"order_id": "ORD-1", "reason": "broken"}}])
    ignoring = {"refunds": {"reason"}, "notes": {"body"}}
    assert check_matches_reference(reference, other, ignoring, KEYS)[0].passed


# -- replies --------------------------------------------------------------------------------------


def test_reply_checks_read_every_message_to_the_user_case_insensitively() -> None:
    replies = ["Let me look.", "Your REFUND of  59.99 is on its way; no store credit needed."]
    checks = check_replies(replies, ["refund of 59.99", "tracking"], ["store credit", "voucher"])
    assert [c.passed for c in checks] == [True, False, False, True]
    assert checks[1].feedback == (
        "expected the agent to tell the user 'tracking'; its replies never say it (last reply: "
        "'Your REFUND of  59.99 is on its way; no store credit needed.')"
    )
    assert checks[2].feedback.startswith("the agent said 'store credit', which it must not: '…")
    assert check_replies([], ["hello"], [])[0].feedback.endswith("; it never replied")


# -- Python graders ---------------------------------------------------------------------------------


def test_a_grader_with_neither_signature_is_refused_at_registration() -> None:
    with pytest.raises(
        GraderDefinitionError, match=r"starts with \(task, episode\) or \(fixture, diff, transcript\)"
    ):

        @grader
        def wrong(episode, task):  # pragma: no cover - never called
            return []


def episode_of(diff: Diff, *replies: str, seed: int = 0, error: str | None = None) -> Episode:
    events = [Event(kind="user", agent="desk", content="My order ORD-1 arrived broken.")]
    events += [Event(kind="assistant", agent="desk", content=reply) for reply in replies]
    return Episode(
        harness="h",
        harness_hash="x",
        model="m",
        world="minidesk",
        fixture="tiny",
        seed=seed,
        events=events,
        diff=diff,
        stop_reason="model_error" if error else "reply",
        error=error,
    )


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


def test_a_whole_episode_is_graded_check_by_check(suite) -> None:
    diff = agent_diff([{"refund_order": {"order_id": "ORD-1", "reason": "damaged"}}])
    grade = grade_episode(suite, suite.task("refund-damaged"), episode_of(diff, "Refund of 59.99 sent."))
    assert grade.passed and grade.score == 1.0
    assert [c.kind for c in grade.checks] == [
        "inserted",
        "updated",
        "unchanged",
        "matches_reference",
        "no_other_writes",
        "reply_contains",
        "reply_excludes",
        "python",
    ]

    bad = grade_episode(
        suite, suite.task("refund-damaged"), episode_of(diff, "Here is some store credit instead.")
    )
    assert not bad.passed and bad.score == pytest.approx(5 / 8)
    assert "✗ mentions amount: expected the reply to mention 59.99; it does not" in bad.feedback()


def test_a_grader_with_arguments_gets_them_from_the_task(suite) -> None:
    task = suite.task("refuse-refund-twice")
    long_reply = "Sorry " + "very " * 40
    grade = grade_episode(suite, task, episode_of(Diff(), long_reply, seed=3))
    check = grade.checks[-1]
    assert (check.name, check.passed, check.weight) == ("reply under 30 words", False, 0.5)
    assert grade.score == pytest.approx(2 / 2.5)


def test_a_grader_that_raises_is_a_suite_bug_not_a_failed_check(suite) -> None:
    suite.graders["mentions_amount"] = grader(lambda fixture, diff, transcript: 1 / 0, name="mentions_amount")
    try:
        with pytest.raises(
            GraderError,
            match="grader mentions_amount on task 'refund-damaged' seed 0 raised ZeroDivisionError",
        ):
            grade_episode(suite, suite.task("refund-damaged"), episode_of(refund_diff(), "ok"))
    finally:
        del suite.graders["mentions_amount"]


def test_an_errored_episode_scores_zero_with_the_error_as_its_only_check(suite) -> None:
    grade = grade_episode(suite, suite.task("cancel-shipped"), episode_of(Diff(), error="scripted: down"))
    assert (grade.score, grade.passed) == (0.0, False)
    assert grade.checks[0].feedback == "the episode did not finish (model_error): scripted: down"


def test_the_score_is_the_weighted_mean_and_weightless_checks_only_inform() -> None:
    checks = [
        Check(name="a", passed=True, feedback="", weight=3),
        Check(name="b", passed=False, feedback="", weight=1),
    ]
    assert Grade.from_checks(checks).score == 0.75
    note = Check(name="note", passed=False, feedback="just so you know", weight=0)
    assert Grade.from_checks([checks[0], note]).passed


def test_the_reference_replay_of_every_task_passes_its_own_state_checks(suite) -> None:
    for task in suite.tasks:
        if task.reference:
            for seed in suite.seeds(task):
                grade = replay_reference(suite, task.id, seed)
                assert grade.passed, grade.feedback()


def test_writes_to_audit_tables_are_neither_collateral_damage_nor_a_reference_mismatch(tmp_path) -> None:
    task = (
        "- id: refund\n  split: val\n  fixture: tiny\n  user: {message: Refund ORD-1}\n"
        "  reference:\n    - refund_order: {order_id: ORD-1, reason: damaged}\n"
        "  expect: {matches_reference: true, no_other_writes: true}\n"
    )
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text(task)
    diff = agent_diff(
        [
            {"add_note": {"order_id": "ORD-2", "body": "customer called"}},
            {"refund_order": {"order_id": "ORD-1", "reason": "damaged"}},
        ]
    )
    verdicts = {}
    for audit in ("[]", "[notes]"):
        (tmp_path / "suite.yaml").write_text(f"name: a\nworld: minidesk.world\naudit_tables: {audit}\n")
        audited = load_suite(tmp_path, world=world)
        grade = grade_episode(audited, audited.task("refund"), episode_of(diff))
        verdicts[audit] = [(c.name, c.passed) for c in grade.checks]
    assert verdicts["[]"] == [("matches_reference", False), ("no_other_writes", False)]
    assert verdicts["[notes]"] == [("matches_reference", True), ("no_other_writes", True)]
