"""Which suite tests a harness: found from the harness's folder, the same from any working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.evals import SuiteError, suite_for
from atoll.harnesses import load_harness

HARNESS = {
    "harness.yaml": "name: mine\nworld: helpdesk\nentry: desk\nagents:\n  desk:\n    prompt: prompts/desk.md.j2\n",
    "tools.yaml": "desk: [get_order]\n",
    "prompts/desk.md.j2": "You help.\n{{ tools }}\n",
}
SUITE = {"suite.yaml": "name: mine\nworld: helpdesk\n"}


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from a folder that has an evals/helpdesk of its own, which must never be the answer."""
    other = write(tmp_path / "elsewhere", {f"evals/helpdesk/{k}": v for k, v in SUITE.items()})
    monkeypatch.chdir(other)
    return other


def test_a_harness_in_a_users_repository_finds_its_evals_folder_from_any_directory(
    tmp_path: Path, elsewhere: Path
) -> None:
    repo = tmp_path / "repo"
    write(repo / "agents" / "mine", HARNESS)
    write(repo / "evals" / "helpdesk", SUITE)
    assert suite_for(load_harness(repo / "agents" / "mine")) == (repo / "evals" / "helpdesk").resolve()


def test_a_suite_named_in_harness_yaml_is_read_relative_to_the_harness(
    tmp_path: Path, elsewhere: Path
) -> None:
    repo = tmp_path / "repo"
    write(repo / "evals" / "helpdesk", SUITE)  # nearer by convention, but the file says otherwise
    write(repo / "suites" / "hard", SUITE)
    write(repo / "h", {**HARNESS, "harness.yaml": HARNESS["harness.yaml"] + "suite: ../suites/hard\n"})
    assert suite_for(load_harness(repo / "h")) == (repo / "suites" / "hard").resolve()


def test_no_suite_found_says_where_it_looked_and_how_to_name_one(tmp_path: Path, elsewhere: Path) -> None:
    write(tmp_path / "lonely" / "h", HARNESS)
    with pytest.raises(
        SuiteError, match=r"no evals/helpdesk/suite.yaml in any folder above .*suite:.*--suite"
    ):
        suite_for(load_harness(tmp_path / "lonely" / "h"))
    write(tmp_path / "typo" / "h", {**HARNESS, "harness.yaml": HARNESS["harness.yaml"] + "suite: ../nope\n"})
    with pytest.raises(SuiteError, match=r"harness.yaml: suite: '../nope' has no suite.yaml"):
        suite_for(load_harness(tmp_path / "typo" / "h"))


def test_the_shipped_harness_finds_the_shipped_suite_from_outside_the_checkout(elsewhere: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    assert suite_for(load_harness(root / "harnesses" / "support_agent")) == root / "evals" / "helpdesk"
