"""Harness diffs people can read: prompt text word by word, YAML key by key, the rest line by line.

A line diff of a reworded prompt marks whole paragraphs changed; a word diff shows the three words
that did. A line diff of harness.yaml shows indentation; a structured one says
`agents.triage.demos: + triage_refund`. Both come from difflib and yaml, nothing else.

Colour alone marks a changed word, and a CI log or a file has none: where the console shows no
colour (not a terminal, NO_COLOR, TERM=dumb), word changes are spelled `[-old-]{+new+}` as in
git's `--word-diff=plain`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import yaml
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

WORD_DIFF_SUFFIXES = (".md", ".j2", ".jinja", ".txt")
YAML_SUFFIXES = (".yaml", ".yml")
CONTEXT_LINES = 2
INSERTED, DELETED = "green", "red strike"
DELETE_MARKS, INSERT_MARKS = ("[-", "-]"), ("{+", "+}")  # git's --word-diff=plain
_TOKENS = re.compile(r"\n|[^\S\n]+|\w+|[^\w\s]")


# -- words ----------------------------------------------------------------------------------------


def word_diff(before: str, after: str, *, context: int | None = CONTEXT_LINES, marked: bool = False) -> Text:
    """`after` with deleted words struck through in red and inserted ones in green.

    Unchanged stretches longer than a few lines are cut to `context` lines around each change
    (None keeps everything), so one reworded sentence in a long prompt stays one screen. `marked`
    also spells each change as `[-old-]{+new+}`, readable where colour is lost (a log, a file).
    """
    segments = _segments(before, after)
    text = Text()
    for index, (op, chunk) in enumerate(segments):
        if op == "equal":
            first, last = index == 0, index == len(segments) - 1
            text.append(_elide(chunk, context, first=first, last=last))
        elif op == "delete":
            text.append(_marked(chunk, DELETE_MARKS, marked), style=DELETED)
        else:
            text.append(_marked(chunk, INSERT_MARKS, marked), style=INSERTED)
    return text


def _segments(before: str, after: str) -> list[list[str]]:
    """[op, text] runs (equal, delete, insert) turning `before` into `after`. A word inserted or deleted
    between unchanged text is slid past the space in front of it, so it reads `Be {+very +}kind`
    rather than `Be{+ very+} kind`: the same two texts, split at the word."""
    a, b = _TOKENS.findall(before), _TOKENS.findall(after)
    segments: list[list[str]] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(["equal", "".join(a[a0:a1])])
        if op in ("delete", "replace"):
            segments.append(["delete", "".join(a[a0:a1])])
        if op in ("insert", "replace"):
            segments.append(["insert", "".join(b[b0:b1])])
    for previous, change, following in zip(segments, segments[1:], segments[2:], strict=False):
        if previous[0] == following[0] == "equal" != change[0]:
            space = change[1][: len(change[1]) - len(change[1].lstrip())]
            if space and following[1].startswith(space):
                previous[1] += space
                change[1] = change[1][len(space) :] + space
                following[1] = following[1][len(space) :]
    return segments


def _marked(chunk: str, marks: tuple[str, str], marked: bool) -> str:
    """The chunk inside `marks` when `marked`, whitespace and all, so both texts can be read back."""
    return f"{marks[0]}{chunk}{marks[1]}" if marked else chunk


def _elide(chunk: str, context: int | None, *, first: bool, last: bool) -> Text:
    lines = chunk.split("\n")
    keep = (context or 0) + 1  # the partial line next to a change, then `context` whole lines
    if context is None or (first and last) or len(lines) <= 2 * keep + 1:
        return Text(chunk)
    head = [] if first else lines[:keep]
    tail = [] if last else lines[-keep:]
    hidden = len(lines) - len(head) - len(tail)
    marker = Text(f"⋯ {hidden} unchanged line{'s' if hidden != 1 else ''} ⋯", style="dim")
    parts = [Text("\n".join(head) + "\n") if head else Text(), marker]
    if tail:
        parts.append(Text("\n" + "\n".join(tail)))
    elif not last:
        parts.append(Text("\n"))
    return Text.assemble(*parts)


def shows_no_colour(console: Console) -> bool:
    """Whether `console` prints without colour, as rich decided when it was made: not a terminal
    (piped to a file or a CI log), NO_COLOR set, or a dumb terminal."""
    return console.no_color or console.color_system is None


@dataclass(frozen=True)
class WordDiff:
    """A word diff that chooses its form when printed: coloured on a colour console, with
    `[-old-]{+new+}` markers on one without, so the same view reads right in both."""

    before: str
    after: str
    context: int | None = CONTEXT_LINES

    def text(self, console: Console) -> Text:
        return word_diff(self.before, self.after, context=self.context, marked=shows_no_colour(console))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(console)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text(console))


# -- YAML -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YamlChange:
    """One difference between two YAML documents, at a dotted path like `agents.triage.demos`."""

    path: str
    kind: str  # added, removed, changed
    before: Any = None
    after: Any = None


def yaml_changes(before: str, after: str) -> list[YamlChange] | None:
    """The structural differences, or None when either side is not valid YAML."""
    try:
        a, b = yaml.safe_load(before), yaml.safe_load(after)
    except yaml.YAMLError:
        return None
    changes: list[YamlChange] = []
    _walk(a, b, "", changes)
    return changes


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _walk(a: Any, b: Any, path: str, out: list[YamlChange]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(key for key in b if key not in a)]:
            child = f"{path}.{key}" if path else str(key)
            if key not in b:
                out.append(YamlChange(child, "removed", before=a[key]))
            elif key not in a:
                out.append(YamlChange(child, "added", after=b[key]))
            else:
                _walk(a[key], b[key], child, out)
    elif isinstance(a, list) and isinstance(b, list) and not all(map(_scalar, a + b)):
        for i in range(max(len(a), len(b))):
            child = f"{path}[{i}]"
            if i >= len(b):
                out.append(YamlChange(child, "removed", before=a[i]))
            elif i >= len(a):
                out.append(YamlChange(child, "added", after=b[i]))
            else:
                _walk(a[i], b[i], child, out)
    elif a != b:
        out.append(YamlChange(path or "(document)", "changed", before=a, after=b))


def _show(value: Any) -> str:
    if _scalar(value):
        return str(value)
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()


def _change_cell(change: YamlChange) -> RenderableType:
    if change.kind == "added":
        return Text(_show(change.after), style=INSERTED)
    if change.kind == "removed":
        return Text(_show(change.before), style=DELETED)
    a, b = change.before, change.after
    if isinstance(a, list) and isinstance(b, list):  # lists of scalars: which items came and went
        removed = [item for item in a if item not in b]
        added = [item for item in b if item not in a]
        if not removed and not added:
            return Text(f"reordered: {_show(a)} → {_show(b)}")
        return Text.assemble(
            *((f"− {_show(item)} ", DELETED) for item in removed),
            *((f"+ {_show(item)} ", INSERTED) for item in added),
        )
    if isinstance(a, str) and isinstance(b, str) and (len(a) + len(b) > 60 or "\n" in a + b):
        return WordDiff(a, b, context=None)
    return Text.assemble((_show(a), DELETED), " → ", (_show(b), INSERTED))


def render_yaml_changes(changes: list[YamlChange]) -> RenderableType:
    table = Table("path", "change", show_edge=False, expand=False)
    for change in changes:
        marker = {"added": ("+ ", "green"), "removed": ("− ", "red"), "changed": ("~ ", "yellow")}[
            change.kind
        ]
        table.add_row(Text.assemble(marker, change.path), _change_cell(change))
    return table


# -- files ----------------------------------------------------------------------------------------


def file_diff(name: str, before: str, after: str) -> RenderableType:
    """The clearest view of one changed file, chosen by its kind."""
    if name.endswith(YAML_SUFFIXES):
        changes = yaml_changes(before, after)
        if changes:
            return render_yaml_changes(changes)
        if changes == []:
            return Text("same data; only comments or layout changed", style="dim")
    if name.endswith(WORD_DIFF_SUFFIXES):
        return WordDiff(before, after)
    patch = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=CONTEXT_LINES))
    return Syntax(patch, "diff", word_wrap=True)


def render_harness_diff(
    files_a: dict[str, str], files_b: dict[str, str], *, labels: tuple[str, str] = ("A", "B")
) -> RenderableType:
    """Every file that differs between two harness versions, one panel each; added and removed files
    are listed with their size rather than printed whole."""
    names = sorted(files_a.keys() | files_b.keys())
    changed = [name for name in names if files_a.get(name) != files_b.get(name)]
    title = Text.assemble(("Harness diff ", "bold"), (labels[0], "red"), " → ", (labels[1], "green"))
    if not changed:
        return Group(title, Text("no differences: the same files", style="dim"))
    parts: list[RenderableType] = [title]
    for name in changed:
        if name not in files_a:
            parts.append(Text(f"+ {name} (new file, {len(files_b[name].splitlines())} lines)", style="green"))
        elif name not in files_b:
            parts.append(Text(f"− {name} (removed, {len(files_a[name].splitlines())} lines)", style="red"))
        else:
            parts.append(
                Panel(
                    file_diff(name, files_a[name], files_b[name]), title=name, title_align="left", expand=True
                )
            )
    return Group(*parts)
