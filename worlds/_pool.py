"""Warm connections per fixture, so an instance costs microseconds instead of a schema parse.

A fresh copy of a fixture is a `deserialize` of its bytes (cheap) followed, on first use,
by SQLite parsing the schema and every capture trigger (most of the cost). An instance
therefore runs inside one outer transaction on its connection; when it closes, a
ROLLBACK restores the fixture's exact bytes and the connection, schema already parsed,
waits for the next instance of the same fixture. A connection whose outer transaction
did not survive (a tool that committed) is closed, never reused.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime

from ._fixture import FixtureData
from ._sqltime import install_clock

IDLE_BYTES_PER_FIXTURE = 64 * 1024 * 1024
IDLE_CONNECTIONS_PER_FIXTURE = 64


def dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


def open_copy(fixture: FixtureData) -> sqlite3.Connection:
    """A new private in-memory copy of every part of `fixture`."""
    connection = sqlite3.connect(
        ":memory:", isolation_level=None, check_same_thread=False, cached_statements=32
    )
    connection.deserialize(fixture.parts["main"])
    for part, blob in fixture.parts.items():
        if part != "main":
            connection.execute(f"ATTACH ':memory:' AS {part}")
            connection.deserialize(blob, name=part)
    connection.row_factory = dict_row
    return connection


class ClockSlot:
    """The `now` a pooled connection's SQL date functions call: whichever instance holds it."""

    def __init__(self) -> None:
        self.now: Callable[[], datetime] = datetime.now

    def __call__(self) -> datetime:
        return self.now()


class PooledConnection:
    """A connection plus the clock slot its date functions read."""

    def __init__(self, fixture: FixtureData) -> None:
        self.connection = open_copy(fixture)
        self.connection.execute("PRAGMA foreign_keys = ON")
        # REPLACE deletes the conflicting row; only with recursive triggers is that delete logged.
        self.connection.execute("PRAGMA recursive_triggers = ON")
        self.clock = ClockSlot()
        install_clock(self.connection, self.clock)


class ConnectionPool:
    """Idle, rolled-back connections of one fixture, bounded in count and bytes."""

    _pools: dict[int, ConnectionPool] = {}  # noqa: RUF012 - one registry for the process
    _guard = threading.Lock()

    def __init__(self, fixture: FixtureData) -> None:
        self.fixture = fixture
        self.size = sum(len(blob) for blob in fixture.parts.values())
        self.limit = max(0, min(IDLE_CONNECTIONS_PER_FIXTURE, IDLE_BYTES_PER_FIXTURE // max(self.size, 1)))
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
            pooled = PooledConnection(self.fixture)
        pooled.clock.now = now
        pooled.connection.execute("BEGIN")
        return pooled

    def release(self, pooled: PooledConnection, *, reusable: bool) -> None:
        """Undo everything since `acquire`; keep the connection if it is clean and there is room."""
        connection = pooled.connection
        if reusable and connection.in_transaction:
            connection.execute("ROLLBACK")
            connection.execute("PRAGMA query_only = OFF")
            with self.lock:
                if len(self.idle) < self.limit:
                    self.idle.append(pooled)
                    return
        connection.close()
