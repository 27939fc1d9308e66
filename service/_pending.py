"""Records answered but not yet in the runs store: journaled before the response, stored after it.

Writing a record into SQLite on the response path cost each call about half a millisecond of the one core
its process has (a write transaction, four indexes) and, with several processes on one store, a wait for
the write lock. So the endpoint only journals the record, already redacted, as one line appended to a file
of its process (`append`: one `write`), and answers; a thread of that process (`_write`) stores what was
journaled in one transaction per batch and then empties the journal file (a full one, 4 MiB, is left for a
new one and deleted once its records are stored).

Nothing answered is lost when the process dies: a written line is the kernel's once `write` returns, so it
outlives a SIGKILL as the store's own WAL does (the store does not fsync either: `synchronous=NORMAL`; a
power cut may lose the last moments of both). Each journal file names the process that writes it (its
first line, `evals.process_owner()`); any process that opens the store (`recover`) stores the records of
the files whose process is gone and deletes them. A record has a random id and is inserted `OR IGNORE`, so
storing one twice (recovered by two processes, or stored by its process just before it died) keeps one.

The journal holds what the store will hold, no more: records are redacted before they are journaled.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from atoll.evals import RunStore
from atoll.worlds.base import live_status, process_owner

_log = logging.getLogger(__name__)

MAX_PENDING_BYTES = 32 * 1024 * 1024  # journaled, not yet stored: past this a call waits for the writer
ROOM_WAIT_S = 30.0  # how long a call waits for that room (the store's own busy timeout)
RETRY_S = 1.0  # after a failed store the writer tries the same batch again this much later
SETTLE_S = 5.0  # how long a lookup waits for a record another process has journaled and not stored yet
SEGMENT_BYTES = 4 * 1024 * 1024  # a journal file past this is left for a new one, deleted once stored
# The writer, woken by a record, waits this long for more to store with it: under load one transaction then
# stores dozens, where a wait of 2 ms stored two or three. Each batch costs the endpoint's thread more than its
# commit: waking the writer, and handing it the GIL for its turns, took the event loop's core from under it
# (up to milliseconds on a busy machine), so batches are few. A lookup that needs what is journaled (`flush`,
# a full journal) ends the wait at once.
BATCH_WAIT_S = 0.1

Store = Callable[[sqlite3.Connection, list[dict[str, Any]]], None]
"""Inserts journaled rows (`OR IGNORE`) on a connection inside a write transaction."""


def journal_folder(store_path: Path) -> Path:
    """Where the journals of the runs store at `store_path` live: beside it (`atoll.sqlite.pending/`)."""
    return store_path.parent / f"{store_path.name}.pending"


class _Segment:
    """One journal file: its owner's line, then one line per record; created whole under a temporary name
    and renamed, so a file that `recover` sees always says whose it is. Emptied (to its owner's line) when
    every record in it is stored, and deleted once it is no longer written to."""

    def __init__(self, folder: Path, owner: bytes) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        temporary = folder / f"{name}.tmp"
        self.fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        os.write(self.fd, owner)
        self.path = folder / f"{name}.jsonl"
        os.replace(temporary, self.path)
        self.start = self.size = len(owner)
        self.unstored = 0  # its records not stored yet

    def write(self, line: bytes) -> None:
        os.write(self.fd, line)
        self.size += len(line)
        self.unstored += 1

    def empty(self) -> None:
        """Drop its records (all stored), keeping its owner's line; appends go on after it (O_APPEND)."""
        os.ftruncate(self.fd, self.start)
        self.size = self.start

    def remove(self) -> None:
        """Delete the file: every record in it is stored."""
        self.path.unlink(missing_ok=True)
        os.close(self.fd)


class PendingRecords:
    """This process's journal and writer (see the module docstring); the writer starts with the first record.

    Args:
        store: the runs store the records go to.
        insert: stores a batch of rows (RecordStore's insert).
        after: called by the writer after each batch it stored (RecordStore's pruning).
    """

    def __init__(self, store: RunStore, insert: Store, after: Callable[[], None]) -> None:
        self.store, self.insert, self.after = store, insert, after
        self._cond = threading.Condition()
        self._segment: _Segment | None = None  # where `append` writes
        self._rows: list[tuple[dict[str, Any], int, _Segment]] = []  # (row, its line's bytes, its file)
        self._threads: dict[str, set[str]] = {}  # thread hash -> sessions, of the rows not yet stored
        self._bytes = 0  # journaled, not yet stored
        self._appended = self._stored = 0  # rows appended and stored so far, in order
        self._writer: threading.Thread | None = None
        self._idle = False  # the writer waits for a first record: only then does `append` wake it
        self._hurry = False  # someone waits for the store: the writer stores what it has at once
        self._closing = False
        self._owner = (process_owner() + "\n").encode()

    @property
    def backlogged(self) -> bool:
        """Whether a call must wait for the writer before it journals another record."""
        return self._bytes > MAX_PENDING_BYTES

    def append(self, row: dict[str, Any]) -> None:
        """Journal one record's row (one `write`) for the writer to store; OSError, nothing journaled, when
        the file cannot be written (a full disk). After `close` has stopped the writer, the row stays
        journaled, for `recover`."""
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode()
        with self._cond:
            segment = self._segment
            if segment is None or segment.size > SEGMENT_BYTES:  # a full one goes once its rows are stored
                if segment is not None and not segment.unstored:
                    segment.remove()
                segment = self._segment = _Segment(journal_folder(self.store.path), self._owner)
            segment.write(line)
            self._rows.append((row, len(line), segment))
            if row["thread"] is not None:
                self._threads.setdefault(row["thread"], set()).add(row["session"])
            self._bytes += len(line)
            self._appended += 1
            if self._writer is None:
                self._writer = threading.Thread(target=self._write, name="atoll-records", daemon=True)
                self._writer.start()
            if self._idle:  # else the writer is gathering or storing, and takes this row with the rest
                self._cond.notify_all()

    def sessions(self, thread: str) -> set[str]:
        """The sessions of this process's unstored records whose conversation hashes to `thread`."""
        with self._cond:
            return set(self._threads.get(thread, ()))

    def wait_for_room(self) -> None:
        """Block until the journal is back under its bound; TimeoutError after ROOM_WAIT_S."""
        deadline = time.monotonic() + ROOM_WAIT_S
        with self._cond:
            self._hurry_writer()
            while self.backlogged:
                if not self._cond.wait(deadline - time.monotonic()) and self.backlogged:
                    raise TimeoutError(f"the runs store took no records for {ROOM_WAIT_S:.0f} s")

    def flush(self, timeout: float = SETTLE_S) -> bool:
        """Wait until every record appended so far is stored; False when `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._appended
            if self._stored < target:
                self._hurry_writer()
            while self._stored < target:
                if not self._cond.wait(deadline - time.monotonic()) and self._stored < target:
                    return False
        return True

    def close(self) -> None:
        """Store what is journaled and stop the writer (a stopping service), waiting for it at most
        ROOM_WAIT_S; what it could not store stays journaled, for `recover`."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join(ROOM_WAIT_S)

    # -- the writer -------------------------------------------------------------------------------------

    def _hurry_writer(self) -> None:
        """End the writer's wait for more rows (called holding the condition's lock)."""
        self._hurry = True
        self._cond.notify_all()

    def _write(self) -> None:
        """Until closed with nothing left: take every row journaled so far (after waiting BATCH_WAIT_S for
        more), store them in one transaction, then empty or delete the files whose rows are all stored."""
        while True:
            with self._cond:
                self._idle = True
                while not self._rows and not self._closing:
                    self._cond.wait()
                self._idle = False
                if not self._rows:
                    if self._segment is not None and not self._segment.unstored:
                        self._segment.remove()
                        self._segment = None
                    return
                deadline = time.monotonic() + BATCH_WAIT_S
                while not (self._hurry or self._closing) and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)  # rows journaled meanwhile do not wake it: they wait for this batch
                self._hurry = False
                taken, self._rows = self._rows, []
            if not self._store([row for row, _, _ in taken]):
                return  # the store is closed: the rows stay journaled, for `recover`
            self._stored_now(taken)
            self.after()

    def _stored_now(self, taken: list[tuple[dict[str, Any], int, _Segment]]) -> None:
        with self._cond:
            for row, size, segment in taken:
                sessions = self._threads.get(row["thread"] or "")
                if sessions is not None:
                    sessions.discard(row["session"])
                    if not sessions:
                        del self._threads[row["thread"]]
                self._bytes -= size
                segment.unstored -= 1
            for segment in {segment for _, _, segment in taken if not segment.unstored}:
                if segment is self._segment:
                    segment.empty()
                else:
                    segment.remove()
            self._stored += len(taken)
            self._cond.notify_all()

    def _store(self, rows: list[dict[str, Any]]) -> bool:
        """Store `rows`, trying again while the store refuses (locked, full); False when it is closed."""
        while True:
            try:
                with self.store.transaction() as db:
                    self.insert(db.conn, rows)
                return True
            except sqlite3.ProgrammingError:  # closed under the writer: a process shutting down
                _log.warning(
                    "records: the runs store closed with %d records journaled, not stored", len(rows)
                )
                return False
            except sqlite3.Error as error:
                _log.warning("records: storing %d records failed (%s); retrying", len(rows), error)
                time.sleep(RETRY_S)


