"""A two-table world for engine tests: small enough to compare whole databases."""

from __future__ import annotations

import contextlib
import sqlite3

from atoll.worlds import FixtureContext, Include, ToolContext, ToolError, World

SCHEMA = """
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL, credit REAL NOT NULL DEFAULT 0);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    total REAL NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now'))
);
"""

shop = World(name="shop", version="1", schema=SCHEMA, documents={"policy": "Be kind."})


@shop.tool(writes=False)
def get_customer(ctx: ToolContext, customer_id: str) -> dict:
    """Look up a customer.

    Args:
        customer_id: The customer's id, like "C1".
    """
    row = ctx.one("SELECT * FROM customers WHERE id = ?", (customer_id,))
    if row is None:
        raise ToolError("not_found", f"No customer {customer_id}.")
    return row


@shop.tool(writes=True)
def place_order(ctx: ToolContext, customer_id: str, total: float) -> dict:
    """Place an order for a customer."""
    if ctx.one("SELECT id FROM customers WHERE id = ?", (customer_id,)) is None:
        raise ToolError("not_found", f"No customer {customer_id}.")
    cursor = ctx.execute(
        "INSERT INTO orders (customer_id, total, status) VALUES (?, ?, 'open')", (customer_id, total)
    )
    return {"order_id": cursor.lastrowid, "created_at": ctx.timestamp()}


@shop.tool(writes=True)
def add_customer(ctx: ToolContext, name: str) -> dict:
    """Create a customer with a fresh id."""
    customer_id = ctx.new_id("C")
    ctx.execute("INSERT INTO customers (id, name) VALUES (?, ?)", (customer_id, name))
    return {"customer_id": customer_id}


@shop.tool(writes=True)
def set_status(ctx: ToolContext, order_id: int, status: str) -> dict:
    """Change an order's status."""
    ctx.execute("UPDATE orders SET status = ? WHERE id = ?", (status, order_id))
    return {"ok": True}


@shop.tool(writes=True)
def delete_order(ctx: ToolContext, order_id: int) -> dict:
    """Delete an order."""
    ctx.execute("DELETE FROM orders WHERE id = ?", (order_id,))
    return {"ok": True}


@shop.tool(writes=True)
def credit_then_fail(ctx: ToolContext, customer_id: str, amount: float) -> dict:
    """Add credit, then blow up: a buggy tool."""
    ctx.execute("UPDATE customers SET credit = credit + ? WHERE id = ?", (amount, customer_id))
    raise RuntimeError("bug after a write")


@shop.tool(writes=True)
def credit_and_run(ctx: ToolContext, customer_id: str, sql: str, then_fail: bool = True) -> dict:
    """Add credit and run `sql` too, hiding any error from it: a buggy tool that controls the transaction."""
    ctx.execute("UPDATE customers SET credit = credit + 5 WHERE id = ?", (customer_id,))
    with contextlib.suppress(sqlite3.DatabaseError):
        ctx.execute(sql)
    if then_fail:
        raise RuntimeError("bug after the write")
    return {}


@shop.tool(writes=True)
def interrupt_then_write(ctx: ToolContext, customer_id: str) -> dict:
    """Interrupt its own write, so SQLite rolls the whole transaction back, then write again."""

    def halt() -> int:
        ctx.db.interrupt()
        return 0

    ctx.db.create_function("halt", 0, halt)
    with contextlib.suppress(sqlite3.OperationalError):  # every row: SQLite sees the interrupt between rows
        ctx.execute("UPDATE customers SET credit = credit + halt()")
    ctx.execute("UPDATE customers SET credit = 99 WHERE id = ?", (customer_id,))
    return {}


@shop.tool(writes=True)
def switch_to_autocommit(ctx: ToolContext) -> dict:
    """Turn the connection's isolation level off (which tries a COMMIT): a buggy tool."""
    ctx.db.isolation_level = None
    return {}


@shop.tool(writes=False)
def sneaky_reader(ctx: ToolContext, customer_id: str) -> dict:
    """Declared read-only, but writes."""
    ctx.execute("UPDATE customers SET name = 'x' WHERE id = ?", (customer_id,))
    return {}


@shop.tool(writes=False)
def sql_today(ctx: ToolContext) -> dict:
    """What SQL thinks the date is."""
    return ctx.one("SELECT datetime('now') AS sql_now, date('now', '+1 day') AS tomorrow")


@shop.fixture("tiny", epoch="2026-03-02 09:00:00", seed=1)
def tiny(fx: FixtureContext) -> None:
    """Three customers, five orders."""
    fx.insert("customers", [{"id": f"C{i}", "name": f"Customer {i}", "credit": 0.0} for i in range(1, 4)])
    fx.insert(
        "orders",
        [
            {
                "id": i,
                "customer_id": f"C{1 + i % 3}",
                "total": round(fx.rng.uniform(5, 99), 2),
                "status": "open",
            }
            for i in range(1, 6)
        ],
    )


LOYALTY_SCHEMA = "CREATE TABLE members (customer_id TEXT PRIMARY KEY, points INTEGER NOT NULL);"
loyalty = World(
    name="loyalty",
    schema=LOYALTY_SCHEMA,
    includes=[Include(shop, prefix="shop", fixture="tiny")],
)


@loyalty.tool(writes=True)
def award(ctx: ToolContext, customer_id: str, points: int) -> dict:
    """Award points to a shop customer."""
    if ctx.one("SELECT id FROM shop.customers WHERE id = ?", (customer_id,)) is None:
        raise ToolError("not_found", f"No customer {customer_id}.")
    ctx.execute(
        "INSERT INTO members VALUES (?, ?) ON CONFLICT(customer_id) DO UPDATE SET points = points + excluded.points",
        (customer_id, points),
    )
    return {"ok": True}


@loyalty.fixture("tiny", epoch="2026-03-02 09:00:00")
def loyalty_tiny(fx: FixtureContext) -> None:
    fx.insert("members", [{"customer_id": "C1", "points": 10}])
