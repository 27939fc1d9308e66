"""Eval suites: a folder of YAML tasks (see evals/README.md), loaded and checked against the world.

Everything a task names is checked when the suite loads — the fixture, the reference tools and
their arguments, the tables and columns of every expectation, the grader names and arguments, the
split, unique ids — so a typo stops `optimize eval` before any model call, with every problem
listed at once as `file: task 'id': field: what is wrong`.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from atoll.worlds import AtollError, World, WorldError, get_world

from .graders._matchers import Matcher
from .graders._python import GraderDefinitionError, GraderSpec, PythonGrader, load_graders
from .graders._reference import ReferenceCall, ReferenceOutcome, solve
from .graders._state import UpdateExpect

Split = Literal["train", "val", "test"]
SPLITS: tuple[str, ...] = ("train", "val", "test")
SUITE_FILE = "suite.yaml"
TASKS_DIR = "tasks"
GRADERS_FILE = "graders.py"


class SuiteError(AtollError):
    """A suite cannot be loaded or used as asked; `problems` lists every one, each naming its place."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        # `deleted:` with nothing after it is YAML null: read it as "none", like leaving the key out.
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class UserSpec(_Strict):
    """The user side of a task: an opening message, then scripted replies or a simulated user."""

    message: str = Field(min_length=1)
    replies: list[str] = Field(default_factory=list)
    persona: str | None = None
    facts: dict[str, Any] = Field(default_factory=dict)
    goal: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> UserSpec:
        if self.simulated and self.replies:
            raise ValueError("give scripted `replies` or a simulated user (persona, facts, goal), not both")
        if self.facts and not self.simulated:
            raise ValueError("`facts` are for a simulated user: add a `persona` and a `goal`")
        return self

    @property
    def simulated(self) -> bool:
        return self.persona is not None or self.goal is not None


class Expect(_Strict):
    """What a task checks; each entry becomes one or more checks (see evals/README.md)."""

    inserted: dict[str, list[dict[str, Matcher]]] = Field(default_factory=dict)
    updated: dict[str, list[UpdateExpect]] = Field(default_factory=dict)
    deleted: dict[str, list[dict[str, Matcher]]] = Field(default_factory=dict)
    unchanged: list[str] = Field(default_factory=list)
    no_other_writes: bool = False
    matches_reference: bool = False
    ignore_columns: list[str] = Field(default_factory=list)
    reply_contains: list[str] = Field(default_factory=list)
    reply_excludes: list[str] = Field(default_factory=list)
    graders: list[GraderSpec] = Field(default_factory=list)

    @property
    def checks_nothing(self) -> bool:
        return not (
            self.inserted
            or self.updated
            or self.deleted
            or self.unchanged
            or self.no_other_writes
            or self.matches_reference
            or self.reply_contains
            or self.reply_excludes
            or self.graders
        )


MAX_SEED = 2**63 - 1  # SQLite's largest integer: an episode's seed is a column of the runs store


class Task(_Strict):
    """One task: a fixture, the user's side, a reference solution and the expectations."""

    id: str = Field(min_length=1)
    split: Split
    fixture: str
    seeds: list[int] | None = None
    clock: Literal["fixed", "tick"] = "fixed"
    tags: list[str] = Field(default_factory=list)
    context: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent is told up front; prompt templates see it as `task`.",
    )
    user: UserSpec
    reference: list[ReferenceCall] = Field(default_factory=list)
    expect: Expect
    review: Literal["draft", "reviewed"] = Field(
        "reviewed",
        description="`draft` for a task drafted from served records and not yet checked by a person: "
        "allowed in train only, so an unchecked expectation never decides what is accepted.",
    )

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None and (not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0):
            raise ValueError(f"seeds must be distinct non-negative integers, at least one; got {seeds}")
        if seeds is not None and max(seeds) > MAX_SEED:
            raise ValueError(f"seeds must be at most {MAX_SEED}, SQLite's largest integer; got {seeds}")
        return seeds


