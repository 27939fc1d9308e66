"""Draft eval tasks from served records that got feedback: real traffic becomes train tasks a person reviews.

A record with a correction says what the reply should have held, so it can become a task: the conversation's
user side, the fixture the application ran it on, and reply checks taken from the correction. The drafts are
only as good as the feedback, so each is written with `review: draft` in split train, which the suite loader
refuses in val or test: an unchecked expectation never decides what the optimizer accepts.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import from_json

from atoll.evals import MAX_SEED, Suite, SuiteError, load_suite

from ._records import Record, RecordStore

MAX_WHOLE_CORRECTION = 120  # a correction up to this long (and quoting nothing) is a phrase as it stands
PLACEHOLDERS = ("[email]", "[phone]", "[card]")  # what redaction left: no reply could contain the original
_QUOTED = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|`([^`\n]+)`')
_COMMENT_CHARS = 240
TASKS_FOLDER = "tasks"  # where a suite keeps its task files (evals/README.md)


class DraftSkip(BaseModel):
    """A record with feedback that did not become a task, and why."""

    record_id: str
    reason: str


class DraftReport(BaseModel):
    """What `draft_tasks` did: the file written (None when no task was drafted), its task ids, the skips."""

    path: Path | None
    tasks: list[str]
    skipped: list[DraftSkip]


class _Skip(Exception):
    """This record cannot be drafted; the message says why."""


def correction_phrases(correction: str) -> list[str]:
    """The phrases a reply must contain, from a correction: the phrases it quotes ("…", “…” or `…`), else
    its whole text when at most MAX_WHOLE_CORRECTION characters (trailing punctuation off); else none, since
    a long unquoted correction is an instruction or a whole reply, and no reply would repeat it verbatim."""
    quoted = [next(part for part in match.groups() if part).strip() for match in _QUOTED.finditer(correction)]
    if any(quoted):
        return [phrase for phrase in quoted if phrase]
    whole = " ".join(correction.split()).rstrip(".!?;, ")
    return [whole] if whole and len(whole) <= MAX_WHOLE_CORRECTION else []


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict)).strip()
    return content.strip() if isinstance(content, str) else ""


def _metadata(record: Record) -> dict[str, Any]:
    metadata = record.request.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _context(record: Record) -> dict[str, Any]:
    value = _metadata(record).get("atoll_context")
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = from_json(value)
        except ValueError:  # not JSON, or nested past the parser's depth
            raise _Skip("metadata.atoll_context is not JSON") from None
    if not isinstance(value, dict):
        raise _Skip("metadata.atoll_context is not a JSON object")
    return value


def draft_task(record: Record, suite: Suite) -> dict[str, Any]:
    """The task a record with a correction becomes, as the mapping its YAML holds; _Skip when it cannot.

    The user's opening message is the first user message of the conversation, and its later user messages
    are the scripted replies; the fixture is `metadata.atoll_fixture` (and the seed `metadata.atoll_seed`)
    when the application sent one, else the world's default fixture; the context is `metadata.atoll_context`.
    """
    phrases = list(
        dict.fromkeys(
            phrase
            for feedback in record.feedback
            if feedback.correction
            for phrase in correction_phrases(feedback.correction)
            if not any(mark in phrase for mark in PLACEHOLDERS)
        )
    )
    if not phrases:
        if not any(feedback.correction for feedback in record.feedback):
            raise _Skip("no correction: nothing says what the reply should hold")
        raise _Skip(
            f"no phrase to check: quote the words the reply must contain, or keep the correction under "
            f"{MAX_WHOLE_CORRECTION} characters (redacted text cannot be checked)"
        )
    messages = record.request.get("messages")
    said = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user" and _text(message.get("content")):
            said.append(_text(message.get("content")))
    if not said:
        raise _Skip("the request holds no user message with text")
    metadata = _metadata(record)
    fixture = str(metadata.get("atoll_fixture") or suite.world.default_fixture)
    if fixture not in suite.world.fixtures:
        raise _Skip(f"metadata.atoll_fixture {fixture!r} is not a fixture of world {suite.world.name!r}")
    task: dict[str, Any] = {
        "id": f"draft-{record.id}",
        "split": "train",
        "review": "draft",
        "fixture": fixture,
    }
    if metadata.get("atoll_seed") is not None:
        try:
            seed = int(metadata["atoll_seed"])
        except (TypeError, ValueError):
            raise _Skip(f"metadata.atoll_seed {metadata['atoll_seed']!r} is not an integer") from None
        if not 0 <= seed <= MAX_SEED:  # a task file's seeds are bounded so (evals.Task)
            raise _Skip(f"metadata.atoll_seed {seed} is not an integer from 0 to {MAX_SEED}")
        task["seeds"] = [seed]
    task["tags"] = ["from-records"]
    context = _context(record)
    if context:
        task["context"] = context
    task["user"] = {"message": said[0], **({"replies": said[1:]} if said[1:] else {})}
    task["expect"] = {"reply_contains": phrases}
    return task


def _negative(record: Record) -> bool:
    return any(feedback.passed is False for feedback in record.feedback)


def _comment(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _COMMENT_CHARS else flat[: _COMMENT_CHARS - 1] + "…"


def _notes(record: Record) -> Iterable[str]:
    """What a reviewer needs beside the task: where it came from, the feedback, what the agent said."""
    release = "unreleased" if record.release is None else f"release {record.release}"
    yield f"record {record.id} (session {record.session}), {record.harness} {release}, {record.created_at} UTC"
    for feedback in record.feedback:
        parts = [
            f"{name} {getattr(feedback, name)!r}"
            for name in ("passed", "score")
            if getattr(feedback, name) is not None
        ]
        parts += [
            f"{name}: {getattr(feedback, name)}"
            for name in ("comment", "correction")
            if getattr(feedback, name)
        ]
        yield f"feedback from {feedback.source}: " + "; ".join(parts)
    choices = (record.response or {}).get("choices") or [{}]
    first = choices[0] if isinstance(choices[0], dict) else {}
    answer = _text((first.get("message") or {}).get("content"))
    yield (
        f"the agent answered: {answer or '(no text)'}"
        if record.response
        else f"the call failed: {record.error}"
    )


class _Dumper(yaml.SafeDumper):
    """Safe YAML, with a text of several lines as a `|` block, as a person writes it."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def _render(tasks: list[tuple[Record, dict[str, Any]]], today: date) -> str:
    lines = [
        f"# Drafted by `optimize records to-tasks` on {today.isoformat()} from served records with feedback.",
        "# Each task is a draft (review: draft, split train): check its user side and expectations against the",
        "# notes above it, then set review: reviewed (only then may it move to val or test).",
    ]
    for record, task in tasks:
        lines.append("")
        lines += [f"# {_comment(note)}" for note in _notes(record)]
        lines.append(
            yaml.dump([task], Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100).rstrip("\n")
        )
    return "\n".join(lines) + "\n"


