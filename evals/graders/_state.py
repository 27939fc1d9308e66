"""Declarative checks on the diff: rows that must be inserted, updated or deleted, tables that must
not change, and no writes beyond the expected ones (collateral damage).

Every check records which rows of the diff it explains (`Accounted`); `no_other_writes` then
flags the rest. An expected update names the row by primary key and the columns that must
change; other columns of that row may change too (an `updated_at` stamp is not collateral damage).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import Diff, RowUpdate, TableDiff

from ._matchers import Matcher, RowMatch, describe_row, mismatches, show
from ._verdict import Check

PrimaryKeys = Mapping[str, Sequence[str]]
"""Table → its primary-key columns: how feedback names a row."""

_LISTED = 4  # rows named in one feedback line before "and N more"


class UpdateExpect(BaseModel):
    """A row that must change: its key, and the values its changed columns must hold."""

    model_config = ConfigDict(extra="forbid")

    key: dict[str, Matcher]
    after: dict[str, Matcher] = Field(default_factory=dict)
    before: dict[str, Matcher] = Field(default_factory=dict)


@dataclass
class Accounted:
    """Which rows of a diff (by table and position) some expectation explains."""

    inserted: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    updated: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    deleted: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))


def row_label(table: str, row: Mapping[str, Any], primary_keys: PrimaryKeys) -> str:
    """A row's primary key as text (`ORD-1012`, `SHP-1001,2`)."""
    columns = primary_keys.get(table) or list(row)[:1]
    return ",".join(str(row.get(column)) for column in columns)


def listing(items: list[str]) -> str:
    """The first few items, then how many more."""
    shown = ", ".join(items[:_LISTED])
    return shown if len(items) <= _LISTED else f"{shown} and {len(items) - _LISTED} more"


def update_detail(update: RowUpdate) -> str:
    return ", ".join(f"{c} {show(update.before.get(c))}→{show(update.after[c])}" for c in update.after)


def assign(matches: list[RowMatch], rows: list[dict[str, Any]]) -> dict[int, int]:
    """Pair expected rows with actual rows, one each, as many as possible (Kuhn's matching)."""
    fits = [[j for j, row in enumerate(rows) if not mismatches(match, row)] for match in matches]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(matches)):
        place(i, set())
    return {i: j for j, i in owner.items()}


def check_rows(
    op: Literal["inserted", "deleted"],
    expected: Mapping[str, list[RowMatch]],
    diff: Diff,
    primary_keys: PrimaryKeys,
    accounted: Accounted,
) -> list[Check]:
    """One check per expected inserted (or deleted) row, matched on the columns it gives."""
    checks = []
    for table, matches in expected.items():
        rows: list[dict[str, Any]] = getattr(diff.table(table), op)
        pairs = assign(matches, rows)
        for i, match in enumerate(matches):
            name = f"{op} {table}[{i}]"
            if i in pairs:
                getattr(accounted, op)[table].add(pairs[i])
                label = row_label(table, rows[pairs[i]], primary_keys)
                feedback = f"{op} {table} {label} with {describe_row(match)}"
                checks.append(Check(name=name, passed=True, feedback=feedback, kind=op))
                continue
            wanted = f"expected a {table} row with {describe_row(match)} to be {op}"
            if not rows:
                feedback = f"{wanted}; no {table} row was {op}"
            else:
                closest = min(rows, key=lambda row, m=match: len(mismatches(m, row)))
                label = row_label(table, closest, primary_keys)
                feedback = (
                    f"{wanted}; {len(rows)} {table} row(s) were {op}, the closest ({label}) has "
                    f"{', '.join(mismatches(match, closest)) or 'every value but is already counted for another row'}"
                )
            checks.append(Check(name=name, passed=False, feedback=feedback, kind=op))
    return checks


