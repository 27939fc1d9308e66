"""The reference check (tau-bench style): replay the task's reference tool calls on a fresh instance
of the same fixture, seed and clock, and compare the end state it leaves with the agent's.

Comparing raw diffs would fail agents for things they cannot control, so two kinds of value are
taken out first:

- **New ids.** A row's primary key drawn by `ctx.new_id` (or `MAX(id) + 1`, or AUTOINCREMENT)
  depends on how many ids the instance drew before, so an agent that writes the same rows in
  another order, or after a failed attempt, gets other ids. Every single-column primary key of an
  inserted row is therefore replaced by a token naming its table (`⟨new refunds⟩`), and so is every
  text value equal to one of those ids anywhere in the diff (the foreign keys pointing at new rows,
  like `order_items.refund_id`). Integer ids are replaced only in their own key column: an integer
  foreign key to a new row must be listed in `ignore_columns`. Two new rows of one table are
  interchangeable, so a link between them is not checked.
- **Values from the RNG and the clock.** The reference is replayed a second time with another
  seed and the clock one second later; every column whose value differs between the two replays
  (a `created_at` stamp, a random tracking number) is ignored when comparing. With a `tick` clock
  this is what keeps an agent that made more read calls than the reference from failing on its
  timestamps. `ignore_columns` (suite-wide or per task) adds columns by hand.

Then inserted rows are compared as multisets per table, updated rows by key on the columns they
changed, and deleted rows by key. Values compare as `values_equal` does (numbers within half a cent).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from atoll.worlds import AtollError, CallRecord, Clock, Diff, World

from ._matchers import show, values_equal
from ._state import Accounted, PrimaryKeys, listing, row_label
from ._verdict import Check

Ignore = Mapping[str, set[str]]
"""Table → columns left out of the comparison; the table `*` applies to every table."""

_PERTURBED_SEED_OFFSET = 7919
_BRIEF_COLUMNS = 5


class ReferenceCall(BaseModel):
    """One step of a task's reference solution: `{refund_order: {order_id: ORD-1012}}` in YAML."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    arguments: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) != {"tool", "arguments"}:
            if len(data) != 1:
                raise ValueError(
                    f"a reference step is one `tool_name: {{arguments}}` mapping; got keys {sorted(data)}"
                )
            ((tool, arguments),) = data.items()
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise ValueError(f"the arguments of {tool!r} must be a mapping, got {arguments!r}")
            return {"tool": tool, "arguments": arguments}
        return data


class ReferenceFailed(AtollError):
    """A reference call failed on the task's fixture: the task is wrong, not the agent."""


@dataclass
class ReferenceOutcome:
    """The reference solution's diff on one (fixture, seed, clock), and the columns it found volatile.

    `seed_invariant`: the perturbed replay made the same changes but for the volatile columns, so
    once those and the new ids are set aside this diff stands for every seed of the task.
    """

    diff: Diff
    volatile: dict[str, set[str]] = field(default_factory=dict)
    seed_invariant: bool = False


def replay(world: World, fixture: str, seed: int, clock: str | Clock, calls: list[ReferenceCall]):
    """Run the calls on a fresh instance; return (log, diff). Raises ReferenceFailed on a failed call."""
    with world.instance(fixture, seed=seed, clock=clock) as instance:
        for i, call in enumerate(calls):
            result = instance.call(call.tool, **call.arguments)
            if not result.ok:
                error = result.error
                raise ReferenceFailed(
                    f"reference[{i}] {call.tool}({_args(call.arguments)}) failed on fixture {fixture!r} "
                    f"seed {seed}: {error.type}: {error.message}"
                )
        return list(instance.log), instance.diff()


