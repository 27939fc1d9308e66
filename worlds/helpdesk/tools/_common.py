"""What several helpdesk tools share: lookups that refuse unknown ids, money checks and the refund ledger.

The tools enforce data integrity only (no refund above what was captured, no cancelling a parcel that
left the warehouse); the support policy is the agent's to follow.
"""

import math
from typing import Literal

from atoll.worlds import ToolContext, ToolError

RefundMethod = Literal["original_payment", "store_credit"]
OrderStatus = Literal["pending", "processing", "shipped", "delivered", "cancelled", "returned", "refunded"]
TicketStatus = Literal["open", "pending", "escalated", "closed"]
TicketCategory = Literal[
    "damaged_item",
    "late_delivery",
    "where_is_my_order",
    "return_request",
    "cancellation",
    "address_change",
    "exchange",
    "billing",
    "product_question",
    "account",
    "other",
]

US_STATES = frozenset(
    [
        "AL",
        "AK",
        "AZ",
        "AR",
        "CA",
        "CO",
        "CT",
        "DE",
        "DC",
        "FL",
        "GA",
        "HI",
        "ID",
        "IL",
        "IN",
        "IA",
        "KS",
        "KY",
        "LA",
        "ME",
        "MD",
        "MA",
        "MI",
        "MN",
        "MS",
        "MO",
        "MT",
        "NE",
        "NV",
        "NH",
        "NJ",
        "NM",
        "NY",
        "NC",
        "ND",
        "OH",
        "OK",
        "OR",
        "PA",
        "RI",
        "SC",
        "SD",
        "TN",
        "TX",
        "UT",
        "VT",
        "VA",
        "WA",
        "WV",
        "WI",
        "WY",
    ]
)


def money(value: float) -> float:
    """Dollars rounded to cents (the epsilon keeps 0.125 from rounding down on binary floats)."""
    return round(value + 1e-9, 2)


MAX_AMOUNT = 1_000_000.0


def check_amount(amount: float, field: str = "amount") -> float:
    """A positive amount in whole cents, at most MAX_AMOUNT (beyond it the cents check overflows)."""
    if not math.isfinite(amount) or amount <= 0:
        raise ToolError("invalid_argument", f"{field} must be more than 0, got {amount}.", field=field)
    if amount > MAX_AMOUNT:
        raise ToolError(
            "invalid_argument", f"{field} must be at most ${MAX_AMOUNT:,.2f}, got {amount:g}.", field=field
        )
    if abs(amount * 100 - round(amount * 100)) > 1e-6:
        raise ToolError("invalid_argument", f"{field} must be in whole cents, got {amount}.", field=field)
    return money(amount)


def require_text(value: str, field: str) -> str:
    text = value.strip()
    if not text:
        raise ToolError("invalid_argument", f"{field} must not be empty.", field=field)
    return text


def customer(ctx: ToolContext, customer_id: str) -> dict:
    row = ctx.one("SELECT * FROM customers WHERE id = ?", (customer_id.strip().upper(),))
    if row is None:
        raise ToolError(
            "not_found",
            f"No customer {customer_id}. Customer ids look like CUS-0042; "
            "find_customer searches by email, name or phone.",
            customer_id=customer_id,
        )
    return row


def order(ctx: ToolContext, order_id: str) -> dict:
    row = ctx.one("SELECT * FROM orders WHERE id = ?", (order_id.strip().upper(),))
    if row is None:
        raise ToolError("not_found", f"No order {order_id}. Order ids look like ORD-1042.", order_id=order_id)
    return row


def ticket(ctx: ToolContext, ticket_id: str) -> dict:
    row = ctx.one("SELECT * FROM tickets WHERE id = ?", (ticket_id.strip().upper(),))
    if row is None:
        raise ToolError(
            "not_found", f"No ticket {ticket_id}. Ticket ids look like TKT-5012.", ticket_id=ticket_id
        )
    return row


def product(ctx: ToolContext, product_id: str) -> dict:
    row = ctx.one("SELECT * FROM products WHERE id = ?", (product_id.strip().upper(),))
    if row is None:
        raise ToolError(
            "not_found", f"No product {product_id}. Product ids look like PRD-1012.", product_id=product_id
        )
    return row


