"""Fulfilment tools: tracking parcels, returns, exchanges and replacement shipments."""

import json
from datetime import timedelta

from atoll.worlds import ToolContext, ToolError

from .. import data
from ..world import world
from . import _common as c


def _tracking_number(ctx: ToolContext, pattern: str) -> str:
    head = pattern.rstrip("#?")
    alphabet = "0123456789" if pattern.endswith("#") else "0123456789ABCDEFGHJKLMNPRTVWXY"
    while True:
        number = head + "".join(ctx.rng.choices(alphabet, k=len(pattern) - len(head)))
        taken = ctx.one(
            "SELECT 1 FROM shipments WHERE tracking_number = ? UNION ALL "
            "SELECT 1 FROM returns WHERE tracking_number = ?",
            (number, number),
        )
        if taken is None:
            return number


def _delivered(row: dict, action: str) -> None:
    if row["status"] != "delivered":
        raise ToolError(
            "invalid_state",
            f"Order {row['id']} is {row['status']}; only delivered orders can {action}.",
            status=row["status"],
        )


@world.tool(writes=False)
def track_shipment(
    ctx: ToolContext, order_id: str | None = None, tracking_number: str | None = None
) -> list[dict]:
    """Show an order's shipments (or one shipment by tracking number) with every carrier scan so far.

    Args:
        order_id: The order id, for example "ORD-1042".
        tracking_number: A carrier tracking number, for example "1Z4F7K2M9Q0B8X6W1R".
    """
    if order_id:
        oid = c.order(ctx, order_id)["id"]
        shipments = ctx.rows("SELECT * FROM shipments WHERE order_id = ? ORDER BY created_at, id", (oid,))
    elif tracking_number:
        shipments = ctx.rows(
            "SELECT * FROM shipments WHERE tracking_number = ?", (tracking_number.strip().upper(),)
        )
        if not shipments:
            raise ToolError(
                "not_found",
                f"No shipment with tracking number {tracking_number}.",
                tracking_number=tracking_number,
            )
    else:
        raise ToolError("invalid_argument", "Give an order_id or a tracking_number.")
    for shipment in shipments:
        shipment["events"] = ctx.rows(
            "SELECT occurred_at, status, location, description FROM shipment_events "
            "WHERE shipment_id = ? ORDER BY seq",
            (shipment["id"],),
        )
    return shipments


@world.tool(writes=True)
def start_return(ctx: ToolContext, order_id: str, item_ids: list[str], reason: str) -> dict:
    """Open a return for items of a delivered order and email the customer a prepaid return label.

    The items become return_requested. The warehouse marks the return received when it arrives; refund
    the items with refund_items after that.

    Args:
        order_id: The order id, for example "ORD-1042".
        item_ids: The order lines coming back, for example ["ITM-1042-1"].
        reason: Why, for example "Doesn't fit".
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    items = c.order_items(ctx, row, item_ids)
    _delivered(row, "be returned")
    for item in items:
        if item["status"] != "active":
            raise ToolError(
                "invalid_state",
                f"Item {item['id']} is {item['status']} and can't be returned.",
                item_id=item["id"],
                status=item["status"],
            )
    return_id = ctx.new_id("RMA")
    tracking = _tracking_number(ctx, "1Z????????????????")
    ctx.execute(
        "INSERT INTO returns (id, order_id, status, reason, tracking_number, created_at) "
        "VALUES (?, ?, 'label_sent', ?, ?, ?)",
        (return_id, row["id"], reason, tracking, ctx.timestamp()),
    )
    for item in items:
        ctx.execute(
            "INSERT INTO return_items (return_id, order_item_id) VALUES (?, ?)", (return_id, item["id"])
        )
        ctx.execute("UPDATE order_items SET status = 'return_requested' WHERE id = ?", (item["id"],))
    return {
        "return_id": return_id,
        "order_id": row["id"],
        "item_ids": [item["id"] for item in items],
        "label_tracking_number": tracking,
        "status": "label_sent",
    }


@world.tool(writes=True)
def exchange_item(ctx: ToolContext, order_id: str, item_id: str, new_product_id: str, reason: str) -> dict:
    """Exchange a delivered item for another size or colour of the same product, at the same price.

    Reserves the new variant from stock and ships it once the original is on its way back.

    Args:
        order_id: The order id, for example "ORD-1042".
        item_id: The order line to exchange, for example "ITM-1042-1".
        new_product_id: The variant wanted instead, for example "PRD-1047"; get_product lists a product's
            variants and their stock.
        reason: Why, for example "Too small".
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    (item,) = c.order_items(ctx, row, [item_id])
    new = c.product(ctx, new_product_id)
    old = c.product(ctx, item["product_id"])
    _delivered(row, "have items exchanged")
    if item["status"] != "active":
        raise ToolError(
            "invalid_state",
            f"Item {item['id']} is {item['status']} and can't be exchanged.",
            item_id=item["id"],
            status=item["status"],
        )
    if new["family"] != old["family"] or new["id"] == old["id"]:
        raise ToolError(
            "invalid_argument",
            f"{new['id']} is not another variant of {old['name']}; exchanges "
            "are for a different size or colour of the same product.",
            field="new_product_id",
        )
    if new["stock"] < item["quantity"]:
        raise ToolError(
            "out_of_stock",
            f"{new['name']} ({new['variant']}) has {new['stock']} in stock; {item['quantity']} needed.",
            product_id=new["id"],
            stock=new["stock"],
        )
    exchange_id = ctx.new_id("EXC")
    ctx.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (item["quantity"], new["id"]))
    ctx.execute(
        "INSERT INTO exchanges (id, order_id, order_item_id, new_product_id, quantity, status, reason, created_at) "
        "VALUES (?, ?, ?, ?, ?, 'awaiting_return', ?, ?)",
        (exchange_id, row["id"], item["id"], new["id"], item["quantity"], reason, ctx.timestamp()),
    )
    ctx.execute("UPDATE order_items SET status = 'exchanged' WHERE id = ?", (item["id"],))
    return {
        "exchange_id": exchange_id,
        "order_id": row["id"],
        "item_id": item["id"],
        "new_product": f"{new['name']} ({new['variant']})",
        "status": "awaiting_return",
    }


