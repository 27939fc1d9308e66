"""Which rows a tool call wrote, as (table label, primary key) pairs in the order SQLite wrote them.

Two ways, one contract. Where the SQLite library Python links was built with the pre-update hook
(Debian's, Ubuntu's and most Linux builds are), the hook reports each row as it is written, so a
fixture carries no capture triggers and a fresh connection parses only the world's own schema
(on the helpdesk schema the 54 triggers were ~60% of what a fresh connection parsed). Python's sqlite3 does not
expose the hook, so it is reached through ctypes, and the connection's handle comes from an
auto-extension (SQLite's own way to see every connection as it opens), not from Python's
object layout. Elsewhere the fixture carries three lean triggers per table that log keys to a
table (see `_schema.install_capture`); `ATOLL_CHANGE_CAPTURE=triggers` forces them.

Either way only keys are captured, and a key may be reported for a row that ends unchanged (a
statement rolled back by a constraint, an update to the same values): the engine reads the rows
behind the keys and compares, so a spare key costs a lookup and changes nothing.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Protocol

from ._schema import CHANGE_TABLE, TableInfo

Key = tuple
Written = tuple[str, Key]

_INSERT, _DELETE = 18, 9  # SQLITE_INSERT, SQLITE_DELETE (SQLITE_UPDATE is 23)
_VALUE_READERS = {
    1: lambda lib, value: lib.sqlite3_value_int64(value),
    2: lambda lib, value: lib.sqlite3_value_double(value),
    3: lambda lib, value: ctypes.string_at(
        lib.sqlite3_value_text(value), lib.sqlite3_value_bytes(value)
    ).decode(),
    4: lambda lib, value: ctypes.string_at(lib.sqlite3_value_blob(value), lib.sqlite3_value_bytes(value)),
    5: lambda lib, value: None,
}


class Capture(Protocol):
    """One connection's record of written keys."""

    def reset(self) -> None:
        """The connection is back at the fixture: nothing is written."""

    def forget(self) -> None:
        """What was written since the last `written` was undone (a call failed, or is about to start)."""

    def written(self) -> Iterator[Written]:
        """The keys written since the last `written`, in order; raises if any went unrecorded."""


TablePositions = dict[tuple[str, str], tuple[str, tuple[int, ...]]]


def table_positions(parts: dict[str, list[TableInfo]]) -> TablePositions:
    """(schema, table) -> (label the diff uses, the primary key's column positions), for the hook."""
    positions: TablePositions = {}
    for part, tables in parts.items():
        for table in tables:
            label = table.name if part == "main" else f"{part}.{table.name}"
            positions[(part, table.name)] = (label, table.key_positions)
    return positions


