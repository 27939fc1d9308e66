"""The World: a schema, tools, documents and fixtures, and the factory of instances."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from ._capture import KIND as CAPTURE_KIND
from ._clock import Clock
from ._errors import UnknownFixture, WorldDefinitionError
from ._fixture import (
    ENGINE_VERSION,
    FixtureBuilder,
    FixtureContext,
    FixtureData,
    FixtureSpec,
    cache_dir,
    content_sha256,
    load_cached,
    make_fixture_spec,
    store_cached,
)
from ._instance import Instance, Observation
from ._operation import Operation, RestFace, make_operation
from ._schema import TableInfo, install_capture, qualified, read_tables
from ._sqltime import install_clock
from ._tool import Tool, make_tool

FIXTURE_PAGE_SIZE = 1024


@dataclass(frozen=True)
class Include:
    """Another world's tables and tools, mounted under `prefix` (see worlds/README.md)."""

    world: str | World
    prefix: str
    fixture: str | None = None


class World:
    """A world: declare it once per package, then register tools and fixtures on it. `observation` is how
    the agent reads a result (see `ToolResult.for_model`)."""

    def __init__(
        self,
        name: str,
        *,
        schema: Path | str,
        version: str = "1",
        description: str = "",
        documents: dict[str, Path | str] | None = None,
        includes: list[Include] | None = None,
        rest: RestFace | None = None,
        observation: Observation = "json",
    ) -> None:
        self.name = name
        self.observation = observation
        self.version = version
        self.description = description
        self._schema_source = schema
        self._documents = dict(documents or {})
        self._includes = list(includes or [])
        self._own_tools: dict[str, Tool] = {}
        self.rest = rest
        self._operations: dict[str, Operation] = {}
        self._fixtures: dict[str, FixtureSpec] = {}
        self._default_fixture: str | None = None
        self._built: dict[str, FixtureData] = {}
        self._build_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"World({self.name!r}, version={self.version!r})"

    # -- declaration -------------------------------------------------------------------------

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        *,
        writes: bool,
        name: str | None = None,
        as_given: bool = False,
    ) -> Callable[..., Any]:
        """Register a tool; the function stays a plain function. `writes` says whether it may change state;
        `as_given`, that it takes its arguments unvalidated (a world copying another engine's tools)."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tool = make_tool(fn, writes=writes, name=name, as_given=as_given)
            if tool.name in self._own_tools:
                raise WorldDefinitionError(f"world {self.name!r}: tool {tool.name!r} is registered twice")
            self._own_tools[tool.name] = tool
            return fn

        return register(function) if function is not None else register

    def operation(self, method: str, path: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register an HTTP operation (`@world.operation("POST", "/v1/refunds")`) on a tool-shaped function;
        the function stays plain, and may be a tool too. GET operations must not write. See docs/rest.md."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            operation = make_operation(fn, method, path)
            if operation.name in self._operations:
                raise WorldDefinitionError(
                    f"world {self.name!r}: operation {operation.name} is registered twice"
                )
            self._operations[operation.name] = operation
            return fn

        return register

    def fixture(
        self,
        name: str,
        *,
        epoch: str | datetime,
        seed: int = 0,
        description: str = "",
        default: bool = False,
    ) -> Callable[[FixtureBuilder], FixtureBuilder]:
        """Register a fixture builder: a deterministic function of `fx.rng` filling the schema.
        `default` marks the fixture commands start from when none is named (else the first registered)."""

        def register(builder: FixtureBuilder) -> FixtureBuilder:
            if name in self._fixtures:
                raise WorldDefinitionError(f"world {self.name!r}: fixture {name!r} is registered twice")
            if default and self._default_fixture is not None:
                raise WorldDefinitionError(
                    f"world {self.name!r}: fixtures {self._default_fixture!r} and {name!r} are both marked default"
                )
            if default:
                self._default_fixture = name
            self._fixtures[name] = make_fixture_spec(
                name, builder, seed=seed, epoch=epoch, description=description
            )
            return builder

        return register

    # -- what it holds -------------------------------------------------------------------------

    @cached_property
    def schema_sql(self) -> str:
        source = self._schema_source
        if isinstance(source, Path):
            try:
                return source.read_text()
            except OSError as error:
                raise WorldDefinitionError(
                    f"world {self.name!r}: cannot read schema {source}: {error}"
                ) from None
        return source

    @cached_property
    def schema_hash(self) -> str:
        parts = [
            self.schema_sql,
            *(f"{inc.prefix}:{self._included(inc).schema_hash}" for inc in self._includes),
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    @cached_property
    def _own_tables(self) -> list[TableInfo]:
        connection = sqlite3.connect(":memory:")
        try:
            try:
                connection.executescript(self.schema_sql)
            except sqlite3.Error as error:
                raise WorldDefinitionError(f"{self._schema_label()}: {error}") from None
            tables = read_tables(connection, source=self._schema_label())
        finally:
            connection.close()
        if not tables:
            raise WorldDefinitionError(f"{self._schema_label()}: the schema creates no tables")
        return tables

    def _schema_label(self) -> str:
        source = self._schema_source
        return f"world {self.name!r} schema {source.name if isinstance(source, Path) else '(inline)'}"

    @property
    def tables(self) -> dict[str, TableInfo]:
        """Every table by the name the diff uses (`orders`, or `hd.orders` for an included world)."""
        tables = {t.name: t for t in self._own_tables}
        for include in self._includes:
            for table in self._included(include)._own_tables:
                tables[f"{include.prefix}.{table.name}"] = table
        return tables

    @cached_property
    def tools(self) -> dict[str, Tool]:
        """Every tool by the name the model sees (`hd_get_order` for an included world's)."""
        tools = dict(self._own_tools)
        for include in self._includes:
            for tool in self._included(include).tools.values():
                renamed = f"{include.prefix}_{tool.name}"
                if renamed in tools:
                    raise WorldDefinitionError(f"world {self.name!r}: included tool {renamed!r} clashes")
                tools[renamed] = tool.renamed(renamed)
        return tools

    @property
    def operations(self) -> dict[str, Operation]:
        """The world's own HTTP operations by name (`POST /v1/refunds`); an included world's are not served."""
        return dict(self._operations)

    @property
    def fixtures(self) -> dict[str, FixtureSpec]:
        return dict(self._fixtures)

    @property
    def default_fixture(self) -> str:
        """The fixture to start from when a command names none: the one marked default, else the first."""
        if not self._fixtures:
            raise UnknownFixture(f"world {self.name!r} has no fixtures: register one with @world.fixture")
        return self._default_fixture or next(iter(self._fixtures))

    @cached_property
    def documents(self) -> dict[str, str]:
        """Texts the harness may show the agent, such as the policy."""
        texts = {}
        for name, source in self._documents.items():
            try:
                texts[name] = source.read_text() if isinstance(source, Path) else source
            except OSError as error:
                raise WorldDefinitionError(f"world {self.name!r}: document {name!r}: {error}") from None
        return texts

    def validate(self) -> World:
        """Check the schema, includes and tools now, so mistakes surface when the world loads."""
        own = {t.name for t in self._own_tables}
        for include in self._includes:
            if not include.prefix.isidentifier():
                raise WorldDefinitionError(
                    f"world {self.name!r}: include prefix {include.prefix!r} is not a name"
                )
            included = self._included(include)
            if included._includes:
                raise WorldDefinitionError(f"world {self.name!r}: {included.name!r} includes worlds itself")
            clash = own & {t.name for t in included._own_tables}
            if clash:
                raise WorldDefinitionError(
                    f"world {self.name!r}: table {sorted(clash)[0]!r} exists in both it and included "
                    f"world {included.name!r}; rename one of them"
                )
        _ = self.tools, self.documents
        return self

    def _included(self, include: Include) -> World:
        from ._find import get_world  # the finder imports World

        return include.world if isinstance(include.world, World) else get_world(include.world)

    # -- fixtures ------------------------------------------------------------------------------

    def fixture_key(self, spec: FixtureSpec) -> str:
        parts = {
            "engine": ENGINE_VERSION,
            "capture": CAPTURE_KIND,  # the trigger kind keeps its triggers in the fixture's bytes
            "world": self.name,
            "version": self.version,
            "schema": self.schema_hash,
            "builder": spec.source_hash(),
            "seed": spec.seed,
            "epoch": spec.epoch.isoformat(),
            "includes": [
                [inc.prefix, self._included(inc).fixture_key(self._included_spec(inc, spec.name))]
                for inc in self._includes
            ],
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def _included_spec(self, include: Include, fixture: str) -> FixtureSpec:
        included = self._included(include)
        name = include.fixture or fixture
        if name not in included._fixtures:
            raise UnknownFixture(
                f"world {self.name!r} includes {included.name!r} with fixture {name!r}, which it lacks; "
                f"it has: {', '.join(included._fixtures) or 'none'}"
            )
        return included._fixtures[name]

    def load_fixture(self, name: str) -> FixtureData:
        """The built fixture: from this process, else the cache directory, else built now."""
        if name in self._built:
            return self._built[name]
        if name not in self._fixtures:
            raise UnknownFixture(
                f"world {self.name!r} has no fixture {name!r}; it has: {', '.join(self._fixtures) or 'none'}"
            )
        with self._build_lock:
            if name not in self._built:
                spec = self._fixtures[name]
                key = self.fixture_key(spec)
                directory = cache_dir() / "fixtures" / self.name
                stem = f"{name}-{key[:16]}"
                data = load_cached(directory, stem)
                if data is None:
                    data = self._build(spec)
                    store_cached(directory, stem, data, key)
                self._built[name] = data
        return self._built[name]

    def _build(self, spec: FixtureSpec) -> FixtureData:
        started = time.perf_counter()
        self.validate()
        connection = sqlite3.connect(":memory:")
        # Small pages: a fixture has a b-tree per table and index, each at least one page, and
        # every live instance holds a full copy, so 1 KiB pages keep small fixtures small.
        connection.execute(f"PRAGMA page_size = {FIXTURE_PAGE_SIZE}")
        install_clock(connection, lambda: spec.epoch)
        for include in self._includes:
            part = self._included(include).load_fixture(self._included_spec(include, spec.name).name)
            connection.execute(f"ATTACH ':memory:' AS {include.prefix}")
            connection.deserialize(part.parts["main"], name=include.prefix)
        connection.executescript(self.schema_sql)
        tables = read_tables(connection, source=self._schema_label())
        try:
            spec.builder(FixtureContext(connection, random.Random(spec.seed), spec.epoch))
            connection.commit()
        except Exception as error:  # the author's bug: name the world and fixture, keep the traceback
            connection.close()
            raise WorldDefinitionError(
                f"world {self.name!r} fixture {spec.name!r}: the builder failed: {type(error).__name__}: {error}"
            ) from error
        if CAPTURE_KIND == "triggers":
            install_capture(connection, tables)
            for include in self._includes:
                connection.execute(f"DELETE FROM {include.prefix}._atoll_changes")
            connection.commit()
        row_counts = {}
        for label in self.tables:
            row_counts[label] = connection.execute(f"SELECT count(*) FROM {qualified(label)}").fetchone()[0]
        connection.execute("VACUUM")
        parts = {"main": connection.serialize()}
        for include in self._includes:
            connection.execute(f"VACUUM {include.prefix}")
            parts[include.prefix] = connection.serialize(name=include.prefix)
        connection.close()
        return FixtureData(
            world=self.name,
            name=spec.name,
            epoch=spec.epoch,
            parts=parts,
            sha256=content_sha256(parts),
            schema_hash=self.schema_hash,
            row_counts=row_counts,
            built_seconds=round(time.perf_counter() - started, 3),
        )

    # -- instances -----------------------------------------------------------------------------

    def instance(self, fixture: str, *, seed: int = 0, clock: str | Clock | None = None) -> Instance:
        """A private in-memory copy of `fixture`; use it as a context manager to close it."""
        return Instance(self, self.load_fixture(fixture), seed=seed, clock=Clock.parse(clock))
