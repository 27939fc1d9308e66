"""Reading a small model's answer to a fill-in form: `LABEL: value` lines, and a number from a menu.

A 1.5B model asked for two labelled lines writes them in bold, in quotes, after a preamble, with the
label in lower case, or leaves the label out altogether. These readers accept all of that and nothing
looser: what they cannot read is a "no parse", which the caller records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_DECORATION = " \t*_`#-•\"'“”"
_PLACEHOLDER = re.compile(r"^<[^>]*>$")


def _clean(value: str) -> str:
    value = value.strip().strip(_DECORATION).strip()
    return "" if _PLACEHOLDER.match(value) else value.strip("<>[]").strip()


def read_form(text: str, labels: Sequence[str]) -> dict[str, str]:
    """Each label's value: the rest of the line that starts with it (case, markdown and quotes aside), or
    the next line when the label stands alone. Labels missing from the answer are missing here."""
    pattern = re.compile(
        r"^(" + "|".join(re.escape(label) for label in labels) + r")\s*[:=\-–]\s*(.*)$", re.IGNORECASE
    )
    found: dict[str, str] = {}
    lines = [re.sub(r"[*`]+", "", line).strip().lstrip("#>-•").strip() for line in text.splitlines()]
    for i, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        label = next(label for label in labels if label.lower() == match.group(1).lower())
        value = _clean(match.group(2))
        if not value and i + 1 < len(lines) and not pattern.match(lines[i + 1]):
            value = _clean(lines[i + 1])
        if value and label not in found:
            found[label] = value
    return found


def read_choice(text: str, options: int, label: str = "CHOICE") -> int | None:
    """The option number (1-based) the answer chose: after `label`, else the first number in range that
    the answer leads with; None when there is none."""
    value = read_form(text, [label]).get(label)
    candidates = [value] if value else [line for line in text.splitlines() if line.strip()][:2]
    for candidate in candidates:
        match = re.search(r"\d+", candidate)
        if match and 1 <= int(match.group()) <= options:
            return int(match.group())
    return None


def read_sentence(value: str | None, *, min_words: int = 3, max_chars: int = 300) -> str | None:
    """One instruction sentence as a prompt may carry it: one line, a few words at least, not too long,
    and no template syntax (a harness's prompts are jinja templates); None when `value` is not one."""
    if not value:
        return None
    sentence = " ".join(value.split())
    if len(sentence.split()) < min_words or len(sentence) > max_chars:
        return None
    if any(tag in sentence for tag in ("{{", "{%", "{#", "}}", "%}", "#}")):
        return None
    return sentence
