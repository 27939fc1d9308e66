"""Records: every call the served endpoint answers, kept with the feedback the application sends about it.

A record is what the harness was asked and what it answered, so that real traffic can be read, exported
and drafted into eval tasks (service/_tasks.py). Records live in the runs store, in two tables of their own:
`records` (one row per served call) and `record_feedback` (one row per record and feedback source).

Privacy comes first: `RecordStore.add` redacts every string and number of the request, the response and the
error, dict keys included (the built-in redactors, all of them unless atoll.toml's `[records]` names fewer,
then the project's own hook) and the client's session id (the built-ins) before anything is written, and
drops records older than the retention while it is at it (deleted rows are overwritten: secure_delete).
Feedback text and its source are redacted by the built-ins too.

Calls of one conversation share a session: the client's own id when it gives one, else the session of the
earlier call whose messages and answer the new request starts with, when only one session holds that
conversation (see `RecordStore.add`). Exact grouping needs the client's id (`x-atoll-session`).

The endpoint records a call with `submit`, not `add`: the record is redacted and its session found on the
response path, then journaled and stored by a writer thread after the answer went (service/_pending.py), so
an answer waits neither for a write transaction nor for another process's write lock, and a record answered
is stored even if its process dies first. A read waits for what it needs: `list` for the calls this process
answered before it, `get` and feedback for the record they name when it is journaled, here or elsewhere.

Reads (`list`, `get`) go through a connection of their own, in a deferred transaction: with the store in WAL
mode they never take the write lock, so a read never holds up a write. `list` returns summaries
(`RecordSummary`: no request or response bodies) unless asked for `full` records.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import random
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import from_json

from atoll.evals import RunStore
from atoll.worlds import PROJECT_FILE, TIMESTAMP_FORMAT, AtollError, ProjectError, find_project

from ._pending import SETTLE_S, PendingRecords, journaled, recover

_log = logging.getLogger(__name__)

RECORDS_TABLE = "records"
FEEDBACK_TABLE = "record_feedback"
PRUNE_EVERY_S = 60.0  # `add` drops expired records at most this often: one indexed DELETE a minute
MAX_PREFIXES = 64  # the longest conversation prefixes a new request is matched on (one indexed IN query)
SUMMARY_CHARS = 200  # a summary's opening user message and reply are cut to this many characters
MAX_FEEDBACK_RECORDS = 100  # the records one feedback post may name
MAX_FEEDBACK_CHARS = 4000  # the longest comment or correction
# A post's text is stored once per record it names: bounded in all, so a post of a few KB cannot write MBs.
MAX_FEEDBACK_POST_CHARS = 40_000  # records named x (comment + correction): 10 x 4,000, or 100 x 400
MAX_FEEDBACK_SOURCES = 8  # the sources one record keeps feedback from (a row each)
INSERT_ROWS = 50  # records in one INSERT statement (50 x 19 values: under SQLite's oldest limit, 999)

MAX_RETENTION_DAYS = 36_500  # a hundred years: the cutoff `now - retention` is always a date

Redactor = Literal["email", "phone", "card"]
REDACTORS: tuple[Redactor, ...] = ("email", "phone", "card")


class RecordError(AtollError):
    """A record or its feedback cannot be written or read as asked (a failing redaction hook, a bad policy)."""


class FeedbackLimit(RecordError):
    """A feedback post that would give a record more sources than it keeps."""


class UnknownRecord(RecordError):
    """Feedback or a lookup named record ids the store does not hold (never stored, or pruned)."""

    def __init__(self, record_ids: list[str]) -> None:
        self.record_ids = record_ids
        super().__init__(
            f"no record {', '.join(record_ids)}: never stored, or older than the retention and pruned; "
            "`optimize records list` shows the stored ones"
        )


# -- the policy -------------------------------------------------------------------------------------------


class RecordPolicy(BaseModel):
    """atoll.toml's `[records]` table: what is redacted before a record is written, and how long it is kept.

    Without the table every built-in redactor runs and records are kept 30 days. Example:

        [records]
        redact = ["email", "phone", "card"]    # the default; [] writes records as they were sent
        redact_hook = "mydesk.privacy:scrub"   # a function (dict) -> dict in your repository
        retention_days = 30                    # days (at most 36500); "forever" keeps every record
    """

    model_config = ConfigDict(extra="forbid")

    redact: list[Redactor] = Field(
        default_factory=lambda: list(REDACTORS),
        description="Built-in redactors applied to every string and number of the request, response and error "
        "(dict keys too): matches become `[email]`, `[phone]`, `[card]`. Default all; [] none.",
    )
    redact_hook: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:function`, your own (dict) -> dict, called after the built-ins with the "
        'request body, then with the response body, then (for a failed call) with `{"error": text}`, '
        "whose `error` it returns as a string (or drops); imported with the project folder on the path.",
    )
    retention_days: float | None = Field(
        30,
        gt=0,
        le=MAX_RETENTION_DAYS,
        description=f'Records older than this are dropped (at most {MAX_RETENTION_DAYS}); "forever" (None): never.',
    )
    _root: Path | None = PrivateAttr(None)  # the folder of atoll.toml, where the hook's package lives

    @field_validator("retention_days", mode="before")
    @classmethod
    def _forever(cls, value: Any) -> Any:
        """TOML has no null: `retention_days = "forever"` says to keep every record. A boolean is no number of
        days (pydantic would read `true` as 1)."""
        if isinstance(value, bool):
            raise ValueError(f'a number of days, or "forever"; not {str(value).lower()}')
        return None if value == "forever" else value

    def hook(self) -> Callable[[dict[str, Any]], Any] | None:
        """The redaction hook, imported; RecordError naming it when it cannot be."""
        if self.redact_hook is None:
            return None
        module_name, _, function_name = self.redact_hook.partition(":")
        # The hook's package sits beside atoll.toml, as a project's world packages do (worlds/_find.py).
        if self._root is not None and str(self._root) not in sys.path:
            sys.path.append(str(self._root))
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # the user's module: whatever it raises, say which hook
            raise RecordError(
                f"{PROJECT_FILE}: records.redact_hook {self.redact_hook!r}: cannot import "
                f"{module_name}: {type(error).__name__}: {error}"
            ) from None
        function = getattr(module, function_name, None)
        if not callable(function):
            raise RecordError(
                f"{PROJECT_FILE}: records.redact_hook {self.redact_hook!r}: {module_name} has no function {function_name!r}"
            )
        return function


def load_record_policy(start: Path | None = None) -> RecordPolicy:
    """The `[records]` table of the project file at or above `start` (default the working directory), checked;
    the defaults (every built-in redactor, 30 days) when there is no project file or no table."""
    project = find_project(start)
    if project is None:
        return RecordPolicy()
    try:
        policy = RecordPolicy.model_validate(project.config.records)
    except ValidationError as error:
        problems = "; ".join(
            f"records.{'.'.join(map(str, item['loc']))}: "
            + ("unknown key" if item["type"] == "extra_forbidden" else item["msg"])
            for item in error.errors()
        )
        raise ProjectError(
            f"{project.file}: {problems} (keys: redact, redact_hook, retention_days)"
        ) from None
    policy._root = project.root
    return policy


# -- redaction --------------------------------------------------------------------------------------------

# Every pattern is linear in the text: a run of characters is tried only from its start (the lookbehind refuses
# any other position in one step) and every other repetition is bounded, so no input can make a match retry a
# long run from each of its characters (`a` * 64,000 took 19 s with an unanchored local part). A leading
# lookahead on the first character lets the engine skip the positions where no match can start.
_LOCAL = r"[\w.!#$%&'*+/=?^`{|}~-]"
# An at sign: ASCII, the full-width `＠` and small `﹫` a pasted address may carry, or `%40` (URL-encoded).
_AT_SIGN = r"(?:[@\uff20\ufe6b]|%40)"
# Broader than any address a person would call an email: `local@host`, `local@label.label`, an address literal
# (`local@[10.0.0.1]`, `local@[IPv6:2001:db8::1]`) and a quoted local part (`"jane doe"@host`).
_EMAIL = re.compile(
    rf'(?:"[^"\\\r\n]{{1,64}}"|(?<!{_LOCAL}){_LOCAL}+){_AT_SIGN}(?:\[[\w.:-]{{1,64}}\]|[\w-]+(?:\.[\w-]+)*)'
)
# What may stand between a card's digit groups: up to three spaces of any kind but a line break (tab, NBSP,
# thin), dots, slashes, hyphens or dashes (en, em, minus).
_GAP = r"(?:[^\S\r\n]|[./\-\u2010-\u2015\u2212])"
# 13-19 digits so grouped, wherever they stand (`card_4111…`, `card-4111…`, `-4111…` as a negative JSON number
# is written); replaced when the Luhn check passes on the whole or on a run of its groups. Not a part of a
# longer run of digits, nor of a dashed id that goes on (`eval-20260302-091500-a3f9`). A chain of digits is
# tried only from its start (the lookbehinds refuse a start one to three gap characters after a digit), so a
# mebibyte of `1-1-1…` is one failed try, not one per digit.
_CARD = re.compile(
    rf"(?=\d)(?<!\d)(?<!\d{_GAP})(?<!\d{_GAP}{_GAP})(?<!\d{_GAP}{_GAP}{_GAP})"
    rf"\d(?:{_GAP}{{0,3}}\d){{12,18}}(?!\d|[./\-\u2010-\u2015\u2212]\w)"
)
# A card as people write it, 13-19 digits in one run or grouped 4-4-4-4 (to 19 digits) or 4-6-5 with one gap
# repeated between the groups, tried after
# `_CARD` from any place a run of digits starts: a card written right after another number
# (`call 5551230147 4242 4242 4242 4242`) is read by `_CARD` as one longer number, which fails the check.
_GROUPED_CARD = re.compile(
    rf"(?=\d)(?<!\d)(?:\d{{13,19}}|\d{{4}}(?P<gap>{_GAP}{{1,3}})"
    rf"(?:\d{{4}}(?P=gap)\d{{4}}(?P=gap)\d{{1,4}}(?:(?P=gap)\d{{1,3}})?|\d{{6}}(?P=gap)\d{{5}}))(?!\d)"
)
# 9-15 digits in one run, or digit groups joined by separators, optionally with +country and (area), after
# anything but a digit, a dot or a plus (`tel-555…`, `phone_555…`, `x555…`, `-555…` as a negative number is
# written); replaced only with 9-15 digits, so a date (2026-03-02, 8 digits), a time (09:00), an amount
# (59.99) or an id (ORD-1012) stays.
_PHONE = re.compile(
    r"(?=[+(\d])(?<![\d.+])(?:\+\d{7,15}|\d{9,15}|(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4})"
    r"(?![\w:-]|\.\d)"
)
_AT = re.compile(_AT_SIGN)  # no email without one: most text is passed over in one scan
# Every redactor's match holds a digit or an at sign: a string with neither (most keys, roles, much prose) is
# passed over in one scan, not three.
_SENSITIVE = re.compile(r"[\d@\uff20\ufe6b]")
_DIGIT_GROUPS = re.compile(r"\d+")
_DOUBLED = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]  # a digit doubled, its digits summed (Luhn)


def _luhn(digits: str) -> bool:
    total = sum(map(int, digits[-1::-2])) + sum(map(_DOUBLED.__getitem__, map(int, digits[-2::-2])))
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    """`[card]` when the digits, or a run of their groups holding 13-19 digits, pass the Luhn check: a card
    followed by another number (`4111 1111 1111 1111 5`) is still a card."""
    groups = _DIGIT_GROUPS.findall(match.group())
    for first in range(len(groups)):
        digits = ""
        for group in groups[first:]:
            digits += group
            if len(digits) > 19:
                break
            if len(digits) >= 13 and _luhn(digits):
                return "[card]"
    return match.group()


def _grouped_card(match: re.Match[str]) -> str:
    """`[card]` when the digits of a card-shaped match pass the Luhn check (`_GROUPED_CARD` matches whole cards
    only, so no run of its groups needs trying)."""
    text = match.group()
    return "[card]" if _luhn(text if text.isdigit() else "".join(_DIGIT_GROUPS.findall(text))) else text


def _phone(match: re.Match[str]) -> str:
    count = sum(char.isdigit() for char in match.group())
    return "[phone]" if 9 <= count <= 15 or (match.group().startswith("+") and count >= 7) else match.group()


# Cards before phones: a card number is also a run of digit groups.
_REDACTORS: dict[str, Callable[[str], str]] = {
    "email": lambda text: _EMAIL.sub("[email]", text) if _AT.search(text) else text,
    "card": lambda text: _GROUPED_CARD.sub(_grouped_card, _CARD.sub(_card, text)),
    "phone": lambda text: _PHONE.sub(_phone, text),
}
# What Atoll itself writes around the model's answer (`_wire.completion`): no client's or model's words, and
# `created` (ten digits) is no phone number.
_ENVELOPE = frozenset({"id", "object", "created", "model", "system_fingerprint", "usage"})


def redact_text(text: str, redactors: Iterable[str]) -> str:
    """`text` with every match of the named built-in redactors replaced (`[email]`, `[phone]`, `[card]`)."""
    if not _SENSITIVE.search(text):
        return text
    chosen = set(redactors)
    for name, redactor in _REDACTORS.items():
        if name in chosen:
            text = redactor(text)
    return text


def _redact_number(value: int | float, redactors: list[str]) -> int | float | str:
    """A JSON number as it is, or its redacted text when its digits are a card or a phone number
    (`"cc": 5500005555555559` is a card however it was sent)."""
    whole = isinstance(value, int) or (value.is_integer() and abs(value) < 1e19)
    text = str(int(value)) if whole else repr(value)
    if len(text) < 9:  # too few digits for a phone number (9, or 7 after a `+` no number has) or a card (13)
        return value
    redacted = redact_text(text, redactors)
    return value if redacted == text else redacted


def _redact_value(value: Any, redactors: list[str], *, skip: frozenset[str] = frozenset()) -> Any:
    """A redacted copy: every string and number inside, dict keys too, redacted (but the top-level keys in
    `skip`, kept as they are); the caller's objects stay as they were."""
    if isinstance(value, str):
        return redact_text(value, redactors)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return _redact_number(value, redactors)
    if isinstance(value, dict):
        redacted: dict[str, Any] = {}
        for key, item in value.items():
            if key in skip:
                redacted[key] = item
                continue
            name = redact_text(str(key), redactors)
            while name in redacted:  # two keys redacted alike both stay: `[email]`, `[email]'`
                name += "'"
            redacted[name] = _redact_value(item, redactors)
        return redacted
    if isinstance(value, list | tuple):
        return [_redact_value(item, redactors) for item in value]
    return value


