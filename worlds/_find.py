"""Finding a world by its name, wherever it lives.

A world is a Python package whose `world` attribute is a `World`. `get_world("mydesk")` looks, in order:

1. the worlds shipped in this package (`worlds/<name>/world.py`);
2. installed packages that declare an entry point in the group `atoll.worlds`
   (`mydesk = "mypkg.mydesk"` in their pyproject's `[project.entry-points."atoll.worlds"]`);
3. world folders: each folder in `$ATOLL_WORLDS_PATH` (separated like PATH), then the `worlds = [...]`
   folders of the project file (atoll.toml) above the file that names the world and above the current
   directory; a folder holds world packages `<folder>/<name>/` with a world.py, like the shipped ones.

A dotted module path (`mypkg.mydesk`) is imported as it is. A world found by name must be called by
that name (`World(name="mydesk")` in `mydesk/`), so errors, stored runs and the name you type agree.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from ._errors import UnknownWorld, WorldDefinitionError
from ._world import World
from .base import PROJECT_FILE, find_project

ENTRY_POINT_GROUP = "atoll.worlds"
PATH_VARIABLE = "ATOLL_WORLDS_PATH"
SHIPPED = Path(__file__).parent

_loaded: dict[str, World] = {}
"""Shipped, installed and dotted worlds by the name asked; a folder's world is cached by Python's own
import system (sys.modules), so the folder is still checked on every lookup."""


def get_world(name: str | World, *, near: Path | str | None = None) -> World:
    """The world called `name`, checked; `near` is the file or folder that named it (a harness, a suite),
    whose project file is searched too. UnknownWorld says what was searched and how to register one."""
    if isinstance(name, World):
        return name.validate()
    if name in _loaded:
        return _loaded[name]
    if not all(part.isidentifier() for part in name.split(".")):
        # `.x`, `a/b`, `../../etc/passwd`: no module is named so; refused before anything is imported
        raise UnknownWorld(
            f"no world {name[:100]!r}: a world is named by a Python name (`helpdesk`) or a dotted module "
            "path (`mypkg.mydesk`), not a path or a relative name"
        )
    if "." in name:
        _loaded[name] = _world_of(_import(name, name), name).validate()
        return _loaded[name]
    world, cacheable = _find(name, near)
    if world.name != name:
        raise WorldDefinitionError(
            f"world {name!r} declares World(name={world.name!r}); name the world as its folder or entry point"
        )
    world.validate()
    if cacheable:
        _loaded[name] = world
    return world


def list_worlds(*, near: Path | str | None = None) -> list[str]:
    """Every world name `get_world` can find from here (see the module docstring)."""
    return sorted(find_worlds(near=near))


def find_worlds(*, near: Path | str | None = None) -> dict[str, str]:
    """Each findable world's name and where it comes from, first source winning as in `get_world`."""
    found: dict[str, str] = {}
    for name in _packages_in(SHIPPED, marker="world.py"):
        found.setdefault(name, "shipped")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, f"entry point {entry.value}")
    for folder, origin in _world_folders(near):
        for name in _packages_in(folder, marker="world.py"):
            found.setdefault(name, PROJECT_FILE if origin.endswith(PROJECT_FILE) else origin)
    return found


def _find(name: str, near: Path | str | None) -> tuple[World, bool]:
    """The world and whether it may be cached by name (a folder's world depends on where one stands)."""
    if (SHIPPED / name / "world.py").is_file():
        return _world_of(_import(f"{__package__}.{name}", name), name), True
    for entry in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return _from_entry_point(entry, name), True
    for folder, _origin in _world_folders(near):
        if (folder / name / "world.py").is_file():
            return _world_of(_import_from(folder, name), name), False
    raise UnknownWorld(_not_found(name, near))


def _world_folders(near: Path | str | None) -> Iterator[tuple[Path, str]]:
    """The world folders to search, each with where it was configured; each folder once."""
    seen: set[Path] = set()
    for raw in os.environ.get(PATH_VARIABLE, "").split(os.pathsep):
        folder = Path(raw).expanduser().resolve() if raw else None
        if folder is not None and folder not in seen:
            seen.add(folder)
            yield folder, f"${PATH_VARIABLE}"
    for start in (near, None):  # the project of the file that named the world, then of the cwd
        project = find_project(start)
        if project is None:
            continue
        for folder in project.world_folders:
            if folder not in seen:
                seen.add(folder)
                yield folder, str(project.file)


def _packages_in(folder: Path, *, marker: str) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(
        child.name
        for child in folder.iterdir()
        if child.name.isidentifier() and not child.name.startswith("_") and (child / marker).is_file()
    )


def _import(module_name: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise UnknownWorld(f"no world {name!r}: no module {module_name!r}") from None
        raise
    except (TypeError, ValueError) as error:  # a name importlib refuses outright (relative, empty parts)
        raise UnknownWorld(f"no world {name!r}: {error}") from None


def _import_from(folder: Path, name: str) -> ModuleType:
    """Import package `name` from a world folder, as if the folder were on PYTHONPATH (so the package's
    own absolute imports work), refusing when the name already means another module (the standard
    library's, an installed package's, another project's world): that module would run instead."""
    owner = module_origin(name)
    if owner is not None and not owner.is_relative_to(folder / name):
        raise WorldDefinitionError(
            f"world {name!r} in {folder}: the name {name!r} is already the module at {owner}; "
            "rename the world's folder (and its World(name=...))"
        )
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    return importlib.import_module(name)


def module_origin(name: str) -> Path | None:
    """Where the top-level module `name` is (or would be) imported from; None if nowhere."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return Path(getattr(loaded, "__file__", None) or sys.executable).resolve()
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return Path(spec.origin).resolve() if spec.origin and spec.has_location else Path(sys.executable)


def _from_entry_point(entry: EntryPoint, name: str) -> World:
    try:
        loaded = entry.load()
    except Exception as error:  # a broken plug-in: name it, keep the traceback
        raise WorldDefinitionError(
            f"world {name!r}: entry point {entry.value!r} ({ENTRY_POINT_GROUP}) failed to load: {error}"
        ) from error
    return loaded if isinstance(loaded, World) else _world_of(loaded, name)


def _world_of(module: ModuleType, name: str) -> World:
    world = getattr(module, "world", None)
    if not isinstance(world, World):
        raise UnknownWorld(
            f"world {name!r}: module {module.__name__!r} has no `world = World(...)` "
            f"(import it in the package's __init__.py: `from .world import world`)"
        )
    return world


def _not_found(name: str, near: Path | str | None) -> str:
    shipped = ", ".join(_packages_in(SHIPPED, marker="world.py")) or "none"
    plugins = ", ".join(entry.name for entry in entry_points(group=ENTRY_POINT_GROUP)) or "none"
    folders = "; ".join(f"{folder} ({origin})" for folder, origin in _world_folders(near)) or (
        f"none (no {PROJECT_FILE} with `worlds = [...]` here, ${PATH_VARIABLE} unset)"
    )
    return (
        f"no world {name!r}. Searched: shipped worlds ({shipped}); entry points {ENTRY_POINT_GROUP!r} "
        f"({plugins}); world folders: {folders}. To register it, put its package folder in a folder listed "
        f'in {PROJECT_FILE} (worlds = ["worlds"]) or in ${PATH_VARIABLE}, or declare an entry point in '
        f"the group {ENTRY_POINT_GROUP!r}; `optimize new world {name}` scaffolds one"
    )
