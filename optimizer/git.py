"""Git plumbing for harness versions: every accepted variant is one commit of the harness folder.

Public (`from atoll.optimizer import git`) because the service releases and tags those commits too.

Commits on the checked-out branch go through the ordinary index so the working tree and
`git status` stay consistent. Commits on another branch (`--branch`) go through a private
index and `commit-tree`, so the user's checkout, index and other files are never touched.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

from atoll.worlds import AtollError

__all__ = [
    "GitError",
    "NotARepository",
    "check_identity",
    "commit_folder",
    "current_branch",
    "dirty_files",
    "export_folder",
    "files_at",
    "find_commit",
    "harness_files_at",
    "is_hidden",
    "log_of",
    "relative_to_root",
    "repo_root",
    "resolve_ref",
    "run",
]


class GitError(AtollError):
    """A git command failed; the message carries git's own words."""


class NotARepository(GitError):
    """The path is in no git work tree: there is no history to read or commit to."""


def run(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: bytes | None = None) -> str:
    """`git ARGS` in `cwd`, its output as text; GitError with git's own words when it fails."""
    return _git_bytes(*args, cwd=cwd, env=env, stdin=stdin).decode(errors="replace")


def _git_bytes(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: bytes | None = None) -> bytes:
    if not cwd.is_dir():
        raise GitError(f"{cwd}: no such folder")
    completed = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip() or completed.stdout.decode(
            errors="replace"
        )
        raise GitError(f"git {' '.join(args[:2])}: {message}")
    return completed.stdout


def repo_root(path: Path) -> Path:
    """The top of the git work tree holding `path`; GitError when it is not in one."""
    if not path.exists():
        raise GitError(f"{path}: no such file or folder")
    start = path if path.is_dir() else path.parent
    try:  # git's messages in English (LC_ALL=C), so this one is told from the others
        return Path(run("rev-parse", "--show-toplevel", cwd=start, env={"LC_ALL": "C"}).strip())
    except GitError as error:
        if "not a git repository" in str(error):
            raise NotARepository(f"{path}: not a git repository (nor is any folder above it)") from None
        raise


def relative_to_root(path: Path) -> tuple[Path, str]:
    """(repository root, `path` relative to it, in git's slash form)."""
    root = repo_root(path)
    return root, path.resolve().relative_to(root.resolve()).as_posix()


def dirty_files(path: Path) -> list[str]:
    """Files under `path` with uncommitted changes, untracked ones included."""
    root, relative = relative_to_root(path)
    status = run("status", "--porcelain", "--untracked-files=all", "--", relative, cwd=root)
    return [line[3:] for line in status.splitlines() if line.strip()]


def current_branch(path: Path) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    root = repo_root(path)
    name = run("rev-parse", "--abbrev-ref", "HEAD", cwd=root).strip()
    return None if name == "HEAD" else name