def _args(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={show(v)}" for k, v in arguments.items())


def solve(
    world: World,
    fixture: str,
    seed: int,
    clock: str,
    calls: list[ReferenceCall],
    primary_keys: PrimaryKeys,
    *,
    volatile: dict[str, set[str]] | None = None,
) -> ReferenceOutcome:
    """Replay the reference, then replay it perturbed to find the RNG- and clock-derived columns.

    Which columns are volatile is a property of the calls, not of the seed: pass `volatile` found
    at another seed of the same task to skip the second replay.
    """
    log, diff = replay(world, fixture, seed, clock, calls)
    if volatile is not None:
        return ReferenceOutcome(diff=diff, volatile=volatile)
    parsed = Clock.parse(clock)
    start = parsed.start or world.load_fixture(fixture).epoch
    shifted = parsed.model_copy(update={"start": start + timedelta(seconds=1)})
    try:
        other_log, _ = replay(world, fixture, seed + _PERTURBED_SEED_OFFSET, shifted, calls)
    except ReferenceFailed:
        return ReferenceOutcome(diff=diff)  # the solution depends on the seed: only ignore_columns apply
    found = _volatile(log, other_log, primary_keys)
    if found is None:
        return ReferenceOutcome(diff=diff)
    return ReferenceOutcome(diff=diff, volatile=found, seed_invariant=True)


def _volatile(
    log: list[CallRecord], other: list[CallRecord], primary_keys: PrimaryKeys
) -> dict[str, set[str]] | None:
    """Columns whose values differ between two replays of the same calls (after id tokens); None
    when the replays did not even change the same rows in the same order."""
    changes = [change for record in log for change in record.changes]
    others = [change for record in other for change in record.changes]
    if [(c.table, c.op) for c in changes] != [(c.table, c.op) for c in others]:
        return None
    ids = _NewIds.of(((c.table, c.after or {}) for c in changes if c.op == "insert"), primary_keys)
    other_ids = _NewIds.of(((c.table, c.after or {}) for c in others if c.op == "insert"), primary_keys)
    volatile: dict[str, set[str]] = defaultdict(set)
    for mine, theirs in zip(changes, others, strict=True):
        a = ids.tokens(mine.table, mine.after or mine.before or {})
        b = other_ids.tokens(theirs.table, theirs.after or theirs.before or {})
        volatile[mine.table] |= {c for c in a.keys() | b.keys() if not values_equal(a.get(c), b.get(c))}
    return {table: columns for table, columns in volatile.items() if columns}


@dataclass
class _NewIds:
    """The ids of rows a diff inserted, and how to replace them by tokens."""

    text: dict[str, str]  # id → table
    numbers: dict[str, set[int]]  # table → integer keys of new rows
    primary_keys: PrimaryKeys

    @classmethod
    def of(cls, inserted: Iterable[tuple[str, Mapping[str, Any]]], primary_keys: PrimaryKeys) -> _NewIds:
        text: dict[str, str] = {}
        numbers: dict[str, set[int]] = defaultdict(set)
        for table, row in inserted:
            key = primary_keys.get(table) or []
            if len(key) != 1:
                continue  # a composite key is made of other rows' ids: compared as they are
            value = row.get(key[0])
            if isinstance(value, str):
                text[value] = table
            elif isinstance(value, int) and not isinstance(value, bool):
                numbers[table].add(value)
        return cls(text=text, numbers=numbers, primary_keys=primary_keys)

    def tokens(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        key = self.primary_keys.get(table) or []
        out = {}
        for column, value in row.items():
            if isinstance(value, str) and value in self.text:
                out[column] = f"⟨new {self.text[value]}⟩"
            elif key == [column] and isinstance(value, int) and value in self.numbers.get(table, ()):
                out[column] = f"⟨new {table}⟩"
            else:
                out[column] = value
        return out


def _kept(row: Mapping[str, Any], ignored: set[str]) -> dict[str, Any]:
    return {column: value for column, value in row.items() if column not in ignored}


def _differing(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    return [c for c in {**expected, **actual} if not values_equal(expected.get(c), actual.get(c))]


def _brief(row: Mapping[str, Any]) -> str:
    shown = [f"{c}={show(v)}" for c, v in row.items() if v is not None][:_BRIEF_COLUMNS]
    more = ", …" if sum(v is not None for v in row.values()) > _BRIEF_COLUMNS else ""
    return "{" + ", ".join(shown) + more + "}"


def compare(
    expected: Diff, actual: Diff, ignore: Ignore, primary_keys: PrimaryKeys
) -> tuple[list[str], Accounted]:
    """The differences between the reference's diff and the agent's, and the agent rows that agree."""
    expected_ids = _NewIds.of(((t, r) for t, d in expected.tables.items() for r in d.inserted), primary_keys)
    actual_ids = _NewIds.of(((t, r) for t, d in actual.tables.items() for r in d.inserted), primary_keys)
    accounted = Accounted()
    differences: list[str] = []
    for table in sorted(expected.tables.keys() | actual.tables.keys()):
        ignored = set(ignore.get(table, set())) | set(ignore.get("*", set()))
        mine, theirs = expected.table(table), actual.table(table)

        wanted = [_kept(expected_ids.tokens(table, row), ignored) for row in mine.inserted]
        got = [_kept(actual_ids.tokens(table, row), ignored) for row in theirs.inserted]
        free = list(range(len(got)))
        missing = []
        for row in wanted:
            match = next((j for j in free if not _differing(row, got[j])), None)
            if match is None:
                missing.append(row)
            else:
                free.remove(match)
                accounted.inserted[table].add(match)
        for row in missing:
            if free:
                closest = min(free, key=lambda j, r=row: len(_differing(r, got[j])))
                free.remove(closest)
                detail = ", ".join(
                    f"{c} is {show(got[closest].get(c))}, expected {show(row.get(c))}"
                    for c in _differing(row, got[closest])
                )
                label = row_label(table, theirs.inserted[closest], primary_keys)
                differences.append(f"new {table} row {label} differs: {detail}")
            else:
                differences.append(f"missing new {table} row {_brief(row)}")
        differences += [
            f"unexpected new {table} row {row_label(table, theirs.inserted[j], primary_keys)} {_brief(got[j])}"
            for j in free
        ]

        wanted_updates = {
            _key(u.key): _kept(expected_ids.tokens(table, u.after), ignored) for u in mine.updated
        }
        for j, update in enumerate(theirs.updated):
            label = row_label(table, update.key, primary_keys)
            after = _kept(actual_ids.tokens(table, update.after), ignored)
            target = wanted_updates.pop(_key(update.key), {})
            problems = []
            for column in {**target, **after}:
                if column not in after:
                    problems.append(f"{column} did not change, expected {show(target[column])}")
                elif column not in target:
                    problems.append(f"{column} became {show(after[column])}, the reference leaves it")
                elif not values_equal(target[column], after[column]):
                    problems.append(f"{column} is {show(after[column])}, expected {show(target[column])}")
            if problems:
                differences.append(f"{table} {label}: {', '.join(problems)}")
            else:
                accounted.updated[table].add(j)
        for key, target in wanted_updates.items():
            if target:
                label = ",".join(str(v) for _, v in key)
                changes = ", ".join(f"{c}→{show(v)}" for c, v in target.items())
                differences.append(f"{table} {label}: expected {changes}, it did not change")

        wanted_gone = {_key(_pk(table, row, primary_keys)) for row in mine.deleted}
        for j, row in enumerate(theirs.deleted):
            key = _key(_pk(table, row, primary_keys))
            if key in wanted_gone:
                wanted_gone.discard(key)
                accounted.deleted[table].add(j)
            else:
                differences.append(
                    f"{table} {row_label(table, row, primary_keys)} was deleted, the reference keeps it"
                )
        differences += [
            f"{table} {','.join(str(v) for _, v in key)} should have been deleted"
            for key in sorted(wanted_gone)
        ]
    return differences, accounted


def _pk(table: str, row: Mapping[str, Any], primary_keys: PrimaryKeys) -> dict[str, Any]:
    columns = primary_keys.get(table) or list(row)
    return {column: row.get(column) for column in columns}


def _key(key: Mapping[str, Any]) -> tuple:
    return tuple(sorted((column, str(value)) for column, value in key.items()))


def check_matches_reference(
    reference: ReferenceOutcome, diff: Diff, ignore: Ignore, primary_keys: PrimaryKeys
) -> tuple[Check, Accounted]:
    """One check: the agent's end state equals the reference's, up to new ids and volatile columns."""
    differences, accounted = compare(
        reference.diff, diff, merge_ignore(reference.volatile, ignore), primary_keys
    )
    if differences:
        feedback = f"the end state differs from the reference solution's: {listing(differences)}"
        return Check(
            name="matches_reference", passed=False, feedback=feedback, kind="matches_reference"
        ), accounted
    rows = sum(t.count for t in reference.diff.tables.values())
    feedback = (
        f"the end state matches the reference solution's ({rows} changed row(s))"
        if rows
        else "the world is unchanged, as in the reference solution"
    )
    return Check(
        name="matches_reference", passed=True, feedback=feedback, kind="matches_reference"
    ), accounted


def merge_ignore(*ignores: Ignore) -> dict[str, set[str]]:
    merged: dict[str, set[str]] = defaultdict(set)
    for ignore in ignores:
        for table, columns in ignore.items():
            merged[table] |= set(columns)
    return dict(merged)
