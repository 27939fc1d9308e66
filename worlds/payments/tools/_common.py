"""What every payments operation shares: Stripe-shaped ids, times, errors, lookups, lists and `expand`.

Errors are `ToolError`s whose details carry Stripe's envelope fields (`status`, `type`, `param`, …), so
the REST face answers with Stripe's status and body and an agent reads the same facts. Every object
type registers how to load it by id here, which is what `expand[]` and `fetch_stripe_resources` use.
"""

from __future__ import annotations

import base64
import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import TIMESTAMP_FORMAT, ToolContext, ToolError

Limit = Annotated[int, Field(ge=1, le=100)]
# Stripe's amounts are at most eight digits of the currency's smallest unit ($999,999.99): a larger one is
# refused as a parameter, not carried to SQLite (2**63 was an OverflowError, a world_bug).
MAX_AMOUNT = 99_999_999
Amount = Annotated[int, Field(le=MAX_AMOUNT)]
Metadata = dict[str, str]
Expand = list[str]


class Range(BaseModel):
    """`created[gte]=…` and its kin: bounds in Unix seconds, each optional."""

    model_config = ConfigDict(extra="forbid")
    gt: int | None = None
    gte: int | None = None
    lt: int | None = None
    lte: int | None = None


# `created=1700000000` (that second) or `created[gte]=…&created[lt]=…`.
Created = int | Range


class Address(BaseModel):
    """`address[…]`: a postal address, every line optional."""

    model_config = ConfigDict(extra="forbid")
    city: str | None = None
    country: str | None = None
    line1: str | None = None
    line2: str | None = None
    postal_code: str | None = None
    state: str | None = None


class Shipping(BaseModel):
    """`shipping[…]`: where to ship, and to whom."""

    model_config = ConfigDict(extra="forbid")
    address: Address
    name: str
    phone: str | None = None


def stored(value: BaseModel | str | None) -> str | None:
    """A nested parameter as its JSON column; `""` (Stripe's way to unset a field) and None as NULL."""
    return value.model_dump_json() if isinstance(value, BaseModel) else None


def shipping_object(raw: str | None) -> dict[str, Any] | None:
    """A stored `Shipping` as Stripe serializes it (carrier and tracking number are never set here)."""
    if raw is None:
        return None
    return {"carrier": None, "tracking_number": None, **json.loads(raw)}


_ALPHABET = string.ascii_letters + string.digits
ID_LENGTH = {"cus": 14, "prod": 14, "si": 14}
_MAX_EXPAND_DEPTH = 4


def new_id(ctx: ToolContext, prefix: str) -> str:
    """A Stripe-shaped id (`cus_Q3k…`) from the instance RNG, so reruns repeat it."""
    return f"{prefix}_{''.join(ctx.rng.choices(_ALPHABET, k=ID_LENGTH.get(prefix, 24)))}"


_LAST_SECOND = 253_402_300_799  # 9999-12-31 23:59:59 UTC


def stamp(seconds: int) -> str:
    """Unix seconds as a table's `YYYY-MM-DD HH:MM:SS` (UTC); a bound before 1970 or past year 9999 as the
    text that sorts before or after every stored time (a filter's bound may be any integer)."""
    if seconds < 0:
        return "0000-01-01 00:00:00"
    if seconds > _LAST_SECOND:
        return "9999-12-31 23:59:59"
    return datetime.fromtimestamp(seconds, UTC).strftime(TIMESTAMP_FORMAT)


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


Includer = Callable[[ToolContext, dict[str, Any]], Any]
_INCLUDES: dict[tuple[str, str], Includer] = {}


def includes(kind: str, name: str) -> Callable[[Includer], Includer]:
    """Register a field that Stripe leaves out of a `kind` object unless `expand[]` names it (a charge's
    `refunds`, a customer's `subscriptions`): serialized as null, filled in by `includer` when expanded."""

    def register(includer: Includer) -> Includer:
        _INCLUDES[(kind, name)] = includer
        return includer

    return register


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
    includer = _INCLUDES.get((value.get("object", ""), head))
    if includer is not None and value[head] is None:
        value[head] = includer(ctx, value)
    target = value[head]
    if target is None:  # nothing to expand here (a manual invoice's `parent`), as Stripe skips it
        return
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


