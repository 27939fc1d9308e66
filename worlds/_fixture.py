"""Fixtures: frozen starting states, built once from a seed and cached as SQLite files.

A fixture is keyed by everything that shapes its bytes (world version, schema text,
builder source, seed, epoch, engine version), so a changed builder or schema rebuilds it,
and its content sha256 is recorded beside it so a damaged cache file is rebuilt too.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ._clock import parse_timestamp

ENGINE_VERSION = "2"
SOURCE_SUFFIXES = {".py", ".sql", ".json", ".csv", ".yaml", ".yml", ".txt"}


def cache_dir() -> Path:
    """Where built fixtures (and other caches) live: `$ATOLL_CACHE_DIR`, else `~/.cache/atoll`."""
    return Path(os.environ.get("ATOLL_CACHE_DIR") or Path.home() / ".cache" / "atoll")


class FixtureContext:
    """What a fixture builder gets: the schema applied, a seeded RNG and the fixture's epoch."""

    def __init__(self, db: sqlite3.Connection, rng: random.Random, epoch: datetime) -> None:
        self.db = db
        self.rng = rng
        self.epoch = epoch

    def insert(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        """Insert many rows at once; the first row's keys name the columns (they must exist)."""
        rows = list(rows)
        if not rows:
            return
        columns = list(rows[0])
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        self.db.executemany(
            f'INSERT INTO "{table}" ({names}) VALUES ({marks})',
            [tuple(row[c] for c in columns) for row in rows],
        )


FixtureBuilder = Callable[[FixtureContext], None]


@dataclass(frozen=True)
class FixtureSpec:
    """A named fixture of a world: its builder, seed and epoch (the fixture's "now")."""

    name: str
    builder: FixtureBuilder
    seed: int
    epoch: datetime
    description: str = ""

    def source_hash(self) -> str:
        """A hash of the builder and every source file of its package (data tables, helpers), so
        that editing any of them rebuilds the fixture."""
        digest = hashlib.sha256(f"{self.builder.__module__}.{self.builder.__qualname__}".encode())
        try:
            digest.update(inspect.getsource(self.builder).encode())
        except (OSError, TypeError):  # built from a REPL or exec: the name is all there is
            return digest.hexdigest()
        for path in _package_sources(self.builder):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


def _package_sources(builder: FixtureBuilder) -> list[Path]:
    """The source files of the package that defines `builder` (just its file outside a package)."""
    module = sys.modules.get(builder.__module__)
    package = sys.modules.get(module.__package__) if module is not None and module.__package__ else None
    if package is None or not getattr(package, "__file__", None):
        source = inspect.getsourcefile(builder)
        return [Path(source)] if source else []
    root = Path(package.__file__).parent
    return sorted(
        path
        for path in root.rglob("*")
        if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts and path.is_file()
    )


def make_fixture_spec(
    name: str, builder: FixtureBuilder, *, seed: int, epoch: str | datetime, description: str
) -> FixtureSpec:
    return FixtureSpec(
        name, builder, seed, parse_timestamp(epoch), description or (inspect.getdoc(builder) or "")
    )


@dataclass
class FixtureData:
    """A built fixture: the bytes of each SQLite schema (main and included parts)."""

    world: str
    name: str
    epoch: datetime
    parts: dict[str, bytes]
    sha256: str
    schema_hash: str
    row_counts: dict[str, int] = field(default_factory=dict)
    built_seconds: float = 0.0


def content_sha256(parts: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(parts):
        digest.update(name.encode() + b"\0" + hashlib.sha256(parts[name]).digest())
    return digest.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_cached(directory: Path, stem: str) -> FixtureData | None:
    """The cached fixture, or None when it is missing or its bytes do not match the record."""
    meta_path = directory / f"{stem}.json"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        parts = {part: (directory / file).read_bytes() for part, file in meta["files"].items()}
        if content_sha256(parts) != meta["sha256"]:
            return None
        return FixtureData(
            world=meta["world"],
            name=meta["fixture"],
            epoch=parse_timestamp(meta["epoch"]),
            parts=parts,
            sha256=meta["sha256"],
            schema_hash=meta["schema_hash"],
            row_counts=meta["row_counts"],
            built_seconds=meta["built_seconds"],
        )
    except (OSError, ValueError, KeyError, TypeError):  # a damaged record: rebuild
        return None


def store_cached(directory: Path, stem: str, data: FixtureData, key: str) -> None:
    """Write the parts first and the record last, each atomically: a reader never sees half."""
    files = {}
    for part, blob in data.parts.items():
        file = f"{stem}.sqlite" if part == "main" else f"{stem}.{part}.sqlite"
        _atomic_write(directory / file, blob)
        files[part] = file
    meta = {
        "world": data.world,
        "fixture": data.name,
        "key": key,
        "epoch": data.epoch.isoformat(sep=" "),
        "sha256": data.sha256,
        "schema_hash": data.schema_hash,
        "row_counts": data.row_counts,
        "built_seconds": data.built_seconds,
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "files": files,
    }
    _atomic_write(directory / f"{stem}.json", json.dumps(meta, indent=2).encode())
