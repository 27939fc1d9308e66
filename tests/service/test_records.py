"""Records of served calls: redaction before the write, sessions, feedback merging, retention, the feedback
routes, `optimize records` and drafting tasks from records."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from rich.console import Console
from typer.testing import CliRunner

import atoll.commands.records as records_cli
import atoll.service._records as records_module
import atoll.service._tasks as tasks_module
from atoll.cli import app
from atoll.evals import RunStore, SuiteError, load_suite
from atoll.service import (
    FeedbackIn,
    NewRecord,
    RecordError,
    RecordPolicy,
    RecordStore,
    UnknownRecord,
    correction_phrases,
    draft_tasks,
    load_record_policy,
    parse_since,
    records_router,
    redact_text,
)
from atoll.service._records import MAX_FEEDBACK_SOURCES, SUMMARY_CHARS, RecordSummary
from atoll.worlds import ProjectError

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w-]+")


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "support_agent", "messages": list(messages), **extra}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer(text: str, **extra: Any) -> dict[str, Any]:
    """A chat.completion body as the endpoint returns it (with a `refusal: null` a client may drop)."""
    message = {"role": "assistant", "content": text, "refusal": None, **extra}
    return {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def new(request: dict[str, Any], response: dict[str, Any] | None, **fields: Any) -> NewRecord:
    values: dict[str, Any] = {
        "harness": "support_agent",
        "agent": "desk",
        "release": 3,
        "release_hash": "abc123",
        "model": "scripted",
        "request": request,
        "response": response,
        "prompt_hash": "p1",
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "latency_ms": 42.0,
    }
    return NewRecord(**{**values, **fields})


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    with RunStore(tmp_path / "atoll.sqlite") as opened:
        yield opened


@pytest.fixture
def records(store: RunStore) -> RecordStore:
    return RecordStore(store, RecordPolicy(redact=["email", "phone", "card"]))


def raw_rows(store: RunStore, table: str) -> list[tuple[Any, ...]]:
    """The table as SQLite holds it, read through a connection of its own."""
    with sqlite3.connect(store.path) as connection:
        return connection.execute(f"SELECT * FROM {table}").fetchall()


# -- adding and redaction -----------------------------------------------------------------------------------


def test_a_record_is_redacted_before_it_is_written(records: RecordStore, store: RunStore) -> None:
    request = chat(user("I'm ada@example.com, call me on +1 415 555 0100 about order ORD-1012"))
    response = answer("Sure ada@example.com, refunding card 4111 1111 1111 1111 on 2026-03-02 09:00:00.")
    added = records.add(new(request, response, error="timeout for ada@example.com"))

    raw = json.dumps(raw_rows(store, "records"))
    assert "ada@example.com" not in raw and "555 0100" not in raw and "4111" not in raw
    assert "[email]" in raw and "[phone]" in raw and "[card]" in raw
    assert "ORD-1012" in raw and "2026-03-02 09:00:00" in raw, "ids and times are not phone numbers"
    assert added.id.startswith("rec_") and "[email]" in added.request["messages"][0]["content"]
    assert request["messages"][0]["content"].startswith("I'm ada@"), "the caller's objects stay whole"
    assert response["choices"][0]["message"]["content"].startswith("Sure ada@")


@given(
    before=st.text(max_size=20),
    email=st.emails(),
    after=st.text(max_size=20),
)
def test_the_email_redactor_leaves_no_email(before: str, email: str, after: str) -> None:
    redacted = redact_text(f"{before} {email} {after}", ["email"])
    assert not EMAIL.search(redacted), redacted


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("call +1 415 555 0100 now", "call [phone] now"),
        ("(415) 555-0100", "[phone]"),
        ("415.555.0100", "[phone]"),
        ("+44 20 7946 0958", "[phone]"),
        ("card 4111-1111-1111-1111", "card [card]"),
        (
            "order ORD-1012 for 59.99 on 2026-03-02 09:00:00",
            "order ORD-1012 for 59.99 on 2026-03-02 09:00:00",
        ),
        ("run eval-20260302-091500-a3f9", "run eval-20260302-091500-a3f9"),
        ("not a card 4111 1111 1111 1112", "not a card 4111 1111 1111 1112"),
    ],
)
def test_phone_and_card_redactors_spare_dates_amounts_and_ids(text: str, kept: str) -> None:
    assert redact_text(text, ["phone", "card"]) == kept


# What redaction must never let reach the file, as the issue that found the leaks sent them: JSON numbers, dict
# keys, cards grouped by dots or slashes or glued to a word, phones without separators, a host without a dot,
# an address literal, a full-width at sign.
LEAKS = {
    "ada@example.com": "a dict key",
    "5500005555555559": "a card sent as a JSON number",
    "14155550199": "a phone sent as a JSON number, and as text without separators",
    "4111.1111.1111.1111": "a card grouped by dots",
    "4111/1111/1111/1111": "a card grouped by slashes",
    "4111111111111111": "a card glued to a word",
    "root@localhost": "an address without a dot",
    "carol@[192.168.1.1]": "an address literal",
    "ada＠example.com": "a full-width at sign",
    "ops@example.com": "the feedback source",
    "bob@example.com": "a feedback comment",
    # Issue 35's leaks: what the redactors themselves write (a negative number's sign), a word glued by a dash,
    # an underscore or a letter, cards split by two spaces, NBSP, a tab or an en dash, and three addresses.
    "6011000990139424": "a negative card number, and a card after `card-`",
    "14155550142": "a negative phone number",
    "5551230147": "a phone after `tel-`, `phone_` and `x`",
    "4242  4242  4242  4242": "a card split by double spaces",
    "5555\u00a05555\u00a05555\u00a04444": "a card split by NBSP",
    "5105\t1051\t0510\t5100": "a card split by tabs",
    "3782\u2013822463\u201310005": "a card split by en dashes",
    "2001:db8::1": "an IPv6 address literal",
    "heidi%40example.com": "a URL-encoded at sign",
    "quoted leak": "a quoted local part",
    "4000 0566 5566 5556": "a card right after a phone number",
    "6011111111111117": "a card in one run right after a phone number",
}


def stored_bytes(store: RunStore) -> bytes:
    """The database file and its write-ahead log, as anyone who can read them would see them."""
    return b"".join(path.read_bytes() for path in (store.path, Path(f"{store.path}-wal")) if path.exists())


def test_nothing_redaction_hides_reaches_the_database_or_its_wal(
    records: RecordStore, store: RunStore
) -> None:
    said = (
        "cards 4111.1111.1111.1111 and 4111/1111/1111/1111, ref card_4111111111111111, call 14155550199, "
        "mail root@localhost or carol@[192.168.1.1] or ada＠example.com"
    )
    said += (
        ", card-6011000990139424, tel-5551230147, phone_5551230147, x5551230147, 4242  4242  4242  4242,"
        " 5555\u00a05555\u00a05555\u00a04444, 5105\t1051\t0510\t5100, 3782\u2013822463\u201310005,"
        ' frank@[IPv6:2001:db8::1], heidi%40example.com, "quoted leak"@example.com,'
        " call 5551230199 4000 0566 5566 5556, call 5551230199 6011111111111117"
    )
    negative = {"card": -6011000990139424, "phone": -14155550142}
    request = chat(
        user(said),
        metadata={"ada@example.com": {"cc": 5500005555555559, "phone": 14155550199}, "neg": negative},
    )
    record = records.add(new(request, {**answer(said), "created": 1767225600}))
    records.add_feedback(
        FeedbackIn(
            record_ids=[record.id], passed=False, source="ops@example.com", comment="ask bob@example.com"
        )
    )
    raw = stored_bytes(store)
    leaked = {secret: why for secret, why in LEAKS.items() if secret.encode() in raw}
    assert not leaked, f"found in the stored bytes: {leaked}"
    stored = records.get(record.id)
    assert stored.request["metadata"] == {
        "[email]": {"cc": "[card]", "phone": "[phone]"},
        "neg": {"card": "-[card]", "phone": "-[phone]"},
    }
    assert stored.feedback[0].source == "[email]"
    assert stored.response["created"] == 1767225600, "Atoll's own envelope (ten digits) is no phone number"


def test_deleted_records_are_overwritten_in_the_file(store: RunStore) -> None:
    RecordStore(store)
    assert store.db.execute("PRAGMA secure_delete").fetchone()[0] == 1


def test_two_keys_redacted_alike_both_stay(records: RecordStore) -> None:
    record = records.add(
        new(chat(user("hi"), metadata={"a@example.com": 1, "b@example.com": 2}), answer("Hi."))
    )
    assert sorted(record.request["metadata"].values()) == [1, 2]


def luhn_card(body: str) -> str:
    """`body` digits completed by their Luhn check digit."""
    total = 0
    for index, char in enumerate(reversed(body)):
        value = int(char) * (1 if index % 2 else 2)
        total += value - 9 if value > 9 else value
    return body + str(-total % 10)


@given(
    body=st.text("0123456789", min_size=12, max_size=18).filter(lambda digits: digits[0] != "0"),
    separator=st.sampled_from(["", " ", "-", ".", "/", "  ", "\u00a0", "\t", "\u2013", " - "]),
    before=st.sampled_from(["", "card ", "card_", "cc:", "(", "#", "card-", "-", "x"]),
    as_number=st.booleans(),
)
def test_a_card_never_survives_whatever_its_grouping(
    body: str, separator: str, before: str, as_number: bool
) -> None:
    digits = luhn_card(body)
    grouped = separator.join(digits[i : i + 4] for i in range(0, len(digits), 4))
    value: Any = int(digits) if as_number else f"{before}{grouped} ok"
    redacted = json.dumps(records_module._redact_value({"v": value}, ["email", "phone", "card"]))
    assert digits not in redacted.replace(separator, "") if separator else digits not in redacted, redacted


@given(
    digits=st.text("0123456789", min_size=10, max_size=15),
    as_number=st.booleans(),
    before=st.sampled_from(["call ", "tel-", "phone_", "x", "-"]),
    negative=st.booleans(),
)
def test_a_phone_number_without_separators_never_survives(
    digits: str, as_number: bool, before: str, negative: bool
) -> None:
    number = int("1" + digits[1:])
    value: Any = (-number if negative else number) if as_number else f"{before}{digits} now"
    redacted = json.dumps(records_module._redact_value([value], ["phone", "card"]))
    assert not re.search(r"\d{10}", redacted), redacted


@given(
    email=st.emails(),
    at=st.sampled_from(["@", "＠", "﹫"]),
    host=st.sampled_from(["", "localhost", "[192.168.1.1]", "[::1]"]),
)
def test_an_address_never_survives_whatever_its_host(email: str, at: str, host: str) -> None:
    local, _, domain = email.rpartition("@")
    text = f"to {local}{at}{host or domain}."
    assert redact_text(text, ["email"]) == "to [email].", text


ADVERSARIAL = {
    "one local part": "a" * (1 << 20),
    "at signs": "a@" * (1 << 19),
    "dots": "a." * (1 << 19),
    "digits": "1" * (1 << 20),
    "spaced digits": "1 " * (1 << 19),
    "dashed digits": "1-" * (1 << 19),
    "plus signs": "+1" * (1 << 19),
    "brackets": "a@[1" * (1 << 18),
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_redacting_a_mebibyte_of_adversarial_text_is_well_under_a_second(
    records: RecordStore, name: str
) -> None:
    body = chat(user(ADVERSARIAL[name]))
    # CPU seconds, not wall-clock: what it guards is a pattern that backtracks for minutes, and on two
    # cores shared with another job a second of wall-clock is not a second of work.
    started = time.process_time()
    records.add(new(body, answer("ok")))
    took = time.process_time() - started
    assert took < 1.0, f"{name}: {took:.2f} CPU s to redact and store 1 MiB"


def test_adding_a_record_stays_well_under_a_millisecond(records: RecordStore) -> None:
    history = [user("hello"), {"role": "assistant", "content": "Hi!"}, user("my order ORD-1 is late")]
    records.add(new(chat(*history[:1]), answer("Hi!")))
    batches = []
    for _ in range(3):  # the best of three: a busy machine slows a batch, not the code
        started = time.perf_counter()
        for _ in range(100):
            records.add(new(chat(*history), answer("Let me look.")))
        batches.append((time.perf_counter() - started) / 100)
    assert min(batches) < 0.001, f"{min(batches) * 1e6:.0f} µs per record"


# -- sessions -----------------------------------------------------------------------------------------------


def test_a_follow_up_call_continues_the_session_it_answers(records: RecordStore) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_order", "arguments": '{"order_id":"ORD-1"}'},
    }
    first = records.add(new(chat(user("Where is ORD-1?")), answer("", tool_calls=[call])))
    # The client resends the answer without `refusal`, its arguments re-spaced, content null.
    resent = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{**call, "function": {"name": "get_order", "arguments": '{"order_id": "ORD-1"}'}}],
    }
    tool = {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'}
    second = records.add(new(chat(user("Where is ORD-1?"), resent, tool), answer("It has shipped.")))
    third = records.add(
        new(
            chat(
                user("Where is ORD-1?"),
                resent,
                tool,
                {"role": "assistant", "content": "It has shipped."},
                user("Thanks"),
            ),
            answer("You're welcome."),
        )
    )
    unrelated = records.add(new(chat(user("Where is ORD-1?")), answer("Looking.")))

    assert first.session == second.session == third.session
    assert unrelated.session != first.session, "the same opening alone is a new conversation"
    assert [r.id for r in records.list(session=first.session)] == [first.id, second.id, third.id]


def test_a_session_id_the_client_gives_wins(records: RecordStore) -> None:
    first = records.add(new(chat(user("hi")), answer("Hello.")))
    follow = chat(user("hi"), {"role": "assistant", "content": "Hello."}, user("bye"))
    named = records.add(new(follow, answer("Bye."), session="app-42"))
    assert named.session == "app-42" != first.session
    later = records.add(
        new(chat(*follow["messages"], {"role": "assistant", "content": "Bye."}, user("!")), answer("!"))
    )
    assert later.session == "app-42", "an unnamed follow-up continues the named session"


def test_a_failed_call_starts_nothing_a_retry_cannot_continue(records: RecordStore) -> None:
    first = records.add(new(chat(user("hi")), answer("Hello.")))
    follow = chat(user("hi"), {"role": "assistant", "content": "Hello."}, user("refund ORD-1"))
    failed = records.add(new(follow, None, error="model unreachable"))
    retried = records.add(new(follow, answer("Done.")))
    assert first.session == failed.session == retried.session


def test_two_users_with_the_same_opening_and_answer_are_not_merged(records: RecordStore) -> None:
    hello = {"role": "assistant", "content": "Hello."}
    a = records.add(new(chat(user("hi")), answer("Hello.")))
    b = records.add(new(chat(user("hi")), answer("Hello.")))
    assert a.session != b.session
    # A follows up: the prefix (hi, Hello.) is held by A's session and B's, so nobody can tell whose it is.
    a2 = records.add(new(chat(user("hi"), hello, user("I am A, my order")), answer("Which order?")))
    assert a2.session not in (a.session, b.session), "a new session, not the newest match (B's)"
    a3 = records.add(
        new(
            chat(
                user("hi"), hello, user("I am A, my order"), {"role": "assistant", "content": "Which order?"}
            ),
            answer("Found it."),
        )
    )
    assert a3.session == a2.session, "an unambiguous longer prefix still continues its session"


def test_a_client_session_id_is_redacted_like_the_messages(records: RecordStore, store: RunStore) -> None:
    added = records.add(new(chat(user("mail ada@example.com")), answer("Ok."), session="ada@example.com"))
    phoned = records.add(new(chat(user("x")), answer("Ok."), session="user +44 20 7946 0958"))
    assert (added.session, phoned.session) == ("[email]", "user [phone]")
    raw = json.dumps(raw_rows(store, "records"))
    assert (
        "ada@example.com" not in raw and "7946 0958" not in raw
    )  # (bare "7946" can occur in a random hex id)
    assert [r.id for r in records.list(session="[email]")] == [added.id]


# -- feedback -----------------------------------------------------------------------------------------------


def test_posts_from_one_source_merge_into_one_row_field_by_field(records: RecordStore) -> None:
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], passed=False, comment="rude"))
    merged = records.add_feedback(FeedbackIn(record_ids=[record.id], correction='Say "Good morning"'))

    assert len(merged) == 1
    row = merged[0]
    assert (row.passed, row.score, row.comment, row.correction, row.posts) == (
        False,
        0.0,
        "rude",
        'Say "Good morning"',
        2,
    )
    assert records.get(record.id).feedback == merged


def test_each_source_keeps_its_own_row(records: RecordStore) -> None:
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], score=1.0))
    records.add_feedback(FeedbackIn(record_ids=[record.id], score=0.5, source="reviewer"))
    rows = {row.source: row for row in records.get(record.id).feedback}
    assert set(rows) == {"default", "reviewer"}
    assert rows["default"].passed is True and rows["reviewer"].passed is False, "passed = score >= 1"


def test_feedback_on_unknown_records_names_them_and_writes_nothing(
    records: RecordStore, store: RunStore
) -> None:
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    with pytest.raises(UnknownRecord, match="rec_nope") as raised:
        records.add_feedback(FeedbackIn(record_ids=[record.id, "rec_nope"], passed=True))
    assert raised.value.record_ids == ["rec_nope"]
    assert raw_rows(store, "record_feedback") == []


def test_feedback_must_say_something() -> None:
    with pytest.raises(ValidationError, match="at least one of score, passed, comment, correction"):
        FeedbackIn(record_ids=["rec_1"])
    with pytest.raises(ValidationError):
        FeedbackIn(record_ids=["rec_1"], score=1.5)
    with pytest.raises(ValidationError):
        FeedbackIn(record_ids=[], passed=True)


def test_feedback_text_is_redacted_too(records: RecordStore, store: RunStore) -> None:
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], comment="the user was bob@example.org"))
    assert "bob@example.org" not in json.dumps(raw_rows(store, "record_feedback"))


# -- retention ----------------------------------------------------------------------------------------------


def test_old_records_are_pruned_with_their_feedback(records: RecordStore, store: RunStore) -> None:
    old = records.add(new(chat(user("hi")), answer("Hello.")))
    records.add_feedback(FeedbackIn(record_ids=[old.id], passed=True))
    assert records.prune(now=datetime.now(UTC) + timedelta(days=29)) == 0
    assert records.prune(now=datetime.now(UTC) + timedelta(days=31)) == 1
    assert raw_rows(store, "records") == [] and raw_rows(store, "record_feedback") == []


def test_adding_prunes_what_has_expired(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    month_ago = datetime.now(UTC) - timedelta(days=40)
    with monkeypatch.context() as patch:
        patch.setattr(records_module, "_now", lambda: month_ago)
        old = RecordStore(store).add(new(chat(user("hi")), answer("Hello.")))
    fresh = RecordStore(store).add(new(chat(user("hello")), answer("Hi.")))
    assert [row[0] for row in raw_rows(store, "records")] == [fresh.id]
    with pytest.raises(UnknownRecord, match=old.id):
        RecordStore(store).get(old.id)


def test_a_failed_prune_never_fails_the_call_being_recorded(
    records: RecordStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def locked(*_: Any, **__: Any) -> int:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(records, "prune", locked)
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    assert records.get(record.id).id == record.id
    assert "pruning failed (OperationalError: database is locked)" in caplog.text


@pytest.mark.parametrize("days", ["1000000", "inf", "nan", "0", "-1", "true", "false"])
def test_a_retention_no_date_can_hold_is_refused_when_the_policy_loads(tmp_path: Path, days: str) -> None:
    with pytest.raises(ProjectError, match="records.retention_days"):
        load_record_policy(project_with(tmp_path, f"retention_days = {days}"))


def test_forever_keeps_every_record(tmp_path: Path, store: RunStore) -> None:
    policy = load_record_policy(project_with(tmp_path, 'retention_days = "forever"'))
    assert policy.retention_days is None
    records = RecordStore(store, policy)
    records.add(new(chat(user("hi")), answer("Hello.")))
    assert records.prune(now=datetime.now(UTC) + timedelta(days=365_000)) == 0


# -- the policy and its hook --------------------------------------------------------------------------------


@pytest.fixture
def hook_imports(forget_new_modules: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook's module and the project folder put on sys.path go away after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def project_with(tmp_path: Path, records_table: str, hook_module: str | None = None) -> Path:
    (tmp_path / "atoll.toml").write_text(f"[records]\n{records_table}\n")
    if hook_module is not None:
        (tmp_path / "atoll_test_scrub.py").write_text(hook_module)
    return tmp_path


@pytest.mark.usefixtures("hook_imports")
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("def scrub(body):\n    raise RuntimeError('boom')\n", "raised RuntimeError: boom"),
        ("def scrub(body):\n    return [body]\n", "returned a list, not a dict"),
    ],
)
def test_a_failing_redaction_hook_writes_nothing(tmp_path: Path, body: str, problem: str) -> None:
    project = project_with(tmp_path, 'redact_hook = "atoll_test_scrub:scrub"', body)
    with RunStore(tmp_path / "runs.sqlite") as store:
        records = RecordStore(store, load_record_policy(project))
        with pytest.raises(RecordError, match=re.escape(f"'atoll_test_scrub:scrub' {problem}")):
            records.add(new(chat(user("hi")), answer("Hello.")))
        assert raw_rows(store, "records") == []


@pytest.mark.usefixtures("hook_imports")
def test_the_hook_runs_after_the_built_ins(tmp_path: Path) -> None:
    hook = "def scrub(body):\n    return json.loads(json.dumps(body).replace('Ada', '[name]'))\nimport json\n"
    project = project_with(tmp_path, 'redact = ["email"]\nredact_hook = "atoll_test_scrub:scrub"', hook)
    with RunStore(tmp_path / "runs.sqlite") as store:
        added = RecordStore(store, load_record_policy(project)).add(
            new(chat(user("Ada, ada@x.io")), answer("Hi Ada"))
        )
        assert added.request["messages"][0]["content"] == "[name], [email]"
        assert "Ada" not in json.dumps(raw_rows(store, "records"))


@pytest.mark.usefixtures("hook_imports")
def test_the_hook_redacts_the_error_too(tmp_path: Path) -> None:
    hook = (
        "def scrub(body):\n"
        "    seen.append(sorted(body))\n"
        "    return json.loads(json.dumps(body).replace('Ada', '[name]'))\n"
        "import json\nseen = []\n"
    )
    project = project_with(tmp_path, 'redact = ["email"]\nredact_hook = "atoll_test_scrub:scrub"', hook)
    with RunStore(tmp_path / "runs.sqlite") as store:
        records = RecordStore(store, load_record_policy(project))
        failed = records.add(new(chat(user("hi")), None, error="upstream refused Ada <ada@x.io>"))
        assert failed.error == "upstream refused [name] <[email]>"
        assert "Ada" not in json.dumps(raw_rows(store, "records"))
        assert sys.modules["atoll_test_scrub"].seen == [["messages", "model"], ["error"]]


@pytest.mark.usefixtures("hook_imports")
def test_a_hook_that_returns_no_string_error_writes_nothing(tmp_path: Path) -> None:
    hook = "def scrub(body):\n    return {'error': 42} if 'error' in body else body\n"
    project = project_with(tmp_path, 'redact_hook = "atoll_test_scrub:scrub"', hook)
    with RunStore(tmp_path / "runs.sqlite") as store:
        records = RecordStore(store, load_record_policy(project))
        with pytest.raises(RecordError, match="returned an error that is a int, not a string"):
            records.add(new(chat(user("hi")), None, error="boom"))
        assert raw_rows(store, "records") == []


def test_a_wrong_records_table_names_the_file_and_the_field(tmp_path: Path) -> None:
    project_with(tmp_path, 'redact = ["ssn"]')
    with pytest.raises(ProjectError, match=r"atoll\.toml: records\.redact\.0: Input should be 'email'"):
        load_record_policy(tmp_path)
    project_with(tmp_path, "keep_days = 3")
    with pytest.raises(ProjectError, match=r"records\.keep_days: unknown key"):
        load_record_policy(tmp_path)


def test_no_project_file_means_the_defaults_every_redactor_and_30_days(tmp_path: Path) -> None:
    assert load_record_policy(tmp_path) == RecordPolicy(
        redact=["email", "phone", "card"], redact_hook=None, retention_days=30
    )


def test_since_takes_spans_and_dates() -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    assert parse_since("12h", now) == datetime(2026, 3, 2, 0, tzinfo=UTC)
    assert parse_since("2026-03-01", now) == datetime(2026, 3, 1, tzinfo=UTC)
    with pytest.raises(RecordError, match="7d"):
        parse_since("last week", now)


# -- the routes ---------------------------------------------------------------------------------------------


@pytest.fixture
def client(records: RecordStore) -> TestClient:
    served = FastAPI()
    served.include_router(records_router(records))
    return TestClient(served)


def test_feedback_is_posted_and_read_back_over_http(records: RecordStore, client: TestClient) -> None:
    record = records.add(new(chat(user("hi")), answer("Hello.")))
    posted = client.post("/feedback", json={"record_ids": [record.id], "passed": False, "source": "app"})
    assert posted.status_code == 200
    assert posted.json()["data"][0] | {"created_at": "", "updated_at": ""} == {
        "record_id": record.id,
        "source": "app",
        "score": 0.0,
        "passed": False,
        "posts": 1,
        "created_at": "",
        "updated_at": "",
    }
    listed = client.get("/v1/records", params={"harness": "support_agent", "limit": 5}).json()["data"]
    assert [item["id"] for item in listed] == [record.id] and listed[0]["feedback"][0]["source"] == "app"
    assert (
        client.get(f"/v1/records/{record.id}").json()["response"]["choices"][0]["message"]["content"]
        == "Hello."
    )


def test_feedback_text_is_bounded_and_never_echoed(records: RecordStore, client: TestClient) -> None:
    ids = [records.add(new(chat(user(f"hi {n}")), answer("Hello."))).id for n in range(100)]
    too_long = client.post("/feedback", json={"record_ids": ids, "comment": "x" * 4001})
    assert too_long.status_code == 400 and "comment" in too_long.json()["error"]["message"]
    amplified = client.post(
        "/feedback", json={"record_ids": ids, "comment": "y" * 4000, "correction": "z" * 4000}
    )
    assert amplified.status_code == 400 and "stored once per record" in amplified.json()["error"]["message"]
    posted = client.post("/feedback", json={"record_ids": ids, "comment": "y" * 200, "correction": "z" * 200})
    assert posted.status_code == 200
    assert len(posted.content) < 30_000, "the reply holds the rows, not 100 copies of the texts"
    assert "yyyy" not in posted.text and "zzzz" not in posted.text
    assert records.get(ids[0]).feedback[0].comment == "y" * 200


def test_feedback_cannot_amplify_writes_by_inventing_sources(
    records: RecordStore, store: RunStore, client: TestClient
) -> None:
    ids = [records.add(new(chat(user(f"hi {n}")), answer("Hello."))).id for n in range(100)]
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before, posted, answered = len(stored_bytes(store)), 0, []
    for n in range(20):  # issue 35: 20 posts of 209 KB in all grew the database by 16.5 MB
        body = {"record_ids": ids[:10], "comment": f"{n:02d}" + "c" * 3998, "source": f"source-{n}"}
        reply = client.post("/feedback", json=body)
        posted += len(json.dumps(body))
        answered.append(reply.status_code)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grown = len(stored_bytes(store)) - before
    assert answered == [200] * MAX_FEEDBACK_SOURCES + [409] * (20 - MAX_FEEDBACK_SOURCES)
    assert reply.json()["error"]["code"] == "too_many_sources"
    assert grown < 16 * posted, f"{posted} bytes posted grew the store by {grown}"
    same_source = client.post(
        "/feedback", json={"record_ids": ids[:10], "passed": True, "source": "source-0"}
    )
    assert same_source.status_code == 200, "a known source may still post"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("post", "/feedback", {"record_ids": ["rec_nope"], "passed": True}, 404, "unknown_record"),
        ("post", "/feedback", {"record_ids": ["rec_x"]}, 400, "invalid_request"),
        ("post", "/feedback", "not json", 400, "invalid_request"),
        ("get", "/v1/records/rec_nope", None, 404, "unknown_record"),
        ("get", "/v1/records?limit=zero", None, 400, "invalid_request"),
    ],
)
def test_refusals_come_in_the_openai_error_shape(
    client: TestClient, method: str, path: str, body: Any, status: int, code: str
) -> None:
    kwargs = {"content": body} if isinstance(body, str) else {"json": body} if body is not None else {}
    response = client.request(method.upper(), path, **kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == code and error["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 200_000 + b"]" * 200_000,
        b'{"record_ids": ' + b"[" * 200_000 + b"]" * 200_000 + b', "passed": true}',
    ],
    ids=["array", "inside-an-object"],
)
def test_deeply_nested_feedback_is_a_400_not_a_500(client: TestClient, body: bytes) -> None:
    response = client.post("/feedback", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith("body: Invalid JSON")


# -- listing ------------------------------------------------------------------------------------------------


def test_a_listing_holds_summaries_not_bodies(records: RecordStore, client: TestClient) -> None:
    big = "z " * 200_000  # 400 kB of request and of response
    call = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}
    tools = records.add(
        new(chat({"role": "system", "content": "be nice"}, user(big)), answer("", tool_calls=[call]))
    )
    talks = records.add(new(chat(user("Where is\n ORD-1?")), answer(big)))
    failed = records.add(new(chat(user("hi")), None, error="model unreachable"))
    records.add_feedback(FeedbackIn(record_ids=[talks.id], passed=False, comment="too long"))

    listed = records.list()
    assert all(isinstance(item, RecordSummary) for item in listed)
    assert not hasattr(listed[0], "request") and not hasattr(listed[0], "response")
    by_id = {item.id: item for item in listed}
    assert by_id[tools.id].opening == ("z " * 100)[: SUMMARY_CHARS - 1] + "…"
    assert by_id[tools.id].reply == "→ get_order"
    assert (by_id[talks.id].opening, by_id[talks.id].reply) == ("Where is ORD-1?", by_id[tools.id].opening)
    assert by_id[talks.id].feedback[0].comment == "too long"
    assert (by_id[failed.id].reply, by_id[failed.id].error) == (None, "model unreachable")

    over_http = client.get("/v1/records", params={"limit": 1000})
    assert over_http.status_code == 200 and len(over_http.content) < 5_000
    data = over_http.json()["data"]
    assert [item["id"] for item in data] == [failed.id, talks.id, tools.id]
    assert "request" not in data[0] and "response" not in data[0]
    assert {"id", "created_at", "harness", "agent", "release", "session", "model", "prompt_tokens"} <= set(
        data[0]
    ) and {"completion_tokens", "latency_ms", "error", "opening", "reply", "feedback"} <= set(data[0])
    whole = client.get(f"/v1/records/{talks.id}").json()
    assert whole["response"]["choices"][0]["message"]["content"] == big, "the detail route keeps the body"


def test_a_full_listing_holds_the_bodies(records: RecordStore) -> None:
    added = records.add(new(chat(user("hi")), answer("Hello.")))
    (whole,) = records.list(full=True)
    assert whole == records.get(added.id) and whole.request["messages"] == [user("hi")]


def test_a_listing_never_waits_for_the_write_lock(records: RecordStore, store: RunStore) -> None:
    added = records.add(new(chat(user("hi")), answer("Hello.")))
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.transaction() as db:  # BEGIN IMMEDIATE and the store's lock, as `add` holds them
            db.conn.execute("UPDATE records SET model = 'uncommitted'")
            holding.set()
            release.wait(10)

    writer = threading.Thread(target=hold)
    writer.start()
    try:
        assert holding.wait(5)
        started = time.monotonic()
        listed = records.list()
        got = records.get(added.id)
        assert time.monotonic() - started < 1.0, "the read waited for the write"
        assert [item.model for item in listed] == ["scripted"] == [got.model], "committed data only"
    finally:
        release.set()
        writer.join()


def test_listings_page_after_the_last_id(records: RecordStore, client: TestClient) -> None:
    added = [records.add(new(chat(user(f"q{n}")), answer("a"), session="s-1")) for n in range(5)]
    newest_first = [record.id for record in reversed(added)]
    first = records.list(limit=2)
    second = records.list(limit=2, after=first[-1].id)
    third = records.list(limit=2, after=second[-1].id)
    assert [r.id for r in [*first, *second, *third]] == newest_first
    in_session = records.list(session="s-1", limit=3)
    rest = records.list(session="s-1", limit=3, after=in_session[-1].id)
    assert [r.id for r in [*in_session, *rest]] == [record.id for record in added], "a session's: in order"
    with pytest.raises(UnknownRecord, match="rec_nope"):
        records.list(after="rec_nope")

    page = client.get("/v1/records", params={"limit": 3}).json()
    assert (page["first_id"], page["last_id"], page["has_more"]) == (newest_first[0], newest_first[2], True)
    last = client.get("/v1/records", params={"limit": 3, "after": page["last_id"]}).json()
    assert [item["id"] for item in last["data"]] == newest_first[3:] and last["has_more"] is False
    assert client.get("/v1/records", params={"limit": 1001}).status_code == 400, "the cap stays"
    unknown = client.get("/v1/records", params={"after": "rec_nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_record"


def test_records_stored_before_summaries_get_them(store: RunStore) -> None:
    added = RecordStore(store).add(new(chat(user("Where is ORD-1?")), answer("Shipped.")))
    with store.transaction() as db:  # the table as it was before summaries were kept
        db.conn.execute("ALTER TABLE records DROP COLUMN opening")
        db.conn.execute("ALTER TABLE records DROP COLUMN reply")
    (listed,) = RecordStore(store).list()
    assert (listed.id, listed.opening, listed.reply) == (added.id, "Where is ORD-1?", "Shipped.")


# -- the command line ---------------------------------------------------------------------------------------


def test_optimize_records_lists_shows_and_exports(
    records: RecordStore, store: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store.path))
    monkeypatch.setattr(records_cli, "out", Console(width=250))  # the whole table, whatever the terminal
    record = records.add(new(chat(user("Where is ORD-1?")), answer("It has shipped.")))
    records.add(new(chat(user("hello")), answer("Hi.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], passed=False, correction="It is delayed"))
    runner = CliRunner()

    listed = runner.invoke(app, ["records", "list", "--feedback"])
    assert listed.exit_code == 0, listed.output
    assert (
        record.id in listed.output and "support_agent" in listed.output and listed.output.count("rec_") == 1
    )

    shown = runner.invoke(app, ["records", "show", record.id])
    assert shown.exit_code == 0, shown.output
    assert (
        "Where is ORD-1?" in shown.output
        and "It has shipped." in shown.output
        and "It is delayed" in shown.output
    )

    exported = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["records", "export", "--out", str(exported)]).exit_code == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert (
        len(lines) == 2
        and lines[1]["id"] == record.id
        and lines[1]["feedback"][0]["correction"] == "It is delayed"
    )
    to_stdout = runner.invoke(app, ["records", "export", "--out", "-", "--feedback"])
    assert [json.loads(line)["id"] for line in to_stdout.stdout.splitlines()] == [record.id]

    missing = runner.invoke(app, ["records", "show", "rec_nope"])
    assert missing.exit_code == 2 and "rec_nope" in missing.output


def test_an_export_replaces_its_file_whole_or_not_at_all(
    records: RecordStore, store: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store.path))
    monkeypatch.setattr(records_cli, "EXPORT_PAGE", 2, raising=False)  # several pages
    added = [records.add(new(chat(user(f"q{n}")), answer("a"))) for n in range(5)]
    folder = tmp_path / "exports"
    folder.mkdir()
    exported = folder / "out.jsonl"
    exported.write_text("the previous export\n")
    exported.chmod(0o640)
    runner = CliRunner()

    def full_disk(_: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full_disk)
        failed = runner.invoke(app, ["records", "export", "--out", str(exported)])
    assert failed.exit_code != 0 and "No space left on device" in failed.output
    assert exported.read_text() == "the previous export\n", "a failed export leaves the file as it was"
    assert sorted(path.name for path in folder.iterdir()) == ["out.jsonl"], "no temporary file stays"

    done = runner.invoke(app, ["records", "export", "--out", str(exported), "--limit", "3"])
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["id"] for line in exported.read_text().splitlines()] == [
        record.id for record in reversed(added)
    ][:3]
    assert sorted(path.name for path in folder.iterdir()) == ["out.jsonl"]
    assert exported.stat().st_mode & 0o777 == 0o640, "the file keeps its mode"


def test_a_failed_draft_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(_: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        tasks_module._write_new(tmp_path, "drafts-2026-03-02", "- id: x\n")
    assert list(tmp_path.iterdir()) == []


# -- tasks from records -------------------------------------------------------------------------------------


def helpdesk_suite(folder: Path) -> Path:
    (folder / "tasks").mkdir(parents=True)
    (folder / "suite.yaml").write_text("name: mini-helpdesk\nworld: helpdesk\ndefault_seeds: [0]\n")
    (folder / "tasks" / "base.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "id": "greet",
                    "split": "val",
                    "fixture": "small_shop",
                    "user": {"message": "hi"},
                    "expect": {"reply_contains": ["hello"]},
                }
            ]
        )
    )
    return folder


def test_correction_phrases_are_quotes_else_a_short_whole() -> None:
    assert correction_phrases('Say "5 business days" and `RF-`') == ["5 business days", "RF-"]
    assert correction_phrases("Your refund is on its way.") == ["Your refund is on its way"]
    assert correction_phrases("It should have checked the identity first, " * 5) == []


def test_records_with_corrections_become_draft_train_tasks(records: RecordStore, tmp_path: Path) -> None:
    suite = helpdesk_suite(tmp_path / "suite")
    metadata = {"atoll_fixture": "big_retailer", "atoll_seed": "3", "atoll_context": '{"channel": "chat"}'}
    opening = chat(user("My blender arrived cracked"), metadata=metadata)
    first = records.add(new(opening, answer("Sorry! What's your email?")))
    follow = chat(
        user("My blender arrived cracked"),
        {"role": "assistant", "content": "Sorry! What's your email?"},
        user("ada@x.io"),
        metadata=metadata,
    )
    wrong = records.add(new(follow, answer("I gave you store credit.")))
    praised = records.add(new(chat(user("hi")), answer("Hello!")))
    vague = records.add(new(chat(user("yo")), answer("?")))
    records.add_feedback(
        FeedbackIn(record_ids=[wrong.id], passed=False, correction='Offer a "refund", not credit')
    )
    records.add_feedback(FeedbackIn(record_ids=[praised.id, first.id], passed=True))
    records.add_feedback(FeedbackIn(record_ids=[vague.id], passed=False, comment="useless"))

    report = draft_tasks(records, suite, harness="support_agent", today=datetime(2026, 3, 2).date())
    assert report.path == suite / "tasks" / "drafts-2026-03-02.yaml"
    assert report.tasks == [f"draft-{wrong.id}"]
    assert {skip.record_id for skip in report.skipped} == {first.id, praised.id, vague.id}

    task = load_suite(suite).task(f"draft-{wrong.id}")
    assert (task.split, task.review, task.fixture, task.seeds) == ("train", "draft", "big_retailer", [3])
    assert task.context == {"channel": "chat"}
    assert task.user.message == "My blender arrived cracked" and task.user.replies == ["[email]"]
    assert task.expect.reply_contains == ["refund"]
    assert "I gave you store credit." in report.path.read_text(), "the reviewer sees what the agent said"

    again = draft_tasks(records, suite, harness="support_agent", today=datetime(2026, 3, 2).date())
    assert again.path is None and any("already in the suite" in skip.reason for skip in again.skipped)

    records.add_feedback(FeedbackIn(record_ids=[praised.id], correction="Hello there"))
    third = draft_tasks(records, suite, only_negative=True, today=datetime(2026, 3, 2).date())
    assert third.path is None, "--only-negative leaves out feedback that passed"
    fourth = draft_tasks(records, suite, today=datetime(2026, 3, 2).date())
    assert fourth.path == suite / "tasks" / "drafts-2026-03-02-2.yaml", (
        "an existing file is never overwritten"
    )


def test_a_seed_no_task_file_can_hold_is_never_drafted_nor_loaded(
    records: RecordStore, tmp_path: Path
) -> None:
    suite = helpdesk_suite(tmp_path / "suite")
    huge = records.add(
        new(chat(user("My blender arrived cracked"), metadata={"atoll_seed": str(10**30)}), answer("?"))
    )
    records.add_feedback(FeedbackIn(record_ids=[huge.id], passed=False, correction='Offer a "refund"'))
    report = draft_tasks(records, suite, today=datetime(2026, 3, 2).date())
    assert report.path is None
    assert [skip.reason for skip in report.skipped] == [
        f"metadata.atoll_seed {10**30} is not an integer from 0 to {2**63 - 1}"
    ]
    poisoned = suite / "tasks" / "poisoned.yaml"
    task = yaml.safe_load((suite / "tasks").glob("*.yaml").__next__().read_text())[0]
    poisoned.write_text(yaml.safe_dump([{**task, "id": "poisoned", "seeds": [10**30]}]))
    with pytest.raises(SuiteError, match=f"seeds must be at most {2**63 - 1}"):
        load_suite(suite)
    check = CliRunner().invoke(app, ["suite", "check", str(suite)])
    assert check.exit_code == 2 and "seeds must be at most" in check.stderr


def test_a_draft_task_is_refused_in_val(records: RecordStore, tmp_path: Path) -> None:
    suite = helpdesk_suite(tmp_path / "suite")
    record = records.add(new(chat(user("hi")), answer("Yo.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], passed=False, correction="Hello"))
    path = draft_tasks(records, suite).path
    assert path is not None
    path.write_text(path.read_text().replace("split: train", "split: val"))
    with pytest.raises(SuiteError) as refused:
        load_suite(suite)
    assert str(refused.value) == (
        f"{path}: task 'draft-{record.id}': review: a draft task cannot be in val; "
        "set review: reviewed after checking it, or move it to train"
    )


def test_optimize_records_to_tasks_drafts_into_the_suite(
    records: RecordStore, store: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOLL_RUNS_DB", str(store.path))
    suite = helpdesk_suite(tmp_path / "suite")
    record = records.add(new(chat(user("hi")), answer("Yo.")))
    records.add_feedback(FeedbackIn(record_ids=[record.id], passed=False, correction="Hello"))
    result = CliRunner().invoke(
        app, ["records", "to-tasks", "--harness", "support_agent", "--suite", str(suite), "--since", "1h"]
    )
    assert result.exit_code == 0, result.output
    assert "drafted 1 tasks" in result.output
    assert load_suite(suite).task(f"draft-{record.id}").review == "draft"
