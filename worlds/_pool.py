"""Fixtures loaded once per process, and warm connections per fixture, so an instance is cheap.

A fixture's bytes go once into a named in-memory database that SQLite's memdb VFS shares
among the connections of a process. An instance connection opens it in place, without
locking, and runs inside one transaction that is never committed: its writes stay in its own
page cache (spilling is turned off, and the guard in _guard.py refuses COMMIT and the like),
so an instance costs its parsed schema and the pages it touched, not a copy of the fixture,
and a ROLLBACK returns it to the fixture exactly. Parsing the schema is most of a fresh
connection's cost, so a closed instance's connection, rolled back, waits for the next
instance of the same fixture. A connection whose transaction did not survive (SQLite rolls
back after some errors) is closed, never reused.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime

from ._capture import Capture, TablePositions, open_captured, table_positions
from ._fixture import FixtureData
from ._guard import BEGIN, ROLLBACK, TransactionGuard
from ._schema import read_tables
from ._sqltime import install_clock

# An idle connection keeps its schema parsed and its page cache warm (SQLite's default cap,
# 2 MiB), so the idle connections of one fixture hold at most about 64 MiB.
IDLE_CONNECTIONS_PER_FIXTURE = 32

_store_numbers = itertools.count()


def dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


class FixtureStore:
    """One fixture's parts as shared in-memory databases, alive while this object holds them."""

    def __init__(self, fixture: FixtureData) -> None:
        number = next(_store_numbers)
        self.uris = {part: f"file:/atoll-{number}-{part}?vfs=memdb" for part in fixture.parts}
        self._holders: list[sqlite3.Connection] = []
        tables = {}
        for part, blob in fixture.parts.items():
            holder = sqlite3.connect(self.uris[part], uri=True, check_same_thread=False)
            source = sqlite3.connect(":memory:")
            source.deserialize(blob)
            source.backup(holder)
            source.close()
            self._holders.append(holder)
            tables[part] = read_tables(holder, source=f"fixture {fixture.world}/{fixture.name}")
        self.positions: TablePositions = table_positions(tables)

    def open(self) -> sqlite3.Connection:
        """A connection reading every part in place; write to it only inside a transaction never committed.

        Its isolation level stays Python's default, so should SQLite ever roll the transaction
        back, a later INSERT, UPDATE or DELETE asks for a BEGIN (which the armed guard refuses)
        instead of committing on its own.
        """
        connection = sqlite3.connect(
            self.uris["main"] + "&nolock=1", uri=True, check_same_thread=False, cached_statements=32
        )
        for part, uri in self.uris.items():
            if part != "main":
                connection.execute(f"ATTACH ? AS {part}", (uri + "&nolock=1",))
        connection.execute("PRAGMA cache_spill = OFF")
        connection.row_factory = dict_row
        return connection


class ClockSlot:
    """The `now` a pooled connection's SQL date functions call: whichever instance holds it."""

    def __init__(self) -> None:
        self.now: Callable[[], datetime] = datetime.now

    def __call__(self) -> datetime:
        return self.now()


class PooledConnection:
    """A connection plus its change capture, the clock slot its date functions read and the guard
    that authorizes it."""

    def __init__(self, store: FixtureStore) -> None:
        connection, capture = open_captured(store.open, store.positions, list(store.uris))
        self.connection: sqlite3.Connection = connection
        self.capture: Capture = capture
        self.connection.execute("PRAGMA foreign_keys = ON")
        # REPLACE deletes the conflicting row; only with recursive triggers is that delete logged.
        self.connection.execute("PRAGMA recursive_triggers = ON")
        self.clock = ClockSlot()
        install_clock(self.connection, self.clock)
        self.guard = TransactionGuard()
        self.connection.set_authorizer(self.guard)


class ConnectionPool:
    """A fixture's shared store and its idle, rolled-back connections, bounded in count."""

    _pools: dict[int, ConnectionPool] = {}  # noqa: RUF012 - one registry for the process
    _guard = threading.Lock()

    def __init__(self, fixture: FixtureData) -> None:
        self.fixture = fixture
        self.store = FixtureStore(fixture)
        self.idle: list[PooledConnection] = []
        self.lock = threading.Lock()

    @classmethod
    def of(cls, fixture: FixtureData) -> ConnectionPool:
        with cls._guard:
            pool = cls._pools.get(id(fixture))
            if pool is None or pool.fixture is not fixture:
                pool = cls._pools[id(fixture)] = cls(fixture)
            return pool

    def acquire(self, now: Callable[[], datetime]) -> PooledConnection:
        """A connection at the fixture's state, inside its outer transaction."""
        with self.lock:
            pooled = self.idle.pop() if self.idle else None
        if pooled is None:
            pooled = PooledConnection(self.store)
        pooled.clock.now = now
        pooled.connection.execute(BEGIN)
        pooled.capture.reset()
        return pooled

    def release(self, pooled: PooledConnection) -> None:
        """Undo everything since `acquire`; keep the connection if it is as `open` made it (its transaction
        alive, its isolation level not set to None by a tool) and there is room."""
        connection = pooled.connection
        if connection.in_transaction and connection.isolation_level is not None:
            connection.execute(ROLLBACK)
            with self.lock:
                if len(self.idle) < IDLE_CONNECTIONS_PER_FIXTURE:
                    self.idle.append(pooled)
                    return
        connection.close()
