"""Order tools: listing and reading orders, cancelling, changing where they ship, and notes."""

import re
from datetime import date

from atoll.worlds import ToolContext, ToolError

from .. import data
from ..world import world
from . import _common as c

_SUMMARY = (
    "SELECT o.id, o.customer_id, o.placed_at, o.status, o.total, "
    "(SELECT count(*) FROM order_items i WHERE i.order_id = o.id) AS item_count, "
    "(SELECT group_concat(product_name, '; ') FROM order_items i WHERE i.order_id = o.id) AS items "
    "FROM orders o"
)


@world.tool(writes=False)
def list_customer_orders(
    ctx: ToolContext, customer_id: str, status: c.OrderStatus | None = None
) -> list[dict]:
    """List a customer's orders, newest first, with status, total and what was bought.

    Args:
        customer_id: The customer id, for example "CUS-0042".
        status: Only orders in this status.
    """
    row = c.customer(ctx, customer_id)
    sql, params = f"{_SUMMARY} WHERE o.customer_id = ?", [row["id"]]
    if status is not None:
        sql += " AND o.status = ?"
        params.append(status)
    return ctx.rows(f"{sql} ORDER BY o.placed_at DESC", tuple(params))


def _day(text: str | None, field: str) -> str | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise ToolError(
            "invalid_argument", f"{field} must be a date like 2026-02-14, got {text!r}.", field=field
        ) from None


@world.tool(writes=False)
def search_orders(
    ctx: ToolContext,
    customer_email: str | None = None,
    status: c.OrderStatus | None = None,
    product: str | None = None,
    placed_after: str | None = None,
    placed_before: str | None = None,
    limit: int = 20,
) -> list[dict]:
    """Search all orders by customer email, status, product and date placed; newest first.

    Args:
        customer_email: The email address of the account that placed the order.
        status: Only orders in this status.
        product: Part of a product name in the order, for example "espresso".
        placed_after: Only orders placed on or after this date, YYYY-MM-DD.
        placed_before: Only orders placed before this date, YYYY-MM-DD.
        limit: At most this many orders (1 to 100).
    """
    clauses, params = [], []
    if customer_email:
        clauses.append("o.customer_id IN (SELECT id FROM customers WHERE lower(email) = lower(?))")
        params.append(customer_email.strip())
    if status:
        clauses.append("o.status = ?")
        params.append(status)
    if product and product.strip():
        clauses.append("o.id IN (SELECT order_id FROM order_items WHERE product_name LIKE ?)")
        params.append(f"%{product.strip()}%")
    after, before = _day(placed_after, "placed_after"), _day(placed_before, "placed_before")
    if after:
        clauses.append("o.placed_at >= ?")
        params.append(after)
    if before:
        clauses.append("o.placed_at < ?")
        params.append(before)
    if not 1 <= limit <= 100:
        raise ToolError("invalid_argument", "limit must be between 1 and 100.", field="limit")
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return ctx.rows(f"{_SUMMARY}{where} ORDER BY o.placed_at DESC LIMIT ?", (*params, limit))


