"""`optimize gate` on a harness copied out of its repository: one line that says why there is nothing
to compare with and what to pass instead, exit 2, never git's raw `fatal:`."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from notes_desk import MAGIC, agent, make_workspace
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer._gate import GateConfig, run_gate
from atoll.optimizer._gate_result import save_baseline


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The harness and suite of a workspace, copied to a folder git will not look above."""
    repo = make_workspace(tmp_path / "repo", prompt=f"You keep notes on orders.\n{MAGIC}\n", val=[1, 2])
    copy = tmp_path / "copy"
    shutil.copytree(repo / "h", copy / "h")
    shutil.copytree(repo / "s", copy / "s")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    inside = subprocess.run(["git", "rev-parse"], cwd=copy / "h", capture_output=True, check=False)
    assert inside.returncode != 0, "the copy must be in no git repository"
    return copy


@pytest.mark.parametrize("base", [[], ["--base", "main"]])
def test_the_gate_outside_a_repository_says_to_pass_a_baseline(outside: Path, base: list[str]):
    result = CliRunner().invoke(app, ["gate", str(outside / "h"), "--suite", str(outside / "s"), *base])

    assert result.exit_code == 2
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line == (
        f"error: {outside / 'h'} is not in a git repository, so there is no base ref to compare against; "
        "pass --baseline FILE (a result saved with `optimize gate --save-baseline` in the repository) "
        "or run inside the repository"
    )
    assert "fatal" not in result.output


def test_what_it_advises_works_a_baseline_saved_in_the_repository_gates_the_copy(outside: Path):
    repo, store = outside.parent / "repo", RunStore(outside.parent / "runs.sqlite")
    try:
        saved = asyncio.run(
            run_gate(
                GateConfig(harness=repo / "h", suite=repo / "s"), model=ScriptedModel(fn=agent), store=store
            )
        )
        save_baseline(saved, outside / "baseline.json")
        config = GateConfig(harness=outside / "h", suite=outside / "s", baseline=outside / "baseline.json")
        report = asyncio.run(run_gate(config, model=ScriptedModel(fn=agent), store=store))
    finally:
        store.close()

    assert (report.verdict, report.exit_code) == ("pass", 0)
