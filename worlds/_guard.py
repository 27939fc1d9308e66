"""Only the engine controls an instance's transaction; tools and queries are refused it.

Every tool call runs in a savepoint inside the instance's one transaction, which is never
committed: its writes stay in the connection's page cache over the fixture every instance
shares (see _pool.py). A tool or query that committed, rolled back, released the call's
savepoint or let the page cache spill would leave writes no rollback undoes, or write into
that shared fixture. SQLite asks an authorizer about each statement as it is prepared; while
a tool or query runs, this one refuses transaction control and `PRAGMA cache_spill`, and
remembers what it refused, so the call is reported as a world bug whatever the tool did next.

Python's sqlite3 reuses a prepared statement of the same text without asking the authorizer
again, so the engine's own transaction statements carry a tag drawn once per process, which
no tool's SQL repeats.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

_TAG = secrets.token_hex(8)
BEGIN = f"BEGIN /* atoll {_TAG} */"
ROLLBACK = f"ROLLBACK /* atoll {_TAG} */"
SAVEPOINT = f"SAVEPOINT atoll_{_TAG}"
RELEASE = f"RELEASE atoll_{_TAG}"
ROLLBACK_TO = f"ROLLBACK TO atoll_{_TAG}"

_SAVEPOINT_VERBS = {"BEGIN": "SAVEPOINT", "RELEASE": "RELEASE", "ROLLBACK": "ROLLBACK TO"}


class TransactionControlRefused(sqlite3.DatabaseError):
    """A tool or query ran a statement that only the engine may run."""


class TransactionGuard:
    """The authorizer of one instance connection; `watching()` arms it around a tool call or query."""

    def __init__(self) -> None:
        self.armed = False
        self.refused: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, database: str | None, trigger: str | None
    ) -> int:
        if not self.armed:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_TRANSACTION:
            statement = str(arg1)
        elif action == sqlite3.SQLITE_SAVEPOINT:
            statement = f"{_SAVEPOINT_VERBS.get(str(arg1), arg1)} {arg2}"
        elif action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() == "cache_spill":
            statement = f"PRAGMA {arg1}"
        else:
            return sqlite3.SQLITE_OK
        self.refused = self.refused or statement
        return sqlite3.SQLITE_DENY

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Arm the guard for the block; if it refused anything, raise TransactionControlRefused
        afterwards, in place of whatever the block raised (a tool may have caught the refusal)."""
        self.armed, self.refused = True, None
        try:
            yield
        except Exception:
            if self.refused is None:
                raise
        finally:
            self.armed = False
        if self.refused is not None:
            raise TransactionControlRefused(
                f"{self.refused} refused: the engine runs each tool call as one transaction and alone ends it"
            )
