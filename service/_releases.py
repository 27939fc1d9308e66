"""The release chain: which version of each harness is served, and how it got there.

Each harness (keyed by its harness.yaml `name`) has an append-only chain of releases in the runs store:
release n names its parent n−1, the git commit and content hash of its files (kept in the store's
harness snapshots, so any process can serve them without the folder), and the evidence it was published
on (the gate's figures, or why there was no gate). The head is the release with the highest number; what
is served is the head's files. A rollback is a new release pointing at older content, so the chain never
forgets what was served when.

The head moves by compare-and-swap. A publisher reads head n, gates its candidate against it (minutes),
then publishes with `expected_head=n`: inside one `BEGIN IMMEDIATE` transaction (one writer at a time,
across processes) the chain's head is read again and the new release is inserted as n+1 only if the head
is still n. Of two publishers that both gated against n, the second finds n+1 and is refused with
`StaleRelease`: its gate judged a head that is no longer served. The table's primary key (harness,
number) is the second lock: two rows with the same number can never exist, whatever a writer checked.
No method updates or deletes a release.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field
from pydantic_core import from_json

from atoll.evals import RunStore, StoreError
from atoll.harnesses import content_hash
from atoll.worlds import AtollError
from atoll.worlds.base import now_text

TABLE = "releases"
MAX_NUMBER = 2**63 - 1  # SQLite's largest integer: no release number can be larger
HARNESS_FILE = "harness.yaml"
ReleaseKind = Literal["publish", "rollback"]


class ReleaseError(AtollError):
    """A release cannot be made or found as asked (an unknown number, files of another harness)."""


class StaleRelease(ReleaseError):
    """Another publisher moved the head after this one read it: its gate judged a head no longer served."""

    exit_code = 1


class Release(BaseModel):
    """One link of a harness's release chain."""

    harness: str = Field(description="The harness.yaml `name` the chain is kept under.")
    number: int = Field(ge=1, description="1, 2, …: the position in the chain.")
    parent: int | None = Field(description="The head this release replaced; None for the first.")
    kind: ReleaseKind = Field(
        description="`publish`: new files, gated; `rollback`: an older release's files."
    )
    commit: str | None = Field(description="The git commit of the harness files; None outside git.")
    content_hash: str = Field(
        description="`harnesses.content_hash` of the files; they live in the runs store."
    )
    created_at: str
    evidence: dict[str, Any] = Field(
        description="The gate's verdict and figures (`gate`: pass), or why there was none (`gate`: None)."
    )
    note: str = ""


