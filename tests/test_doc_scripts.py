"""Docs that run, continued: every `python some/script.py` a doc names runs as written.

A script is run the way a reader runs it, `python path/script.py`, so Python puts the script's folder
first on the path; a file there named like an installed package (benchmarks/tau2.py once hid the `tau2`
package and the README's τ² command crashed on import) breaks the script before it does anything.
Each documented script with an argument parser runs `--help` here, which imports everything it
imports and stops; a script without one is only checked for such shadowing, as running it is its
whole benchmark.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import DOCS, ROOT

# `python x.py` in a shell block, or in inline code (`python benchmarks/tau2_agreement.py`) in the prose.
SCRIPT = re.compile(r"(?<![\w/.-])python3? (?P<path>[\w./-]+\.py)\b")


def documented_scripts() -> dict[str, str]:
    """Each script path a doc runs, with the first place that names it."""
    found: dict[str, str] = {}
    for doc in DOCS:
        for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
            for match in SCRIPT.finditer(line):
                found.setdefault(match["path"], f"{doc}:{number}")
    return found


SCRIPTS = documented_scripts()
# What a script's imports search besides its own folder: the path of a fresh interpreter, not this one's
# (pytest's adds the repository root and tests/, where `evals` and `worlds` are folders).
FRESH_PATH = json.loads(
    subprocess.run(
        [sys.executable, "-P", "-c", "import json, sys; print(json.dumps(sys.path))"],
        cwd=Path(sys.executable).parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
)


def has_parser(path: Path) -> bool:
    return "ArgumentParser(" in path.read_text()


def test_the_docs_name_scripts_and_the_tau2_proof_is_one_of_them() -> None:
    assert "benchmarks/tau2_agreement.py" in SCRIPTS
    assert sum(has_parser(ROOT / path) for path in SCRIPTS) >= 10


@pytest.mark.parametrize("path", sorted(SCRIPTS), ids=lambda path: path)
def test_a_documented_script_exists_and_shadows_no_module(path: str) -> None:
    script = ROOT / path
    assert script.is_file(), f"{SCRIPTS[path]} runs {path}, which does not exist"
    shadowing = [
        neighbour.name
        for neighbour in sorted(script.parent.glob("*.py"))
        if neighbour.stem in sys.builtin_module_names
        or importlib.machinery.PathFinder.find_spec(neighbour.stem, FRESH_PATH) is not None
    ]
    assert not shadowing, f"{path}: running it puts {shadowing} ahead of installed modules of that name"


@pytest.mark.parametrize(
    "path", sorted(path for path in SCRIPTS if has_parser(ROOT / path)), ids=lambda path: path
)
def test_a_documented_script_starts(path: str) -> None:
    """`python SCRIPT --help` from the repository root, as the docs write it: imports, parses, exits 0."""
    run = subprocess.run(
        [sys.executable, path, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    missing = re.search(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'$", run.stderr.strip())
    if missing and importlib.util.find_spec(missing["name"].partition(".")[0]) is None:
        pytest.skip(f"{path} needs {missing['name']}, an optional dependency not installed here")
    assert run.returncode == 0, f"{SCRIPTS[path]}: python {path} --help:\n{run.stderr[-2000:]}"
    assert "usage:" in run.stdout