def recover(store: RunStore, insert: Store) -> int:
    """Store the records journaled by processes that are gone, and delete their journals; how many."""
    folder = journal_folder(store.path)
    if not folder.is_dir():
        return 0
    recovered = 0
    for path in sorted(folder.iterdir()):  # a `.tmp` left by a process killed as it made one holds no rows
        rows = _orphaned(path)
        if rows is None:
            continue
        with store.transaction() as db:
            insert(db.conn, rows)
        path.unlink(missing_ok=True)
        recovered += len(rows)
    if recovered:
        _log.warning("records: stored %d records a stopped process had answered and journaled", recovered)
    return recovered


def journaled(store: RunStore, record_ids: Iterable[str]) -> set[str]:
    """Which of `record_ids` sit in a journal of a live process (answered, stored in a moment)."""
    folder = journal_folder(store.path)
    wanted = {f'"id": "{record_id}"'.encode(): record_id for record_id in record_ids}
    found: set[str] = set()
    for path in folder.glob("*.jsonl") if folder.is_dir() else ():
        try:
            text = path.read_bytes()
        except OSError:  # stored and deleted meanwhile
            continue
        found |= {record_id for needle, record_id in wanted.items() if needle in text}
    return found


def _orphaned(path: Path) -> list[dict[str, Any]] | None:
    """The rows of a journal whose process is gone; None for a live (or unknown) process's, or one gone."""
    try:
        owner, *lines = path.read_bytes().decode().splitlines()
    except (OSError, ValueError):
        return None
    if live_status({"status": "running", "owner": owner}) != "interrupted":  # alive, or cannot tell
        return None
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line cut short (a full disk): its call was answered with an error
            continue
    return rows