def filters(created: Created | None = None, **conditions: Any) -> tuple[str, tuple]:
    """A WHERE clause from `column=value` pairs, leaving out those that are None, and `created`'s bounds."""
    given = {column: value for column, value in conditions.items() if value is not None}
    clauses = [f"{column} = ?" for column in given]
    args: list[Any] = list(given.values())
    if isinstance(created, int):
        clauses.append("created = ?")
        args.append(stamp(created))
    elif created is not None:
        for bound, operator in (("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<=")):
            seconds = getattr(created, bound)
            if seconds is not None:
                clauses.append(f"created {operator} ?")
                args.append(stamp(seconds))
    return (" AND ".join(clauses) or "1", tuple(args))


# -- search ---------------------------------------------------------------------------------------------

_QUOTED = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
_CLAUSE = re.compile(
    rf"""(?P<negated>-)?(?P<field>metadata\[\s*(?P<key>{_QUOTED})\s*\]|[a-z_]+)"""
    rf"""\s*(?P<operator>:|~|>=|<=|>|<)\s*(?P<value>{_QUOTED}|[^\s"']+)"""
)
_JOIN = re.compile(r"\s+(AND|OR)\s+")
MAX_CLAUSES = 10


@dataclass(frozen=True)
class SearchField:
    """A field of a search query: its column and kind (`text`, `number`, `time` or `exact`)."""

    column: str
    kind: str


def search_condition(query: str, fields: dict[str, SearchField], resource: str) -> tuple[str, tuple]:
    """A WHERE clause from Stripe's search query language: clauses `field:"value"` (equal, any case),
    `field~"text"` (contains, 3 characters at least, on text fields), `field>1700000000` (and `<`, `>=`,
    `<=`, on numbers and times), `-` before a clause negates it, `metadata["key"]:"value"`, `null` for an
    absent value; clauses joined all by AND or all by OR. Values are quoted with " or '."""
    docs = f"See https://docs.stripe.com/search#query-fields-for-{resource.replace('_', '-')}"
    text = query.strip()
    if not text:
        raise error(400, "The query is empty.", param="query", code="parameter_invalid_empty")
    conditions: list[str] = []
    args: list[Any] = []
    joins: set[str] = set()
    position = 0
    while True:
        found = _CLAUSE.match(text, position)
        if found is None:
            raise error(
                400,
                f"Could not parse the query at `{text[position:][:40]}`: write clauses such as "
                f'`field:"value"`, `field~"text"` or `field>number`, joined by AND or OR. {docs}.',
                param="query",
            )
        condition, values = _condition(found, fields, resource, docs)
        conditions.append(f"coalesce(({condition}), 0) = 0" if found["negated"] else condition)
        args.extend(values)
        position = found.end()
        if position == len(text):
            break
        join = _JOIN.match(text, position)
        if join is None:
            raise error(
                400,
                f"Could not parse the query at `{text[position:][:40]}`: join clauses with AND or OR.",
                param="query",
            )
        joins.add(join[1])
        position = join.end()
    if len(joins) > 1:
        raise error(400, "A query cannot mix AND and OR; use one of them throughout.", param="query")
    if len(conditions) > MAX_CLAUSES:
        raise error(400, f"A query may have at most {MAX_CLAUSES} clauses.", param="query")
    joined = f" {joins.pop() if joins else 'AND'} ".join(f"({c})" for c in conditions)
    return joined, tuple(args)


def _unquoted(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw[1:-1])


