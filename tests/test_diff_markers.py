"""`optimize diff` where colour is lost: piped to a file, a CI log, or under NO_COLOR, a changed word
must still read as changed, so it is spelled `[-old-]{+new+}` as git's `--word-diff=plain` does."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from atoll.cli import app
from atoll.views.harness_diff import render_harness_diff, word_diff

PROMPT = "prompts/desk.md.j2"
BEFORE = {"harness.yaml": "name: desk\n", PROMPT: "Be kind to users.\n"}
AFTER = {"harness.yaml": "name: desk\n", PROMPT: "Be very kind to customers.\n"}


def printed(console: Console) -> str:
    console.print(render_harness_diff(BEFORE, AFTER))
    return console.file.getvalue()


def test_piped_to_a_file_the_changed_words_carry_git_word_diff_markers():
    text = printed(Console(file=io.StringIO(), width=80))

    assert "Be {+very +}kind to [-users-]{+customers+}." in text


def test_no_color_marks_the_changed_words_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NO_COLOR", "1")
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor")

    text = printed(console)

    assert "Be {+very +}kind to [-users-]{+customers+}." in re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "\x1b[32m" not in text and "31m" not in text  # still a terminal (bold, strike), but no colour


def test_a_colour_terminal_shows_colour_and_no_markers(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor")

    text = printed(console)

    assert "{+" not in text and "[-" not in text
    assert "\x1b[32mvery " in text and "\x1b[9;31musers" in text  # green inserted, red struck deleted


words = st.lists(st.sampled_from(["the", "agent", "refund", "policy", " ", "\n", ",", "."]), max_size=40)


def side(marked: str, keep: str, drop: str) -> str:
    """One text read back from a marked diff: the other side's changes dropped, this side's unwrapped."""
    return re.sub(keep, r"\1", re.sub(drop, "", marked, flags=re.S), flags=re.S)


DELETED, INSERTED = r"\[-(.*?)-\]", r"\{\+(.*?)\+\}"


@given(words, words)
def test_the_markers_hold_both_texts_exactly(before: list[str], after: list[str]):
    a, b = "".join(before), "".join(after)
    marked = word_diff(a, b, context=None, marked=True).plain

    assert side(marked, keep=DELETED, drop=INSERTED) == a
    assert side(marked, keep=INSERTED, drop=DELETED) == b


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_optimize_diff_of_a_reworded_prompt_shows_the_markers_in_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    harness = tmp_path / "h"
    for name, text in {
        "harness.yaml": "name: desk\nworld: helpdesk\nentry: desk\nagents:\n  desk:\n    prompt: " + PROMPT,
        "tools.yaml": "desk: [add_order_note]\n",
        PROMPT: "Be kind to users.\n",
    }.items():
        (harness / name).parent.mkdir(parents=True, exist_ok=True)
        (harness / name).write_text(text)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "init")
    (harness / PROMPT).write_text("Be very kind to customers.\n")
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))

    result = CliRunner().invoke(app, ["diff", "HEAD", "worktree", "--harness", str(harness)])

    assert result.exit_code == 0, result.output
    assert "Be {+very +}kind to [-users-]{+customers+}." in result.stdout
    assert "\x1b[" not in result.stdout
