"""Stripe's form encoding: bracketed keys (`items[0][price]`, `metadata[plan]`, `expand[]`) to nested values.

Vendor SDKs send parameters as `application/x-www-form-urlencoded` bodies (and query strings for GET),
nesting with brackets. Decoding gives the nested dicts and lists an operation's argument model
validates (pydantic turns `"100"` into an int where the operation asks for one), and `bracketed` names a
field back in the client's notation for the error's `param`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

_KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")
MAX_DEPTH = 16  # brackets in one name: Stripe's deepest (items[0][price_data][recurring][interval]) is 4
_PART = re.compile(r"\[([^\[\]]*)\]")


class FormError(ValueError):
    """A parameter that cannot be decoded; `param` names it as the client wrote it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def decode(encoded: str) -> dict[str, Any]:
    """`a=1&b[c]=2&d[]=x&d[]=y&e[0][f]=3` to `{"a": "1", "b": {"c": "2"}, "d": ["x", "y"], "e": [{"f": "3"}]}`."""
    tree: dict[str, Any] = {}
    for key, value in parse_qsl(encoded, keep_blank_values=True, strict_parsing=False):
        match = _KEY.match(key)
        if match is None:
            raise FormError(
                key, f"Invalid parameter name: {key!r} (brackets must pair, as in items[0][price])."
            )
        path = [match.group(1), *_PART.findall(match.group(2))]
        if len(path) > MAX_DEPTH + 1:
            raise FormError(
                key[:100], f"Invalid parameter name: {key[:100]!r}…: at most {MAX_DEPTH} levels of brackets."
            )
        _place(tree, path, value, key)
    return _listed(tree)


def _place(tree: dict[str, Any], path: list[str], value: str, key: str) -> None:
    if "" in path[:-1]:
        raise FormError(key, f"Invalid parameter name: {key!r}: [] may only end a name.")
    appending = path[-1] == ""
    node = tree
    for part in path[:-2] if appending else path[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise FormError(key, f"Parameter {key!r} conflicts with another of the same name.")
    if appending:
        values = node.setdefault(path[-2], [])
        if not isinstance(values, list):
            raise FormError(key, f"Parameter {key!r} conflicts with another of the same name.")
        values.append(value)
    elif path[-1] in node:
        raise FormError(key, f"Parameter {key!r} is given twice.")
    else:
        node[path[-1]] = value


def _listed(node: Any, name: str = "") -> Any:
    """Dicts keyed by 0, 1, 2 … become lists (Stripe's `items[0]`, `items[1]`); order follows the index."""
    if isinstance(node, list):
        return [_listed(item, f"{name}[]") for item in node]
    if not isinstance(node, dict):
        return node
    values = {key: _listed(value, f"{name}[{key}]" if name else key) for key, value in node.items()}
    if name and values and all(key.isdigit() for key in values):
        indexes = sorted(values, key=int)
        if [int(i) for i in indexes] != list(range(len(indexes))):
            raise FormError(
                name, f"The indexes of {name} must run 0, 1, 2 … without gaps; got {', '.join(indexes)}."
            )
        return [values[i] for i in indexes]
    return values


def bracketed(location: tuple[str | int, ...]) -> str:
    """A pydantic error location as the client named it: `("items", 0, "price")` is `items[0][price]`."""
    head, *rest = location or ("",)
    return str(head) + "".join(f"[{part}]" for part in rest)
