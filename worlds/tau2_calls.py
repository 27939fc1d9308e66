"""How τ²-bench's environment runs a tool call, for the tau2 worlds to run theirs the same way.

τ²'s environment calls the tool method with the agent's arguments as they came (no validation, so "2"
and 2.0 reach the code as a text and a float, and may be stored so), shows any exception to the agent
as `Error: {exception}`, and never undoes what a tool changed before it failed (τ²'s records are
Python objects changed in place). A tool registered with `tool` gets the same: its arguments as
given (its annotations only make the schema), Python's own refusal when it is called with unknown or
missing arguments (named as τ²'s toolkit method), and every refusal, a ToolError or the Python error
τ²'s code would raise, kept with what the tool wrote before it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ._errors import ToolError, ToolErrorAfterWrites
from ._tool import ToolContext

TOOLKITS = {"tau2_retail": "RetailTools", "tau2_airline": "AirlineTools"}
# What τ²'s tool code raises on arguments of the wrong type or shape, and pydantic's ValidationError
# (a ValueError) when it builds one of its models from them.
PYTHON_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def tool(world: Any, *, writes: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `function` on the τ² world as τ²'s toolkit method of that name runs."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        function.__qualname__ = f"{TOOLKITS[world.name]}.{function.__name__}"  # Python's TypeError names it

        @functools.wraps(function)
        def run(ctx: ToolContext, **arguments: Any) -> Any:
            try:
                return function(ctx, **arguments)
            except ToolError as error:
                raise ToolErrorAfterWrites(error.code, error.message) from None
            except PYTHON_ERRORS as error:
                raise ToolErrorAfterWrites("invalid_argument", str(error)) from None

        world.tool(run, writes=writes, as_given=True)
        return function

    return register


def key(value: Any) -> str | None:
    """A τ² lookup key (`value in db.users`): a text is looked up; any other value finds nothing, and a
    list or mapping raises Python's `unhashable type` as the dict would."""
    if isinstance(value, str):
        return value
    hash(value)
    return None


def as_models(model: type, items: Any) -> Any:
    """τ²'s `if all(isinstance(x, dict) for x in items): items = [Model(**x) for x in items]`: the items
    as models when every one is a mapping, else as given (its later attribute reads then fail as τ²'s)."""
    if all(isinstance(item, dict) for item in items):
        return [model(**item) for item in items]
    return items