def _write_new(folder: Path, stem: str, text: str) -> Path:
    """Write `text` to `<stem>.yaml` in `folder`, or `<stem>-2.yaml`, ...: never over an existing file, and
    whole or not at all (a temporary file, fsynced, then linked to its name, which fails if that is taken)."""
    temporary = folder / f".{stem}.{secrets.token_hex(4)}.tmp"
    try:  # the temporary file goes whatever happens, a failed write (a full disk) included
        with temporary.open("w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        for number in range(1, 1000):
            path = folder / (f"{stem}.yaml" if number == 1 else f"{stem}-{number}.yaml")
            try:
                os.link(temporary, path)
            except FileExistsError:
                continue
            return path
        raise SuiteError(f"{folder}: {stem}.yaml to {stem}-999.yaml all exist; merge or remove some")
    finally:
        temporary.unlink(missing_ok=True)


def draft_tasks(
    records: RecordStore,
    suite: Path | str,
    *,
    harness: str | None = None,
    since: datetime | None = None,
    only_negative: bool = False,
    today: date | None = None,
) -> DraftReport:
    """Draft a task from each record with feedback and write them to `<suite>/tasks/drafts-<date>.yaml`.

    A record becomes a task when its feedback carries a correction with a phrase to check (see
    `correction_phrases` and `draft_task`); positive feedback without a correction is skipped (a reply that
    was right gives nothing to check but itself, and no reply repeats another verbatim), and so is a record
    already drafted into the suite. The file is new (never an existing one), written atomically, and the
    suite is loaded again to prove it; if it does not load, the file is removed and SuiteError raised.

    Args:
        records: the store to read.
        suite: the suite folder the tasks are for (its world gives the default fixture).
        harness: only records of this harness (its harness.yaml name).
        since: only records made at or after this moment.
        only_negative: only records with feedback that says failed (`passed: false`).
        today: the date in the file name; default today (UTC).
    """
    loaded = load_suite(suite)
    existing = {task.id for task in loaded.tasks}
    drafted: list[tuple[Record, dict[str, Any]]] = []
    skipped: list[DraftSkip] = []
    with_bodies = records.list(harness=harness, since=since, with_feedback=True, limit=None, full=True)
    for record in reversed(with_bodies):  # a draft needs the request and the response
        if only_negative and not _negative(record):
            continue
        if f"draft-{record.id}" in existing:
            skipped.append(
                DraftSkip(record_id=record.id, reason=f"already in the suite as draft-{record.id}")
            )
            continue
        try:
            drafted.append((record, draft_task(record, loaded)))
        except _Skip as reason:
            skipped.append(DraftSkip(record_id=record.id, reason=str(reason)))
    if not drafted:
        return DraftReport(path=None, tasks=[], skipped=skipped)
    today = today or datetime.now(UTC).date()
    path = _write_new(loaded.path / TASKS_FOLDER, f"drafts-{today.isoformat()}", _render(drafted, today))
    try:
        load_suite(loaded.path)
    except SuiteError as error:
        path.unlink()
        raise SuiteError(
            [*error.problems, f"{path}: the drafts above did not load, so they were not kept"]
        ) from None
    return DraftReport(path=path, tasks=[task["id"] for _, task in drafted], skipped=skipped)
