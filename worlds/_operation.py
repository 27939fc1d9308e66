"""HTTP operations: a world's REST face, declared beside its tools and run by the same engine.

An operation is a method and a path template (`POST /v1/refunds`, `GET /v1/customers/{customer}`) bound
to a plain function with a tool's signature. The engine runs it exactly as it runs a tool (one
transaction, logged, in the diff), so a function registered both as a tool and as an operation behaves
the same whichever face a client uses. How the operations speak HTTP (form bodies, the error envelope,
idempotency keys) lives in `worlds/serve/_rest.py`; what the world pins is its `RestFace`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._errors import WorldDefinitionError
from ._tool import Tool, make_tool

Method = Literal["GET", "POST", "DELETE"]
METHODS: tuple[str, ...] = ("GET", "POST", "DELETE")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class RestFace:
    """What a world with operations pins for HTTP clients: its API version and the header carrying it
    (a request naming another version is refused, so a client never reads shapes it did not ask for)."""

    version: str
    version_header: str = "Api-Version"


@dataclass(frozen=True)
class Operation:
    """A registered operation: its method, path template and the tool-shaped function it runs."""

    method: str
    path: str
    tool: Tool
    path_parameters: tuple[str, ...]
    pattern: re.Pattern[str]

    @property
    def name(self) -> str:
        """How the instance log names a call of it: `POST /v1/refunds`."""
        return f"{self.method} {self.path}"

    def match(self, path: str) -> dict[str, str] | None:
        """The path parameters when `path` (e.g. `/v1/customers/cus_123`) is this operation's, else None."""
        found = self.pattern.fullmatch(path)
        return found.groupdict() if found else None


def make_operation(function: Callable[..., Any], method: str, path: str) -> Operation:
    """Check the declaration and build the Operation; refusals name the function and the path."""
    where = f"operation {method} {path} ({function.__module__}.{function.__name__})"
    if method not in METHODS:
        raise WorldDefinitionError(f"{where}: method must be one of {', '.join(METHODS)}")
    if not path.startswith("/") or path != path.strip() or "//" in path:
        raise WorldDefinitionError(
            f"{where}: the path must start with / and hold no blanks or empty segments"
        )
    tool = make_tool(function, writes=method != "GET")
    names = tuple(_PLACEHOLDER.findall(path))
    if len(set(names)) != len(names):
        raise WorldDefinitionError(f"{where}: a placeholder appears twice")
    fields = tool.arguments.model_fields
    for name in names:
        if name not in fields:
            raise WorldDefinitionError(f"{where}: placeholder {{{name}}} is not a parameter of the function")
        if fields[name].annotation is not str or not fields[name].is_required():
            raise WorldDefinitionError(
                f"{where}: parameter {name!r} is in the path, so it must be `{name}: str`"
            )
    regex = ""
    for piece in re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", path):
        placeholder = _PLACEHOLDER.fullmatch(piece)
        regex += f"(?P<{placeholder.group(1)}>{_SEGMENT.pattern})" if placeholder else re.escape(piece)
    return Operation(method, path, tool, names, re.compile(regex))
