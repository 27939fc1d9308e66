"""Refund tools: a whole order, some of its items, or an amount.

Each refuses to pay back more than was captured minus what was refunded before.
"""

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c


def _refundable_order(row: dict) -> None:
    if row["status"] == "pending":
        raise ToolError(
            "invalid_state",
            f"Order {row['id']} is pending: nothing has been charged yet. Cancel it instead.",
            status=row["status"],
        )
    if row["status"] == "cancelled":
        raise ToolError(
            "invalid_state",
            f"Order {row['id']} is cancelled; its payment was already released.",
            status=row["status"],
        )


@world.tool(writes=True)
def refund_order(
    ctx: ToolContext, order_id: str, reason: str, method: c.RefundMethod = "original_payment"
) -> dict:
    """Refund everything still refundable on an order and mark all its remaining items refunded.

    Pays back captured payments minus earlier refunds, to the original payment method unless store
    credit is asked for. The order's status becomes refunded.

    Args:
        order_id: The order id, for example "ORD-1042".
        reason: Why, for example "Package lost in transit".
        method: "original_payment" (the card or PayPal account that paid) or "store_credit".
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    _refundable_order(row)
    amount = c.refundable(ctx, row["id"])
    if amount <= 0:
        raise ToolError(
            "exceeds_paid", f"Order {row['id']} has already been refunded in full.", refundable=0.0
        )
    refund_id = c.record_refund(ctx, row, amount, kind="full", method=method, reason=reason)
    ctx.execute(
        "UPDATE order_items SET status = 'refunded', refund_id = ? WHERE order_id = ? "
        "AND status NOT IN ('refunded', 'cancelled')",
        (refund_id, row["id"]),
    )
    ctx.execute(
        "UPDATE returns SET status = 'refunded' WHERE order_id = ? AND status = 'received'", (row["id"],)
    )
    ctx.execute(
        "UPDATE orders SET status = 'refunded', updated_at = ? WHERE id = ?", (ctx.timestamp(), row["id"])
    )
    return c.refund_summary(ctx, refund_id)


@world.tool(writes=True)
def refund_items(
    ctx: ToolContext,
    order_id: str,
    item_ids: list[str],
    reason: str,
    method: c.RefundMethod = "original_payment",
) -> dict:
    """Refund whole order lines: each line's price times quantity plus its share of tax.

    Shipping is not refunded; get_order shows each line's refund_value. Items that are active, awaiting return or returned can be refunded, once. When every item of the
    order has been refunded, the order's status becomes returned (if they came back) or refunded.

    Args:
        order_id: The order id, for example "ORD-1042".
        item_ids: The order lines to refund, for example ["ITM-1042-1"].
        reason: Why, for example "Arrived damaged".
        method: "original_payment" (the card or PayPal account that paid) or "store_credit".
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    items = c.order_items(ctx, row, item_ids)
    _refundable_order(row)
    for item in items:
        if item["status"] not in ("active", "return_requested", "returned"):
            raise ToolError(
                "invalid_state",
                f"Item {item['id']} is {item['status']} and can't be refunded.",
                item_id=item["id"],
                status=item["status"],
            )
    amount = c.money(sum(c.item_refund_value(row, item) for item in items))
    left = c.refundable(ctx, row["id"])
    if left < amount <= left + 0.01 * len(items):  # per-line tax rounding may pass the order's tax by cents
        amount = left
    refund_id = c.record_refund(ctx, row, amount, kind="items", method=method, reason=reason)
    for item in items:
        ctx.execute(
            "UPDATE order_items SET status = 'refunded', refund_id = ? WHERE id = ?", (refund_id, item["id"])
        )
    # A received return whose every item is now refunded is finished.
    ctx.execute(
        "UPDATE returns SET status = 'refunded' WHERE order_id = ? AND status = 'received' AND NOT EXISTS ("
        "SELECT 1 FROM return_items ri JOIN order_items i ON i.id = ri.order_item_id "
        "WHERE ri.return_id = returns.id AND i.status != 'refunded')",
        (row["id"],),
    )
    left = ctx.one(
        "SELECT count(*) AS n FROM order_items WHERE order_id = ? AND status NOT IN "
        "('refunded', 'cancelled')",
        (row["id"],),
    )["n"]
    if left == 0:
        came_back = (
            all(item["status"] == "returned" for item in items)
            and ctx.one("SELECT 1 FROM returns WHERE order_id = ?", (row["id"],)) is not None
        )
        ctx.execute(
            "UPDATE orders SET status = ?, updated_at = ? WHERE id = ?",
            ("returned" if came_back else "refunded", ctx.timestamp(), row["id"]),
        )
    return {**c.refund_summary(ctx, refund_id), "item_ids": [item["id"] for item in items]}


@world.tool(writes=True)
def partial_refund(
    ctx: ToolContext, order_id: str, amount: float, reason: str, method: c.RefundMethod = "original_payment"
) -> dict:
    """Refund a dollar amount on an order without refunding any item.

    For example a discount for minor damage the customer keeps. Item statuses do not change.

    Args:
        order_id: The order id, for example "ORD-1042".
        amount: Dollars to refund, for example 15.00; at most the order's refundable amount.
        reason: Why, for example "Small chip in the glaze, customer keeps the lamp".
        method: "original_payment" (the card or PayPal account that paid) or "store_credit".
    """
    row = c.order(ctx, order_id)
    amount = c.check_amount(amount)
    reason = c.require_text(reason, "reason")
    _refundable_order(row)
    refund_id = c.record_refund(ctx, row, amount, kind="amount", method=method, reason=reason)
    return c.refund_summary(ctx, refund_id)
