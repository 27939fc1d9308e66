"""An instance: a private in-memory copy of a fixture that tools change and graders read.

Creating one is a `deserialize` of the fixture's bytes plus a few pragmas and functions, so
hundreds can live in one process. Every tool call is one transaction; the capture
triggers log its row changes, and `diff()` compares every touched row with the fixture.
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
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, ValidationError
from pydantic_core import to_jsonable_python

from ._clock import TIMESTAMP_FORMAT, Clock
from ._diff import Diff, Row, RowChange, RowUpdate, TableDiff, changed_columns, sort_key
from ._errors import ToolError
from ._fixture import FixtureData
from ._schema import CHANGE_TABLE, TableInfo, select_row_sql
from ._sqltime import install_clock
from ._tool import Tool, ToolContext, describe_validation_error

if TYPE_CHECKING:
    from ._world import World

log = logging.getLogger(__name__)


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

    def for_model(self) -> str:
        """Compact JSON the agent reads as the observation."""
        payload = self.value if self.ok else {"error": self.error.model_dump(exclude_defaults=True)}
        return json.dumps(payload, ensure_ascii=False, default=str)


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


def _dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


def _rng_seed(fixture_sha256: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{fixture_sha256}:{seed}".encode()).digest()[:8], "big")


class _FixtureReader:
    """A shared read-only copy of a fixture, for looking up the `before` side of a diff."""

    _readers: ClassVar[dict[int, _FixtureReader]] = {}
    _guard = threading.Lock()

    def __init__(self, fixture: FixtureData) -> None:
        self.connection = _open(fixture)
        self.connection.execute("PRAGMA query_only = ON")
        self.lock = threading.Lock()

    @classmethod
    def of(cls, fixture: FixtureData) -> _FixtureReader:
        with cls._guard:
            reader = cls._readers.get(id(fixture))
            if reader is None:
                reader = cls._readers[id(fixture)] = cls(fixture)
            return reader

    def row(self, sql: str, key: tuple) -> Row | None:
        with self.lock:
            return self.connection.execute(sql, key).fetchone()


def _open(fixture: FixtureData) -> sqlite3.Connection:
    connection = sqlite3.connect(
        ":memory:", isolation_level=None, check_same_thread=False, cached_statements=32
    )
    connection.deserialize(fixture.parts["main"])
    for part, blob in fixture.parts.items():
        if part != "main":
            connection.execute(f"ATTACH ':memory:' AS {part}")
            connection.deserialize(blob, name=part)
    connection.row_factory = _dict_row
    return connection


class Instance:
    """A private copy of a fixture. Use `world.instance(...)`, preferably as a context manager."""

    def __init__(self, world: World, fixture: FixtureData, *, seed: int, clock: Clock) -> None:
        self.world = world
        self.fixture = fixture
        self.seed = seed
        self.clock = clock
        self.log: list[CallRecord] = []
        self._tools = world.tools
        self._tables = world.tables
        self._connection = _open(fixture)
        self._connection.execute("PRAGMA foreign_keys = ON")
        # REPLACE deletes the conflicting row; only with recursive triggers is that delete logged.
        self._connection.execute("PRAGMA recursive_triggers = ON")
        install_clock(self._connection, self.now)
        self.rng = random.Random(_rng_seed(fixture.sha256, seed))
        self._context = ToolContext(self._connection, self.now, self.rng, set())
        self._log_position = dict.fromkeys(fixture.parts, 0)

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    # -- what the agent uses -------------------------------------------------------------------

    def now(self) -> datetime:
        """The instance clock's current time (what tools and SQL `'now'` see)."""
        return self.clock.at(self.fixture.epoch, len(self.log))

    def tools(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI-style function schemas for all tools, or for `names` in that order."""
        chosen = names if names is not None else list(self._tools)
        return [self._tools[name].schema() for name in chosen]

    def call(self, name: str, /, **arguments: Any) -> ToolResult:
        """Run one tool as one transaction; failures come back as a ToolResult, never raise."""
        started = time.perf_counter()
        at = self.now().strftime(TIMESTAMP_FORMAT)
        changes: list[RowChange] = []
        tool = self._tools.get(name)
        if tool is None:
            result = self._failure(
                name, "unknown_tool", f"There is no tool {name!r}. Tools: {', '.join(self._tools)}."
            )
        else:
            try:
                kwargs = tool.validate(arguments)
            except ValidationError as error:
                result = self._failure(name, "invalid_arguments", describe_validation_error(error))
            else:
                result, changes = self._run(tool, kwargs)
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

    def _failure(self, tool: str, kind: str, message: str, details: dict | None = None) -> ToolResult:
        return ToolResult(
            tool=tool, ok=False, error=ToolFailure(type=kind, message=message, details=details or {})
        )

    def _run(self, tool: Tool, kwargs: dict[str, Any]) -> tuple[ToolResult, list[RowChange]]:
        connection = self._connection
        connection.execute("BEGIN")
        written_before = connection.total_changes
        try:
            value = to_jsonable_python(tool.function(self._context, **kwargs))
            wrote = connection.total_changes != written_before
            if wrote and not tool.writes:
                raise _ReadOnlyViolation(f"tool {tool.name!r} is declared writes=False but changed rows")
            changes, positions = self._new_changes() if wrote else ([], self._log_position)
            connection.execute("COMMIT")
            self._log_position = positions
            return ToolResult(tool=tool.name, ok=True, value=value), changes
        except ToolError as error:
            self._rollback()
            return self._failure(tool.name, error.code, error.message, to_jsonable_python(error.details)), []
        except sqlite3.IntegrityError as error:
            self._rollback()
            return self._failure(tool.name, "constraint_violation", str(error)), []
        except Exception as error:
            self._rollback()
            log.warning("world bug in %s.%s: %r", self.world.name, tool.name, error)
            message = f"{tool.name} failed inside the world: {type(error).__name__}: {error}"
            return self._failure(tool.name, "world_bug", message), []
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._connection.in_transaction:
            self._connection.execute("ROLLBACK")

    def _new_changes(self) -> tuple[list[RowChange], dict[str, int]]:
        changes: list[RowChange] = []
        positions = dict(self._log_position)
        for part, position in self._log_position.items():
            rows = self._connection.execute(
                f"SELECT seq, tbl, op, old, new FROM {part}.{CHANGE_TABLE} WHERE seq > ? ORDER BY seq",
                (position,),
            ).fetchall()
            for row in rows:
                label = row["tbl"] if part == "main" else f"{part}.{row['tbl']}"
                changes.extend(self._row_changes(label, row))
                positions[part] = row["seq"]
        return changes, positions

    def _row_changes(self, label: str, row: Row) -> list[RowChange]:
        primary_key = self._tables[label].primary_key
        old = json.loads(row["old"]) if row["old"] else None
        new = json.loads(row["new"]) if row["new"] else None
        if row["op"] == "insert":
            return [RowChange(table=label, op="insert", key={c: new[c] for c in primary_key}, after=new)]
        if row["op"] == "delete":
            return [RowChange(table=label, op="delete", key={c: old[c] for c in primary_key}, before=old)]
        old_key, new_key = {c: old[c] for c in primary_key}, {c: new[c] for c in primary_key}
        if old_key != new_key:  # a primary-key change is a delete of one row and an insert of another
            return [
                RowChange(table=label, op="delete", key=old_key, before=old),
                RowChange(table=label, op="insert", key=new_key, after=new),
            ]
        before, after = changed_columns(old, new)
        return [RowChange(table=label, op="update", key=new_key, before=before, after=after)]

    # -- what graders and people read ----------------------------------------------------------

    def diff(self) -> Diff:
        """The net row-level difference from the fixture, exact to the stored values."""
        touched: dict[str, dict[tuple, Row]] = {}
        for record in self.log:
            for change in record.changes:
                touched.setdefault(change.table, {})[tuple(change.key.values())] = change.key
        reader = _FixtureReader.of(self.fixture)
        tables: dict[str, TableDiff] = {}
        for label in sorted(touched):
            table = self._tables[label]
            sql = select_row_sql(table, label.rpartition(".")[0] or "main")
            table_diff = TableDiff()
            for key in sorted(touched[label].values(), key=sort_key):
                values = tuple(key.values())
                before = reader.row(sql, values)
                after = self._connection.execute(sql, values).fetchone()
                _classify(table_diff, table, key, before, after)
            if table_diff.count:
                tables[label] = table_diff
        return Diff(tables=tables)

    def query(self, sql: str, params: tuple | dict = ()) -> list[Row]:
        """Run a read-only query on the instance (writes are refused by SQLite)."""
        connection = self._connection
        connection.execute("PRAGMA query_only = ON")
        try:
            return connection.execute(sql, params).fetchall()
        finally:
            connection.execute("PRAGMA query_only = OFF")

    def table_rows(self, table: str, limit: int = 50) -> list[Row]:
        """The first rows of a table, for people looking inside an instance."""
        schema, _, bare = table.rpartition(".")
        if table not in self._tables:
            raise KeyError(table)
        return self.query(f'SELECT * FROM {schema or "main"}."{bare}" LIMIT ?', (limit,))

    def row_counts(self) -> dict[str, int]:
        counts = {}
        for label in self._tables:
            schema, _, bare = label.rpartition(".")
            counts[label] = self.query(f'SELECT count(*) AS n FROM {schema or "main"}."{bare}"')[0]["n"]
        return counts


class _ReadOnlyViolation(Exception):
    """A writes=False tool changed rows: the world's author must fix the declaration."""


def _classify(diff: TableDiff, table: TableInfo, key: Row, before: Row | None, after: Row | None) -> None:
    if before is None and after is not None:
        diff.inserted.append(after)
    elif before is not None and after is None:
        diff.deleted.append(before)
    elif before is not None and after is not None:
        old, new = changed_columns(before, after)
        if old or new:
            diff.updated.append(RowUpdate(key=key, before=old, after=new))
