"""Worlds found by name wherever they live: a project's world folders, $ATOLL_WORLDS_PATH, entry points;
and the defaults a world gives the commands (its default fixture)."""

from __future__ import annotations

import itertools
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import atoll.worlds._find as find
from atoll.worlds import (
    PATH_VARIABLE,
    AtollError,
    ProjectError,
    UnknownWorld,
    World,
    WorldDefinitionError,
    find_project,
    new_world,
)

_names = (f"desk{i}" for i in itertools.count())


@pytest.fixture(autouse=True)
def fresh_lookup(monkeypatch: pytest.MonkeyPatch, forget_new_modules: None) -> None:
    """Each test finds worlds afresh and leaves no import path or module behind."""
    monkeypatch.setattr(find, "_loaded", {})
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PATH_VARIABLE, raising=False)


def test_a_world_in_the_projects_world_folder_is_found_by_name_from_anywhere_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = next(_names)
    new_world(name, root=tmp_path)
    (tmp_path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "deep" / "er")

    world = find.get_world(name)

    assert world.name == name and world.default_fixture == "starter"
    assert find.find_worlds()[name] == "atoll.toml"
    assert {"helpdesk", "clinic", name} <= set(find.list_worlds())


def test_a_file_that_names_the_world_finds_it_through_its_own_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = next(_names)
    new_world(name, root=tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    with pytest.raises(UnknownWorld):
        find.get_world(name)
    assert find.get_world(name, near=tmp_path / "repo" / "harnesses" / "h").name == name


def test_the_worlds_path_variable_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = next(_names)
    new_world(name, root=tmp_path)
    (tmp_path / "atoll.toml").unlink()
    monkeypatch.chdir(tmp_path.parent)
    monkeypatch.setenv(PATH_VARIABLE, str(tmp_path / "worlds"))

    assert find.get_world(name).name == name
    assert find.find_worlds()[name] == f"${PATH_VARIABLE}"


def test_an_entry_point_registers_a_world(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = EntryPoint("plugged", "tests.worlds.plugged_world:world", find.ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        find,
        "entry_points",
        lambda group, name=None: [e for e in [entry] if e.group == group and name in (None, e.name)],
    )

    assert find.get_world("plugged").name == "plugged"
    assert find.find_worlds()["plugged"] == "entry point tests.worlds.plugged_world:world"


def test_an_unknown_world_says_what_was_searched_and_how_to_register(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "atoll.toml").write_text('worlds = ["worlds"]\n')
    monkeypatch.chdir(tmp_path)

    with pytest.raises(UnknownWorld) as raised:
        find.get_world("atlantis")

    message = str(raised.value)
    assert "no world 'atlantis'" in message
    assert "shipped worlds (clinic, helpdesk, payments, tau2_airline, tau2_retail)" in message
    assert f"{tmp_path.resolve() / 'worlds'} ({tmp_path.resolve() / 'atoll.toml'})" in message
    assert "ATOLL_WORLDS_PATH" in message and "'atoll.worlds'" in message
    assert "optimize new world atlantis" in message


def test_a_world_named_unlike_its_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = next(_names)
    new_world(name, root=tmp_path)
    world_py = tmp_path / "worlds" / name / "world.py"
    world_py.write_text(world_py.read_text().replace(f'name="{name}"', 'name="other"'))
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]  # new_world imported it to check it: read the edited file
    monkeypatch.chdir(tmp_path)

    with pytest.raises(WorldDefinitionError, match=r"declares World\(name='other'\)"):
        find.get_world(name)


@pytest.mark.parametrize("name", ["json", "helpdesk", "pytest", "yes"])
def test_a_world_name_that_already_means_a_module_is_refused_before_writing(
    tmp_path: Path, name: str
) -> None:
    if name == "yes":  # a YAML boolean word: fine as a name, since every scaffold quotes it
        assert new_world(name, root=tmp_path).folder.is_dir()
        return
    with pytest.raises(AtollError, match=f"world name '{name}'"):
        new_world(name, root=tmp_path)
    assert not (tmp_path / "worlds").exists()


def test_a_new_world_goes_to_the_world_folder_the_project_already_names(tmp_path: Path) -> None:
    (tmp_path / "atoll.toml").write_text('worlds = ["my_worlds"]\n')
    name = next(_names)

    made = new_world(name, root=tmp_path)

    assert made.folder == (tmp_path / "my_worlds" / name).resolve()
    assert (tmp_path / "atoll.toml").read_text() == 'worlds = ["my_worlds"]\n'
    assert find.get_world(name, near=tmp_path).name == name


def test_a_project_file_with_an_unknown_key_names_the_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "atoll.toml").write_text('world = ["worlds"]\n')

    with pytest.raises(ProjectError, match=r"atoll\.toml: world: unknown key"):
        find_project(tmp_path)


def test_the_default_fixture_is_the_marked_one_else_the_first() -> None:
    world = World("fx", schema="CREATE TABLE t (id TEXT PRIMARY KEY);")
    world.fixture("first", epoch="2026-01-01 00:00:00")(lambda fx: None)
    assert world.default_fixture == "first"
    world.fixture("chosen", epoch="2026-01-01 00:00:00", default=True)(lambda fx: None)
    assert world.default_fixture == "chosen"
    with pytest.raises(WorldDefinitionError, match="both marked default"):
        world.fixture("again", epoch="2026-01-01 00:00:00", default=True)(lambda fx: None)


@pytest.mark.parametrize(
    "args",
    [
        ["world", "show", ".x"],
        ["world", "show", "a/b"],
        ["world", "show", "x."],
        ["mcp", ".x"],
        ["serve", "--world", "../../etc/passwd"],
    ],
)
def test_a_world_name_that_is_a_path_or_relative_is_one_line_and_a_usage_error(args: list[str]) -> None:
    from typer.testing import CliRunner

    from atoll.cli import app

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "no world" in result.stderr and "Traceback" not in result.output
    assert "serving" not in result.stderr
