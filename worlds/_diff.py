"""What an episode did to its world: the per-call change log and the net diff.

Graders judge outcomes, so the diff is the contract between a world and every grader:
rows inserted, rows deleted, and rows updated with the before and after values of only the
columns that changed, per table, keyed by primary key and sorted so that the same episode
always serialises to the same bytes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Row = dict[str, Any]


class RowUpdate(BaseModel):
    """One row whose values changed; `before` and `after` hold only the changed columns."""

    key: Row
    before: Row
    after: Row


class TableDiff(BaseModel):
    """The net changes to one table."""

    inserted: list[Row] = Field(default_factory=list)
    updated: list[RowUpdate] = Field(default_factory=list)
    deleted: list[Row] = Field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.inserted) + len(self.updated) + len(self.deleted)


class Diff(BaseModel):
    """The net row-level difference between an instance and its fixture.

    Only tables with changes appear. A row inserted and then deleted, or updated and then
    put back, is no change at all.
    """

    tables: dict[str, TableDiff] = Field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.tables

    def table(self, name: str) -> TableDiff:
        """The changes to `name` (empty when it did not change)."""
        return self.tables.get(name, TableDiff())

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts per table: `{"refunds": {"inserted": 1, "updated": 0, "deleted": 0}}`."""
        return {
            name: {"inserted": len(t.inserted), "updated": len(t.updated), "deleted": len(t.deleted)}
            for name, t in self.tables.items()
        }


class RowChange(BaseModel):
    """One row written by one tool call, in the order SQLite applied it."""

    table: str
    op: Literal["insert", "update", "delete"]
    key: Row
    before: Row | None = None
    after: Row | None = None


def sort_key(key: Row) -> tuple:
    """Order keys of mixed types deterministically (None, numbers, then text)."""
    return tuple((value is not None, not isinstance(value, int | float), value) for value in key.values())


def _typed(value: Any) -> tuple[type, Any]:
    return type(value), value


def changed_columns(before: Row, after: Row) -> tuple[Row, Row]:
    """The columns whose values differ, as (before, after) dicts; a value that changed type changed (1 to
    1.0 or "1" in an untyped column: the τ² worlds store what an agent gave, as τ²'s state does)."""
    names = [name for name in after if _typed(before.get(name)) != _typed(after.get(name))]
    return {n: before.get(n) for n in names}, {n: after.get(n) for n in names}