# -- sessions ---------------------------------------------------------------------------------------------


def _text(content: Any) -> Any:
    """A message's content as clients resend it: text parts joined, None as "", whitespace trimmed."""
    if content is None:
        return ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(part.get("text", "")) for part in content).strip()
    return content.strip() if isinstance(content, str) else content


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return from_json(arguments)  # a client may re-serialise them with other spacing
        except ValueError:  # not JSON, or nested past the parser's depth
            return arguments
    return arguments


def normalise_message(message: Any) -> dict[str, Any]:
    """The part of a chat message that identifies it in a conversation: role, content, tool calls (id, name,
    arguments) and tool_call_id; what a client drops or adds (`refusal: null`, `name`) does not count."""
    if not isinstance(message, dict):
        return {"content": message}
    found: dict[str, Any] = {"role": message.get("role"), "content": _text(message.get("content"))}
    calls = message.get("tool_calls") or []
    if calls:
        found["tool_calls"] = [
            {
                "id": call.get("id"),
                "name": (call.get("function") or {}).get("name"),
                "arguments": _arguments((call.get("function") or {}).get("arguments")),
            }
            for call in calls
            if isinstance(call, dict)
        ]
    if message.get("tool_call_id") is not None:
        found["tool_call_id"] = message["tool_call_id"]
    return found


