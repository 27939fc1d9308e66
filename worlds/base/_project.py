"""The project file, `atoll.toml`: where a repository's own worlds live and which harness is its default.

A team keeps its worlds, suites and harnesses in its own repository, beside no copy of Atoll. The
project file, found in the nearest folder at or above where a command starts, says where to look, so
`optimize run` and friends work by name from anywhere in that repository:

    worlds = ["worlds"]                    # folders holding world packages (<folder>/<name>/world.py)
    suites = "evals"                       # folder holding a suite per world (<folder>/<world>/suite.yaml)
    harness = "harnesses/mydesk_agent"     # what `optimize run`, `eval`, `gate` and `try` use when given none

    [records]                              # the service's own table (docs/serving.md)

Paths are relative to the file. Every key is optional; an unknown key is an error naming the file. A
table such as `[records]` belongs to the layer that reads it: this file only carries it, so the bottom
layer knows no upper layer's settings (the service checks `[records]` with its `RecordPolicy`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ._errors import AtollError

PROJECT_FILE = "atoll.toml"


class ProjectError(AtollError):
    """The project file cannot be read or has a wrong key."""


class ProjectConfig(BaseModel):
    """The keys of atoll.toml."""

    model_config = ConfigDict(extra="forbid")

    worlds: list[str] = []
    suites: str | None = None
    harness: str | None = None
    records: dict[str, Any] = {}  # the service's table, carried unread (service.RecordPolicy checks it)


@dataclass(frozen=True)
class Project:
    """A parsed project file and the folder it lives in, against which its paths resolve."""

    file: Path
    config: ProjectConfig

    @property
    def root(self) -> Path:
        return self.file.parent

    @property
    def world_folders(self) -> list[Path]:
        return [(self.root / folder).resolve() for folder in self.config.worlds]

    @property
    def suites_folder(self) -> Path | None:
        return (self.root / self.config.suites).resolve() if self.config.suites else None

    @property
    def harness(self) -> Path | None:
        return (self.root / self.config.harness).resolve() if self.config.harness else None


def find_project(start: Path | str | None = None) -> Project | None:
    """The project file at or above `start` (default the current directory), or None if there is none."""
    folder = Path(start or Path.cwd()).resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / PROJECT_FILE
        if path.is_file():
            return _read(path)
    return None


def _read(path: Path) -> Project:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ProjectError(f"{path}: cannot read: {error}") from None
    try:
        return Project(path, ProjectConfig.model_validate(data))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, item['loc'])) or '(file)'}: {_message(item)}" for item in error.errors()
        )
        raise ProjectError(f"{path}: {problems} (keys: worlds, suites, harness, records)") from None


def _message(item: dict) -> str:
    return "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