@world.tool(writes=False)
def get_order(ctx: ToolContext, order_id: str) -> dict:
    """Show one order in full: items, payments, shipments, refunds, returns, exchanges and notes.

    Each item has its refund_value (price plus its share of tax) and final_sale flag. `refundable` is what can still be refunded: captured payments minus refunds so far.

    Args:
        order_id: The order id, for example "ORD-1042".
    """
    row = c.order(ctx, order_id)
    oid = row["id"]
    customer = ctx.one(
        "SELECT first_name || ' ' || last_name AS name, email, tier FROM customers WHERE id = ?",
        (row["customer_id"],),
    )
    items = ctx.rows(
        "SELECT i.id, i.product_id, i.product_name, i.quantity, i.unit_price, i.status, i.refund_id, "
        "p.final_sale FROM order_items i JOIN products p ON p.id = i.product_id WHERE i.order_id = ? ORDER BY i.id",
        (oid,),
    )
    for item in items:
        item["final_sale"] = bool(item["final_sale"])
        item["refund_value"] = c.item_refund_value(row, item)
    return {
        **row,
        "customer": {"id": row["customer_id"], **customer},
        "items": items,
        "payments": ctx.rows(
            "SELECT id, method, card_brand, card_last4, amount, captured_amount, refunded_amount, "
            "status FROM payments WHERE order_id = ? ORDER BY id",
            (oid,),
        ),
        "refundable": c.refundable(ctx, oid),
        "shipments": ctx.rows(
            "SELECT id, carrier, service, tracking_number, status, shipped_at, promised_date, "
            "delivered_at, replaces_shipment_id, contents FROM shipments WHERE order_id = ? "
            "ORDER BY created_at, id",
            (oid,),
        ),
        "refunds": ctx.rows(
            "SELECT id, amount, kind, method, reason, created_at FROM refunds WHERE order_id = ? "
            "ORDER BY created_at, id",
            (oid,),
        ),
        "returns": [
            {
                **r,
                "item_ids": [
                    x["order_item_id"]
                    for x in ctx.rows(
                        "SELECT order_item_id FROM return_items WHERE return_id = ? ORDER BY order_item_id",
                        (r["id"],),
                    )
                ],
            }
            for r in ctx.rows(
                "SELECT id, status, reason, tracking_number, created_at, received_at FROM returns "
                "WHERE order_id = ? ORDER BY created_at, id",
                (oid,),
            )
        ],
        "exchanges": ctx.rows(
            "SELECT id, order_item_id, new_product_id, status, created_at FROM exchanges "
            "WHERE order_id = ? ORDER BY created_at, id",
            (oid,),
        ),
        "notes": ctx.rows(
            "SELECT author, body, created_at FROM order_notes WHERE order_id = ? ORDER BY created_at, id",
            (oid,),
        ),
    }


