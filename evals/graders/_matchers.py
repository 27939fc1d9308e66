"""Value matchers: how a task says what a column must hold.

A plain value means equality, with two allowances that spare task authors from SQLite's typing:
numbers are equal within `FLOAT_TOLERANCE` (money is stored as REAL), and a number equals its text
form (a YAML `zip: 94110` matches the TEXT "94110"). The other matchers are one-key mappings:
`{approx: 59.99, tol: 0.01}`, `{pattern: "^RF-"}`, `{one_of: [a, b]}`, `{any: true}` (any non-NULL
value) and `{absent: true}` (NULL).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

FLOAT_TOLERANCE = 0.005
"""Half a cent: plain numeric values within this are equal."""

MatcherKind = Literal["equals", "approx", "pattern", "one_of", "any", "absent"]
_SPECIAL = ("approx", "pattern", "one_of", "any", "absent")


def show(value: Any) -> str:
    """A value as a feedback line shows it: text quoted, NULL spelled out, floats without noise."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e15 else repr(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def values_equal(expected: Any, actual: Any) -> bool:
    """Equality as task authors mean it: see the module docstring."""
    if expected is None or actual is None:
        return expected is None and actual is None
    expected_number, actual_number = _number(expected), _number(actual)
    if expected_number is not None and actual_number is not None:
        both_text = isinstance(expected, str) and isinstance(actual, str)
        if not both_text:
            return abs(expected_number - actual_number) <= FLOAT_TOLERANCE
    return expected == actual


def _number(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class Matcher(BaseModel):
    """One expected column value; build it from the task's YAML (a plain value or a one-key mapping)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: MatcherKind
    value: Any = None
    tol: float = FLOAT_TOLERANCE

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if isinstance(data, Matcher):
            return data
        if not isinstance(data, dict):
            return {"kind": "equals", "value": data}
        if "kind" in data:  # already in stored form (a Grade or config read back)
            return data
        special = [key for key in data if key in _SPECIAL]
        unknown = [key for key in data if key not in (*_SPECIAL, "tol")]
        if unknown or len(special) != 1:
            raise ValueError(
                f"a value matcher is a plain value or one of {{approx: x, tol: t}}, {{pattern: regex}}, "
                f"{{one_of: [...]}}, {{any: true}}, {{absent: true}}; got keys {sorted(data)}"
            )
        kind = special[0]
        if "tol" in data and kind != "approx":
            raise ValueError(f"'tol' goes with 'approx' only, not with {kind!r}")
        value = data[kind]
        if kind in ("any", "absent") and value is not True:
            raise ValueError(f"write {{{kind}: true}}; {kind}: {value!r} means nothing")
        if kind == "approx" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"approx needs a number, got {value!r}")
        if kind == "one_of" and not isinstance(value, list):
            raise ValueError(f"one_of needs a list of values, got {value!r}")
        if kind == "pattern":
            if not isinstance(value, str):
                raise ValueError(f"pattern needs a regular expression as text, got {value!r}")
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"pattern {value!r} is not a valid regular expression: {error}") from None
        return {"kind": kind, "value": value, "tol": data.get("tol", FLOAT_TOLERANCE)}

    def matches(self, actual: Any) -> bool:
        if self.kind == "equals":
            return values_equal(self.value, actual)
        if self.kind == "approx":
            number = _number(actual)
            return (
                number is not None and not isinstance(actual, bool) and abs(number - self.value) <= self.tol
            )
        if self.kind == "pattern":
            return actual is not None and re.search(self.value, str(actual)) is not None
        if self.kind == "one_of":
            return any(values_equal(option, actual) for option in self.value)
        if self.kind == "any":
            return actual is not None
        return actual is None  # absent

    def describe(self) -> str:
        """The expectation in a few characters: `59.99±0.01`, `matching /^RF-/`, `one of ['a', 'b']`."""
        if self.kind == "equals":
            return show(self.value)
        if self.kind == "approx":
            return f"{show(float(self.value))}±{self.tol:g}"
        if self.kind == "pattern":
            return f"matching /{self.value}/"
        if self.kind == "one_of":
            return f"one of [{', '.join(show(v) for v in self.value)}]"
        if self.kind == "any":
            return "any value"
        return "NULL"


RowMatch = dict[str, Matcher]
"""Column name → matcher: what an expected row must hold (other columns may hold anything)."""


def describe_row(match: RowMatch) -> str:
    """`{order_id='ORD-1012', amount=59.99±0.01}`."""
    return "{" + ", ".join(f"{column}={matcher.describe()}" for column, matcher in match.items()) + "}"


def mismatches(match: RowMatch, row: dict[str, Any]) -> list[str]:
    """The columns of `row` that break `match`, each as `column is X, expected Y`."""
    return [
        f"{column} is {show(row.get(column))}, expected {matcher.describe()}"
        for column, matcher in match.items()
        if not matcher.matches(row.get(column))
    ]
