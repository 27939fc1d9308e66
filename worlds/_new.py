"""`optimize new world NAME`: a world package that loads, builds and serves at once, with comments that
teach the format; written as every scaffold is (`worlds.base.scaffold`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .base.scaffold import (
    Scaffold,
    ScaffoldError,
    check_new_name,
    ensure_project_key,
    project_at,
    project_root,
    remove_new_folder,
    render_templates,
    write_new_folder,
)

WORLD_TEMPLATES = Path(__file__).parent / "_templates" / "world"


def check_new_world_name(name: str) -> None:
    """A world package is imported by its name, so the name must not already mean another module (the
    standard library's, an installed package's) or a world found first (a shipped one)."""
    from ._find import SHIPPED, module_origin  # the finder imports the world engine

    if (SHIPPED / name / "world.py").is_file():
        raise ScaffoldError(f"world name {name!r}: Atoll ships a world of that name; choose another")
    owner = module_origin(name)
    if name in sys.stdlib_module_names or owner is not None:
        where = "the standard library" if name in sys.stdlib_module_names else owner
        raise ScaffoldError(f"world name {name!r} is already the module at {where}; choose another name")


def new_world(name: str, *, root: Path | None = None) -> Scaffold:
    """Scaffold the world package `name` in the project's first world folder (`worlds/`, registered in
    atoll.toml when it names none), then find it by name and build its fixture: a scaffold that does
    not pass that is removed again, so nothing half-made stays behind."""
    from ._find import get_world  # the finder imports the world engine

    check_new_name("world", name)
    root = project_root(root)
    project = project_at(root)
    folders = project.world_folders if project is not None else []
    folder = (folders[0] if folders else root / "worlds") / name
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists; choose another name or remove it")
    check_new_world_name(name)
    written = write_new_folder(folder, render_templates(WORLD_TEMPLATES, name=name))
    try:
        registered = None if folders else ensure_project_key(root, "worlds", '["worlds"]')
        world = get_world(name, near=folder)
        world.load_fixture(world.default_fixture)
    except BaseException:
        remove_new_folder(folder)
        raise
    return Scaffold(folder, written + ([registered] if registered else []))