class ReleaseChain:
    """The release chains of every harness, in a runs store. Reads are one indexed query each.

    Args:
        store: the runs store holding the `releases` table (created here) and the harness snapshots.
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store
        store.ensure_table(
            TABLE,
            {
                "harness": str,
                "number": int,
                "parent": int,
                "kind": str,
                "commit": str,
                "content_hash": str,
                "created_at": str,
                "evidence": str,  # JSON
                "note": str,
            },
            pk=("harness", "number"),  # the unique key that makes a second release n impossible
        )

    def head(self, harness: str) -> Release | None:
        """The served release of `harness`, or None before its first release."""
        rows = self._rows("harness = ? ORDER BY number DESC LIMIT 1", [harness])
        return rows[0] if rows else None

    def get(self, harness: str, number: int) -> Release:
        rows = (
            self._rows("harness = ? AND number = ?", [harness, number]) if 1 <= number <= MAX_NUMBER else []
        )
        if not rows:
            raise ReleaseError(
                f"{harness} has no release {number}; `optimize release list {harness}` lists its releases"
            )
        return rows[0]

    def list(self, harness: str) -> list[Release]:
        """The chain of `harness`, oldest first."""
        return self._rows("harness = ? ORDER BY number", [harness])

    def files(self, release: Release) -> dict[str, str]:
        """The released files, from the store's harness snapshots (no folder or git needed), checked against
        the release's content hash; ReleaseError naming the release when they are missing or changed."""
        where = f"release {release.number} of {release.harness}"
        try:
            files = self.store.harness_files(release.content_hash)
        except StoreError as error:
            raise ReleaseError(
                f"{where}: its files cannot be read ({error}); roll back to a release whose files can"
            ) from None
        if content_hash(files) != release.content_hash:
            raise ReleaseError(
                f"{where}: its files in {self.store.path} no longer match its content hash "
                f"{release.content_hash[:12]} (changed since it was released); roll back to a good release"
            )
        return files

    def lengths(self) -> dict[str, int]:
        """Every harness with a release chain, by name, and how many releases it has."""
        rows = self.store.read(f"SELECT harness, COUNT(*) FROM {TABLE} GROUP BY harness ORDER BY harness")
        return {harness: count for harness, count in rows}

    def numbers(self, harness: str, below: int | None = None) -> list[int]:
        """The release numbers of `harness` (under `below` when given), newest first: read without parsing
        the rows, so a broken row cannot hide the good ones."""
        where, params = "harness = ?", [harness]
        if below is not None:
            where, params = where + " AND number < ?", [*params, below]
        return [
            row[0]
            for row in self.store.read(
                f"SELECT number FROM {TABLE} WHERE {where} ORDER BY number DESC", params
            )
        ]

    def publish(
        self,
        harness: str,
        files: dict[str, str],
        *,
        commit: str | None,
        evidence: dict[str, Any],
        expected_head: int | None,
        kind: ReleaseKind = "publish",
        note: str = "",
    ) -> Release:
        """Append a release of `files` and make it the head, if the head is still `expected_head`.

        Args:
            harness: the harness.yaml `name`; `files` must hold a harness.yaml with that name.
            files: the harness's files, relative path -> text; saved as a snapshot under their content hash.
            commit: the git commit the files were taken from, or None.
            evidence: why this release may be served (the gate's figures, or why there was no gate).
            expected_head: the head number the caller read (and gated against); None: no release yet.
            kind: `publish`, or `rollback` for an older release's files.
            note: free text kept with the release.

        Raises StaleRelease when another publisher moved the head since `expected_head` was read.
        """
        _check_name(harness, files)
        digest = content_hash(files)
        number = (expected_head or 0) + 1
        release = Release(
            harness=harness,
            number=number,
            parent=expected_head,
            kind=kind,
            commit=commit,
            content_hash=digest,
            created_at=now_text(),
            evidence=evidence,
            note=note,
        )
        with self.store.transaction() as db:  # BEGIN IMMEDIATE: the head cannot move until COMMIT
            current = db.execute(f"SELECT MAX(number) FROM {TABLE} WHERE harness = ?", [harness]).fetchone()[
                0
            ]
            if current != expected_head:
                raise _stale(harness, current, expected_head, kind)
            self.store.save_harness(digest, harness, files)
            row = release.model_dump()
            row["evidence"] = json.dumps(evidence, sort_keys=True, default=str)
            try:
                db[TABLE].insert(row)
            except sqlite3.IntegrityError:  # only a writer outside this class could get here first
                raise _stale(harness, number, expected_head, kind) from None
        return release

    def rollback(self, harness: str, to: int, *, expected_head: int | None, note: str = "") -> Release:
        """Serve release `to`'s files again, as a new release (kind `rollback`) on top of `expected_head`.

        No gate runs: release `to` was judged when it was published, and the evidence says so.
        Raises StaleRelease as `publish` does, ReleaseError when `to` is unknown or already served.
        """
        target = self.get(harness, to)
        head = self.head(harness)
        if head is not None and head.content_hash == target.content_hash:
            raise ReleaseError(
                f"release {head.number} of {harness} already serves the files of release {to}: nothing to roll back"
            )
        evidence = {
            "gate": None,
            "summary": f"no gate: a rollback to release {to}, whose files were judged when it was released",
            "rollback_to": to,
        }
        return self.publish(
            harness,
            self.files(target),
            commit=target.commit,
            evidence=evidence,
            expected_head=expected_head,
            kind="rollback",
            note=note,
        )

    def _rows(self, where: str, params: list[Any]) -> list[Release]:
        return [
            _release(dict(row)) for row in self.store.read(f"SELECT * FROM {TABLE} WHERE {where}", params)
        ]


def _release(row: dict[str, Any]) -> Release:
    """A release row read back; ReleaseError naming the row when it was written broken (or edited since)."""
    try:  # pydantic's JSON parser bounds the depth: evidence nested past it is a ValueError, not a crash
        return Release.model_validate(
            {**row, "evidence": from_json(row["evidence"] or b""), "note": row["note"] or ""}
        )
    except (ValueError, TypeError) as error:  # bad JSON, or a field pydantic refuses (both ValueErrors)
        problem = str(error).splitlines()[0]
        raise ReleaseError(
            f"release {row.get('number')} of {row.get('harness')} is broken in the runs store ({problem}); "
            "roll back to a good release, or repair the row"
        ) from None


def _check_name(harness: str, files: dict[str, str]) -> None:
    """Refuse files that are not this harness's: the chain of one name must serve that harness only."""
    if HARNESS_FILE not in files:
        raise ReleaseError(f"the files to release as {harness!r} have no {HARNESS_FILE}")
    config = yaml.safe_load(files[HARNESS_FILE])
    name = config.get("name") if isinstance(config, dict) else None
    if name != harness:
        raise ReleaseError(
            f"the files to release as {harness!r} are harness {name!r} ({HARNESS_FILE} `name`)"
        )


def _stale(harness: str, current: int | None, expected: int | None, kind: ReleaseKind) -> ReleaseError:
    if current is not None and (expected is None or current > expected):
        action, again = (
            ("gated", "`optimize release` again to gate against it")
            if kind == "publish"
            else ("rolled back", "`optimize release rollback` again if it should still go")
        )
        return StaleRelease(
            f"release {current} of {harness} was published by another publisher while this one was {action} "
            f"(expected head {expected if expected is not None else 'none'}); run {again}"
        )
    return ReleaseError(
        f"{harness} has no release {expected}: its head is {current if current is not None else 'none'}; "
        "pass the head you read"
    )
