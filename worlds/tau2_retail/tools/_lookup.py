"""The lookups several retail tools share, refusing with τ²'s own error texts.

τ²'s tools raise `ValueError("Order not found")` and the like, and its environment shows the agent
"Error: Order not found"; these raise a ToolError with the same message, which the world shows the
agent in the same words (its observation is "text"). Ids are looked up as τ²'s dicts look them up (`key`).
"""

from typing import Any

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import key

Row = dict[str, Any]


def order(ctx: ToolContext, order_id: str) -> Row:
    row = ctx.one("SELECT * FROM orders WHERE order_id = ?", (key(order_id),))
    if row is None:
        raise ToolError("not_found", "Order not found")
    return row


def user(ctx: ToolContext, user_id: str) -> Row:
    row = ctx.one("SELECT * FROM users WHERE user_id = ?", (key(user_id),))
    if row is None:
        raise ToolError("not_found", "User not found")
    return row


def product(ctx: ToolContext, product_id: str) -> Row:
    row = ctx.one("SELECT * FROM products WHERE product_id = ?", (key(product_id),))
    if row is None:
        raise ToolError("not_found", "Product not found")
    return row


def variant(ctx: ToolContext, product_id: str, item_id: str) -> Row:
    product(ctx, product_id)
    row = ctx.one("SELECT * FROM variants WHERE product_id = ? AND item_id = ?", (product_id, key(item_id)))
    if row is None:
        raise ToolError("not_found", "Variant not found")
    return row


def payment_method(ctx: ToolContext, user_id: str, payment_method_id: str) -> Row:
    user(ctx, user_id)
    row = ctx.one(
        "SELECT * FROM payment_methods WHERE user_id = ? AND id = ?", (user_id, key(payment_method_id))
    )
    if row is None:
        raise ToolError("not_found", "Payment method not found")
    return row


def first_line(ctx: ToolContext, order_id: str, item_id: str) -> Row | None:
    """The order's first line holding `item_id`, as τ²'s `next(item for item in order.items ...)`."""
    return ctx.one(
        "SELECT * FROM order_items WHERE order_id = ? AND item_id = ? ORDER BY line LIMIT 1",
        (order_id, item_id),
    )


def item_ids(ctx: ToolContext, order_id: str) -> list[str]:
    rows = ctx.rows("SELECT item_id FROM order_items WHERE order_id = ? ORDER BY line", (order_id,))
    return [row["item_id"] for row in rows]


def payments(ctx: ToolContext, order_id: str) -> list[Row]:
    return ctx.rows("SELECT * FROM order_payments WHERE order_id = ? ORDER BY position", (order_id,))


def add_payment(ctx: ToolContext, order_id: str, kind: str, amount: float, payment_method_id: str) -> None:
    """Append one entry to the order's payment history."""
    ctx.execute(
        "INSERT INTO order_payments (order_id, position, transaction_type, amount, payment_method_id) "
        "VALUES (?, (SELECT count(*) FROM order_payments WHERE order_id = ?), ?, ?, ?)",
        (order_id, order_id, kind, amount, payment_method_id),
    )


def add_to_gift_card(ctx: ToolContext, method: Row, amount: float) -> None:
    """Change a gift card's balance by `amount`, rounded to cents as τ² rounds it."""
    ctx.execute(
        "UPDATE payment_methods SET balance = ? WHERE id = ?",
        (round(method["balance"] + amount, 2), method["id"]),
    )


def set_requested(ctx: ToolContext, order_id: str, request: str, items: list[str]) -> None:
    """Replace the order's list of items asked to be returned or exchanged (τ² stores them sorted)."""
    ctx.execute("DELETE FROM order_requested_items WHERE order_id = ? AND request = ?", (order_id, request))
    ctx.db.executemany(
        "INSERT INTO order_requested_items (order_id, request, position, item_id) VALUES (?, ?, ?, ?)",
        [(order_id, request, i, item) for i, item in enumerate(sorted(items))],
    )