def _condition(
    found: re.Match[str], fields: dict[str, SearchField], resource: str, docs: str
) -> tuple[str, list[Any]]:
    clause, operator, raw = found.group(0), found["operator"], found["value"]
    quoted = raw[0] in "\"'"
    value = _unquoted(raw) if quoted else raw
    if found["key"] is not None:
        target, kind, prefix = "json_extract(metadata, ?)", "exact", [f'$."{_unquoted(found["key"])}"']
    elif found["field"] in fields:
        spec = fields[found["field"]]
        target, kind, prefix = spec.column, spec.kind, []
    else:
        raise error(
            400,
            f"Field `{found['field']}` is an unsupported search field for resource {resource}. {docs} for "
            f"the fields: {', '.join(sorted(fields))}, metadata.",
            param="query",
        )
    if not quoted and value == "null":
        if operator != ":":
            raise error(400, f"Only `:` compares with null (`{clause}`).", param="query")
        return f"{target} IS NULL", prefix
    if kind in ("number", "time"):
        if operator == "~" or not re.fullmatch(r"-?\d+", value):
            raise error(
                400,
                f"`{found['field']}` takes a whole number with `:`, `>`, `<`, `>=` or `<=` (`{clause}`).",
                param="query",
            )
        number = int(value)
        if abs(number) >= 2**63:  # past SQLite's integers
            raise error(400, f"`{value}` is out of range for `{found['field']}` (`{clause}`).", param="query")
        return f"{target} {'=' if operator == ':' else operator} ?", [
            *prefix,
            stamp(number) if kind == "time" else number,
        ]
    if operator == "~":
        if kind != "text":
            raise error(400, f"`{found['field']}` does not take `~`; use `:` (`{clause}`).", param="query")
        if len(value) < 3:
            raise error(
                400, f"A substring match (`~`) needs 3 characters at least (`{clause}`).", param="query"
            )
        return f"instr(lower({target}), lower(?)) > 0", [*prefix, value]
    if operator != ":":
        raise error(400, f"`{found['field']}` compares only with `:` or `~` (`{clause}`).", param="query")
    # lower() rather than COLLATE NOCASE: SQLite 3.40 drops rows from an OR of NOCASE terms on an indexed column.
    return f"lower({target}) = lower(?)", [*prefix, value]


def searched(
    ctx: ToolContext,
    table: str,
    url: str,
    serialize: Callable[[ToolContext, dict[str, Any]], dict[str, Any]],
    *,
    where: str,
    args: tuple,
    limit: int = 10,
    page: str | None = None,
    expand: Expand | None = None,
) -> dict[str, Any]:
    """One page of search results, newest first, as Stripe's `search_result` object: `next_page` is the
    token to pass as `page` for the next one; `expand[]=total_count` adds the count of all matches."""
    expand = list(expand or [])
    count = "total_count" in expand
    if count:
        expand.remove("total_count")
    paged_where, paged_args = where, args
    if page is not None:
        try:
            created, seq = json.loads(base64.urlsafe_b64decode(page.encode()).decode())
        except (ValueError, TypeError):
            raise error(400, f"Invalid page token: '{page}'.", param="page") from None
        paged_where = f"({where}) AND (created, rowid) < (?, ?)"
        paged_args = (*args, created, seq)
    rows = ctx.rows(
        f"SELECT *, rowid AS _seq FROM {table} WHERE {paged_where} ORDER BY created DESC, rowid DESC LIMIT ?",
        (*paged_args, limit + 1),
    )
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_page = None
    if has_more:
        mark = json.dumps([rows[-1]["created"], rows[-1]["_seq"]])
        next_page = base64.urlsafe_b64encode(mark.encode()).decode()
    result: dict[str, Any] = {
        "object": "search_result",
        "data": [serialize(ctx, {k: v for k, v in r.items() if k != "_seq"}) for r in rows],
        "has_more": has_more,
        "next_page": next_page,
        "url": url,
    }
    if count:
        result["total_count"] = ctx.one(f"SELECT count(*) AS n FROM {table} WHERE {where}", args)["n"]
    return expanded(ctx, result, expand)
