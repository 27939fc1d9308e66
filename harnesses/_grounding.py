"""Whether a call's arguments quote what the conversation said: the grounded_args guard and the
`ungrounded_argument` failure pattern read the same test.

A small model fills a field it was not given with a number it makes up, or copies one from a demo:
a support PIN nobody said, the demo's own customer id. Such a call writes a failed identity check, or
acts on the wrong order. The test is deliberately narrow so that it never refuses an honest call: only
text arguments (ids, PINs, codes, dates; never an amount the model computed, which is a number), and
in them only runs of three or more digits, each of which must occur inside a run of digits the agent
was told (by the user, the request handed to it, or a tool result) or its task context holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

_DIGITS = re.compile(r"\d{3,}")
_ANY_DIGITS = re.compile(r"\d+")


def digit_runs(texts: Iterable[str]) -> str:
    """Every run of digits in `texts`, space-separated: what a quoted run must occur inside."""
    return " ".join(run for text in texts for run in _ANY_DIGITS.findall(text))


def ungrounded(arguments: Any, heard: str, path: str = "") -> list[str]:
    """The argument paths (like `support_pin` or `item_ids[0]`) whose text quotes a run of three or more
    digits that occurs nowhere in `heard` (see `digit_runs`)."""
    return [
        where
        for where, text in _texts(arguments, path)
        if any(run not in heard for run in _DIGITS.findall(text))
    ]


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _texts(item, f"{path}[{i}]")
