"""Scaffolding: `write_new_folder` is the one safe way every `optimize new` scaffold writes.

A scaffold never overwrites: it refuses an existing folder, and writes into a temporary sibling first
and renames it into place, so an interrupted scaffold leaves nothing half-written. Shared by the world,
suite and harness scaffolds (worlds, evals, harnesses), so it sits in the bottom layer.

The public surface is exactly what `__all__` lists.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ._errors import AtollError
from ._project import PROJECT_FILE, Project, find_project

__all__ = [
    "Scaffold",
    "ScaffoldError",
    "check_new_name",
    "ensure_project_key",
    "project_at",
    "project_root",
    "remove_new_folder",
    "render_templates",
    "write_new_folder",
]


class ScaffoldError(AtollError):
    """A scaffold cannot be written where asked."""


@dataclass(frozen=True)
class Scaffold:
    """What a scaffold wrote: its folder, and every file (the project file too, when it changed)."""

    folder: Path
    written: list[Path]


def check_new_name(kind: str, name: str) -> None:
    """Names become Python packages and folder names: refuse anything else before writing."""
    if not name.isidentifier() or name.startswith("_") or not name.islower():
        raise ScaffoldError(
            f"{kind} name {name!r}: use a lower-case Python name (letters, digits, _), like `mydesk`"
        )


def render_templates(folder: Path, **values: str) -> dict[str, str]:
    """The files of a scaffold: each template in `folder`, rendered, with `.j2` dropped from its name."""
    from jinja2.sandbox import SandboxedEnvironment  # here: `import worlds` needs no template engine

    environment = SandboxedEnvironment(keep_trailing_newline=True)
    return {
        path.relative_to(folder).as_posix().removesuffix(".j2"): environment.from_string(
            path.read_text()
        ).render(**values)
        for path in sorted(folder.rglob("*.j2"))
    }


def write_new_folder(destination: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `files` (relative path → text) as the new folder `destination`, all or nothing."""
    if destination.exists():
        raise ScaffoldError(f"{destination} already exists; choose another name or remove it")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}-", dir=destination.parent))
    try:
        staging.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the folder is the user's source
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [destination / relative for relative in files]


def remove_new_folder(folder: Path) -> None:
    """Undo a scaffold that failed its own check, so the next attempt is not refused as existing."""
    shutil.rmtree(folder, ignore_errors=True)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def project_root(into: Path | None = None) -> Path:
    """Where scaffolds go: `into` when given, else the folder of the nearest atoll.toml, else the cwd."""
    if into is not None:
        return into.resolve()
    project = find_project()
    return project.root if project is not None else Path.cwd().resolve()


def project_at(root: Path) -> Project | None:
    """The project file in `root` itself (not above it), if there is one."""
    return find_project(root) if (root / PROJECT_FILE).is_file() else None


def ensure_project_key(root: Path, key: str, value: str) -> Path | None:
    """Make `root`/atoll.toml set `key` (creating the file), unless it sets it already; the file's path
    if it was written. The file has only top-level keys, so appending a line keeps it valid TOML."""
    path = root / PROJECT_FILE
    project = project_at(root)
    if project is not None and key in project.config.model_fields_set:
        return None
    header = (
        ""
        if path.is_file()
        else "# Atoll project file: where this repository's worlds, suites and harness are.\n"
    )
    existing = path.read_text() if path.is_file() else ""
    separator = "" if not existing or existing.endswith("\n") else "\n"
    path.write_text(f"{header}{existing}{separator}{key} = {value}\n")
    return path
