"""A harness as a set of text files: reading a folder, hashing it, and writing it without tearing.

The optimizer mutates harnesses as files and commits them, so the file set (relative path ->
text) is the harness's identity: its hash is over exactly these bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath


class HarnessError(Exception):
    """A harness cannot be loaded or written; the message names the file and field, one problem a line."""


def _ignored(relative: PurePosixPath) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


def read_tree(path: Path) -> dict[str, str]:
    """Every file under `path` (but dotfiles and __pycache__), as relative POSIX path -> text."""
    if not path.is_dir():
        raise HarnessError(f"{path}: not a harness folder (expected a directory with harness.yaml)")
    files = {}
    for file in sorted(path.rglob("*")):
        relative = PurePosixPath(file.relative_to(path).as_posix())
        if _ignored(relative) or not file.is_file():
            continue
        try:
            # Bytes decoded as-is (no newline translation), so the hash is over the bytes on disk.
            files[str(relative)] = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise HarnessError(
                f"{path / relative}: not UTF-8 text; a harness holds text files only"
            ) from None
    return files


def content_hash(files: Mapping[str, str]) -> str:
    """sha256 over the sorted relative paths and their bytes: same files, same hash."""
    digest = hashlib.sha256()
    for name in sorted(files):
        if _ignored(PurePosixPath(name)):
            continue
        data = files[name].encode()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def bad_name(name: str) -> str | None:
    """Why `name` cannot be a harness file name (absolute, `..`, backslashes), or None."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts or "\\" in name:
        return "a harness file name must be a relative path inside the harness folder"
    if str(relative) != name:
        return f"write it as {str(relative)!r} (one form per file, or two names could hold one file)"
    if _ignored(relative):
        return "hidden files and __pycache__ are not harness files (they are left out of its hash)"
    return None


def check_relative(name: str) -> PurePosixPath:
    """`name` as a path inside the harness folder; raises HarnessError for one outside it."""
    problem = bad_name(name)
    if problem:
        raise HarnessError(f"{name}: {problem}")
    return PurePosixPath(name)


def write_tree(files: Mapping[str, str], path: Path) -> None:
    """Replace the harness files in folder `path` by exactly `files`.

    The new folder is written completely beside the old one and renamed into place, so a crash
    leaves the old harness or the new one, never a mix (at worst the old one under a
    `.<name>.old-*` name beside it). Entries that are not harness files — dotfiles and hidden
    folders at any depth (`.gitignore`, `.git`, `demos/.gitkeep`), `__pycache__` — are moved
    over unchanged.
    """
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=parent))
    # mkdtemp makes a private (0700) folder; the harness keeps the old folder's mode, or a usual one.
    os.chmod(staging, path.stat().st_mode & 0o7777 if path.exists() else 0o755)
    moved: list[PurePosixPath] = []
    try:
        for name, text in files.items():
            target = staging / check_relative(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        if not path.exists():
            os.rename(staging, path)
            return
        for relative in _hidden_entries(path):
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            os.rename(path / relative, staging / relative)
            moved.append(relative)
        retired = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
        os.rename(path, retired / path.name)
        os.rename(staging, path)
        moved.clear()
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        for relative in moved:  # failed before the swap: hidden entries go back where they were
            os.rename(staging / relative, path / relative)
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _hidden_entries(path: Path) -> list[PurePosixPath]:
    """Dotfiles, hidden folders and __pycache__ under `path`, outermost only (not descended into)."""
    found = []
    for folder, folders, names in os.walk(path):
        here = PurePosixPath(Path(folder).relative_to(path).as_posix())
        for name in [*folders, *names]:
            if name.startswith(".") or name == "__pycache__":
                found.append(here / name if str(here) != "." else PurePosixPath(name))
        folders[:] = [f for f in folders if not (f.startswith(".") or f == "__pycache__")]
    return found
