"""Worlds: SQLite-backed environments an agent acts on, graded by what it changed.

The public surface is exactly what `__all__` lists; see worlds/README.md for how to write
a world. The bottom layer every package shares (errors, the project file, timestamps) is `worlds.base`;
its errors, project file and timestamp format are exported here too.
"""

from ._clock import Clock
from ._diff import Diff, RowChange, RowUpdate, TableDiff
from ._errors import (
    InstanceClosed,
    ToolError,
    UnknownFixture,
    UnknownWorld,
    WorldDefinitionError,
    WorldError,
)
from ._find import ENTRY_POINT_GROUP, PATH_VARIABLE, find_worlds, get_world, list_worlds
from ._fixture import FixtureContext, FixtureData, FixtureSpec, cache_dir
from ._instance import CallRecord, Instance, ToolFailure, ToolResult, compact_json
from ._new import new_world
from ._operation import Operation, RestFace
from ._schema import Column, TableInfo
from ._tool import Tool, ToolContext
from ._world import Include, World
from .base import (
    PROJECT_FILE,
    RUN_FAILED,
    TIMESTAMP_FORMAT,
    USAGE_ERROR,
    AtollError,
    Project,
    ProjectConfig,
    ProjectError,
    find_project,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "PATH_VARIABLE",
    "PROJECT_FILE",
    "RUN_FAILED",
    "TIMESTAMP_FORMAT",
    "USAGE_ERROR",
    "AtollError",
    "CallRecord",
    "Clock",
    "Column",
    "Diff",
    "FixtureContext",
    "FixtureData",
    "FixtureSpec",
    "Include",
    "Instance",
    "InstanceClosed",
    "Operation",
    "Project",
    "ProjectConfig",
    "ProjectError",
    "RestFace",
    "RowChange",
    "RowUpdate",
    "TableDiff",
    "TableInfo",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFailure",
    "ToolResult",
    "UnknownFixture",
    "UnknownWorld",
    "World",
    "WorldDefinitionError",
    "WorldError",
    "cache_dir",
    "compact_json",
    "find_project",
    "find_worlds",
    "get_world",
    "list_worlds",
    "new_world",
]