def check_updated(
    expected: Mapping[str, list[UpdateExpect]], diff: Diff, primary_keys: PrimaryKeys, accounted: Accounted
) -> list[Check]:
    """One check per expected update: the keyed row changed, and its changed columns hold the values."""
    checks = []
    for table, items in expected.items():
        changes = diff.table(table)
        for i, item in enumerate(items):
            name = f"updated {table}[{i}]"
            wanted = f"expected {table} {describe_row(item.key)} to change to {describe_row(item.after)}"
            candidates = [
                j
                for j, update in enumerate(changes.updated)
                if j not in accounted.updated[table] and not mismatches(item.key, update.key)
            ]
            if not candidates:
                gone = any(not mismatches(item.key, row) for row in changes.deleted)
                feedback = f"{wanted}; it was deleted" if gone else f"{wanted}; it did not change"
                checks.append(Check(name=name, passed=False, feedback=feedback, kind="updated"))
                continue
            problems = {j: _update_problems(item, changes.updated[j]) for j in candidates}
            best = min(candidates, key=lambda j: len(problems[j]))
            update = changes.updated[best]
            label = row_label(table, update.key, primary_keys)
            if problems[best]:
                feedback = f"{wanted}; {'; '.join(problems[best])}"
                checks.append(Check(name=name, passed=False, feedback=feedback, kind="updated"))
            else:
                accounted.updated[table].add(best)
                feedback = f"updated {table} {label}: {update_detail(update)}"
                checks.append(Check(name=name, passed=True, feedback=feedback, kind="updated"))
    return checks


def _update_problems(item: UpdateExpect, update: RowUpdate) -> list[str]:
    problems = []
    for column, matcher in item.after.items():
        if column not in update.after:
            problems.append(f"{column} did not change, expected {matcher.describe()}")
        elif not matcher.matches(update.after[column]):
            problems.append(f"{column} became {show(update.after[column])}, expected {matcher.describe()}")
    for column, matcher in item.before.items():
        if column not in update.before:
            problems.append(f"{column} did not change (expected it to be {matcher.describe()} before)")
        elif not matcher.matches(update.before[column]):
            problems.append(
                f"{column} was {show(update.before[column])} before, expected {matcher.describe()}"
            )
    return problems


def describe_changes(table: str, changes: TableDiff, primary_keys: PrimaryKeys) -> str:
    """`1 inserted (RFD-0001), 1 updated (ORD-1012: status 'shipped'→'refunded')`."""
    parts = []
    if changes.inserted:
        labels = [row_label(table, row, primary_keys) for row in changes.inserted]
        parts.append(f"{len(labels)} inserted ({listing(labels)})")
    if changes.updated:
        labels = [f"{row_label(table, u.key, primary_keys)}: {update_detail(u)}" for u in changes.updated]
        parts.append(f"{len(labels)} updated ({listing(labels)})")
    if changes.deleted:
        labels = [row_label(table, row, primary_keys) for row in changes.deleted]
        parts.append(f"{len(labels)} deleted ({listing(labels)})")
    return ", ".join(parts)


def check_unchanged(tables: list[str], diff: Diff, primary_keys: PrimaryKeys) -> list[Check]:
    checks = []
    for table in tables:
        changes = diff.table(table)
        name = f"unchanged {table}"
        if not changes.count:
            checks.append(Check(name=name, passed=True, feedback=f"{table} did not change", kind="unchanged"))
        else:
            feedback = f"expected {table} not to change; {describe_changes(table, changes, primary_keys)}"
            checks.append(Check(name=name, passed=False, feedback=feedback, kind="unchanged"))
    return checks


def check_no_other_writes(diff: Diff, accounted: Accounted, primary_keys: PrimaryKeys) -> Check:
    """Collateral damage: every changed row must be one some expectation (or the reference) explains."""
    extra = []
    for table, changes in diff.tables.items():
        extra += [
            f"+{table} {row_label(table, row, primary_keys)}"
            for j, row in enumerate(changes.inserted)
            if j not in accounted.inserted[table]
        ]
        extra += [
            f"~{table} {row_label(table, update.key, primary_keys)} ({update_detail(update)})"
            for j, update in enumerate(changes.updated)
            if j not in accounted.updated[table]
        ]
        extra += [
            f"−{table} {row_label(table, row, primary_keys)}"
            for j, row in enumerate(changes.deleted)
            if j not in accounted.deleted[table]
        ]
    if not extra:
        feedback = "the world was not changed" if diff.is_empty else "no writes beyond the expected ones"
        return Check(name="no_other_writes", passed=True, feedback=feedback, kind="no_other_writes")
    feedback = f"expected no writes beyond the expected ones; also wrote {listing(extra)}"
    return Check(name="no_other_writes", passed=False, feedback=feedback, kind="no_other_writes")
