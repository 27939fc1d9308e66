"""Writes this suite's task files from τ²-bench's installed tasks.json (see worlds/tau2.py).

    python evals/tau2_retail/convert.py

The files are committed; tests/evals/test_tau2_suites.py checks that they are what this writes.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent

from atoll.worlds import get_world  # noqa: E402
from atoll.worlds.tau2 import suite_files  # noqa: E402

VAL_TASKS = 30
"""Drawn from τ²'s train split; see suite.yaml for why this many."""


def state_graders(reference: list[dict]) -> list[str]:
    """Every task with a reference compares stored types, as τ²'s hash does (see graders.py)."""
    return ["stored_as_reference"] if reference else []


def main() -> None:
    for name, text in suite_files(get_world("tau2_retail"), "retail", VAL_TASKS, state_graders).items():
        (HERE / "tasks" / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
