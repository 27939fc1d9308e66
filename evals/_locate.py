"""Which suite tests a harness, found from the harness's own folder and never from the current directory.

A harness may name its suite in harness.yaml (`suite:`, relative to the harness folder); otherwise the
suite is `<suites>/<world>` when the project file (atoll.toml) above the harness names a `suites`
folder, else `evals/<world>` in the nearest folder above the harness that has one (the repository the
harness lives in, the way the shipped harnesses and a user's own repository are laid out). So
`optimize run path/to/harness` means the same from any working directory, with no flags.
"""

from __future__ import annotations

from pathlib import Path

from atoll.harnesses import Harness
from atoll.worlds import PROJECT_FILE, find_project

from ._suite import SUITE_FILE, SuiteError

SUITES_DIR = "evals"


def suite_for(harness: Harness) -> Path:
    """The suite folder for `harness` (see the module docstring); SuiteError naming what to do if none."""
    if not harness.source:
        raise SuiteError(f"harness {harness.name!r} was not loaded from a folder: pass the suite explicitly")
    folder = Path(harness.source).resolve()
    named = harness.config.suite
    if named is not None:
        path = (folder / named).resolve()
        if not (path / SUITE_FILE).is_file():
            raise SuiteError(f"{harness.source}/harness.yaml: suite: {named!r} has no {SUITE_FILE} ({path})")
        return path
    world = harness.world.name
    project = find_project(folder)
    if project is not None and project.suites_folder is not None:
        path = project.suites_folder / world
        if not (path / SUITE_FILE).is_file():
            raise SuiteError(f"{project.file}: suites: no {SUITE_FILE} for world {world!r} in {path}")
        return path
    for above in folder.parents:
        candidate = above / SUITES_DIR / world
        if (candidate / SUITE_FILE).is_file():
            return candidate
    raise SuiteError(
        f"{harness.source}: no {SUITES_DIR}/{world}/{SUITE_FILE} in any folder above this harness; "
        f"name the suite in harness.yaml (suite: path/relative/to/the/harness), set `suites` in "
        f"{PROJECT_FILE}, or pass --suite"
    )
