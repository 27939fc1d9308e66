"""Read a world's tables from SQLite, and the capture triggers for libraries without the hook.

Where SQLite's pre-update hook is out of reach (see _capture.py), change capture is three
triggers per table writing the keys of changed rows to one log table. The triggers are then
part of the fixture's bytes, so an instance pays nothing to install them (but parses them on
every fresh connection), and a rolled-back tool call rolls its log rows back with it.
"""

from __future__ import annotations

import sqlite3

from pydantic import BaseModel

from ._errors import WorldDefinitionError

CHANGE_TABLE = "_atoll_changes"
INTERNAL_PREFIX = "_atoll"


class Column(BaseModel):
    name: str
    type: str
    not_null: bool
    primary_key: bool


class TableInfo(BaseModel):
    """A table of a world: its columns and primary key (rows counted per fixture, not here)."""

    name: str
    columns: list[Column]
    primary_key: list[str]
    # Where the key's columns stand among all the table's columns, generated ones included: the
    # numbering SQLite's pre-update hook reads values by.
    key_positions: tuple[int, ...]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_tables(
    connection: sqlite3.Connection, schema: str = "main", *, source: str = "schema"
) -> list[TableInfo]:
    """Describe every user table; refuse what change capture cannot key or serialise."""
    names = [
        row[0]
        for row in connection.execute(
            f"SELECT name FROM {_quote(schema)}.sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_atoll%' ESCAPE '\\' ORDER BY name"
        )
    ]
    tables = []
    for name in names:
        every = connection.execute(f"PRAGMA {_quote(schema)}.table_xinfo({_quote(name)})").fetchall()
        info = [c for c in every if c[6] == 0]  # table_info's rows: the hidden and generated ones left out
        columns = [
            Column(name=c[1], type=c[2] or "", not_null=bool(c[3]), primary_key=c[5] > 0) for c in info
        ]
        key_columns = sorted((c for c in info if c[5] > 0), key=lambda c: c[5])
        primary_key = [c[1] for c in key_columns]
        if not primary_key:
            raise WorldDefinitionError(
                f"{source}: table {name!r} has no PRIMARY KEY; every table needs one so that its "
                "rows can be told apart in a diff"
            )
        blobs = [c.name for c in columns if "BLOB" in c.type.upper()]
        if blobs:
            raise WorldDefinitionError(
                f"{source}: table {name!r} column {blobs[0]!r} is a BLOB; store text or numbers instead"
            )
        position = {c[1]: index for index, c in enumerate(every)}
        tables.append(
            TableInfo(
                name=name,
                columns=columns,
                primary_key=primary_key,
                key_positions=tuple(position[c] for c in primary_key),
            )
        )
    return tables


def _key_json(prefix: str, table: TableInfo) -> str:
    return "json_array(" + ", ".join(f"{prefix}.{_quote(c)}" for c in table.primary_key) + ")"


def install_capture(connection: sqlite3.Connection, tables: list[TableInfo], schema: str = "main") -> None:
    """Create the change log and the triggers that fill it, in `schema`.

    The triggers log only the table, the operation and the primary keys: an instance
    parses every trigger when it first touches its database, and lean triggers keep that
    under half a millisecond. The row values are read afterwards, by key, in Python.
    """
    s = _quote(schema)
    statements = [
        f"CREATE TABLE {s}.{CHANGE_TABLE} (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, "
        "op TEXT NOT NULL, old_key TEXT, new_key TEXT)"
    ]
    for table in tables:
        t = _quote(table.name)
        old, new = _key_json("OLD", table), _key_json("NEW", table)
        label = table.name.replace("'", "''")
        trigger = f"{INTERNAL_PREFIX}_{table.name}"
        insert = f"INSERT INTO {CHANGE_TABLE} (tbl, op, old_key, new_key) VALUES ('{label}'"
        statements += [
            f"CREATE TRIGGER {s}.{_quote(trigger + '_i')} AFTER INSERT ON {t} BEGIN {insert}, 'i', NULL, {new}); END",
            f"CREATE TRIGGER {s}.{_quote(trigger + '_u')} AFTER UPDATE ON {t} BEGIN {insert}, 'u', {old}, {new}); END",
            f"CREATE TRIGGER {s}.{_quote(trigger + '_d')} AFTER DELETE ON {t} BEGIN {insert}, 'd', {old}, NULL); END",
        ]
    for statement in statements:
        connection.execute(statement)


def qualified(label: str) -> str:
    """The SQL name of a table as the diff labels it: `orders` -> main."orders", `hd.orders` -> "hd"."orders"."""
    schema, _, bare = label.rpartition(".")
    return f"{_quote(schema or 'main')}.{_quote(bare)}"


def select_row_sql(table: TableInfo, schema: str = "main") -> str:
    """`SELECT * FROM table WHERE pk = ?` for one row by primary key."""
    where = " AND ".join(f"{_quote(c)} = ?" for c in table.primary_key)
    return f"SELECT * FROM {_quote(schema)}.{_quote(table.name)} WHERE {where}"
