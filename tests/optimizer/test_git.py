"""Harness versions in git: one commit per accepted variant, touching only the harness folder."""

import subprocess
from pathlib import Path

import pytest

from atoll.optimizer.git import GitError, commit_folder, dirty_files, files_at, log_of


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    git(tmp_path, "config", "user.name", "T")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "prompt.md").write_text("v1\n")
    (tmp_path / "other.txt").write_text("x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def test_a_commit_on_the_current_branch_touches_only_the_harness_folder(repo: Path):
    (repo / "h" / "prompt.md").write_text("v2\n")
    (repo / "other.txt").write_text("user's unrelated edit\n")
    sha = commit_folder(repo / "h", "atoll: better prompt")
    assert git(repo, "show", "--name-only", "--format=", sha).split() == ["h/prompt.md"]
    assert dirty_files(repo / "h") == []
    assert "other.txt" in git(repo, "status", "--porcelain")


def test_a_commit_on_another_branch_leaves_the_checkout_alone(repo: Path):
    sha = commit_folder(
        repo / "h",
        "atoll: variant",
        branch="atoll/run-1",
        files={"prompt.md": "v3\n", "demos/a.yaml": "x: 1\n"},
    )
    assert (repo / "h" / "prompt.md").read_text() == "v1\n"
    assert git(repo, "rev-parse", "atoll/run-1").strip() == sha
    assert files_at(repo / "h", "atoll/run-1") == {"prompt.md": "v3\n", "demos/a.yaml": "x: 1\n"}
    assert files_at(repo / "h", "main") == {"prompt.md": "v1\n"}
    commit_folder(repo / "h", "atoll: second", branch="atoll/run-1", files={"prompt.md": "v4\n"})
    assert files_at(repo / "h", "atoll/run-1") == {"prompt.md": "v4\n"}
    assert [m for _, _, m in log_of(repo / "h", grep="atoll:")] == []  # main has none of them
    assert git(repo, "status", "--porcelain") == ""


def test_dirty_files_lists_untracked_and_modified_files(repo: Path):
    (repo / "h" / "new.md").write_text("n\n")
    (repo / "h" / "prompt.md").write_text("changed\n")
    assert sorted(dirty_files(repo / "h")) == ["h/new.md", "h/prompt.md"]


def test_a_folder_outside_any_repository_is_a_clear_error(tmp_path: Path):
    outside = tmp_path / "nowhere"
    outside.mkdir()
    with pytest.raises(GitError, match="not a git repository"):
        dirty_files(outside)


def test_a_symlink_in_a_harness_at_a_ref_is_refused_not_read_as_its_target(repo: Path):
    (repo / "h" / "skill.md").symlink_to("../other.txt")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "link")
    with pytest.raises(GitError, match=r"h/skill.md at main: a symbolic link"):
        files_at(repo / "h", "main")
