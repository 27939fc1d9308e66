"""Installing Atoll adds one import name, `atoll`, and the `optimize` command.

The repository keeps its top-level folders (worlds/, harnesses/, evals/, optimizer/, cli.py, ...);
pyproject.toml maps them under the `atoll` root. This builds the wheel a user installs, offline, from
the tracked files, and reads what it would put on sys.path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worlds", "harnesses", "evals", "optimizer", "service", "views", "commands")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in tracked.stdout.splitlines():
        if (ROOT / name).is_symlink():  # `.package/atoll`, the root's link to the repository folder
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
    ]
    subprocess.run([*build, "--wheel-dir", str(out), str(source)], check=True, capture_output=True)
    (built,) = out.glob("atoll-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_installs_one_import_name_and_the_optimize_command(wheel: zipfile.ZipFile):
    names = wheel.namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"atoll"}
    assert "atoll/cli.py" in names and "atoll/worlds/helpdesk/world.py" in names
    assert "atoll/worlds/_templates/world/tools.py.j2" in names  # `optimize new` scaffolds
    assert "atoll/py.typed" in names  # PEP 561: type checkers read the package's annotations
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "optimize = atoll.cli:app" in wheel.read(entry_points).decode()


def test_every_package_folder_is_listed_under_the_root():
    """setuptools installs only the packages pyproject.toml lists: a new folder must be added there."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        "atoll." + ".".join(init.parent.relative_to(ROOT).parts)
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    }
    assert listed == {"atoll", *folders}


def test_the_root_is_reached_through_a_link_to_the_repository_folder():
    """pyproject.toml maps the packages under `.package/`, whose `atoll` is the repository folder, so an
    editable install is a plain .pth line that mypy and pyright follow (tests/test_typed.py)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"": ".package"}
    link = ROOT / ".package" / "atoll"
    assert link.is_symlink() and os.readlink(link) == ".." and link.resolve() == ROOT
