"""The `optimize` command as a user meets it: help, errors, and the README's command lines."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from atoll.cli import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def commands(group=None, prefix=()):
    group = group or get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


@pytest.mark.parametrize(
    "path,command", list(commands()), ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_every_command_has_help_and_an_example(path, command):
    assert command.help and "Example:" in command.help, (
        f"optimize {' '.join(path)} needs help with an example"
    )


def test_every_command_in_the_readme_exists_and_parses():
    lines = [
        line.split("#")[0].strip()
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.strip().startswith("optimize ") or " && optimize " in line
    ]
    groups = {" ".join(path[:-1]) for path, _ in commands() if len(path) > 1}  # `optimize release H` runs one
    known = {" ".join(path) for path, _ in commands()} | groups
    assert lines
    for line in lines:
        words = shlex.split(line.split("&& ")[-1])[1:]
        name = " ".join(words[:2]) if " ".join(words[:2]) in known else words[0]
        assert name in known, f"README runs `optimize {name}`, which does not exist"
        result = runner.invoke(app, [*name.split(), "--help"])
        assert result.exit_code == 0, line


def test_help_starts_without_importing_litellm():
    probe = "import sys; from atoll import cli; cli.app(['--help'], standalone_mode=False); print('litellm' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert output.stdout.strip().splitlines()[-1] == "False"


def test_world_call_prints_the_result_and_the_diff_as_json():
    result = runner.invoke(
        app,
        [
            "world",
            "call",
            "helpdesk",
            "add_order_note",
            "--args",
            '{"order_id": "ORD-1001", "note": "x"}',
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["result"]["ok"] and list(payload["diff"]["tables"]) == ["order_notes"]


@pytest.mark.parametrize(
    "args,says",
    [
        (["world", "call", "helpdesk", "nosuch"], "has no tool 'nosuch'"),
        (["world", "call", "helpdesk", "get_order", "-f", "nofixture"], "has no fixture 'nofixture'"),
        (["world", "call", "atlantis", "get_order"], "no world 'atlantis'"),
        (
            ["world", "call", "helpdesk", "get_order", "--args", "{oops"],
            "--args is not valid JSON",
        ),
        (["try", "harnesses/support_agent"], "give --message TEXT or --task ID"),
        (["try", "harnesses/support_agent", "--task", "no-such-task"], "has no task 'no-such-task'"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_code_2(args, says):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    message = re.sub(r"\s+", " ", result.stderr)
    assert says in message and "Traceback" not in message


def test_world_call_exits_1_on_a_tool_error_and_names_its_type():
    result = runner.invoke(app, ["world", "call", "helpdesk", "get_order", "--args", '{"order_id": "ORD-9"}'])
    assert result.exit_code == 1
    assert "get_order failed: not_found: " in re.sub(r"\s+", " ", result.stderr)