class _Hooks:
    """The library calls, the hook and the auto-extension, bound once per process."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        pointer = ctypes.c_void_p
        for name, argtypes, restype in (
            ("sqlite3_auto_extension", [pointer], ctypes.c_int),
            ("sqlite3_cancel_auto_extension", [pointer], ctypes.c_int),
            ("sqlite3_preupdate_old", [pointer, ctypes.c_int, ctypes.POINTER(pointer)], ctypes.c_int),
            ("sqlite3_preupdate_new", [pointer, ctypes.c_int, ctypes.POINTER(pointer)], ctypes.c_int),
            ("sqlite3_value_type", [pointer], ctypes.c_int),
            ("sqlite3_value_int64", [pointer], ctypes.c_int64),
            ("sqlite3_value_double", [pointer], ctypes.c_double),
            ("sqlite3_value_text", [pointer], pointer),
            ("sqlite3_value_blob", [pointer], pointer),
            ("sqlite3_value_bytes", [pointer], ctypes.c_int),
        ):
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, restype
        self.lib = lib
        hook_type = ctypes.CFUNCTYPE(
            None,
            pointer,
            pointer,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_int64,
            ctypes.c_int64,
        )
        lib.sqlite3_preupdate_hook.argtypes = [pointer, hook_type, pointer]
        lib.sqlite3_preupdate_hook.restype = pointer
        self.hook = hook_type(self._on_write)
        self.entry = ctypes.CFUNCTYPE(ctypes.c_int, pointer, pointer, pointer)(self._on_open)
        self.opening = threading.local()
        # Weak, so a capture goes with the PooledConnection that holds it and its connection.
        self.captures: weakref.WeakValueDictionary[int, HookCapture] = weakref.WeakValueDictionary()
        self._numbers = itertools.count(1)
        entry = ctypes.cast(self.entry, pointer)
        if lib.sqlite3_auto_extension(entry) != 0:
            raise OSError("sqlite3_auto_extension refused the entry point")
        # Before the interpreter frees the entry point, so no connection opened later calls it.
        atexit.register(lib.sqlite3_cancel_auto_extension, entry)

    def _on_open(self, db: int | None, _error: int | None, _api: int | None) -> int:
        if getattr(self.opening, "armed", False):
            self.opening.handle = db
        return 0

    def connect(self, open_connection: Callable[[], sqlite3.Connection]) -> tuple[sqlite3.Connection, int]:
        """Open a connection and learn its handle as SQLite hands it to the auto-extension."""
        self.opening.armed, self.opening.handle = True, None
        try:
            connection = open_connection()
        finally:
            self.opening.armed = False
        if not self.opening.handle:
            connection.close()
            raise OSError("the auto-extension did not see the connection open")
        return connection, self.opening.handle

    def attach(self, capture: HookCapture, handle: int) -> int:
        number = next(self._numbers)
        self.captures[number] = capture
        self.lib.sqlite3_preupdate_hook(handle, self.hook, number)
        return number

    def _on_write(
        self, number: int | None, db: int, op: int, schema: bytes, table: bytes, _old: int, _new: int
    ) -> None:
        capture = self.captures.get(number or 0)
        if capture is None:
            return
        try:
            capture.record(db, op, schema.decode(), table.decode())
        except BaseException as error:  # nothing may unwind into SQLite; written() reports it
            capture.failure = capture.failure or error

    def key(self, db: int, new: bool, positions: tuple[int, ...]) -> Key:
        read = self.lib.sqlite3_preupdate_new if new else self.lib.sqlite3_preupdate_old
        values = []
        for position in positions:
            value = ctypes.c_void_p()
            if read(db, position, ctypes.byref(value)) != 0:
                raise sqlite3.OperationalError(f"sqlite3_preupdate_{'new' if new else 'old'} failed")
            kind = self.lib.sqlite3_value_type(value)
            values.append(_VALUE_READERS[kind](self.lib, value))
        return tuple(values)


def _bind() -> _Hooks | None:
    """The hooks of the SQLite library the sqlite3 module uses, or None where it lacks them."""
    if os.environ.get("ATOLL_CHANGE_CAPTURE", "hook") == "triggers":
        return None
    try:
        import _sqlite3

        lib = ctypes.CDLL(_sqlite3.__file__)  # its symbols resolve to the library the module links
        if lib.sqlite3_libversion_number() != sqlite3.sqlite_version_info[0] * 1_000_000 + (
            sqlite3.sqlite_version_info[1] * 1000 + sqlite3.sqlite_version_info[2]
        ):
            return None
        hooks = _Hooks(lib)
        hooks.connect(lambda: sqlite3.connect(":memory:"))[0].close()  # the module opens through this library
        return hooks
    except (OSError, AttributeError, ImportError):
        return None


class HookCapture:
    """The keys a connection's pre-update hook reported."""

    def __init__(self, hooks: _Hooks, handle: int, positions: TablePositions) -> None:
        self._hooks = hooks
        self._positions = positions
        self._keys: list[Written] = []
        self.failure: BaseException | None = None
        self.number = hooks.attach(self, handle)

    def record(self, db: int, op: int, schema: str, table: str) -> None:
        found = self._positions.get((schema, table))
        if found is None:  # not a world table (a tool's TEMP table, SQLite's own)
            return
        label, positions = found
        if op != _INSERT:
            self._keys.append((label, self._hooks.key(db, False, positions)))
        if op != _DELETE:
            self._keys.append((label, self._hooks.key(db, True, positions)))

    def reset(self) -> None:
        self._keys, self.failure = [], None

    forget = reset

    def written(self) -> Iterator[Written]:
        keys, failure = self._keys, self.failure
        self.reset()
        if failure is not None:
            raise RuntimeError(f"change capture failed: {failure!r}") from failure
        return iter(keys)


class TriggerCapture:
    """The keys the fixture's capture triggers logged, read from each part's log table."""

    def __init__(self, connection: sqlite3.Connection, parts: list[str]) -> None:
        self._connection = connection
        self._positions = dict.fromkeys(parts, 0)

    def reset(self) -> None:
        self._positions = dict.fromkeys(self._positions, 0)

    def forget(self) -> None:
        """Nothing to do: an undone call's log rows were rolled back with it."""

    def written(self) -> Iterator[Written]:
        for part, position in self._positions.items():
            rows = self._connection.execute(
                f"SELECT seq, tbl, old_key, new_key FROM {part}.{CHANGE_TABLE} WHERE seq > ? ORDER BY seq",
                (position,),
            ).fetchall()
            for row in rows:
                label = row["tbl"] if part == "main" else f"{part}.{row['tbl']}"
                for key in (row["old_key"], row["new_key"]):
                    if key is not None:
                        yield label, tuple(json.loads(key))
                self._positions[part] = row["seq"]


_hooks = _bind()
KIND = "hook" if _hooks is not None else "triggers"


def open_captured(
    open_connection: Callable[[], sqlite3.Connection], positions: TablePositions, parts: list[str]
) -> tuple[sqlite3.Connection, Capture]:
    """A connection from `open_connection` with this process's kind of capture on it."""
    if _hooks is None:
        connection = open_connection()
        return connection, TriggerCapture(connection, parts)
    connection, handle = _hooks.connect(open_connection)
    return connection, HookCapture(_hooks, handle, positions)