@world.tool(writes=True)
def reship_order(ctx: ToolContext, order_id: str, reason: str, item_ids: list[str] | None = None) -> dict:
    """Send a free replacement parcel for a shipped or delivered order: the whole order, or some items.

    Takes the items from stock and creates a new shipment with the original carrier.

    Args:
        order_id: The order id, for example "ORD-1042".
        reason: Why, for example "Lost in transit" or "Plates arrived cracked".
        item_ids: The order lines to replace, for example ["ITM-1042-1"]; leave out to replace every active
            item.
    """
    row = c.order(ctx, order_id)
    reason = c.require_text(reason, "reason")
    oid = row["id"]
    if item_ids is not None:
        items = c.order_items(ctx, row, item_ids)
    else:
        items = ctx.rows(
            "SELECT * FROM order_items WHERE order_id = ? AND status = 'active' ORDER BY id", (oid,)
        )
    if row["status"] not in ("shipped", "delivered"):
        raise ToolError(
            "invalid_state",
            f"Order {oid} is {row['status']}; only shipped or delivered orders can be reshipped.",
            status=row["status"],
        )
    if not items:
        raise ToolError("invalid_state", f"Order {oid} has no active items to replace.")
    for item in items:
        if item["status"] != "active":
            raise ToolError(
                "invalid_state",
                f"Item {item['id']} is {item['status']} and can't be reshipped.",
                item_id=item["id"],
                status=item["status"],
            )
        stock = c.product(ctx, item["product_id"])["stock"]
        if stock < item["quantity"]:
            raise ToolError(
                "out_of_stock",
                f"{item['product_name']} has {stock} in stock; {item['quantity']} needed.",
                product_id=item["product_id"],
                stock=stock,
            )
    original = ctx.one("SELECT * FROM shipments WHERE order_id = ? ORDER BY created_at, id LIMIT 1", (oid,))
    if original is None:
        raise ToolError("invalid_state", f"Order {oid} has no shipment to replace.")
    for item in items:
        ctx.execute(
            "UPDATE products SET stock = stock - ? WHERE id = ?", (item["quantity"], item["product_id"])
        )
    count = ctx.one("SELECT count(*) AS n FROM shipments WHERE order_id = ?", (oid,))["n"]
    shipment_id = f"SHP-{oid.split('-', 1)[1]}-{count + 1}"
    carrier = next(x for x in data.CARRIERS if x[:2] == (original["carrier"], original["service"]))
    now = ctx.timestamp()
    promised = ctx.today() + timedelta(days=1 + carrier[2])
    tracking = _tracking_number(ctx, carrier[3])
    ctx.execute(
        "INSERT INTO shipments (id, order_id, carrier, service, tracking_number, status, created_at, promised_date, "
        "replaces_shipment_id, contents) VALUES (?, ?, ?, ?, ?, 'label_created', ?, ?, ?, ?)",
        (
            shipment_id,
            oid,
            original["carrier"],
            original["service"],
            tracking,
            now,
            promised.isoformat(),
            original["id"],
            None if item_ids is None else json.dumps([item["id"] for item in items]),
        ),
    )
    ctx.execute(
        "INSERT INTO shipment_events (shipment_id, seq, occurred_at, status, location, description) "
        "VALUES (?, 1, ?, 'label_created', ?, ?)",
        (shipment_id, now, data.WAREHOUSE, f"Replacement label created: {reason}"),
    )
    return {
        "shipment_id": shipment_id,
        "order_id": oid,
        "carrier": original["carrier"],
        "tracking_number": tracking,
        "promised_date": promised.isoformat(),
        "item_ids": [item["id"] for item in items],
    }