def resolve_ref(path: Path, ref: str) -> str:
    root = repo_root(path)
    return run("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=root).strip()


def files_at(path: Path, ref: str) -> dict[str, str]:
    """The text files under `path` as they were at `ref`, keyed by path relative to `path`."""
    root, relative = relative_to_root(path)
    listing = run("ls-tree", "-r", "-z", ref, "--", relative, cwd=root)
    files = {}
    for entry in filter(None, listing.split("\0")):
        meta, _, name = entry.partition("\t")  # "<mode> <type> <sha>\t<path>"
        if meta.split(" ")[0] == "120000":  # as a harness folder on disk refuses them (harnesses/_files.py)
            raise GitError(f"{name} at {ref}: a symbolic link; a harness holds regular files only")
        files[name[len(relative) + 1 :]] = run("show", f"{ref}:{name}", cwd=root)
    return files


def export_folder(path: Path, ref: str, target: Path) -> Path | None:
    """Copy the folder `path` as it was at `ref` into `target`, byte for byte; return where the copy is,
    or None when the folder did not exist at `ref`. Reads the object store only: checkout and index stay."""
    root, relative = relative_to_root(path)
    if not run("ls-tree", "--name-only", ref, "--", relative, cwd=root).strip():
        return None
    archive = _git_bytes("archive", "--format=tar", ref, "--", relative, cwd=root)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / relative


def commit_folder(
    path: Path, message: str, *, branch: str | None = None, files: dict[str, str] | None = None
) -> str:
    """Commit the folder `path` as one commit that touches nothing else; return its sha.

    Without `branch` (or with the checked-out one) the folder's working-tree files are
    committed on HEAD. With another `branch`, `files` (relative to `path`) replace the
    folder's files (its dotfiles stay) in a commit on that branch, created from HEAD if
    it does not exist.
    """
    root, relative = relative_to_root(path)
    if branch is None or branch == current_branch(path):
        run("add", "--all", "--", relative, cwd=root)
        run("commit", "--quiet", "--no-verify", "-m", message, "--", relative, cwd=root)
        return run("rev-parse", "HEAD", cwd=root).strip()
    if files is None:
        raise ValueError("committing to another branch needs the folder's files")
    ref = f"refs/heads/{branch}"
    try:
        parent = expected = run("rev-parse", "--verify", ref, cwd=root).strip()
    except GitError:  # a new branch starts from HEAD; update-ref then checks it still does not exist
        parent, expected = run("rev-parse", "HEAD", cwd=root).strip(), "0" * 40
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        run("read-tree", parent, cwd=root, env=env)
        # Replace the harness's own files; dotfiles (.gitignore, .gitkeep) are not the harness's to drop.
        tracked = run("ls-files", "-z", "--", relative, cwd=root, env=env).split("\0")
        owned = [name for name in tracked if name and not is_hidden(name[len(relative) + 1 :])]
        if owned:
            run("rm", "--cached", "--force", "--quiet", "--", *owned, cwd=root, env=env)
        for name, text in sorted(files.items()):
            blob = run("hash-object", "-w", "--stdin", cwd=root, stdin=text.encode()).strip()
            run("update-index", "--add", "--cacheinfo", f"100644,{blob},{relative}/{name}", cwd=root, env=env)
        tree = run("write-tree", cwd=root, env=env).strip()
    commit = run("commit-tree", tree, "-p", parent, "-m", message, cwd=root).strip()
    run("update-ref", ref, commit, expected, cwd=root)
    return commit


def harness_files_at(path: Path, sha: str) -> dict[str, str]:
    """The harness folder's files at a commit, less those `load_harness` skips (dotfiles, __pycache__),
    so a `.gitkeep` does not show up as a difference from the working tree."""
    return {name: text for name, text in files_at(path, sha).items() if not is_hidden(name)}


def is_hidden(relative_name: str) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative_name.split("/"))


def log_of(path: Path, *, limit: int = 100, grep: str | None = None) -> list[tuple[str, str, str]]:
    """(sha, date, full message) of the commits that touched `path`, newest first."""
    root, relative = relative_to_root(path)
    args = ["log", f"-n{limit}", "--format=%H%x1f%cI%x1f%B%x1e"]
    if grep:
        args.append(f"--grep={grep}")
    raw = run(*args, "--", relative, cwd=root)
    entries = []
    for record in raw.split("\x1e"):
        if record.strip():
            sha, date, message = record.strip("\n").split("\x1f", 2)
            entries.append((sha, date, message.strip()))
    return entries


def find_commit(path: Path, texts: list[str], *, ref: str = "HEAD", depth: int = 50) -> str | None:
    """The newest of the last `depth` commits on `ref` touching `path` whose message holds every one
    of `texts`."""
    root, relative = relative_to_root(path)
    greps = [f"--grep={text}" for text in texts]
    try:
        found = run(
            "log",
            ref,
            f"-n{depth}",
            "--fixed-strings",
            "--all-match",
            *greps,
            "--format=%H",
            "--",
            relative,
            cwd=root,
        )
    except GitError:  # an unborn branch: nothing committed there yet
        return None
    return found.split()[0] if found.strip() else None


def check_identity(path: Path) -> None:
    """Raise GitError when git has no author identity here (commits would fail later, mid-run)."""
    run("var", "GIT_AUTHOR_IDENT", cwd=repo_root(path))
