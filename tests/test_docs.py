"""Docs that run: every Python block in the docs runs here (or says why it cannot), and every
`optimize …` line in their shell blocks parses against the real command line.

A doc example is the first code a reader copies, so a renamed function, a moved import or a
dropped option should fail here, not in the reader's terminal.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import shlex
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command

from atoll.cli import app
from atoll.harnesses.models import NO_NETWORK_ENV

try:  # typer 0.2x builds its commands on its own copy of click, which raises that copy's errors
    from typer._click.exceptions import ClickException
except ImportError:  # older typer: click itself
    from click import ClickException

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(
    {"README.md", "worlds/README.md", "evals/README.md", "runs/README.md"}
    | {"examples/README.md", "benchmarks/ceilings/README.md"}
    | {path.relative_to(ROOT).as_posix() for path in ROOT.glob("docs/*.md")}
    | {path.relative_to(ROOT).as_posix() for path in ROOT.glob("harnesses/**/README.md")}
)
SHELLS = {"bash", "sh", "shell", "console"}
# `<!-- not-run: why -->` on the line before a fence; a marker without a reason is kept, as "".
NOT_RUN = re.compile(r"<!--\s*not-run\b:?\s*(?P<reason>.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """A fenced code block of a doc, and why it is not run if the doc says so."""

    doc: str
    line: int  # the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the marker's reason ("" if it gives none); None when unmarked

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def module(self) -> str | None:
        """`world` for a block headed `# world.py`: the doc shows a file of a package, run as one."""
        match = re.fullmatch(r"# (?:\S+/)?(\w+)\.py", self.code.partition("\n")[0])
        return match[1] if match else None


def parse_blocks(text: str, doc: str) -> list[Block]:
    """The fenced blocks of a markdown text (top-level ``` fences, which is all the docs use)."""
    lines = text.splitlines()
    found: list[Block] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if start is None and line.startswith("```"):
            start = number
        elif start is not None and line.rstrip() == "```":
            marker = NOT_RUN.fullmatch(lines[start - 2].strip()) if start > 1 else None
            info = lines[start - 1][3:].split()
            code = "".join(f"{row}\n" for row in lines[start : number - 1])
            found.append(Block(doc, start, info[0] if info else "", code, marker and marker["reason"]))
            start = None
    assert start is None, f"{doc}:{start}: a fence that never closes"
    return found


def optimize_commands(block: Block) -> Iterator[tuple[int, list[str]]]:
    """Each `optimize` command of a shell block, as (doc line, its arguments after `optimize`).

    Comments and a `$ ` prompt are dropped, and a line is split at shell operators (`&&`, `;`,
    `|`, a redirection), so `pip install … && optimize run …` yields the `optimize run …` part.
    """
    for offset, line in enumerate(block.code.splitlines(), 1):
        lexer = shlex.shlex(line.strip().removeprefix("$ "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for word in [*lexer, ";"]:
            if not set(word) <= set("();<>|&"):
                words.append(word)
                continue
            if words[:1] == ["optimize"]:
                yield block.line + offset, words[1:]
            words = []


def refusal(args: list[str]) -> str | None:
    """Why the real CLI would refuse `optimize ARGS` before running it, else None.

    It parses and runs nothing: subcommands are resolved by click as `main` would, and the leaf's
    `make_context` converts every option and argument. An eager `--help` exits early, which is fine.
    """
    command: Any = get_command(app)  # typer's click or click itself, depending on typer's version
    name, parent = "optimize", None
    try:
        while hasattr(command, "commands") and args and not args[0].startswith("-"):
            parent = command.context_class(command, info_name=name, parent=parent)
            name, command, args = command.resolve_command(parent, args)
        command.make_context(name, list(args), parent=parent)
    except typer.Exit:
        return None
    except ClickException as error:
        return error.format_message()
    return None


BLOCKS = [block for doc in DOCS for block in parse_blocks((ROOT / doc).read_text(), doc)]
PYTHON = [block for block in BLOCKS if block.lang == "python"]
COMMANDS = [
    pytest.param(args, id=f"{block.doc}:{line}")
    for block in BLOCKS
    if block.lang in SHELLS
    for line, args in optimize_commands(block)
]


def test_the_docs_hold_what_these_tests_check() -> None:
    """A parser that finds nothing would pass everything: the README has both kinds of block."""
    readme = {block.lang for block in BLOCKS if block.doc == "README.md"}
    assert {"python", "bash"} <= readme
    assert any(param.id.startswith("README.md:") for param in COMMANDS)
    assert any(block.not_run is None for block in PYTHON)


def test_not_run_markers_stand_before_python_blocks_only() -> None:
    """A marker elsewhere would look like it exempts something from a check, and does not."""
    assert [block.id for block in BLOCKS if block.not_run is not None and block.lang != "python"] == []


@pytest.mark.parametrize("args", COMMANDS)
def test_optimize_line_parses(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # shipped paths such as harnesses/support_agent resolve, as in the docs
    assert refusal(args) is None, f"optimize {shlex.join(args)}: {refusal(args)}"


def test_refusals_are_reported() -> None:
    """The check can fail: an unknown option, command or bad value is refused, a good line is not."""
    assert "--no-such-flag" in (refusal(["run", "harnesses/support_agent", "--no-such-flag"]) or "")
    assert refusal(["world", "lisst"]) is not None
    assert refusal(["eval", "harnesses/support_agent", "-k", "three"]) is not None
    assert refusal(["eval", "harnesses/support_agent", "-k", "3", "--help"]) is None
    assert refusal(["world", "list"]) is None


@pytest.mark.parametrize("block", [b for b in PYTHON if b.not_run is None], ids=lambda b: b.id)
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run it as a reader would: a fresh namespace, a scratch directory and runs database, no network."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "atoll.sqlite"))
    monkeypatch.setenv(NO_NETWORK_ENV, "1")
    if block.module:
        import_as_package(block, tmp_path, monkeypatch)
    else:  # leading newlines make a traceback name the doc's own line numbers
        code = compile("\n" * block.line + block.code, str(ROOT / block.doc), "exec")
        exec(code, {"__name__": "__doc_block__"})


def import_as_package(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks headed `# name.py` are files of one package (`from .world import world`): write the
    doc's files into a fresh package, then import this block's module."""
    package = f"docs_{uuid.uuid4().hex}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").touch()
    for other in PYTHON:
        if other.doc == block.doc and other.module:
            (folder / f"{other.module}.py").write_text(other.code)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module(f"{package}.{block.module}")
    finally:
        for name in [name for name in sys.modules if name.partition(".")[0] == package]:
            del sys.modules[name]


@pytest.mark.parametrize("block", [b for b in PYTHON if b.not_run is not None], ids=lambda b: b.id)
def test_a_block_not_run_says_why_and_uses_the_real_api(block: Block) -> None:
    """It cannot run here, but what it imports from Atoll must exist and its calls must bind."""
    assert block.not_run, f"{block.id}: write why it is not run: <!-- not-run: REASON -->"
    assert api_problems(block) == []


def api_problems(block: Block) -> list[str]:
    """Names the block imports from Atoll that do not exist, and its calls of them that the real
    signatures refuse (argument names and counts; values are not checked)."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # `async with` at top level, as a REPL
    tree = compile(block.code, block.id, "exec", flags=flags)
    problems: list[str] = []
    imported: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.partition(".")[0] != "atoll":
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is None and importlib.util.find_spec(f"{node.module}.{alias.name}"):
                    value = importlib.import_module(
                        f"{node.module}.{alias.name}"
                    )  # `from atoll import evals`
                if value is not None:
                    imported[alias.asname or alias.name] = value
                else:
                    problems.append(
                        f"{block.doc}:{block.line + node.lineno}: {node.module} has no {alias.name}"
                    )
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported):
            continue
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            continue  # *args or **kwargs: nothing to count
        try:
            inspect.signature(imported[node.func.id]).bind(
                *node.args, **{keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
            )
        except TypeError as error:
            problems.append(f"{block.doc}:{block.line + node.lineno}: {node.func.id}(…): {error}")
    return problems


def test_a_marker_without_a_reason_is_caught() -> None:
    """`<!-- not-run -->` alone is read as a marker with an empty reason, which the test above refuses."""
    (block,) = parse_blocks("<!-- not-run -->\n```python\nraise SystemExit\n```\n", "example.md")
    assert block.not_run == ""
    (block,) = parse_blocks("<!-- not-run: needs a key -->\n```python\nx = 1\n```\n", "example.md")
    assert (block.not_run, block.line, block.code) == ("needs a key", 2, "x = 1\n")
