"""minidesk: refunds, cancellations, notes and store credit on three orders (suite.yaml: `world: minidesk.world`)."""

from __future__ import annotations

from atoll.worlds import FixtureContext, ToolContext, ToolError, World

SCHEMA = """
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, credit REAL NOT NULL DEFAULT 0);
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    total REAL NOT NULL,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE refunds (
    id TEXT PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders(id),
    amount REAL NOT NULL,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE notes (id INTEGER PRIMARY KEY, order_id TEXT NOT NULL, body TEXT NOT NULL, refund_id TEXT);
"""

world = World(name="minidesk", version="1", schema=SCHEMA, documents={"policy": "Refund damaged orders."})


def _order(ctx: ToolContext, order_id: str) -> dict:
    order = ctx.one("SELECT * FROM orders WHERE id = ?", (order_id,))
    if order is None:
        raise ToolError("not_found", f"No order {order_id}.")
    return order


@world.tool(writes=False)
def get_order(ctx: ToolContext, order_id: str) -> dict:
    """Look up an order.

    Args:
        order_id: Like "ORD-1".
    """
    return _order(ctx, order_id)


@world.tool(writes=True)
def refund_order(ctx: ToolContext, order_id: str, reason: str) -> dict:
    """Refund an order in full and note it on the order."""
    order = _order(ctx, order_id)
    if order["status"] == "refunded":
        raise ToolError("already_refunded", f"{order_id} is already refunded.")
    refund_id = ctx.new_id("RF")
    ctx.execute(
        "INSERT INTO refunds VALUES (?, ?, ?, ?, ?)",
        (refund_id, order_id, order["total"], reason, ctx.timestamp()),
    )
    ctx.execute(
        "UPDATE orders SET status = 'refunded', updated_at = ? WHERE id = ?", (ctx.timestamp(), order_id)
    )
    ctx.execute(
        "INSERT INTO notes (order_id, body, refund_id) VALUES (?, ?, ?)",
        (order_id, f"refunded: {reason}", refund_id),
    )
    return {"refund_id": refund_id, "amount": order["total"]}


@world.tool(writes=True)
def cancel_order(ctx: ToolContext, order_id: str) -> dict:
    """Cancel an order that has not been delivered."""
    order = _order(ctx, order_id)
    if order["status"] == "delivered":
        raise ToolError("too_late", f"{order_id} was delivered; refund it instead.")
    ctx.execute(
        "UPDATE orders SET status = 'cancelled', updated_at = ? WHERE id = ?", (ctx.timestamp(), order_id)
    )
    return {"ok": True}


@world.tool(writes=True)
def add_note(ctx: ToolContext, order_id: str, body: str) -> dict:
    """Add a note to an order."""
    _order(ctx, order_id)
    cursor = ctx.execute("INSERT INTO notes (order_id, body) VALUES (?, ?)", (order_id, body))
    return {"note_id": cursor.lastrowid}


@world.tool(writes=True)
def delete_note(ctx: ToolContext, note_id: int) -> dict:
    """Delete a note."""
    ctx.execute("DELETE FROM notes WHERE id = ?", (note_id,))
    return {"ok": True}


@world.tool(writes=True)
def give_credit(ctx: ToolContext, customer_id: str, amount: float) -> dict:
    """Add store credit to a customer."""
    ctx.execute("UPDATE customers SET credit = credit + ? WHERE id = ?", (amount, customer_id))
    return {"ok": True}


@world.fixture("tiny", epoch="2026-03-02 09:00:00", seed=1)
def tiny(fx: FixtureContext) -> None:
    """Two customers, three orders, one note."""
    fx.insert(
        "customers",
        [
            {"id": "C1", "name": "Ada Moreau", "email": "ada@example.com", "credit": 0.0},
            {"id": "C2", "name": "Bo Chen", "email": "bo@example.com", "credit": 5.0},
        ],
    )
    stamp = "2026-02-20 10:00:00"
    fx.insert(
        "orders",
        [
            {"id": "ORD-1", "customer_id": "C1", "total": 59.99, "status": "delivered", "updated_at": stamp},
            {"id": "ORD-2", "customer_id": "C1", "total": 20.0, "status": "shipped", "updated_at": stamp},
            {"id": "ORD-3", "customer_id": "C2", "total": 35.5, "status": "delivered", "updated_at": stamp},
        ],
    )
    fx.insert("notes", [{"id": 1, "order_id": "ORD-1", "body": "gift wrap", "refund_id": None}])
