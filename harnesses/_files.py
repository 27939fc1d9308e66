"""A harness as a set of text files: reading a folder, hashing it, and writing it without tearing.

The optimizer mutates harnesses as files and commits them, so the file set (relative path ->
text) is the harness's identity: its hash is over exactly these bytes.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from atoll.worlds import AtollError

_KEY = re.compile(r"[a-z0-9_]+")  # what tempfile.mkdtemp puts after its prefix


class HarnessError(AtollError):
    """A harness cannot be loaded or written; the message names the file and field, one problem a line."""


def _ignored(relative: PurePosixPath) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


def read_tree(path: Path) -> dict[str, str]:
    """Every file under `path` (but dotfiles and __pycache__), as relative POSIX path -> text.

    First finishes or undoes a write that a crash cut short (see `recover`). A symbolic link is
    refused: the optimizer rewrites harness files, which would replace the link by a copy (or, had it
    written through it, change a file outside the folder).
    """
    recover(path)
    if not path.is_dir():
        raise HarnessError(f"{path}: not a harness folder (expected a directory with harness.yaml)")
    files = {}
    for file in sorted(path.rglob("*")):
        relative = PurePosixPath(file.relative_to(path).as_posix())
        if _ignored(relative):
            continue
        if file.is_symlink():
            raise HarnessError(
                f"{path / relative}: a symbolic link; a harness holds regular files only (copy the file in)"
            )
        if not file.is_file():
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

    The new folder is written completely as `.<name>.new-<key>` beside the old one, the old one is
    retired to `.<name>.old-<key>/<name>` and the new one renamed into place, so a crash leaves the
    old harness or the new one, never a mix; the next load finishes the job (see `recover`).
    Entries that are not harness files — dotfiles and hidden folders at any depth (`.gitignore`,
    `.git`, `demos/.gitkeep`), `__pycache__` — are moved over unchanged.
    """
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    recover(path, writing=True)
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
        # The same key as the staging folder: the pair on disk proves the new folder was complete.
        retired = parent / f".{path.name}.old-{staging.name.removeprefix(f'.{path.name}.new-')}"
        os.mkdir(retired)
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


def recover(path: Path, *, writing: bool = False) -> None:
    """Finish or undo a `write_tree` of `path` that a crash cut short, and remove what it left.

    With the folder missing, a staging folder whose retired pair exists (same key) was complete
    when the old folder was retired, so it is renamed into place; without a pair, a single retired
    folder comes back; anything else is ambiguous and refused, naming the folders. Every leftover
    goes once no write can be under way (the folder was missing, or the caller is the writer);
    else only retired folders without a staging pair, whose write finished.
    """
    # Retired folders are listed first: a write that retires its old folder meanwhile can then only
    # make this refuse, never bring the old folder back over the new one.
    retired, staged = _leftovers(path, "old"), _leftovers(path, "new")
    missing = not os.path.lexists(path)
    if missing and (staged or retired):
        pairs = sorted(staged.keys() & retired.keys())
        olds = [folder / path.name for folder in retired.values() if (folder / path.name).is_dir()]
        if len(pairs) == 1:
            os.rename(staged.pop(pairs[0]), path)
        elif not pairs and len(olds) == 1:
            os.rename(olds[0], path)
        else:
            names = ", ".join(folder.name for folder in [*staged.values(), *retired.values()])
            raise HarnessError(
                f"{path}: missing, and interrupted writes left {names} beside it; move the version "
                f"to keep back to {path.name} (a .old-* folder holds it under {path.name}/)"
            )
    dead = missing or writing
    for key, folder in retired.items():
        if dead or key not in staged:
            shutil.rmtree(folder, ignore_errors=True)
    if dead:
        for folder in staged.values():
            _reclaim(folder, path)


def _leftovers(path: Path, kind: str) -> dict[str, Path]:
    """The `.<name>.<kind>-<key>` folders `write_tree` left beside `path`, by key."""
    prefix = f".{path.name}.{kind}-"
    return {
        folder.name.removeprefix(prefix): folder
        for folder in sorted(path.parent.glob(glob.escape(prefix) + "*"))
        if _KEY.fullmatch(folder.name.removeprefix(prefix)) and folder.is_dir() and not folder.is_symlink()
    }


def _reclaim(staging: Path, path: Path) -> None:
    """Give `path` back the hidden entries a dead write had moved into `staging`, then remove it."""
    for relative in _hidden_entries(staging):
        if path.is_dir() and not os.path.lexists(path / relative):
            (path / relative).parent.mkdir(parents=True, exist_ok=True)
            os.rename(staging / relative, path / relative)
    shutil.rmtree(staging, ignore_errors=True)