class SuiteConfig(_Strict):
    """suite.yaml."""

    name: str = Field(min_length=1)
    world: str
    description: str = ""
    default_seeds: list[int] = Field(default_factory=lambda: [0])
    pass_threshold: float = Field(1.0, gt=0.0, le=1.0)
    ignore_columns: list[str] = Field(default_factory=list)
    audit_tables: list[str] = Field(
        default_factory=list,
        description="Tables that record what the agent did (an identity-check log), not the world's state.",
    )

    @field_validator("default_seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        return Task._distinct_seeds(seeds)


class Suite:
    """A loaded, checked suite. Build it with `load_suite(path)`."""

    def __init__(
        self,
        *,
        path: Path,
        config: SuiteConfig,
        world: World,
        tasks: list[Task],
        files: dict[str, Path],
        graders: dict[str, PythonGrader],
        fingerprint: str,
    ) -> None:
        self.path = path
        self.config = config
        self.world = world
        self.tasks = tasks
        self.graders = graders
        self.fingerprint = fingerprint
        self._files = files
        self._by_id = {task.id: task for task in tasks}
        # (task, seed) → its replay; (task, None) → the task's first replay, with its volatile columns.
        self._references: dict[tuple[str, int | None], ReferenceOutcome] = {}
        self._reference_lock = threading.Lock()
        self.primary_keys = {name: list(table.primary_key) for name, table in world.tables.items()}

    def __repr__(self) -> str:
        return f"Suite({self.name!r}, {len(self.tasks)} tasks, world={self.world.name!r})"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def pass_threshold(self) -> float:
        return self.config.pass_threshold

    def task(self, task_id: str) -> Task:
        if task_id not in self._by_id:
            close = difflib.get_close_matches(task_id, list(self._by_id), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; it has {len(self._by_id)} tasks"
            raise SuiteError(f"suite {self.name!r} has no task {task_id!r}{hint}")
        return self._by_id[task_id]

    def file_of(self, task_id: str) -> Path:
        """The YAML file that defines the task."""
        return self._files[task_id]

    def select(self, *, split: str | None = None, tasks: Iterable[str] | None = None) -> list[Task]:
        """The tasks of a split (all splits when None), optionally only the named ones, in suite order."""
        if split is not None and split not in SPLITS:
            raise SuiteError(f"split {split!r} does not exist; use one of {', '.join(SPLITS)}")
        chosen = self.tasks
        if tasks is not None:
            wanted = {self.task(task_id).id for task_id in tasks}
            chosen = [task for task in chosen if task.id in wanted]
        if split is not None:
            chosen = [task for task in chosen if task.split == split]
        return chosen

    def seeds(self, task: Task, *, k: int | None = None, seeds: list[int] | None = None) -> list[int]:
        """The seeds a task runs with: `seeds` if given, else its own, else the suite's default.

        With `k`, exactly k of them: the first k, or all of them and then the next unused integers.
        """
        chosen = list(seeds if seeds is not None else task.seeds or self.config.default_seeds)
        if k is None:
            return chosen
        if k < 1:
            raise SuiteError(f"k must be at least 1, got {k}")
        chosen = chosen[:k]
        extra = (n for n in itertools.count() if n not in chosen)
        while len(chosen) < k:
            chosen.append(next(extra))
        return chosen

    def ignore_columns(self, task: Task) -> dict[str, set[str]]:
        """Table (or `*` for every table) → columns the reference check leaves out, suite and task."""
        ignored: dict[str, set[str]] = {}
        for entry in (*self.config.ignore_columns, *task.expect.ignore_columns):
            table, _, column = entry.rpartition(".")
            ignored.setdefault(table or "*", set()).add(column)
        return ignored

    def reference(self, task: Task, seed: int) -> ReferenceOutcome:
        """The reference solution replayed on the task's fixture at `seed` (computed once, then kept).

        A solution whose changes do not depend on the seed (see `ReferenceOutcome.seed_invariant`)
        is replayed once per task and serves every seed.
        """
        with self._reference_lock:
            first = self._references.get((task.id, None))
            if first is not None and first.seed_invariant:
                return first
            key = (task.id, seed)
            if key not in self._references:
                known = first.volatile if first is not None else None
                outcome = solve(
                    self.world,
                    task.fixture,
                    seed,
                    task.clock,
                    task.reference,
                    self.primary_keys,
                    volatile=known,
                )
                self._references.setdefault((task.id, None), outcome)
                self._references[key] = outcome
            return self._references[key]


def display_path(path: Path) -> str:
    """A path as error messages show it: relative to the working directory when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


def field_path(loc: Iterable[Any]) -> str:
    """pydantic's error location as a task author writes it: `expect.inserted.refunds[0].amount`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _messages(error: ValidationError) -> list[tuple[str, str]]:
    found = []
    for item in error.errors():
        kind = item["type"]
        if kind == "extra_forbidden":
            message = "unknown field; check the spelling against evals/README.md"
        elif kind == "missing":
            message = "required, but missing"
        else:
            message = item["msg"].removeprefix("Value error, ")
            if kind not in ("value_error", "assertion_error"):
                message += f" (got {item['input']!r})"
        found.append((field_path(item["loc"]), message))
    return found


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise SuiteError(
            f"{display_path(path)}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset "
            f"{error.start}); save it as UTF-8"
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise SuiteError(
            f"{display_path(path)}: {where}not valid YAML: {getattr(error, 'problem', error)}"
        ) from None
    except OSError as error:
        raise SuiteError(f"{display_path(path)}: cannot be read: {error.strerror}") from None


def load_suite(path: str | Path, *, world: World | None = None) -> Suite:
    """Load a suite folder (or its suite.yaml) and check every task against its world.

    `world` replaces the world suite.yaml names (tests, worlds built in code). Raises SuiteError
    listing every problem found, each as `file: task 'id': field: problem`.
    """
    folder = Path(path)
    if folder.is_file() and folder.name == SUITE_FILE:
        folder = folder.parent
    suite_file = folder / SUITE_FILE
    if not suite_file.is_file():
        raise SuiteError(
            f"{display_path(folder)}: no {SUITE_FILE} here; a suite is a folder with {SUITE_FILE}, "
            f"{TASKS_DIR}/*.yaml and optionally {GRADERS_FILE} (see evals/README.md)"
        )
    where = display_path(suite_file)
    raw = _read_yaml(suite_file)
    try:
        config = SuiteConfig.model_validate(raw if raw is not None else {})
    except ValidationError as error:
        raise SuiteError([f"{where}: {field}: {message}" for field, message in _messages(error)]) from None
    try:
        world = get_world(world if world is not None else config.world, near=folder)
    except WorldError as error:
        raise SuiteError(f"{where}: world: {error}") from None

    graders: dict[str, PythonGrader] = {}
    graders_file = folder / GRADERS_FILE
    if graders_file.is_file():
        try:
            graders = load_graders(graders_file, display_path(graders_file))
        except GraderDefinitionError as error:
            raise SuiteError(str(error)) from None

    problems = [f"{where}: ignore_columns: {p}" for p in _check_ignore(config.ignore_columns, world)]
    problems += [
        f"{where}: audit_tables[{i}]: {_no_table(world, table)}"
        for i, table in enumerate(config.audit_tables)
        if table not in world.tables
    ]
    tasks: list[Task] = []
    files: dict[str, Path] = {}
    task_files = sorted((folder / TASKS_DIR).glob("*.yaml")) + sorted((folder / TASKS_DIR).glob("*.yml"))
    if not task_files:
        problems.append(f"{display_path(folder / TASKS_DIR)}: no task files (*.yaml) here")
    for task_file in task_files:
        for task_id, task, task_problems in _read_tasks(task_file, world, graders):
            label = f"{display_path(task_file)}: task {task_id!r}" if task_id else display_path(task_file)
            if task_id in files:
                task_problems.insert(0, f"id: duplicate; {display_path(files[task_id])} defines it too")
            elif task_id:
                files[task_id] = task_file
            problems += [f"{label}: {problem}" for problem in task_problems]
            if task is not None and not task_problems:
                tasks.append(task)
    if problems:
        raise SuiteError(problems)

    digest = hashlib.sha256()
    for file in (suite_file, *task_files, graders_file):
        if file.is_file():
            digest.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return Suite(
        path=folder,
        config=config,
        world=world,
        tasks=tasks,
        files=files,
        graders=graders,
        fingerprint=digest.hexdigest(),
    )


def _read_tasks(
    path: Path, world: World, graders: dict[str, PythonGrader]
) -> Iterable[tuple[str | None, Task | None, list[str]]]:
    """Each task of one file as (its id, the task if well-formed, its problems)."""
    raw = _read_yaml(path)
    if raw is None:
        return
    if not isinstance(raw, list):
        problem = f"expected a list of tasks (each starting with `- id: ...`), got a {type(raw).__name__}"
        yield None, None, [problem]
        return
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            yield (
                None,
                None,
                [f"task #{index + 1}: expected a mapping with id, split, fixture, user and expect"],
            )
            continue
        task_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
        try:
            task = Task.model_validate(item)
        except ValidationError as error:
            found = [f"{field}: {message}" for field, message in _messages(error)]
            yield task_id, None, found if task_id else [f"task #{index + 1}: {line}" for line in found]
            continue
        yield task_id, task, [f"{field}: {message}" for field, message in _check_task(task, world, graders)]


def _check_task(task: Task, world: World, graders: dict[str, PythonGrader]) -> Iterable[tuple[str, str]]:
    """What the world and graders.py say about a well-formed task: (field, problem) pairs."""
    if task.review == "draft" and task.split != "train":
        yield (
            "review",
            f"a draft task cannot be in {task.split}; set review: reviewed after checking it, or move it to train",
        )
    if task.fixture not in world.fixtures:
        yield (
            "fixture",
            f"world {world.name!r} has no fixture {task.fixture!r}; it has: {', '.join(world.fixtures) or 'none'}",
        )
    for i, call in enumerate(task.reference):
        tool = world.tools.get(call.tool)
        if tool is None:
            close = difflib.get_close_matches(call.tool, list(world.tools), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            yield f"reference[{i}]", f"world {world.name!r} has no tool {call.tool!r}{hint}"
            continue
        try:
            tool.validate(call.arguments)
        except ValidationError as error:
            for field, message in _messages(error):
                yield f"reference[{i}].{call.tool}.{field}", message

    expect = task.expect
    if expect.checks_nothing:
        yield (
            "expect",
            (
                "checks nothing; give rows (inserted/updated/deleted), unchanged, no_other_writes, "
                "matches_reference, reply_contains/reply_excludes or graders"
            ),
        )
    if expect.matches_reference and not task.reference:
        yield "expect.matches_reference", "needs a `reference:` solution (the tool calls that solve the task)"
    tables = world.tables
    for op in ("inserted", "deleted"):
        for table, rows in getattr(expect, op).items():
            if table not in tables:
                yield f"expect.{op}.{table}", _no_table(world, table)
                continue
            for i, row in enumerate(rows):
                for column in row:
                    if column not in {c.name for c in tables[table].columns}:
                        yield f"expect.{op}.{table}[{i}].{column}", _no_column(world, table, column)
    for table, items in expect.updated.items():
        if table not in tables:
            yield f"expect.updated.{table}", _no_table(world, table)
            continue
        columns = {c.name for c in tables[table].columns}
        key = tables[table].primary_key
        for i, item in enumerate(items):
            if not item.key:
                yield (
                    f"expect.updated.{table}[{i}].key",
                    f"name the row by its primary key ({', '.join(key)})",
                )
            for column in item.key:
                if column not in key:
                    yield (
                        f"expect.updated.{table}[{i}].key.{column}",
                        (f"not part of {table}'s primary key ({', '.join(key)}); name the row by its key"),
                    )
            for part in ("after", "before"):
                for column in getattr(item, part):
                    if column not in columns:
                        yield f"expect.updated.{table}[{i}].{part}.{column}", _no_column(world, table, column)
            if not item.after and not item.before:
                yield f"expect.updated.{table}[{i}].after", "say which columns must change, and to what"
    for i, table in enumerate(expect.unchanged):
        if table not in tables:
            yield f"expect.unchanged[{i}]", _no_table(world, table)
        elif table in expect.inserted or table in expect.updated or table in expect.deleted:
            yield (
                f"expect.unchanged[{i}]",
                f"{table!r} must not change, yet rows of it are expected to change",
            )
    for problem in _check_ignore(expect.ignore_columns, world):
        yield "expect.ignore_columns", problem
    for i, spec in enumerate(expect.graders):
        found = graders.get(spec.name)
        if found is None:
            known = ", ".join(graders) or f"none (no {GRADERS_FILE} beside suite.yaml)"
            yield f"expect.graders[{i}]", f"no grader {spec.name!r} in {GRADERS_FILE}; graders: {known}"
            continue
        problem = found.check_args(spec.args)
        if problem:
            yield f"expect.graders[{i}].args", problem


def _check_ignore(entries: list[str], world: World) -> Iterable[str]:
    tables = world.tables
    for entry in entries:
        table, _, column = entry.rpartition(".")
        if table and table not in tables:
            yield f"{entry!r}: {_no_table(world, table)}"
        elif table and column not in {c.name for c in tables[table].columns}:
            yield f"{entry!r}: {_no_column(world, table, column)}"
        elif not table and not any(column in {c.name for c in t.columns} for t in tables.values()):
            yield f"{entry!r}: no table of world {world.name!r} has a column {column!r}"


def _no_table(world: World, table: str) -> str:
    close = difflib.get_close_matches(table, list(world.tables), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; tables: {', '.join(world.tables)}"
    return f"world {world.name!r} has no table {table!r}{hint}"


def _no_column(world: World, table: str, column: str) -> str:
    columns = [c.name for c in world.tables[table].columns]
    close = difflib.get_close_matches(column, columns, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; columns: {', '.join(columns)}"
    return f"table {table!r} has no column {column!r}{hint}"
