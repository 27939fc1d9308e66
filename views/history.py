"""`optimize history HARNESS`, shown: the accepted variants with the figures their commits carry."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from atoll.optimizer import history
from atoll.views.compare import Responsive


def _figure(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def render_history(path: Path, *, limit: int = 50) -> RenderableType:
    """A table of the accepted variants: when, which operator, the gate figures, the run."""
    entries = history(path, limit=limit)
    if not entries:
        return Text(
            f"No accepted variants of {path} on this branch yet (no commits with Atoll trailers).",
            style="dim",
        )
    table = Table(
        "commit", "date", "operator", "gate", "Δ", "lower bound", "p", "tasks", "run", "title",
        title=f"Accepted variants of {path}", title_justify="left",
    )  # fmt: skip
    items: list[RenderableType] = [Text(f"Accepted variants of {path}", style="italic")]
    for entry in entries:
        gate = f"{_figure(entry.before, '.3f')} → {_figure(entry.after, '.3f')}"
        shape = (
            f"{entry.tasks}×{entry.seeds} {entry.split} (+{entry.wins}/−{entry.losses}/={entry.ties})"
            if entry.tasks is not None and entry.wins is not None
            else "–"
        )
        delta = Text(_figure(entry.delta, "+.3f"), style="green")
        table.add_row(
            entry.commit[:10],
            entry.date[:10],
            entry.operator or "–",
            gate,
            delta,
            _figure(entry.lower_bound, "+.3f"),
            _figure(entry.p_value, ".3g"),
            shape,
            entry.run or "–",
            entry.title,
        )
        items.append(
            Text.assemble(
                (entry.commit[:10], "yellow"),
                f" {entry.date[:10]} {entry.operator or '–'} {gate} (",
                delta,
                ")",
            )
        )
        figures = (
            f"lower bound {_figure(entry.lower_bound, '+.3f')} · p={_figure(entry.p_value, '.3g')} · "
            f"{shape} · run {entry.run or '–'}"
        )
        items.append(Padding(Text(figures), (0, 0, 0, 3)))
        items.append(Padding(Text(entry.title, style="dim"), (0, 0, 0, 3)))
    parts: list[RenderableType] = [Responsive(table, Group(*items), min_width=140)]
    first, last = entries[-1], entries[0]
    if first.before is not None and last.after is not None:
        parts.append(
            Text(
                f"{len(entries)} accepted: gate score {first.before:.3f} → {last.after:.3f} along this branch."
            )
        )
    return Group(*parts)