def order_items(ctx: ToolContext, order_row: dict, item_ids: list[str]) -> list[dict]:
    """The named lines of one order, refusing duplicates and lines of other orders."""
    if not item_ids:
        raise ToolError("invalid_argument", "item_ids must name at least one order item.", field="item_ids")
    wanted = [item_id.strip().upper() for item_id in item_ids]
    if len(set(wanted)) != len(wanted):
        raise ToolError("invalid_argument", "item_ids lists an item twice.", field="item_ids")
    items = []
    for item_id in wanted:
        item = ctx.one("SELECT * FROM order_items WHERE id = ? AND order_id = ?", (item_id, order_row["id"]))
        if item is None:
            raise ToolError(
                "not_found",
                f"Order {order_row['id']} has no item {item_id}; get_order lists its items.",
                item_id=item_id,
            )
        items.append(item)
    return items


def item_refund_value(order_row: dict, item: dict) -> float:
    """What refunding a line pays back: its price times quantity, plus its share of tax."""
    return money(item["unit_price"] * item["quantity"] * (1 + order_row["tax_rate"]))


def refundable(ctx: ToolContext, order_id: str) -> float:
    """Captured minus already refunded, over all of the order's payments."""
    row = ctx.one(
        "SELECT COALESCE(SUM(captured_amount - refunded_amount), 0) AS left FROM payments WHERE order_id = ?",
        (order_id,),
    )
    return money(row["left"])


def record_refund(
    ctx: ToolContext, order_row: dict, amount: float, *, kind: str, method: str, reason: str
) -> str:
    """Write a refund and spread it over the payments in id order.

    A refund to store credit, and the part of any refund that goes back to a store-credit payment,
    lands in the customer's store-credit ledger.
    """
    left = refundable(ctx, order_row["id"])
    if amount > left + 0.001:
        raise ToolError(
            "exceeds_paid",
            f"Order {order_row['id']} has only ${left:.2f} left to refund "
            f"(captured minus refunds so far); ${amount:.2f} was asked.",
            refundable=left,
            requested=amount,
        )
    now = ctx.timestamp()
    refund_id = ctx.new_id("RFD")
    ctx.execute(
        "INSERT INTO refunds (id, order_id, amount, kind, method, reason, created_by, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 'agent', ?)",
        (refund_id, order_row["id"], amount, kind, method, reason, now),
    )
    remaining, to_credit = amount, 0.0
    payments = ctx.rows("SELECT * FROM payments WHERE order_id = ? ORDER BY id", (order_row["id"],))
    for payment in payments:
        take = money(min(remaining, payment["captured_amount"] - payment["refunded_amount"]))
        if take <= 0:
            continue
        refunded = money(payment["refunded_amount"] + take)
        status = "refunded" if refunded >= payment["captured_amount"] else "partially_refunded"
        ctx.execute(
            "UPDATE payments SET refunded_amount = ?, status = ? WHERE id = ?",
            (refunded, status, payment["id"]),
        )
        if method == "store_credit" or payment["method"] == "store_credit":
            to_credit += take
        remaining = money(remaining - take)
    if to_credit:
        ctx.execute(
            "INSERT INTO store_credits (id, customer_id, amount, kind, reason, order_id, refund_id, created_at) "
            "VALUES (?, ?, ?, 'refund', ?, ?, ?, ?)",
            (
                ctx.new_id("SC"),
                order_row["customer_id"],
                money(to_credit),
                f"Refund: {reason}",
                order_row["id"],
                refund_id,
                now,
            ),
        )
    return refund_id


def refund_summary(ctx: ToolContext, refund_id: str) -> dict:
    refund = ctx.one(
        "SELECT id, order_id, amount, kind, method, reason, created_at FROM refunds WHERE id = ?",
        (refund_id,),
    )
    refund["refundable_left"] = refundable(ctx, refund["order_id"])
    return refund


def store_credit_balance(ctx: ToolContext, customer_id: str) -> float:
    row = ctx.one(
        "SELECT COALESCE(SUM(amount), 0) AS balance FROM store_credits WHERE customer_id = ?", (customer_id,)
    )
    return money(row["balance"])
