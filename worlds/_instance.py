"""An instance: a private in-memory copy of a fixture that tools change and graders read.

An instance holds a connection from the fixture's pool (opened on the fixture's shared bytes,
or a warm one rolled back to them), so thousands can live in one process. Every tool call is
one savepoint inside the instance's outer transaction, which only the engine may end (see
_guard.py); the connection's change capture (_capture.py) reports the keys a call changed, and
the rows behind those keys are read by key, so the log and `diff()` hold exact values and cost
nothing for rows nobody touched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sqlite3
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError
from pydantic_core import to_jsonable_python

from ._clock import TIMESTAMP_FORMAT, Clock
from ._diff import Diff, Row, RowChange, RowUpdate, TableDiff, changed_columns, sort_key
from ._errors import InstanceClosed, ToolError, ToolErrorAfterWrites
from ._fixture import FixtureData
from ._guard import RELEASE, ROLLBACK_TO, SAVEPOINT
from ._pool import ConnectionPool
from ._schema import TableInfo, qualified, select_row_sql
from ._tool import Tool, ToolContext, describe_validation_error

if TYPE_CHECKING:
    from ._world import World

log = logging.getLogger(__name__)

Observation = Literal["json", "text"]


class ToolFailure(BaseModel):
    """Why a call did nothing: `type` is a stable code (`not_found`, `invalid_arguments`, `world_bug`, …)."""

    type: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    """The outcome of one tool call, as the caller (and the agent) sees it."""

    tool: str
    ok: bool
    value: Any = None
    error: ToolFailure | None = None
    _observation: Observation = PrivateAttr(default="json")  # the world's, set by the instance

    def for_model(self) -> str:
        """What the agent reads: compact JSON, without the spaces after `,` and `:` (an error as
        `{"error":{...}}`), or for a world whose observation is "text", τ²-bench's tool message:
        `Error: message`, a text as itself, anything else as `json.dumps` writes it.

        Compact because the agent reads every character of it: on the embedded Qwen models a tool
        result is 10-15% fewer tokens so, and more of a long one fits under the observation cut."""
        if self._observation == "text":
            if not self.ok:
                return f"Error: {self.error.message}"
            return self.value if isinstance(self.value, str) else json.dumps(self.value, default=str)
        payload = self.value if self.ok else {"error": self.error.model_dump(exclude_defaults=True)}
        return compact_json(payload)


def compact_json(value: Any) -> str:
    """JSON as an agent reads a tool's result (see `ToolResult.for_model`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class CallRecord(BaseModel):
    """One entry of `Instance.log`: a call, what it returned and the rows it changed."""

    index: int
    tool: str
    arguments: dict[str, Any]
    ok: bool
    value: Any = None
    error: ToolFailure | None = None
    changes: list[RowChange] = Field(default_factory=list)
    at: str
    duration_ms: float


