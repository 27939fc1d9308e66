"""Tools: plain Python functions a world registers, and the context they run with.

Registration does all the checking (annotations, JSON schema, docstring) so that a broken
tool fails when the world is imported, naming the tool and the parameter, instead of on
the first call an agent makes.
"""

from __future__ import annotations

import inspect
import math
import random
import re
import sqlite3
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ._clock import TIMESTAMP_FORMAT
from ._errors import ToolError, WorldDefinitionError

_ID_ALPHABET = string.ascii_uppercase + string.digits


class ToolContext:
    """What a tool may touch: the instance's database, clock and seeded randomness."""

    def __init__(
        self, db: sqlite3.Connection, now: Callable[[], datetime], rng: random.Random, issued_ids: set[str]
    ) -> None:
        self.db = db
        self.rng = rng
        self._now = now
        self._issued_ids = issued_ids

    def execute(self, sql: str, params: tuple | dict = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, params)

    def rows(self, sql: str, params: tuple | dict = ()) -> list[dict[str, Any]]:
        return self.db.execute(sql, params).fetchall()

    def one(self, sql: str, params: tuple | dict = ()) -> dict[str, Any] | None:
        return self.db.execute(sql, params).fetchone()

    def now(self) -> datetime:
        return self._now()

    def today(self) -> date:
        return self._now().date()

    def timestamp(self) -> str:
        """The instance time as SQLite text, `YYYY-MM-DD HH:MM:SS`."""
        return self._now().strftime(TIMESTAMP_FORMAT)

    def new_id(self, prefix: str, length: int = 8) -> str:
        """A fresh id like `RF-7K2M9QXA`, drawn from the instance RNG so reruns repeat it."""
        while True:
            candidate = f"{prefix}-{''.join(self.rng.choices(_ID_ALPHABET, k=length))}"
            if candidate not in self._issued_ids:
                self._issued_ids.add(candidate)
                return candidate


@dataclass(frozen=True)
class Tool:
    """A registered tool: the function, its argument model and what the model is shown."""

    name: str
    description: str
    writes: bool
    function: Callable[..., Any]
    arguments: type[BaseModel]
    as_given: bool = False  # the function gets the arguments unvalidated; the schema is still shown

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, without pydantic's titles."""
        return _strip_titles(self.arguments.model_json_schema())

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema a chat model is given."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema(),
            },
        }

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises pydantic's ValidationError. A tool taking its arguments
        as given gets them unchanged, refused (ToolError) only where Python would refuse the call."""
        if self.as_given:
            return self._bound(arguments)
        model = self.arguments.model_validate(arguments)
        values = {name: getattr(model, name) for name in self.arguments.model_fields}
        problems = list(_out_of_range(values))
        if problems:
            raise ValidationError.from_exception_data(
                f"{self.name}_arguments",
                [
                    {"type": "value_error", "loc": loc, "input": value, "ctx": {"error": ValueError(why)}}
                    for loc, value, why in problems
                ],
            )
        return values

    def _bound(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            inspect.signature(self.function).bind(None, **arguments)
        except TypeError:
            try:  # Python refuses the call before its body runs, in its own words (it names __qualname__)
                self.function(None, **arguments)
            except TypeError as error:
                raise ToolError("invalid_arguments", str(error)) from None
        return dict(arguments)

    def renamed(self, name: str) -> Tool:
        return Tool(name, self.description, self.writes, self.function, self.arguments, self.as_given)


SQLITE_INTEGERS = (-(2**63), 2**63 - 1)  # what a world's database can store: a larger int is an OverflowError


def _out_of_range(values: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], Any, str]]:
    """Each value no world can store, wherever it is nested, with its location and why: an integer past
    SQLite's 64 bits, a float that is infinite or NaN, text holding a lone surrogate (not UTF-8 encodable)."""
    todo: list[tuple[tuple[str | int, ...], Any]] = [((name,), value) for name, value in values.items()]
    while todo:
        loc, value = todo.pop()
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not SQLITE_INTEGERS[0] <= value <= SQLITE_INTEGERS[1]:
            yield loc, value, "an integer past the 64 bits a world stores (at most 9223372036854775807)"
        elif isinstance(value, float) and not math.isfinite(value):
            yield loc, value, "a finite number"
        elif isinstance(value, str) and _SURROGATE.search(value):
            yield loc, value[:40], "text with a lone surrogate (\\ud800-\\udfff), which is no character"
        elif isinstance(value, BaseModel):
            todo += [((*loc, key), item) for key, item in vars(value).items()]
        elif isinstance(value, dict):
            todo += [((*loc, str(key)), key) for key in value if isinstance(key, str)]
            todo += [((*loc, str(key)), item) for key, item in value.items()]
        elif isinstance(value, list | tuple | set | frozenset):
            todo += [((*loc, index), item) for index, item in enumerate(value)]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def make_tool(
    function: Callable[..., Any], *, writes: bool, name: str | None = None, as_given: bool = False
) -> Tool:
    """Check `function` and build its Tool; every refusal names the tool and the parameter. `as_given`:
    the annotations make the schema only, and the function gets the arguments as the caller sent them."""
    tool_name = name or function.__name__
    where = f"tool {tool_name!r} ({function.__module__})"
    if inspect.iscoroutinefunction(function):
        raise WorldDefinitionError(f"{where}: tools must be plain functions, not async def")
    doc = docstring_parser.parse(inspect.getdoc(function) or "")
    description = (doc.description or "").strip()
    if not description:
        raise WorldDefinitionError(f"{where}: add a docstring; its first paragraph is what the model reads")
    parameter_docs = {p.arg_name: p.description or "" for p in doc.params}
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    if not parameters or parameters[0].name != "ctx":
        raise WorldDefinitionError(f"{where}: the first parameter must be `ctx: ToolContext`")
    fields: dict[str, Any] = {}
    for parameter in parameters[1:]:
        if parameter.kind == parameter.POSITIONAL_ONLY:
            raise WorldDefinitionError(
                f"{where}: parameter {parameter.name!r} is positional-only; tools are called by keyword"
            )
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise WorldDefinitionError(
                f"{where}: parameter {parameter.name!r}: *args and **kwargs are not allowed"
            )
        if parameter.annotation is inspect.Parameter.empty:
            raise WorldDefinitionError(f"{where}: parameter {parameter.name!r} needs a type annotation")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (
            parameter.annotation,
            Field(default, description=parameter_docs.get(parameter.name) or None),
        )
    try:
        arguments = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        arguments.model_json_schema()
    except Exception as error:  # pydantic raises several types for types it can't express
        bad = _first_unschemable(fields) or "?"
        raise WorldDefinitionError(
            f"{where}: parameter {bad!r} has a type JSON schema cannot express ({error.__class__.__name__}); "
            "use str, int, float, bool, Literal, list, dict, Optional or a pydantic model"
        ) from None
    return Tool(tool_name, description, writes, function, arguments, as_given)


def _first_unschemable(fields: dict[str, Any]) -> str | None:
    for field_name, (annotation, _) in fields.items():
        try:
            create_model("probe", value=(annotation, ...)).model_json_schema()
        except Exception:
            return field_name
    return None


def describe_validation_error(error: ValidationError) -> str:
    """One line listing every problem, so the agent can fix them all in one turn."""
    problems = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "arguments"
        message = "unknown argument" if item["type"] == "extra_forbidden" else item["msg"]
        problems.append(f"{location}: {message}")
    return "; ".join(problems)
