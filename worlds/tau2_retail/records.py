"""τ²'s retail records and this world's rows, both ways.

`*_rows` turn one record of τ²'s db.json (a product, a user, an order) into the rows of its tables;
`*_record` read one back in τ²'s shape, key for key as τ²'s pydantic models dump it, which is what
τ²'s tools answer and what its grader hashes. The fixture is built with the first, the tools answer
with the second, and the agreement test uses both to compare a world's state with τ²'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

Query = Callable[..., list[dict[str, Any]]]
"""`query(sql, params)`: a ToolContext's `rows`, or an Instance's `query`."""
Tables = dict[str, list[dict[str, Any]]]

ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
REQUESTS = {"exchange": "exchange_items", "exchange_new": "exchange_new_items", "return": "return_items"}


def _merge(into: Tables, part: Tables) -> None:
    for table, rows in part.items():
        into.setdefault(table, []).extend(rows)


def _options(key: dict[str, Any], options: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {**key, "option": name, "position": i, "value": value}
        for i, (name, value) in enumerate(options.items())
    ]


# -- records to rows ---------------------------------------------------------------------------------


def product_rows(product: dict[str, Any], position: int) -> Tables:
    tables: Tables = {
        "products": [{"product_id": product["product_id"], "name": product["name"], "position": position}]
    }
    for i, variant in enumerate(product["variants"].values()):
        item = variant["item_id"]
        row = {"item_id": item, "product_id": product["product_id"], "position": i}
        _merge(
            tables, {"variants": [{**row, "available": int(variant["available"]), "price": variant["price"]}]}
        )
        _merge(tables, {"variant_options": _options({"item_id": item}, variant["options"])})
    return tables


def user_rows(user: dict[str, Any], position: int) -> Tables:
    row = {
        "user_id": user["user_id"],
        "position": position,
        "first_name": user["name"]["first_name"],
        "last_name": user["name"]["last_name"],
        "email": user["email"],
        **{field: user["address"][field] for field in ADDRESS},
    }
    methods = [
        {
            "id": method["id"],
            "user_id": user["user_id"],
            "position": i,
            "source": method["source"],
            "brand": method.get("brand"),
            "last_four": method.get("last_four"),
            "balance": method.get("balance"),
        }
        for i, method in enumerate(user["payment_methods"].values())
    ]
    return {"users": [row], "payment_methods": methods}


def order_rows(order: dict[str, Any], position: int) -> Tables:
    oid = order["order_id"]
    row = {
        "order_id": oid,
        "user_id": order["user_id"],
        "position": position,
        **{field: order["address"][field] for field in ADDRESS},
        "status": order["status"],
        "cancel_reason": order.get("cancel_reason"),
        "exchange_payment_method_id": order.get("exchange_payment_method_id"),
        "exchange_price_difference": order.get("exchange_price_difference"),
        "return_payment_method_id": order.get("return_payment_method_id"),
    }
    tables: Tables = {"orders": [row]}
    for line, item in enumerate(order["items"]):
        key = {"order_id": oid, "line": line}
        fields = {name: item[name] for name in ("name", "product_id", "item_id", "price")}
        _merge(
            tables, {"order_items": [{**key, **fields}], "order_item_options": _options(key, item["options"])}
        )
    for number, fulfillment in enumerate(order["fulfillments"]):
        key = {"order_id": oid, "fulfillment": number}
        tracking = [
            {**key, "position": i, "tracking_id": t} for i, t in enumerate(fulfillment["tracking_id"])
        ]
        items = [{**key, "position": i, "item_id": item} for i, item in enumerate(fulfillment["item_ids"])]
        _merge(tables, {"fulfillments": [key], "fulfillment_tracking": tracking, "fulfillment_items": items})
    payments = [
        {"order_id": oid, "position": i, **payment} for i, payment in enumerate(order["payment_history"])
    ]
    _merge(tables, {"order_payments": payments})
    for request, field in REQUESTS.items():
        for i, item in enumerate(order.get(field) or []):
            _merge(
                tables,
                {
                    "order_requested_items": [
                        {"order_id": oid, "request": request, "position": i, "item_id": item}
                    ]
                },
            )
    return tables


def check_derived_lists(db: dict[str, Any]) -> None:
    """The lists the tables derive rather than store: each user's `orders` are the orders naming them,
    in db order, and an order's exchange (return) lists exist exactly when its payment method does.
    Raises ValueError naming the first record that breaks this, so a db.json that would not
    round-trip is refused when the fixture is built."""
    by_user: dict[str, list[str]] = defaultdict(list)
    for order in db["orders"].values():
        by_user[order["user_id"]].append(order["order_id"])
        for method, fields in (
            ("exchange", ("exchange_items", "exchange_new_items")),
            ("return", ("return_items",)),
        ):
            has_method = order.get(f"{method}_payment_method_id") is not None
            if any((order.get(field) is not None) != has_method for field in fields):
                raise ValueError(f"order {order['order_id']}: its {method} items and payment method disagree")
    for user in db["users"].values():
        if user["orders"] != by_user.get(user["user_id"], []):
            raise ValueError(f"user {user['user_id']}: `orders` is not the list of orders naming them")


def tables_from_db(db: dict[str, Any]) -> Tables:
    """Every row of the world's tables for τ²'s whole database (db.json, or a dump of τ²'s RetailDB)."""
    check_derived_lists(db)
    tables: Tables = {}
    for kind, rows_of in (("products", product_rows), ("users", user_rows), ("orders", order_rows)):
        for position, record in enumerate(db[kind].values()):
            _merge(tables, rows_of(record, position))
    return tables


# -- rows to records ---------------------------------------------------------------------------------


def _grouped(rows: list[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row)
    return groups


def product_record(query: Query, product_id: str) -> dict[str, Any] | None:
    found = query("SELECT name, product_id FROM products WHERE product_id = ?", (product_id,))
    if not found:
        return None
    variants = query(
        "SELECT item_id, available, price FROM variants WHERE product_id = ? ORDER BY position", (product_id,)
    )
    options = _grouped(
        query(
            "SELECT o.item_id, o.option, o.value FROM variant_options o JOIN variants v USING (item_id) "
            "WHERE v.product_id = ? ORDER BY o.item_id, o.position",
            (product_id,),
        ),
        "item_id",
    )
    return {
        **found[0],
        "variants": {
            v["item_id"]: {
                "item_id": v["item_id"],
                "options": {o["option"]: o["value"] for o in options[v["item_id"]]},
                "available": bool(v["available"]),
                "price": v["price"],
            }
            for v in variants
        },
    }


def _payment_method(row: dict[str, Any]) -> dict[str, Any]:
    method = {"source": row["source"], "id": row["id"]}
    if row["source"] == "credit_card":
        method |= {"brand": row["brand"], "last_four": row["last_four"]}
    elif row["source"] == "gift_card":
        method["balance"] = row["balance"]
    return method


def user_record(query: Query, user_id: str) -> dict[str, Any] | None:
    found = query("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if not found:
        return None
    user = found[0]
    methods = query("SELECT * FROM payment_methods WHERE user_id = ? ORDER BY position", (user_id,))
    orders = query("SELECT order_id FROM orders WHERE user_id = ? ORDER BY position", (user_id,))
    return {
        "user_id": user["user_id"],
        "name": {"first_name": user["first_name"], "last_name": user["last_name"]},
        "address": {field: user[field] for field in ADDRESS},
        "email": user["email"],
        "payment_methods": {m["id"]: _payment_method(m) for m in methods},
        "orders": [o["order_id"] for o in orders],
    }


def order_record(query: Query, order_id: str) -> dict[str, Any] | None:
    found = query("SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if not found:
        return None
    order = found[0]
    key = (order_id,)
    items = query("SELECT * FROM order_items WHERE order_id = ? ORDER BY line", key)
    options = _grouped(
        query("SELECT * FROM order_item_options WHERE order_id = ? ORDER BY line, position", key), "line"
    )
    shipments = query("SELECT fulfillment FROM fulfillments WHERE order_id = ? ORDER BY fulfillment", key)
    tracking = _grouped(
        query("SELECT * FROM fulfillment_tracking WHERE order_id = ? ORDER BY fulfillment, position", key),
        "fulfillment",
    )
    shipped = _grouped(
        query("SELECT * FROM fulfillment_items WHERE order_id = ? ORDER BY fulfillment, position", key),
        "fulfillment",
    )
    payments = query(
        "SELECT transaction_type, amount, payment_method_id FROM order_payments WHERE order_id = ? ORDER BY position",
        key,
    )
    requested = _grouped(
        query("SELECT * FROM order_requested_items WHERE order_id = ? ORDER BY request, position", key),
        "request",
    )

    def requested_items(request: str, method: str) -> list[str] | None:
        if order[method] is None:
            return None
        return [row["item_id"] for row in requested[request]]

    return {
        "order_id": order["order_id"],
        "user_id": order["user_id"],
        "address": {field: order[field] for field in ADDRESS},
        "items": [
            {
                "name": item["name"],
                "product_id": item["product_id"],
                "item_id": item["item_id"],
                "price": item["price"],
                "options": {o["option"]: o["value"] for o in options[item["line"]]},
            }
            for item in items
        ],
        "status": order["status"],
        "fulfillments": [
            {
                "tracking_id": [t["tracking_id"] for t in tracking[s["fulfillment"]]],
                "item_ids": [i["item_id"] for i in shipped[s["fulfillment"]]],
            }
            for s in shipments
        ],
        "payment_history": payments,
        "cancel_reason": order["cancel_reason"],
        "exchange_items": requested_items("exchange", "exchange_payment_method_id"),
        "exchange_new_items": requested_items("exchange_new", "exchange_payment_method_id"),
        "exchange_payment_method_id": order["exchange_payment_method_id"],
        "exchange_price_difference": order["exchange_price_difference"],
        "return_items": requested_items("return", "return_payment_method_id"),
        "return_payment_method_id": order["return_payment_method_id"],
    }