def _rng_seed(fixture_sha256: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{fixture_sha256}:{seed}".encode()).digest()[:8], "big")


class _FixtureReader:
    """A shared read-only copy of a fixture, for the `before` side of changes and diffs."""

    _readers: ClassVar[dict[int, _FixtureReader]] = {}
    _guard = threading.Lock()

    def __init__(self, fixture: FixtureData) -> None:
        self.fixture = fixture
        self.connection = ConnectionPool.of(fixture).store.open()
        self.connection.execute("PRAGMA query_only = ON")
        self.lock = threading.Lock()

    @classmethod
    def of(cls, fixture: FixtureData) -> _FixtureReader:
        with cls._guard:
            reader = cls._readers.get(id(fixture))
            if reader is None or reader.fixture is not fixture:
                reader = cls._readers[id(fixture)] = cls(fixture)
            return reader

    def row(self, sql: str, key: tuple) -> Row | None:
        with self.lock:
            return self.connection.execute(sql, key).fetchone()


class Instance:
    """A private copy of a fixture. Use `world.instance(...)`, preferably as a context manager."""

    def __init__(self, world: World, fixture: FixtureData, *, seed: int, clock: Clock) -> None:
        self.world = world
        self.fixture = fixture
        self.seed = seed
        self.clock = clock
        self.log: list[CallRecord] = []
        self._tools = world.tools
        self._operations = world.operations
        self._tables = world.tables
        self._pool = ConnectionPool.of(fixture)
        self._pooled = self._pool.acquire(self.now)
        self._connection = self._pooled.connection
        self._guard = self._pooled.guard
        self._capture = self._pooled.capture
        self.rng = random.Random(_rng_seed(fixture.sha256, seed))
        self._context = ToolContext(self._connection, self.now, self.rng, set())
        # Every row any call touched: its value in the fixture and its value now (None: absent).
        self._original: dict[tuple[str, tuple], Row | None] = {}
        self._current: dict[tuple[str, tuple], Row | None] = {}

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Give the connection back, rolled back to the fixture. Calls and queries are refused after;
        `diff()` and `log` stay readable."""
        if self._pooled is not None:
            self._pooled.clock.now = _closed_clock  # an idle pooled connection must not pin this instance
            self._pool.release(self._pooled)
            self._pooled = None

    def _live(self) -> sqlite3.Connection:
        """The connection, while the instance is open and its transaction alive; without the
        transaction a call's RELEASE would commit into the fixture, so the instance closes."""
        if self._pooled is None:
            raise InstanceClosed(f"this instance of {self.world.name}/{self.fixture.name} is closed")
        if not self._connection.in_transaction:
            self.close()
            raise InstanceClosed(
                f"this instance of {self.world.name}/{self.fixture.name} lost its transaction "
                "(SQLite rolled it back after an error) and was closed; open a new one"
            )
        return self._connection

    # -- what the agent uses -------------------------------------------------------------------

    def now(self) -> datetime:
        """The instance clock's current time (what tools and SQL `'now'` see)."""
        return self.clock.at(self.fixture.epoch, len(self.log))

    def tools(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI-style function schemas for all tools, or for `names` in that order."""
        chosen = names if names is not None else list(self._tools)
        return [self._tools[name].schema() for name in chosen]

    def call(self, name: str, /, **arguments: Any) -> ToolResult:
        """Run one tool atomically; failures come back as a ToolResult, never raise."""
        unknown = f"There is no tool {name!r}. Tools: {', '.join(self._tools)}."
        return self._dispatch(name, self._tools.get(name), arguments, unknown)

    def request(self, operation: str, /, **arguments: Any) -> ToolResult:
        """Run one HTTP operation (`"POST /v1/refunds"`, see `World.operation`) as `call` runs a tool: one
        transaction, logged under the operation's name, in the same diff."""
        found = self._operations.get(operation)
        unknown = f"There is no operation {operation!r}. Operations: {', '.join(self._operations) or 'none'}."
        return self._dispatch(operation, found.tool if found else None, arguments, unknown)

    def _dispatch(self, name: str, tool: Tool | None, arguments: dict[str, Any], unknown: str) -> ToolResult:
        self._live()
        started = time.perf_counter()
        at = self.now().strftime(TIMESTAMP_FORMAT)
        changes: list[RowChange] = []
        if tool is None:
            result = _failure(name, "unknown_tool", unknown)
        else:
            try:
                kwargs = tool.validate(arguments)
            except ValidationError as error:
                result = _failure(name, "invalid_arguments", describe_validation_error(error))
            except ToolError as error:
                result = _failure(name, error.code, error.message)
            else:
                result, changes = self._run(name, tool, kwargs)
        result._observation = self.world.observation
        self.log.append(
            CallRecord(
                index=len(self.log),
                tool=name,
                arguments=to_jsonable_python(arguments, fallback=str),
                ok=result.ok,
                value=result.value,
                error=result.error,
                changes=changes,
                at=at,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        )
        return result

    def _run(self, name: str, tool: Tool, kwargs: dict[str, Any]) -> tuple[ToolResult, list[RowChange]]:
        connection = self._connection
        connection.execute(SAVEPOINT)
        self._capture.forget()
        written_before = connection.total_changes
        try:
            with self._guard.watching():
                value = to_jsonable_python(tool.function(self._context, **kwargs))
            if not connection.in_transaction:
                raise _TransactionEnded(f"the instance's transaction ended while {name!r} ran")
            wrote = connection.total_changes != written_before
            if wrote and not tool.writes:
                raise _ReadOnlyViolation(f"tool {name!r} is declared writes=False but changed rows")
            changes = self._collect_changes() if wrote else []
            connection.execute(RELEASE)
            return ToolResult(tool=name, ok=True, value=value), changes
        except ToolError as error:
            changes = []
            if isinstance(error, ToolErrorAfterWrites) and tool.writes and connection.in_transaction:
                changes = self._collect_changes() if connection.total_changes != written_before else []
                connection.execute(RELEASE)
            else:
                self._undo_call()
            return _failure(name, error.code, error.message, to_jsonable_python(error.details)), changes
        except sqlite3.IntegrityError as error:
            self._undo_call()
            return _failure(name, "constraint_violation", str(error)), []
        except Exception as error:
            self._undo_call()
            log.warning("world bug in %s.%s: %r", self.world.name, name, error)
            message = f"{name} failed inside the world: {type(error).__name__}: {error}"
            return _failure(name, "world_bug", message), []
        except BaseException:
            self._undo_call()
            raise

    def _undo_call(self) -> None:
        if self._connection.in_transaction:
            self._connection.execute(ROLLBACK_TO)
            self._connection.execute(RELEASE)
        self._capture.forget()

    def _collect_changes(self) -> list[RowChange]:
        """The rows this call changed, in the order it first touched them, with exact values: the
        capture names the keys, and the rows behind them are read now (after) and from the last
        call or the fixture (before)."""
        touched = dict.fromkeys(self._capture.written())
        changes = []
        for label, key in touched:
            table = self._tables[label]
            before = self._row_now(label, key)
            after = self._connection.execute(_select(table, label), key).fetchone()
            self._current[(label, key)] = after
            change = _row_change(label, table, key, before, after)
            if change is not None:
                changes.append(change)
        return changes

    def _row_now(self, label: str, key: tuple) -> Row | None:
        """The row's value before this call: last seen, else as in the fixture."""
        if (label, key) not in self._current:
            original = _FixtureReader.of(self.fixture).row(_select(self._tables[label], label), key)
            self._original[(label, key)] = self._current[(label, key)] = original
        return self._current[(label, key)]

    # -- what graders and people read ----------------------------------------------------------

    def diff(self) -> Diff:
        """The net row-level difference from the fixture, exact to the stored values."""
        by_table: dict[str, list[tuple]] = {}
        for label, key in self._current:
            by_table.setdefault(label, []).append(key)
        tables: dict[str, TableDiff] = {}
        for label in sorted(by_table):
            table = self._tables[label]
            table_diff = TableDiff()
            for key in sorted(by_table[label], key=lambda k: sort_key(dict(enumerate(k)))):
                change = _row_change(
                    label, table, key, self._original[(label, key)], self._current[(label, key)]
                )
                if change is None:
                    continue
                if change.op == "insert":
                    table_diff.inserted.append(change.after)
                elif change.op == "delete":
                    table_diff.deleted.append(change.before)
                else:
                    table_diff.updated.append(
                        RowUpdate(key=change.key, before=change.before, after=change.after)
                    )
            if table_diff.count:
                tables[label] = table_diff
        return Diff(tables=tables)

    def query(self, sql: str, params: tuple | dict = ()) -> list[Row]:
        """Run a read-only query on the instance (writes and transaction control are refused)."""
        connection = self._live()
        connection.execute("PRAGMA query_only = ON")
        try:
            with self._guard.watching():
                return connection.execute(sql, params).fetchall()
        finally:
            connection.execute("PRAGMA query_only = OFF")

    def table_rows(self, table: str, limit: int = 50) -> list[Row]:
        """The first rows of a table, for people looking inside an instance."""
        if table not in self._tables:
            raise KeyError(table)
        return self.query(f"SELECT * FROM {qualified(table)} LIMIT ?", (limit,))

    def row_counts(self) -> dict[str, int]:
        counts = {}
        for label in self._tables:
            counts[label] = self.query(f"SELECT count(*) AS n FROM {qualified(label)}")[0]["n"]
        return counts


def _failure(tool: str, kind: str, message: str, details: dict | None = None) -> ToolResult:
    return ToolResult(
        tool=tool, ok=False, error=ToolFailure(type=kind, message=message, details=details or {})
    )


def _select(table: TableInfo, label: str) -> str:
    return select_row_sql(table, label.rpartition(".")[0] or "main")


def _row_change(
    label: str, table: TableInfo, key: tuple, before: Row | None, after: Row | None
) -> RowChange | None:
    key_columns = dict(zip(table.primary_key, key, strict=True))
    if before is None and after is not None:
        return RowChange(table=label, op="insert", key=key_columns, after=after)
    if before is not None and after is None:
        return RowChange(table=label, op="delete", key=key_columns, before=before)
    if before is not None and after is not None:
        old, new = changed_columns(before, after)
        if new:
            return RowChange(table=label, op="update", key=key_columns, before=old, after=new)
    return None


def _closed_clock() -> datetime:
    return datetime.now()


class _TransactionEnded(Exception):
    """SQLite rolled the instance's transaction back during a call (it does after some errors)."""


class _ReadOnlyViolation(Exception):
    """A writes=False tool changed rows: the world's author must fix the declaration."""