def _hash_line(message: Any) -> bytes:
    """What a message adds to a conversation's hash: its normalised form, one line of JSON."""
    line = json.dumps(normalise_message(message), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return line.encode() + b"\n"


def _conversation_hashes(
    request: dict[str, Any], response: dict[str, Any] | None
) -> tuple[list[str], str | None]:
    """A call's conversation hashes, one sha256 fed message by message: those of the prefixes a continued
    conversation could share with an earlier call (ending in an assistant message, longest first), and the
    thread hash (the messages + the answer; None without an answer, since nothing can continue a call that
    failed)."""
    digest = hashlib.sha256()
    prefixes = []
    for message in _messages(request):
        digest.update(_hash_line(message))
        if isinstance(message, dict) and message.get("role") == "assistant":
            prefixes.append(digest.copy().hexdigest()[:32])
    answer = _answer(response)
    if answer is not None:
        digest.update(_hash_line(answer))
    return prefixes[::-1][:MAX_PREFIXES], None if answer is None else digest.hexdigest()[:32]


def _messages(request: dict[str, Any]) -> list[Any]:
    messages = request.get("messages")
    return messages if isinstance(messages, list) else []


def _answer(response: dict[str, Any] | None) -> dict[str, Any] | None:
    """The assistant message a response carries (its first choice: the one a client continues)."""
    choices = (response or {}).get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return message if isinstance(message, dict) else None
    return None


# -- summaries --------------------------------------------------------------------------------------------


def _plain(content: Any) -> str:
    """A message's text: a string as it is, the text parts of a list joined; anything else none."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return ""


def _clip(text: str) -> str:
    """`text` on one line, cut to SUMMARY_CHARS (an ellipsis marking the cut)."""
    head = text[: SUMMARY_CHARS * 8]  # a long body costs no more than its head
    flat = " ".join(head.split())
    if len(flat) <= SUMMARY_CHARS and len(head) == len(text):
        return flat
    return flat[: SUMMARY_CHARS - 1] + "…"


def _opening(request: dict[str, Any]) -> str:
    """The conversation's first user message with text, clipped; "" when there is none."""
    for message in _messages(request):
        if isinstance(message, dict) and message.get("role") == "user":
            text = _plain(message.get("content"))
            if text.strip():
                return _clip(text)
    return ""


def _reply(response: dict[str, Any] | None) -> str | None:
    """What the answer said, clipped: its text, else its tool calls (`→ name`); None without a response."""
    if response is None:
        return None
    message = _answer(response) or {}
    text = _plain(message.get("content"))
    if text.strip():
        return _clip(text)
    calls = [call for call in message.get("tool_calls") or [] if isinstance(call, dict)]
    return _clip(", ".join(f"→ {(call.get('function') or {}).get('name')}" for call in calls))


# -- records and feedback ---------------------------------------------------------------------------------


class NewRecord(BaseModel):
    """What the endpoint hands over for one served call."""

    harness: str = Field(description="The harness.yaml name.")
    agent: str = Field(description="The agent served (the entry agent, or a sub-agent).")
    release: int | None = Field(description="The release number served; None: the unreleased working files.")
    release_hash: str = Field(description="Content hash of the harness files served.")
    model: str
    request: dict[str, Any] = Field(description="The client's request body as received.")
    response: dict[str, Any] | None = Field(description="The chat.completion body returned; None on error.")
    prompt_hash: str = Field(description="Hash of the rendered system prompt (harnesses.prompt_hash).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    error: str | None = None
    session: str | None = Field(None, description="The client's session id; None: derived from the messages.")


class Feedback(BaseModel):
    """The merged feedback of one source about one record (see `RecordStore.add_feedback`)."""

    record_id: str
    source: str
    score: float | None = None
    passed: bool | None = None
    comment: str | None = None
    correction: str | None = None
    posts: int = Field(1, description="How many posts from this source were merged into this row.")
    created_at: str
    updated_at: str


class Record(NewRecord):
    """A stored record, read back with its feedback."""

    id: str
    session: str
    created_at: str
    feedback: list[Feedback] = Field(default_factory=list)


class RecordSummary(BaseModel):
    """A stored record without its request and response bodies, as `RecordStore.list` returns it by
    default (and `GET /v1/records`): what a listing shows, at a few hundred bytes a record."""

    id: str
    created_at: str
    harness: str
    agent: str
    release: int | None
    release_hash: str
    model: str
    session: str
    prompt_hash: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    error: str | None = None
    opening: str = Field(
        "", description=f"The conversation's first user message, cut to {SUMMARY_CHARS} characters."
    )
    reply: str | None = Field(
        None,
        description=f"The answer's text (else its tool calls, `→ name`), cut to {SUMMARY_CHARS} characters; "
        "None when the call failed.",
    )
    feedback: list[Feedback] = Field(default_factory=list)


class NegativeFeedback(BaseModel):
    """Negative feedback on a harness's records: what starts an evolve job."""

    records: int = Field(description="Records with negative feedback.")
    newest: str | None = Field(description="When the newest of it was posted; None without any.")


class ReleaseTraffic(BaseModel):
    """What a release answered on the harness endpoint, from the records: the live side of its evidence."""

    calls: int = 0
    errors: int = 0
    with_feedback: int = Field(0, description="Records that got feedback from any source.")
    passed: int = Field(0, description="Feedback rows that said passed.")
    failed: int = Field(0, description="Feedback rows that said not passed.")
    mean_score: float | None = None


class FeedbackIn(BaseModel):
    """One feedback post about one or more records.

    `passed` without `score` means a score of 1 (passed) or 0; `score` without `passed` means
    passed = score >= 1.0, the pass threshold of a suite by default.
    """

    model_config = ConfigDict(extra="forbid")

    record_ids: list[str] = Field(min_length=1, max_length=MAX_FEEDBACK_RECORDS)
    score: float | None = Field(None, ge=0.0, le=1.0)
    passed: bool | None = None
    # Bounded: a post is written once per record it names, so its text is stored up to 100 times.
    comment: str | None = Field(None, max_length=MAX_FEEDBACK_CHARS)
    correction: str | None = Field(
        None, max_length=MAX_FEEDBACK_CHARS, description="What the reply should have said."
    )
    source: str = Field("default", min_length=1, max_length=200)

    @model_validator(mode="after")
    def _says_something(self) -> FeedbackIn:
        if self.score is None and self.passed is None and self.comment is None and self.correction is None:
            raise ValueError("give at least one of score, passed, comment, correction")
        text = len(self.comment or "") + len(self.correction or "")
        named = len(set(self.record_ids))
        if named * text > MAX_FEEDBACK_POST_CHARS:
            raise ValueError(
                f"comment and correction ({text} characters) are stored once per record named ({named}): "
                f"at most {MAX_FEEDBACK_POST_CHARS} characters in all; name fewer records or write less"
            )
        if self.passed is None and self.score is not None:
            self.passed = self.score >= 1.0
        elif self.score is None and self.passed is not None:
            self.score = 1.0 if self.passed else 0.0
        return self


_RECORD_COLUMNS: dict[str, type] = {
    "id": str,
    "created_at": str,
    "harness": str,
    "agent": str,
    "release": int,
    "release_hash": str,
    "model": str,
    "session": str,
    "thread": str,  # hash of the messages + the answer: what a later call of the conversation starts with
    "request": str,
    "response": str,
    "prompt_hash": str,
    "prompt_tokens": int,
    "completion_tokens": int,
    "cost_usd": float,
    "latency_ms": float,
    "error": str,
    "opening": str,  # the summary's opening user message (`_opening`), kept so a listing never reads bodies
    "reply": str,  # the summary's reply (`_reply`)
}
# What `RecordSummary` holds: every column but the bodies and the thread hash.
_SUMMARY_COLUMNS = [name for name in _RECORD_COLUMNS if name not in ("thread", "request", "response")]
_FEEDBACK_COLUMNS: dict[str, type] = {
    "record_id": str,
    "source": str,
    "score": float,
    "passed": int,
    "comment": str,
    "correction": str,
    "posts": int,
    "created_at": str,
    "updated_at": str,
}
_MERGED_FIELDS = ("score", "passed", "comment", "correction")
_Redacted = tuple[dict[str, Any], dict[str, Any] | None, str | None, str | None]
"""A call's request, response, error and client's session id, redacted (`RecordStore._redacted`)."""
_Query = Callable[[str, list[Any]], Iterable[Any]]
"""Runs one read (SQL, values) and returns its rows: the write transaction's, or the thread's reader."""


def _insert(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert `rows`, up to INSERT_ROWS in one statement: the writer thread then gives up the GIL a few
    times a batch (each SQLite step releases it), not once a row, each hand-off a wait for the endpoint."""
    for start in range(0, len(rows), INSERT_ROWS):
        chunk = rows[start : start + INSERT_ROWS]
        conn.execute(_insert_sql(len(chunk)), [row[column] for row in chunk for column in _RECORD_COLUMNS])


@functools.cache
def _insert_sql(count: int) -> str:
    """INSERT of `count` records; OR IGNORE: a journaled record stored twice (see _pending.py) is kept once."""
    values = ", ".join([f"({', '.join('?' * len(_RECORD_COLUMNS))})"] * count)
    return f"INSERT OR IGNORE INTO {RECORDS_TABLE} ({', '.join(_RECORD_COLUMNS)}) VALUES {values}"


def _new_id(prefix: str) -> str:
    """A record or session id: 64 random bits, from `random` (reseeded in a forked child), not `secrets`:
    ids are listed to every client, not secrets, and the system call cost the endpoint a GIL hand-off."""
    return f"{prefix}_{random.getrandbits(64):016x}"


def _new_record(redacted: _Redacted, row: dict[str, Any]) -> Record:
    """The Record a stored (or journaled) row reads back as, from the bodies it was made of."""
    request, response, _, _ = redacted
    return Record.model_validate({**row, "request": request, "response": response})


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    """A moment as the store keeps it (UTC, to the second, so text order is time order); naive means UTC."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime(TIMESTAMP_FORMAT)


_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_SPAN_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A `--since` value as a moment: a span back from now (`30m`, `12h`, `7d`, `2w`) or a UTC date or time
    (`2026-03-01`, `2026-03-01 09:30`); RecordError showing these forms otherwise."""
    span = _SPAN.match(text.strip())
    if span is not None:
        try:
            return (now or _now()) - timedelta(**{_SPAN_UNITS[span[2]]: float(span[1])})
        except OverflowError:  # past what a date holds: every record is that recent
            raise RecordError(
                f"--since {text!r} reaches back before the year 1; give a shorter span (7d, 2w)"
            ) from None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise RecordError(
            f"--since {text!r}: give a span back from now (30m, 12h, 7d, 2w) or a UTC date or time "
            "(2026-03-01, 2026-03-01 09:30)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class RecordStore:
    """Records and their feedback, in the runs store.

    Args:
        store: the runs store the tables live in (created on first use).
        policy: redaction and retention (`load_record_policy()` reads atoll.toml's); default none and 30 days.
            Its hook is imported here, so a wrong one stops the server before it serves.
    """

    def __init__(self, store: RunStore, policy: RecordPolicy | None = None) -> None:
        self.store = store
        self.policy = policy or RecordPolicy()
        self._hook = self.policy.hook()
        self._pruned_at = float("-inf")
        with store.transaction() as db:
            # A deleted (pruned) record is overwritten, not left in free pages for anyone who reads the file.
            db.execute("PRAGMA secure_delete = ON")
            table = db[RECORDS_TABLE]
            # A store from before summaries were kept: its records get theirs once, here.
            summarise = table.exists() and "opening" not in table.columns_dict
            store.ensure_table(RECORDS_TABLE, _RECORD_COLUMNS, pk="id")
            store.ensure_table(
                FEEDBACK_TABLE,
                _FEEDBACK_COLUMNS,
                pk=("record_id", "source"),
                foreign_keys=[("record_id", RECORDS_TABLE, "id")],
            )
            for columns in (
                ["created_at"],
                ["harness", "created_at"],
                ["session", "created_at"],
                ["thread", "session"],  # covers the session lookup of `add`
            ):
                db[RECORDS_TABLE].create_index(columns, if_not_exists=True)
            if summarise:
                _summarise_stored(db.conn)
        recover(store, _insert)
        self._pending = PendingRecords(store, _insert, self._prune_due)

    # -- writing ------------------------------------------------------------------------------------------

    def add(self, record: NewRecord) -> Record:
        """Redact, assign an id and a session, and store one call: one indexed lookup and one insert.

        The session is the client's (`record.session`, through the built-in redactors) when given; else
        the session of the records whose messages + answer are the longest prefix (ending in an assistant
        message) of this request's messages, when they all have one session; else a new one. Two users
        who open with the same words and get the same answer hold the same prefix: when it maps to more
        than one session, a new session starts rather than guessing whose conversation this continues, so
        exact grouping needs the client's id (`x-atoll-session`). Prefixes are compared on the redacted
        messages, as they were stored. Raises RecordError, writing nothing, when the redaction hook fails.
        """
        self._prune_due()
        redacted = self._redacted(record)
        with self.store.transaction() as db:
            row = self._row(record, redacted, db.conn.execute)
            _insert(db.conn, [row])
        return _new_record(redacted, row)

    def submit(self, record: NewRecord) -> Record:
        """`add` for a call about to be answered: the record is redacted and its session found as `add` does,
        then journaled (one `write`, see _pending.py) and stored a moment later by this process's writer, so
        the answer never waits for the store. It outlives this process from here on: if the process dies
        before storing it, the next one to open the store stores it. Raises RecordError as `add` does, and
        when the record cannot be journaled (a full disk)."""
        redacted = self._redacted(record)
        row = self._row(record, redacted, self.store.read)
        try:
            self._pending.append(row)
        except OSError as error:
            raise RecordError(f"the record could not be journaled: {error}; nothing was recorded") from None
        return _new_record(redacted, row)

    @property
    def backlogged(self) -> bool:
        """Whether the records journaled and not yet stored are past their bound (`submit` should wait)."""
        return self._pending.backlogged

    def wait_for_room(self) -> None:
        """Block until `backlogged` is over; RecordError when the store takes no records for 30 s."""
        try:
            self._pending.wait_for_room()
        except TimeoutError as error:
            raise RecordError(f"{error}; nothing was recorded") from None

    def flush(self, timeout: float = SETTLE_S) -> bool:
        """Wait until every record this process submitted is stored; False when `timeout` passed first."""
        return self._pending.flush(timeout)

    def close(self) -> None:
        """Store what this process journaled and stop its writer (what it could not store stays journaled)."""
        self._pending.close()

    def _row(self, record: NewRecord, redacted: _Redacted, query: _Query) -> dict[str, Any]:
        """The row `record` is stored as, its session found through `query` when the client gave none."""
        request, response, error, given = redacted
        values = record.model_dump(exclude={"request", "response", "error", "session"})
        prefixes, thread = _conversation_hashes(request, response)
        return {
            **values,
            "id": _new_id("rec"),
            "created_at": _stamp(_now()),
            "session": given or self._session_of(query, prefixes),
            "thread": thread,
            "request": json.dumps(request, ensure_ascii=False),
            "response": None if response is None else json.dumps(response, ensure_ascii=False),
            "error": error,
            "opening": _opening(request),
            "reply": _reply(response),
        }

    def _redacted(self, record: NewRecord) -> _Redacted:
        """The request, response, error and client's session id of `record`, redacted (copies)."""
        redactors = list(self.policy.redact)
        request, response, error = record.request, record.response, record.error
        if redactors:  # a copy: the response is still on its way to the client, whole
            request = _redact_value(request, redactors)
            response = None if response is None else _redact_value(response, redactors, skip=_ENVELOPE)
            error = None if error is None else redact_text(error, redactors)
        if self._hook is not None:
            request = self._call_hook(json.loads(json.dumps(request)))  # the hook may edit what it is given
            response = None if response is None else self._call_hook(json.loads(json.dumps(response)))
            if error is not None:  # the hook sees the error text as {"error": text} and returns that shape
                error = self._call_hook({"error": error}).get("error")
                if error is not None and not isinstance(error, str):
                    raise RecordError(
                        f"records.redact_hook {self.policy.redact_hook!r} returned an error that is a "
                        f"{type(error).__name__}, not a string; nothing was recorded"
                    )
        given = redact_text(record.session, redactors) if record.session else None
        return request, response, error, given

    def _call_hook(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self.policy.redact_hook
        try:
            result = self._hook(body)  # type: ignore[misc]  # set whenever this is called
        except Exception as error:
            raise RecordError(
                f"records.redact_hook {name!r} raised {type(error).__name__}: {error}; nothing was recorded"
            ) from error
        if not isinstance(result, dict):
            raise RecordError(
                f"records.redact_hook {name!r} returned a {type(result).__name__}, not a dict; nothing was recorded"
            )
        return result

    def _session_of(self, query: _Query, prefixes: list[str]) -> str:
        """The one session that holds the longest stored (or journaled here) of a conversation's `prefixes`
        (hashes, longest first); a new one when none is held or the longest is held by several sessions
        (whose, nobody can tell)."""
        if prefixes:
            found = {
                thread: (count, session)
                for thread, count, session in query(
                    f"SELECT thread, COUNT(DISTINCT session), MAX(session) FROM {RECORDS_TABLE} "
                    f"WHERE thread IN ({', '.join('?' * len(prefixes))}) GROUP BY thread",
                    prefixes,
                )
            }
            for prefix in prefixes:  # longest first: it alone decides
                sessions = self._pending.sessions(prefix)
                count, session = found.get(prefix, (0, None))
                if count > 1:
                    break
                sessions |= {session} if session is not None else set()
                if len(sessions) == 1:
                    return sessions.pop()
                if sessions:
                    break
        return _new_id("ses")

    def add_feedback(self, feedback: FeedbackIn) -> list[Feedback]:
        """Merge a feedback post into the rows of its records: one row per (record, source).

        A second post from the same source updates that row field by field: a field the post gives replaces
        the stored one, a field it leaves out (None) keeps it, and `posts` counts the posts. Score and passed
        are completed first (see `FeedbackIn`), so a later `passed: false` also sets the score to 0.
        Comment, correction and source go through the built-in redactors. Raises UnknownRecord, writing
        nothing, when any id is not stored (after waiting for those answered a moment ago and still on
        their way to the store, see `_settle`). Returns the merged rows, in the order of `record_ids`.
        """
        try:
            return self._merge_feedback(feedback)
        except UnknownRecord as unknown:
            self._settle(unknown.record_ids)
            return self._merge_feedback(feedback)

    def _merge_feedback(self, feedback: FeedbackIn) -> list[Feedback]:
        redactors = list(self.policy.redact)
        source = redact_text(feedback.source, redactors)
        given = {
            "score": feedback.score,
            "passed": feedback.passed,
            "comment": None if feedback.comment is None else redact_text(feedback.comment, redactors),
            "correction": None
            if feedback.correction is None
            else redact_text(feedback.correction, redactors),
        }
        record_ids = list(dict.fromkeys(feedback.record_ids))
        now = _stamp(_now())
        marks = ", ".join("?" * len(record_ids))
        with self.store.transaction() as db:
            known = {
                row[0]
                for row in db.conn.execute(
                    f"SELECT id FROM {RECORDS_TABLE} WHERE id IN ({marks})", record_ids
                )
            }
            missing = [record_id for record_id in record_ids if record_id not in known]
            if missing:
                raise UnknownRecord(missing)
            stored = {
                row["record_id"]: row
                for row in db[FEEDBACK_TABLE].rows_where(
                    f"source = ? AND record_id IN ({marks})", [source, *record_ids]
                )
            }
            _check_sources(db.conn, [record_id for record_id in record_ids if record_id not in stored])
            merged = []
            for record_id in record_ids:
                before = stored.get(record_id)
                row = {
                    "record_id": record_id,
                    "source": source,
                    "posts": 1 if before is None else before["posts"] + 1,
                    "created_at": now if before is None else before["created_at"],
                    "updated_at": now,
                }
                for field in _MERGED_FIELDS:
                    value = given[field]
                    row[field] = value if value is not None or before is None else before[field]
                db[FEEDBACK_TABLE].upsert(row, pk=("record_id", "source"))
                merged.append(_feedback(row))
        return merged

    def _settle(self, record_ids: list[str]) -> None:
        """Wait, at most SETTLE_S, for those of `record_ids` that were answered and are still journaled (by
        this process or another live one: a client sends feedback as soon as it has the answer); those
        journaled by a process that is gone are stored here."""
        deadline = time.monotonic() + SETTLE_S
        self._pending.flush(SETTLE_S)
        while journaled(self.store, record_ids) and time.monotonic() < deadline:
            recover(self.store, _insert)
            time.sleep(0.01)

    def _prune_due(self) -> None:
        """Prune when the last prune is a minute old, for `add` and the writer, which must never fail a call
        that was answered because the store could not drop old records: a failed prune is logged and tried
        again a minute later."""
        if time.monotonic() - self._pruned_at < PRUNE_EVERY_S:
            return
        try:
            self.prune()
        except (sqlite3.Error, OverflowError, ValueError) as error:
            _log.warning(
                "records: pruning failed (%s: %s); the call is recorded, pruning is retried in a minute",
                type(error).__name__,
                error,
            )

    def prune(self, now: datetime | None = None) -> int:
        """Drop the records older than the retention, with their feedback; returns how many records went."""
        self._pruned_at = time.monotonic()
        if self.policy.retention_days is None:
            return 0
        cutoff = _stamp((now or _now()) - timedelta(days=self.policy.retention_days))
        with self.store.transaction() as db:
            expired = f"SELECT id FROM {RECORDS_TABLE} WHERE created_at < ?"
            db.conn.execute(f"DELETE FROM {FEEDBACK_TABLE} WHERE record_id IN ({expired})", [cutoff])
            return db.conn.execute(f"DELETE FROM {RECORDS_TABLE} WHERE created_at < ?", [cutoff]).rowcount

    # -- reading ------------------------------------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own for one read, in one deferred (read) transaction: a consistent snapshot
        of the records and their feedback that never takes the write lock nor the store's thread lock, so
        `add` never waits for a listing (WAL: readers and the writer do not block each other)."""
        connection = sqlite3.connect(self.store.path, timeout=30.0, isolation_level=None)
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA query_only = ON")
            connection.execute("BEGIN")
            yield connection
        finally:
            connection.close()

    def get(self, record_id: str) -> Record:
        """One record, whole, with its feedback; UnknownRecord when it is not stored (after `_settle`)."""
        found = self._read_one(record_id)
        if found is None:
            self._settle([record_id])
            found = self._read_one(record_id)
        if found is None:
            raise UnknownRecord([record_id])
        return found

    def _read_one(self, record_id: str) -> Record | None:
        with self._reading() as conn:
            rows = conn.execute(f"SELECT * FROM {RECORDS_TABLE} WHERE id = ?", [record_id]).fetchall()
            if not rows:
                return None
            feedback = _feedback_of(conn, [record_id])
        return _record(dict(rows[0]), feedback[record_id])

    @overload
    def list(
        self,
        *,
        harness: str | None = ...,
        session: str | None = ...,
        with_feedback: bool | None = ...,
        since: datetime | None = ...,
        limit: int | None = ...,
        after: str | None = ...,
        full: Literal[False] = ...,
    ) -> list[RecordSummary]: ...

    @overload
    def list(
        self,
        *,
        harness: str | None = ...,
        session: str | None = ...,
        with_feedback: bool | None = ...,
        since: datetime | None = ...,
        limit: int | None = ...,
        after: str | None = ...,
        full: Literal[True],
    ) -> list[Record]: ...

    def list(
        self,
        *,
        harness: str | None = None,
        session: str | None = None,
        with_feedback: bool | None = None,
        since: datetime | None = None,
        limit: int | None = 50,
        after: str | None = None,
        full: bool = False,
    ) -> list[RecordSummary] | list[Record]:
        """Records, newest first (a session's calls: in the order they came, oldest first), with their
        feedback: summaries without the request and response bodies, or whole records with `full`.

        Args:
            harness: only this harness (its harness.yaml name).
            session: only the calls of this session.
            with_feedback: True: only records that got feedback; False: only those that got none.
            since: only records made at or after this moment.
            limit: at most this many; None: all.
            after: a record id: only the records that come after it in this order (the next page, when it
                is the last id of the previous one); UnknownRecord when it is not stored.
            full: whole `Record`s, bodies included (a listing of large calls then costs their size).

        The calls this process answered before are listed (their writer is waited for, at most SETTLE_S);
        another process's are once its writer stored them, a moment after it answered.
        """
        self._pending.flush()
        where, values = [], []
        if harness is not None:
            where.append("harness = ?")
            values.append(harness)
        if session is not None:
            where.append("session = ?")
            values.append(session)
        if since is not None:
            where.append("created_at >= ?")
            values.append(_stamp(since))
        if with_feedback is not None:
            exists = f"EXISTS (SELECT 1 FROM {FEEDBACK_TABLE} f WHERE f.record_id = {RECORDS_TABLE}.id)"
            where.append(exists if with_feedback else f"NOT {exists}")
        ascending = session is not None
        order = "created_at, rowid" if ascending else "created_at DESC, rowid DESC"
        columns = "*" if full else ", ".join(_SUMMARY_COLUMNS)
        with self._reading() as conn:
            if after is not None:
                mark = conn.execute(
                    f"SELECT created_at, rowid FROM {RECORDS_TABLE} WHERE id = ?", [after]
                ).fetchone()
                if mark is None:
                    raise UnknownRecord([after])
                where.append(f"(created_at, rowid) {'>' if ascending else '<'} (?, ?)")
                values += [mark[0], mark[1]]
            query = f"SELECT {columns} FROM {RECORDS_TABLE}"
            if where:
                query += " WHERE " + " AND ".join(where)
            query += f" ORDER BY {order}"
            if limit is not None:
                query += " LIMIT ?"
                values.append(limit)
            rows = [dict(row) for row in conn.execute(query, values)]
            feedback = _feedback_of(conn, [row["id"] for row in rows])
        if full:
            return [_record(row, feedback[row["id"]]) for row in rows]
        return [RecordSummary.model_validate({**row, "feedback": feedback[row["id"]]}) for row in rows]

    # -- counts: what the jobs, the recipes and the console read of the records --------------------------

    def count(self, harness: str, *, since: str | None = None) -> int:
        """The records of `harness` stored at or after `since` (the store's timestamps), or all."""
        with self._reading() as conn:
            return conn.execute(
                f"SELECT COUNT(*) FROM {RECORDS_TABLE} WHERE harness = ? AND (? IS NULL OR created_at >= ?)",
                [harness, since, since],
            ).fetchone()[0]

    def negative_feedback(self, harness: str, *, after: str | None = None) -> NegativeFeedback:
        """How many records of `harness` got negative feedback, and when the newest of it was posted,
        counting only feedback posted after `after` (the store's timestamps, to the second) when given."""
        with self._reading() as conn:
            count, newest = conn.execute(
                f"SELECT COUNT(DISTINCT f.record_id), MAX(f.updated_at) FROM {FEEDBACK_TABLE} f "
                f"JOIN {RECORDS_TABLE} r ON r.id = f.record_id "
                "WHERE r.harness = ? AND f.passed = 0 AND (? IS NULL OR f.updated_at > ?)",
                [harness, after, after],
            ).fetchone()
        return NegativeFeedback(records=count, newest=newest)

    def traffic(self, harness: str) -> dict[int, ReleaseTraffic]:
        """Per release number of `harness`, the calls its records hold and the feedback they got."""
        found: dict[int, ReleaseTraffic] = {}
        with self._reading() as conn:
            for number, calls, errors in conn.execute(
                f"SELECT release, COUNT(*), COUNT(error) FROM {RECORDS_TABLE} "
                "WHERE harness = ? AND release IS NOT NULL GROUP BY release",
                [harness],
            ):
                found[number] = ReleaseTraffic(calls=calls, errors=errors)
            for number, rated, passed, failed, mean in conn.execute(
                f"SELECT r.release, COUNT(DISTINCT f.record_id), COALESCE(SUM(f.passed = 1), 0), "
                f"COALESCE(SUM(f.passed = 0), 0), AVG(f.score) FROM {FEEDBACK_TABLE} f "
                f"JOIN {RECORDS_TABLE} r ON r.id = f.record_id "
                "WHERE r.harness = ? AND r.release IS NOT NULL GROUP BY r.release",
                [harness],
            ):
                found[number] = found.get(number, ReleaseTraffic()).model_copy(
                    update={"with_feedback": rated, "passed": passed, "failed": failed, "mean_score": mean}
                )
        return found


def _summarise_stored(conn: sqlite3.Connection) -> None:
    """Fill in the summary columns of the records stored before they existed, one record at a time."""
    rowids = [row[0] for row in conn.execute(f"SELECT rowid FROM {RECORDS_TABLE}")]
    for rowid in rowids:
        request, response = conn.execute(
            f"SELECT request, response FROM {RECORDS_TABLE} WHERE rowid = ?", [rowid]
        ).fetchone()
        conn.execute(
            f"UPDATE {RECORDS_TABLE} SET opening = ?, reply = ? WHERE rowid = ?",
            [
                _opening(json.loads(request)),
                _reply(None if response is None else json.loads(response)),
                rowid,
            ],
        )


def _feedback_of(conn: sqlite3.Connection, record_ids: list[str]) -> dict[str, list[Feedback]]:
    """The feedback rows of each record (oldest first), read on `conn` (a `RecordStore._reading` one)."""
    found: dict[str, list[Feedback]] = {record_id: [] for record_id in record_ids}
    ids = list(found)
    for start in range(0, len(ids), 500):  # under SQLite's limit on bound values
        chunk = ids[start : start + 500]
        for row in conn.execute(
            f"SELECT * FROM {FEEDBACK_TABLE} WHERE record_id IN ({', '.join('?' * len(chunk))}) "
            "ORDER BY created_at, source",
            chunk,
        ):
            found[row["record_id"]].append(_feedback(dict(row)))
    return found


def _feedback(row: dict[str, Any]) -> Feedback:
    return Feedback.model_validate({**row, "passed": None if row["passed"] is None else bool(row["passed"])})


def _record(row: dict[str, Any], feedback: list[Feedback]) -> Record:
    values = {key: value for key, value in row.items() if key not in ("thread", "opening", "reply")}
    values["request"] = json.loads(row["request"])
    values["response"] = None if row["response"] is None else json.loads(row["response"])
    return Record.model_validate({**values, "feedback": feedback})


def _check_sources(db: sqlite3.Connection, record_ids: list[str]) -> None:
    """FeedbackLimit, writing nothing, when a record would get a new source past MAX_FEEDBACK_SOURCES: each
    source is a row per record, so sources without bound were writes without bound."""
    if not record_ids:
        return
    marks = ", ".join("?" * len(record_ids))
    full = [
        record_id
        for record_id, count in db.execute(
            f"SELECT record_id, COUNT(*) FROM {FEEDBACK_TABLE} WHERE record_id IN ({marks}) GROUP BY record_id",
            record_ids,
        )
        if count >= MAX_FEEDBACK_SOURCES
    ]
    if full:
        raise FeedbackLimit(
            f"record {', '.join(full[:3])}{' …' if len(full) > 3 else ''} already has feedback from "
            f"{MAX_FEEDBACK_SOURCES} sources, the most kept; post it under one of their sources"
        )