@world.tool(writes=True)
def cancel_order(ctx: ToolContext, order_id: str, reason: str) -> dict:
    """Cancel an order that has not shipped yet (status pending or processing).

    Voids the payment authorisation, or refunds captured payments in full to where they came from,
    returns the items to stock and voids any shipping label.

    Args:
        order_id: The order id, for example "ORD-1042".
        reason: Why it is cancelled, for example "Customer ordered the wrong colour".
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    oid = row["id"]
    if row["status"] not in ("pending", "processing"):
        raise ToolError(
            "invalid_state",
            f"Order {oid} is {row['status']}; only pending or processing orders can be cancelled.",
            status=row["status"],
        )
    moving = ctx.one(
        "SELECT id, status FROM shipments WHERE order_id = ? AND status != 'label_created' "
        "AND status != 'cancelled'",
        (oid,),
    )
    if moving is not None:
        raise ToolError(
            "invalid_state",
            f"Order {oid} has left the warehouse (shipment {moving['id']} is "
            f"{moving['status']}); it can no longer be cancelled.",
            shipment_status=moving["status"],
        )
    now = ctx.timestamp()
    refund_id = None
    captured = c.refundable(ctx, oid)
    if captured > 0:
        refund_id = c.record_refund(
            ctx,
            row,
            captured,
            kind="cancellation",
            method="original_payment",
            reason=f"Order cancelled: {reason}",
        )
    ctx.execute("UPDATE payments SET status = 'voided' WHERE order_id = ? AND status = 'authorized'", (oid,))
    for item in ctx.rows(
        "SELECT product_id, quantity FROM order_items WHERE order_id = ? AND status = 'active'", (oid,)
    ):
        ctx.execute(
            "UPDATE products SET stock = stock + ? WHERE id = ?", (item["quantity"], item["product_id"])
        )
    ctx.execute(
        "UPDATE order_items SET status = 'cancelled' WHERE order_id = ? AND status = 'active'", (oid,)
    )
    for shipment in ctx.rows(
        "SELECT id FROM shipments WHERE order_id = ? AND status = 'label_created'", (oid,)
    ):
        ctx.execute("UPDATE shipments SET status = 'cancelled' WHERE id = ?", (shipment["id"],))
        ctx.execute(
            "INSERT INTO shipment_events (shipment_id, seq, occurred_at, status, location, description) "
            "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, 'cancelled', ?, 'Label voided by shipper' "
            "FROM shipment_events WHERE shipment_id = ?",
            (shipment["id"], now, data.WAREHOUSE, shipment["id"]),
        )
    ctx.execute(
        "UPDATE orders SET status = 'cancelled', cancel_reason = ?, updated_at = ? WHERE id = ?",
        (reason, now, oid),
    )
    return {
        "order_id": oid,
        "status": "cancelled",
        "refund_id": refund_id,
        "refunded": captured,
        "authorization_voided": captured == 0,
    }


@world.tool(writes=True)
def update_shipping_address(
    ctx: ToolContext,
    order_id: str,
    line1: str,
    city: str,
    state: str,
    zip_code: str,
    line2: str | None = None,
) -> dict:
    """Change where an order ships, while it has not left the warehouse (status pending or processing).

    Only US addresses are accepted. The customer's saved addresses are not changed.

    Args:
        order_id: The order id, for example "ORD-1042".
        line1: Street address, for example "48 Prospect Park W".
        city: City, for example "Brooklyn".
        state: Two-letter state code, for example "NY".
        zip_code: Five-digit ZIP code, for example "11215".
        line2: Apartment, suite or unit, if any, for example "Apt 3B".
    """
    row = c.order(ctx, order_id)
    oid = row["id"]
    line1, city = c.require_text(line1, "line1"), c.require_text(city, "city")
    state = state.strip().upper()
    if state not in c.US_STATES:
        raise ToolError(
            "invalid_argument", f"{state!r} is not a US state code; use two letters like NY.", field="state"
        )
    if not re.fullmatch(r"\d{5}", zip_code.strip()):
        raise ToolError("invalid_argument", f"{zip_code!r} is not a five-digit ZIP code.", field="zip_code")
    if row["status"] not in ("pending", "processing"):
        raise ToolError(
            "invalid_state",
            f"Order {oid} is {row['status']}; the address can only change before it ships.",
            status=row["status"],
        )
    moving = ctx.one(
        "SELECT id, status FROM shipments WHERE order_id = ? AND status NOT IN "
        "('label_created', 'cancelled')",
        (oid,),
    )
    if moving is not None:
        raise ToolError(
            "invalid_state",
            f"Order {oid} has left the warehouse; its address can't change.",
            shipment_status=moving["status"],
        )
    line2 = line2.strip() or None if line2 is not None else None
    ctx.execute(
        "UPDATE orders SET ship_line1 = ?, ship_line2 = ?, ship_city = ?, ship_state = ?, ship_zip = ?, "
        "updated_at = ? WHERE id = ?",
        (line1, line2, city, state, zip_code.strip(), ctx.timestamp(), oid),
    )
    return ctx.one(
        "SELECT id AS order_id, ship_name, ship_line1, ship_line2, ship_city, ship_state, ship_zip "
        "FROM orders WHERE id = ?",
        (oid,),
    )


@world.tool(writes=True)
def add_order_note(ctx: ToolContext, order_id: str, note: str) -> dict:
    """Add an internal note to an order, for the team; customers never see notes.

    Args:
        order_id: The order id, for example "ORD-1042".
        note: What happened or what was agreed, for example "Customer reported two plates cracked".
    """
    row = c.order(ctx, order_id)
    note_id = ctx.new_id("NOTE")
    ctx.execute(
        "INSERT INTO order_notes (id, order_id, author, body, created_at) VALUES (?, ?, 'agent', ?, ?)",
        (note_id, row["id"], c.require_text(note, "note"), ctx.timestamp()),
    )
    return {"note_id": note_id, "order_id": row["id"]}
