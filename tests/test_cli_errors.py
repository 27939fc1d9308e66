"""Bad input on the command line: one clear line, exit code 2 (3 when the run itself broke), never a traceback."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import SuiteError, load_suite

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def one_line(result) -> str:
    return re.sub(r"\s+", " ", result.stderr)


@pytest.fixture
def latin1_suite(tmp_path: Path) -> Path:
    """The shipped suite with one task file saved in Latin-1 (a common editor accident)."""
    suite = tmp_path / "helpdesk"
    shutil.copytree(ROOT / "evals" / "helpdesk", suite)
    task_file = suite / "tasks" / "addresses.yaml"
    task_file.write_bytes(task_file.read_bytes() + "# café\n".encode("latin-1"))
    return suite


def test_a_task_file_that_is_not_utf8_is_a_suite_error_naming_it(latin1_suite: Path) -> None:
    with pytest.raises(SuiteError, match=r"addresses\.yaml: not UTF-8 text \(byte 0xe9"):
        load_suite(latin1_suite)


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "harnesses/support_agent", "--split", "val"],
        ["try", "harnesses/support_agent", "--task", "status-delivered"],
    ],
)
def test_a_non_utf8_suite_stops_eval_and_try_with_one_line_and_exit_2(latin1_suite: Path, args) -> None:
    result = runner.invoke(app, [*args, "--suite", str(latin1_suite)])
    assert result.exit_code == 2, result.output
    assert "addresses.yaml: not UTF-8 text" in one_line(result)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args,says",
    [
        (["run", "harnesses/support_agent", "--concurrency", "0"], "--concurrency: Input should be greater"),
        (["run", "harnesses/support_agent", "--max-cost", "-1"], "--max-cost: Input should be greater"),
        (
            ["run", "harnesses/support_agent", "--objective", "speed"],
            "--objective: Input should be 'quality'",
        ),
        (["run", "harnesses/support_agent", "--min-reduction", "2"], "--min-reduction: Input should be"),
        (
            ["run", "harnesses/support_agent", "--min-effect", "7"],
            "--min-effect: Input should be less than 1",
        ),
        (["gate", "harnesses/support_agent", "--alpha", "2"], "--alpha: Input should be less than 1"),
    ],
)
def test_an_invalid_option_is_named_in_one_line_without_a_pydantic_url(args, says) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert says in one_line(result)
    assert "pydantic" not in result.stderr and "validation error" not in result.stderr


def test_serve_refuses_a_public_bind_without_a_token_before_announcing_itself() -> None:
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "serving" not in result.stderr and "--token" in one_line(result)


# -- one error hierarchy ----------------------------------------------------------------------------


def public_errors() -> list[type[BaseException]]:
    """Every exception class the packages export."""
    from atoll import evals, harnesses, optimizer, worlds
    from atoll.harnesses import models

    found = []
    for package in (worlds, evals, harnesses, models, optimizer):
        for name in package.__all__:
            value = getattr(package, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append(value)
    return found


def test_every_exported_error_a_person_acts_on_is_an_atoll_error_with_an_exit_code() -> None:
    from atoll.harnesses.models import ScriptExhausted
    from atoll.worlds import AtollError, ToolError

    for_the_agent_or_tests = {ToolError, ScriptExhausted}  # read by the agent, or a bug in a test's script
    errors = [e for e in public_errors() if e not in for_the_agent_or_tests]
    assert len(errors) >= 15
    assert [e.__name__ for e in errors if not issubclass(e, AtollError)] == []
    assert {e.__name__: e.exit_code for e in errors if e.exit_code not in (2, 3)} == {}


@pytest.mark.parametrize(
    "patch,args",
    [
        ("atoll.harnesses.try_episode", ["try", "harnesses/support_agent", "-m", "Where is ORD-1042?"]),
        ("atoll.evals.evaluate", ["eval", "harnesses/support_agent", "--split", "val"]),
    ],
)
def test_a_run_that_broke_exits_3_and_bad_configuration_exits_2_in_one_line(
    monkeypatch: pytest.MonkeyPatch, patch: str, args: list[str]
) -> None:
    import importlib

    from atoll.harnesses.models import MissingCredentials, ModelUnavailable

    module, name = patch.rsplit(".", 1)
    for error, code in ((ModelUnavailable("the provider stayed down"), 3), (MissingCredentials("no key"), 2)):

        def broken(*_args, error=error, **_kwargs):
            raise error

        monkeypatch.setattr(importlib.import_module(module), name, broken)
        result = runner.invoke(app, args)
        assert result.exit_code == code, result.output
        assert one_line(result).strip() == f"error: {error}"
