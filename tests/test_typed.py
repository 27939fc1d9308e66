"""Atoll is a typed library: a user's own file, outside the checkout, type-checks against the installed
`atoll` with mypy.

The package ships `py.typed`, and its install (the README's `pip install -e '.[…]'`, or a wheel) puts
`atoll` on the path where static tools look: a plain .pth line to `.package/`, whose `atoll` links to the
repository folder (pyproject.toml), not setuptools' import hook, which mypy and pyright cannot follow.
mypy is a dev dependency: a missing one fails here, loudly, never skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mypy  # a dev dependency: ImportError here is the loud failure the suite wants

ROOT = Path(__file__).resolve().parent.parent

USER_PROGRAM = '''\
"""A user's program on Atoll's public API."""

from atoll.evals import RunStore, evaluate
from atoll.optimizer import OptimizeConfig, optimize
from atoll.worlds import World, get_world


def payments() -> World:
    return get_world("payments")


def tool_names(world: World) -> list[str]:
    return sorted(world.tools)


name: str = payments().name
used = (RunStore, evaluate, OptimizeConfig, optimize)
'''

# Resolved and read: a mistake against the package's own annotations is an error, not an untyped Any.
USER_MISTAKE = """\
from atoll.worlds import get_world

count: int = get_world("payments").name
"""


def mypy_on(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """mypy on `source` as a user's file in a folder of its own, with nothing of the checkout on its path."""
    (tmp_path / "app.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / ".mypy_cache"), "app.py"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_the_package_is_marked_typed() -> None:
    assert (ROOT / "py.typed").is_file() and mypy.__name__ == "mypy"


def test_mypy_resolves_the_public_api_from_a_file_outside_the_checkout(tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT)
    checked = mypy_on(tmp_path, USER_PROGRAM)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    mistake = mypy_on(tmp_path, USER_MISTAKE)
    assert mistake.returncode == 1, mistake.stdout + mistake.stderr
    assert 'expression has type "str", variable has type "int"' in mistake.stdout, mistake.stdout
