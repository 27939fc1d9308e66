"""`optimize records`: what the served harness was asked, what it answered, and the feedback it got."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer
from rich.markup import escape
from rich.table import Table

from ._shared import err, fail, harness_or_default, out, print_json

if TYPE_CHECKING:
    from datetime import datetime

    from atoll.service import Feedback, Record, RecordStore

records_app = typer.Typer(
    help="List, show and export served calls with their feedback; draft tasks from them.",
    no_args_is_help=True,
)

HarnessNameOption = Annotated[str | None, typer.Option(help="Only this harness (its harness.yaml name).")]
SessionOption = Annotated[str | None, typer.Option(help="Only the calls of this session, oldest first.")]
FeedbackOption = Annotated[
    bool | None,
    typer.Option(
        "--feedback/--no-feedback", help="Only records that got feedback (or only those that got none)."
    ),
]
SinceOption = Annotated[
    str | None, typer.Option(help="Only records since: a span (30m, 12h, 7d, 2w) or a UTC date or time.")
]
MAX_LIMIT = 2**63 - 1  # SQLite's largest integer, its LIMIT's bound
EXPORT_PAGE = 200  # records read at a time by `export`: its memory is a page's, whatever it exports


def _records() -> RecordStore:
    from atoll.evals import RunStore
    from atoll.service import RecordStore

    return RecordStore(RunStore())  # reading needs no policy: redaction happened when each was written


def _since(text: str | None) -> datetime | None:
    from atoll.service import parse_since

    return None if text is None else parse_since(text)


def _verdict(feedback: Feedback) -> str:
    mark = {True: "[green]✓[/]", False: "[red]✗[/]", None: "·"}[feedback.passed]
    score = "" if feedback.score is None else f" {feedback.score:.2f}"
    extra = " +correction" if feedback.correction else " +comment" if feedback.comment else ""
    return f"{mark}{score}{extra}"


@records_app.command("list")
def records_list(
    harness: HarnessNameOption = None,
    session: SessionOption = None,
    feedback: FeedbackOption = None,
    since: SinceOption = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIMIT, help="How many records to list, newest first.")
    ] = 50,
) -> None:
    """List served calls: id, time, harness, release, session, model, tokens, latency and feedback.

    Example: `optimize records list --harness support_agent --feedback`
    """
    found = _records().list(
        harness=harness, session=session, with_feedback=feedback, since=_since(since), limit=limit
    )
    if not found:
        out.print(
            "no records match" if harness or session or feedback is not None or since else "no records yet"
        )
        return
    table = Table(title=f"Records ({len(found)})", title_justify="left")
    table.add_column("id", no_wrap=True)  # what a user copies into `show`: never folded
    for name in ("time (UTC)", "harness", "release", "session", "model"):
        table.add_column(name)
    table.add_column("tokens", justify="right")
    table.add_column("latency", justify="right")
    table.add_column("feedback")
    for record in found:
        table.add_row(
            record.id,
            record.created_at,
            escape(record.harness),
            "–" if record.release is None else str(record.release),
            escape(record.session),
            escape(record.model),
            f"{record.prompt_tokens + record.completion_tokens:,}",
            f"{record.latency_ms:,.0f} ms",
            ", ".join(_verdict(item) for item in record.feedback)
            or ("[red]error[/]" if record.error else "–"),
        )
    out.print(table)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _print_message(message: Any) -> None:
    if not isinstance(message, dict):
        out.print(escape(json.dumps(message, ensure_ascii=False)))
        return
    role = str(message.get("role", "?"))
    label = f"{role} ({message['tool_call_id']})" if message.get("tool_call_id") else role
    out.print(f"[bold]{escape(label)}:[/] {escape(_content(message.get('content')))}", soft_wrap=True)
    for call in message.get("tool_calls") or []:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        out.print(
            f"  → {escape(str(function.get('name')))}({escape(str(function.get('arguments', '')))})",
            soft_wrap=True,
        )


@records_app.command("show")
def records_show(
    record_id: Annotated[str, typer.Argument(metavar="ID", help="A record id, e.g. rec_3f9a…")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
) -> None:
    """Show one served call: the request's messages, the response, and the feedback it got.

    Example: `optimize records show rec_3f9a0c1d2e4b5a6f`
    """
    record = _records().get(record_id)
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    release = "unreleased" if record.release is None else f"release {record.release}"
    out.print(
        f"[bold]{record.id}[/]  {escape(record.harness)} ({release}, {record.release_hash[:12]}), agent "
        f"{escape(record.agent)}, {escape(record.model)}\nsession {escape(record.session)}, "
        f"{record.created_at} UTC, {record.prompt_tokens:,} + {record.completion_tokens:,} tokens, "
        f"{record.latency_ms:,.0f} ms, ${record.cost_usd:.4f}",
        highlight=False,
    )
    out.rule("request")
    messages = record.request.get("messages")
    for message in messages if isinstance(messages, list) else []:
        _print_message(message)
    out.rule("response")
    if record.error:
        out.print(f"[red]error:[/] {escape(record.error)}", soft_wrap=True)
    for choice in (record.response or {}).get("choices") or []:
        _print_message(choice.get("message") if isinstance(choice, dict) else choice)
    out.rule("feedback")
    if not record.feedback:
        out.print("none yet")
        return
    table = Table()
    for name in ("source", "passed", "score", "posts", "comment", "correction", "updated (UTC)"):
        table.add_column(name)
    for item in record.feedback:
        table.add_row(
            escape(item.source),
            "–" if item.passed is None else str(item.passed).lower(),
            "–" if item.score is None else f"{item.score:.2f}",
            str(item.posts),
            escape(item.comment or ""),
            escape(item.correction or ""),
            item.updated_at,
        )
    out.print(table)


@records_app.command("export")
def records_export(
    out_file: Annotated[
        str, typer.Option("--out", metavar="FILE.jsonl", help="Where to write; `-` for stdout.")
    ],
    harness: HarnessNameOption = None,
    session: SessionOption = None,
    feedback: FeedbackOption = None,
    since: SinceOption = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_LIMIT, help="At most this many, newest first; default all."),
    ] = None,
) -> None:
    """Export records as JSON Lines: one object per record, with its feedback.

    Example: `optimize records export --feedback --since 7d --out feedback.jsonl`
    """
    pages = _whole_records(
        _records(), harness=harness, session=session, with_feedback=feedback, since=_since(since), limit=limit
    )
    if out_file == "-":
        _write_lines(pages, sys.stdout)
        return
    try:
        count = _replace_with(Path(out_file), pages)
    except OSError as error:
        fail(f"{out_file}: cannot write: {error.strerror or error}")
    err.print(f"exported {count} records to {escape(out_file)}", highlight=False)


def _whole_records(records: RecordStore, *, limit: int | None, **filters: Any) -> Iterator[Record]:
    """The records `list` gives for `filters`, bodies included, read EXPORT_PAGE at a time."""
    after = None
    left = limit
    while left is None or left > 0:
        size = EXPORT_PAGE if left is None else min(EXPORT_PAGE, left)
        page = records.list(**filters, limit=size, after=after, full=True)
        yield from page
        if len(page) < size:
            return
        after = page[-1].id
        left = None if left is None else left - len(page)


def _write_lines(records: Iterator[Record], file: TextIO) -> int:
    count = 0
    for record in records:
        file.write(record.model_dump_json() + "\n")
        count += 1
    return count


def _replace_with(path: Path, records: Iterator[Record]) -> int:
    """Write the records to `path` whole or not at all: into a temporary file beside it, fsynced, then
    renamed over it, so a failed export leaves what was there; the temporary file never stays. The file
    keeps the mode it had (a new one: what the umask allows, as any file written)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            if path.exists():
                mode = path.stat().st_mode & 0o777
            else:
                mode = 0o666 & ~(umask := os.umask(0))
                os.umask(umask)
            os.chmod(temporary, mode)
            count = _write_lines(records, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count


@records_app.command("to-tasks")
def records_to_tasks(
    harness: Annotated[
        str | None,
        typer.Option(
            help="The harness folder (or its harness.yaml name, with --suite); default `harness` of atoll.toml."
        ),
    ] = None,
    suite: Annotated[
        Path | None, typer.Option(help="The suite to draft into; default the harness's suite.")
    ] = None,
    since: SinceOption = None,
    only_negative: Annotated[
        bool, typer.Option("--only-negative", help="Only records whose feedback says failed.")
    ] = False,
) -> None:
    """Draft train tasks (review: draft) from records whose feedback carries a correction, into a new
    `<suite>/tasks/drafts-<date>.yaml`; review each, then set review: reviewed.

    Example: `optimize records to-tasks --harness harnesses/support_agent --since 7d --only-negative`
    """
    from atoll.service import draft_tasks

    name, suite = _harness_and_suite(harness, suite)
    report = draft_tasks(_records(), suite, harness=name, since=_since(since), only_negative=only_negative)
    if report.path is None:
        out.print(f"no task drafted from the records of {escape(name)} with feedback")
    else:
        out.print(f"drafted {len(report.tasks)} tasks into {escape(str(report.path))}", highlight=False)
    if report.skipped:
        table = Table(title=f"Skipped ({len(report.skipped)})", title_justify="left")
        table.add_column("record")
        table.add_column("why")
        for skip in report.skipped:
            table.add_row(skip.record_id, escape(skip.reason))
        out.print(table)


def _harness_and_suite(harness: str | None, suite: Path | None) -> tuple[str, Path]:
    """The harness name records are filed under, and the suite to draft into."""
    folder = harness_or_default(None) if harness is None else Path(harness)
    if not folder.is_dir():
        if suite is None:
            fail(f"--harness {harness!r} is not a harness folder; give the folder, or its name with --suite")
        return str(harness), suite
    from atoll.evals import suite_for
    from atoll.harnesses import load_harness

    loaded = load_harness(folder)
    return loaded.name, suite or suite_for(loaded)
