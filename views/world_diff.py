"""Terminal rendering of tool results and world diffs (rich), shared by every command."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from atoll.worlds import Diff


def _cell(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return "∅" if value is None else str(value)


def render_value(value: Any, *, title: str | None = None) -> RenderableType:
    """A dict as a two-column table, a list of dicts as rows, anything else as JSON text."""
    if isinstance(value, dict) and value and all(not isinstance(v, list | dict) for v in value.values()):
        table = Table("field", "value", title=title, title_justify="left")
        for key, item in value.items():
            table.add_row(str(key), _cell(item))
        return table
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        columns = list(dict.fromkeys(k for row in value for k in row))
        table = Table(*columns, title=title, title_justify="left")
        for row in value:
            table.add_row(*(_cell(row.get(c)) for c in columns))
        return table
    body = Text(json.dumps(value, indent=2, ensure_ascii=False, default=str))
    return Group(Text(title, style="bold"), body) if title else body


def render_diff(diff: Diff, *, title: str = "World diff") -> RenderableType:
    """One table: every inserted, updated and deleted row, marked + ~ −, per table."""
    if diff.is_empty:
        return Text(f"{title}: no changes", style="dim")
    table = Table("", "table", "key", "change", title=title, title_justify="left")
    for name, changes in diff.tables.items():
        for row in changes.inserted:
            table.add_row(Text("+", style="green"), name, "", _cell(row))
        for update in changes.updated:
            change = ", ".join(
                f"{c}: {_cell(update.before[c])} → {_cell(update.after[c])}" for c in update.after
            )
            table.add_row(Text("~", style="yellow"), name, _cell(update.key), change)
        for row in changes.deleted:
            table.add_row(Text("−", style="red"), name, "", _cell(row))
    return table
