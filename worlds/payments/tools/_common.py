"""What every payments operation shares: Stripe-shaped ids, times, errors, lookups, lists and `expand`.

Errors are `ToolError`s whose details carry Stripe's envelope fields (`status`, `type`, `param`, …), so
the REST face answers with Stripe's status and body and an agent reads the same facts. Every object
type registers how to load it by id here, which is what `expand[]` and `fetch_stripe_resources` use.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from atoll.worlds import TIMESTAMP_FORMAT, ToolContext, ToolError

Limit = Annotated[int, Field(ge=1, le=100)]
Metadata = dict[str, str]
Expand = list[str]

_ALPHABET = string.ascii_letters + string.digits
ID_LENGTH = {"cus": 14, "prod": 14, "si": 14}
_MAX_EXPAND_DEPTH = 4


def new_id(ctx: ToolContext, prefix: str) -> str:
    """A Stripe-shaped id (`cus_Q3k…`) from the instance RNG, so reruns repeat it."""
    return f"{prefix}_{''.join(ctx.rng.choices(_ALPHABET, k=ID_LENGTH.get(prefix, 24)))}"


def unix(timestamp: str | None) -> int | None:
    """A table's `YYYY-MM-DD HH:MM:SS` (UTC) as the Unix seconds the API serves."""
    if timestamp is None:
        return None
    return int(datetime.strptime(timestamp, TIMESTAMP_FORMAT).replace(tzinfo=UTC).timestamp())


def error(
    status: int, message: str, *, code: str | None = None, param: str | None = None, **extra: Any
) -> ToolError:
    """A refusal in Stripe's terms: the HTTP status, `type` from it (or `extra`), the code and the param."""
    kind = extra.pop("type", None) or ("card_error" if status == 402 else "invalid_request_error")
    details = {"status": status, "type": kind, **({"param": param} if param else {}), **extra}
    return ToolError(code or kind, message, **details)


def missing(kind: str, object_id: str, param: str = "id") -> ToolError:
    return error(404, f"No such {kind}: '{object_id}'", code="resource_missing", param=param)


def row(ctx: ToolContext, table: str, object_id: str, kind: str, param: str = "id") -> dict[str, Any]:
    """The row of `object_id`, or Stripe's 404."""
    found = ctx.one(f"SELECT * FROM {table} WHERE id = ?", (object_id,))
    if found is None:
        raise missing(kind, object_id, param)
    return found


def live_customer(ctx: ToolContext, customer_id: str, param: str = "customer") -> dict[str, Any]:
    """A customer that exists and is not deleted, or Stripe's 404."""
    found = row(ctx, "customers", customer_id, "customer", param)
    if found["deleted"]:
        raise missing("customer", customer_id, param)
    return found


def metadata(raw: str) -> dict[str, str]:
    return json.loads(raw)


def merged_metadata(raw: str, update: Metadata | None) -> str:
    """Stripe's update rule: given keys are set, a key set to "" is removed, others are kept."""
    current = json.loads(raw)
    for key, value in (update or {}).items():
        if value == "":
            current.pop(key, None)
        else:
            current[key] = value
    return json.dumps(current, sort_keys=True)


def dumped(values: Metadata | None) -> str:
    return json.dumps({k: v for k, v in (values or {}).items() if v != ""}, sort_keys=True)


# -- objects by id ------------------------------------------------------------------------------------

Loader = Callable[[ToolContext, str], dict[str, Any]]
_LOADERS: dict[str, Loader] = {}


def loads(prefix: str) -> Callable[[Loader], Loader]:
    """Register how objects with ids `prefix_…` are loaded (for expand and fetch)."""

    def register(loader: Loader) -> Loader:
        _LOADERS[prefix] = loader
        return loader

    return register


def load(ctx: ToolContext, object_id: str, param: str = "id") -> dict[str, Any]:
    """Any object by its id, as the API serves it."""
    prefix = object_id.partition("_")[0]
    if prefix not in _LOADERS:
        known = ", ".join(f"{p}_" for p in sorted(_LOADERS))
        raise error(
            400, f"'{object_id}' is not an id this account serves; ids start with {known}", param=param
        )
    return _LOADERS[prefix](ctx, object_id)


def expanded(ctx: ToolContext, value: dict[str, Any], paths: Expand | None) -> dict[str, Any]:
    """`value` with each `expand[]` path (`latest_charge`, `data.customer`, `invoice.subscription`) replaced
    by the object its id names; a path that names no id is Stripe's 400."""
    for path in paths or []:
        parts = path.split(".")
        if len(parts) > _MAX_EXPAND_DEPTH:
            raise error(
                400,
                f"You cannot expand more than {_MAX_EXPAND_DEPTH} levels of a property ({path}).",
                param="expand",
            )
        _expand(ctx, value, parts, path)
    return value


def _expand(ctx: ToolContext, value: dict[str, Any], parts: list[str], path: str) -> None:
    head, rest = parts[0], parts[1:]
    if value.get("object") == "list" and head == "data":
        for item in value["data"]:
            if rest:
                _expand(ctx, item, rest, path)
        return
    if head not in value:
        raise error(400, f"This property cannot be expanded ({path}).", param="expand")
    target = value[head]
    if isinstance(target, str):
        target = value[head] = load(ctx, target, "expand")
    if rest:
        if not isinstance(target, dict):
            raise error(400, f"This property cannot be expanded ({path}).", param="expand")
        _expand(ctx, target, rest, path)
    elif not isinstance(target, dict) and target is not None:
        raise error(400, f"This property cannot be expanded ({path}).", param="expand")


# -- lists ----------------------------------------------------------------------------------------------


def listed(
    ctx: ToolContext,
    table: str,
    url: str,
    serialize: Callable[[ToolContext, dict[str, Any]], dict[str, Any]],
    *,
    where: str = "1",
    args: tuple = (),
    limit: int = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: Expand | None = None,
) -> dict[str, Any]:
    """One page of `table` newest first, as Stripe's list object (cursors are object ids), with `expand[]`
    applied (see `expanded`)."""
    if starting_after and ending_before:
        raise error(
            400,
            "You may only specify one of these parameters: ending_before, starting_after.",
            param="ending_before",
        )
    order = "DESC"
    cursor = starting_after or ending_before
    if cursor:
        param = "starting_after" if starting_after else "ending_before"
        mark = ctx.one(f"SELECT created, rowid AS seq FROM {table} WHERE id = ?", (cursor,))
        if mark is None:
            raise missing(table.rstrip("s"), cursor, param)
        comparison = "<" if starting_after else ">"
        where = f"({where}) AND (created, rowid) {comparison} (?, ?)"
        args = (*args, mark["created"], mark["seq"])
        order = "DESC" if starting_after else "ASC"
    rows = ctx.rows(
        f"SELECT * FROM {table} WHERE {where} ORDER BY created {order}, rowid {order} LIMIT ?",
        (*args, limit + 1),
    )
    has_more = len(rows) > limit
    rows = rows[:limit]
    if order == "ASC":
        rows.reverse()
    page = {"object": "list", "data": [serialize(ctx, r) for r in rows], "has_more": has_more, "url": url}
    return expanded(ctx, page, expand)


def filters(**conditions: Any) -> tuple[str, tuple]:
    """A WHERE clause from `column=value` pairs, leaving out those that are None."""
    given = {column: value for column, value in conditions.items() if value is not None}
    return (" AND ".join(f"{column} = ?" for column in given) or "1", tuple(given.values()))
