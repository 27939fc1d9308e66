"""A new user's first hour, from an empty folder outside this repository: scaffold a world, a suite and a
harness, check the suite, see the prompt, then eval, gate and optimize, every command by name through
atoll.toml, with no flag pointing back into Atoll."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import _batch
from atoll.harnesses import _try
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import _gate, _loop
from atoll.worlds import _find

runner = CliRunner()
REQUEST = re.compile(r"Please (?P<words>[a-z ]+?)(?: for (?P<arguments>.*))?\.$")


def careful_agent(request: Any) -> str | dict:
    """Does what a scaffolded task asks ("Please set ticket status for ticket_id TKT-0001, status
    pending."), then says what it found: the tool's name is in the words, its arguments after `for`."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return f"Here is what I found: {last['content']}"
    asked = REQUEST.match(last["content"])
    tools = {tool["function"]["name"] for tool in request.tools or []}
    name = asked and asked["words"].replace(" ", "_")
    if name not in tools:
        return "Sorry, I can't do that."
    pairs = (pair.split(" ", 1) for pair in (asked["arguments"] or "").split(", ") if pair)
    return {"tool_calls": [{"name": name, "arguments": dict(pairs)}]}


def optimize(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_new_modules: None) -> Path:
    """An empty git repository outside Atoll, as the current directory; the model is scripted."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ATOLL_MODEL", raising=False)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setattr(_find, "_loaded", dict(_find._loaded))
    monkeypatch.setattr(sys, "path", list(sys.path))
    model = ScriptedModel(fn=careful_agent)
    for module in (_batch, _try, _gate, _loop):
        monkeypatch.setattr(module, "get_model", lambda *_args, **_kwargs: model)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "new@example.invalid")
    git(tmp_path, "config", "user.name", "New User")
    return tmp_path


def test_from_an_empty_folder_to_a_checked_suite_an_eval_a_gate_and_a_run(project: Path) -> None:
    assert optimize("new", "world", "mydesk").exit_code == 0
    assert optimize("new", "suite", "mydesk").exit_code == 0
    assert optimize("new", "harness", "mydesk_agent", "--world", "mydesk").exit_code == 0
    assert (project / "atoll.toml").read_text().splitlines()[1:] == [
        'worlds = ["worlds"]',
        'harness = "harnesses/mydesk_agent"',
    ]

    shown = optimize("world", "show", "mydesk")
    assert shown.exit_code == 0 and "set_ticket_status" in shown.output

    check = optimize("suite", "check")  # the project's harness names the world, the world the suite
    assert check.exit_code == 0, check.output
    assert "do-nothing agent" in check.output and "can never accept" in " ".join(check.output.split())

    prompt = optimize("try", "--show-prompt")
    assert prompt.exit_code == 0 and "You work at the mydesk desk." in prompt.output

    tried = optimize("try", "-m", "Please get ticket for ticket_id TKT-0002.")
    assert tried.exit_code == 0, tried.output
    assert "get_ticket" in tried.output and "starter" in tried.output  # the world's default fixture

    evaluated = optimize("eval")
    assert evaluated.exit_code == 0, evaluated.output
    assert "mydesk_agent" in evaluated.output
    assert re.search(r"mean score\s*│\s*1\.000", evaluated.output)  # the careful agent passes every task

    git(project, "add", ".")
    git(project, "commit", "-qm", "scaffold")
    gated = optimize("gate", "--base", "main")
    assert gated.exit_code == 0, gated.output + gated.stderr

    ran = optimize("run", "--max-proposals", "1")
    assert ran.exit_code == 0, ran.output + ran.stderr
    assert "can never accept" in " ".join(ran.stderr.split())


def test_scaffolds_refuse_to_overwrite_and_to_take_a_name_python_cannot_import(project: Path) -> None:
    assert optimize("new", "world", "mydesk").exit_code == 0
    again = optimize("new", "world", "mydesk")
    assert again.exit_code == 2 and "already exists" in again.stderr
    bad = optimize("new", "world", "My-Desk")
    assert bad.exit_code == 2 and "lower-case Python name" in bad.stderr
    assert not (project / "worlds" / "My-Desk").exists()


def test_scaffolds_follow_the_folders_atoll_toml_already_names(project: Path) -> None:
    (project / "atoll.toml").write_text('worlds = ["src/worlds"]\nsuites = "checks"\n')
    assert optimize("new", "world", "mydesk").exit_code == 0
    assert optimize("new", "suite", "mydesk").exit_code == 0
    assert optimize("new", "harness", "mydesk_agent", "-w", "mydesk").exit_code == 0

    assert (project / "src" / "worlds" / "mydesk" / "world.py").is_file()
    assert (project / "checks" / "mydesk" / "suite.yaml").is_file()
    check = optimize("suite", "check")
    assert check.exit_code == 0 and "checks/mydesk" in check.output
