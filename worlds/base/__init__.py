"""The bottom layer: what every package of Atoll shares, and nothing that belongs to one of them.

The error root and the CLI's exit codes, the project file (`atoll.toml`), the store's timestamps and
run ids, and which process owns a row. Everything above imports these from here (`worlds` re-exports
the errors, the project file and the timestamp format as well); nothing here imports an upper layer.
Two heavier parts are public submodules, imported only where used: `worlds.base.stats` (the paired
statistics, with numpy) and `worlds.base.scaffold` (what `optimize new` writes with, with jinja2).

The public surface is exactly what `__all__` lists.
"""

from ._errors import RUN_FAILED, USAGE_ERROR, AtollError
from ._owners import live_status, owner_alive, process_owner
from ._project import PROJECT_FILE, Project, ProjectConfig, ProjectError, find_project
from ._time import TIMESTAMP_FORMAT, new_run_id, now_text

__all__ = [
    "PROJECT_FILE",
    "RUN_FAILED",
    "TIMESTAMP_FORMAT",
    "USAGE_ERROR",
    "AtollError",
    "Project",
    "ProjectConfig",
    "ProjectError",
    "find_project",
    "live_status",
    "new_run_id",
    "now_text",
    "owner_alive",
    "process_owner",
]
