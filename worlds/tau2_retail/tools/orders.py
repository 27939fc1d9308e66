"""Order tools: reading an order, and the five changes τ²'s policy allows (cancel, modify address,
items or payment of a pending order; return or exchange items of a delivered one).

Each change checks what τ²'s tool checks, in the same order and with the same error texts, and
leaves the rows τ²'s tool leaves, including two of its quirks that its grader's states depend on:
a cancellation refunds every entry of the payment history, and modifying several items gives each
changed line the price and options of the *last* new item (τ²'s tools.py reuses its loop variable).
"""

from typing import Any

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import tool
from ..records import ADDRESS, order_record
from ..world import world
from . import _lookup
from ._models import OrderPayment, UserAddress

CANCEL_REASONS = {"no longer needed", "ordered by mistake"}


def _answer(ctx: ToolContext, order_id: str) -> dict:
    return order_record(ctx.rows, order_id)


@tool(world, writes=True)
def cancel_pending_order(ctx: ToolContext, order_id: str, reason: str) -> dict:
    """Cancel a pending order. If the order is already processed or delivered,

    it cannot be cancelled. The agent needs to explain the cancellation detail
    and ask for explicit user confirmation (yes/no) to proceed. If the user confirms,
    the order status will be changed to 'cancelled' and the payment will be refunded.
    The refund will be added to the user's gift card balance immediately if the payment
    was made using a gift card, otherwise the refund would take 5-7 business days to process.
    The function returns the order details after the cancellation.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        reason: The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if order["status"] != "pending":
        raise ToolError("invalid_request", "Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError("invalid_argument", "Invalid reason")
    for payment in _lookup.payments(ctx, order_id):
        method = _lookup.payment_method(ctx, order["user_id"], payment["payment_method_id"])
        if method["source"] == "gift_card":  # back on the gift card at once; cards and paypal take days
            _lookup.add_to_gift_card(ctx, method, payment["amount"])
        _lookup.add_payment(ctx, order_id, "refund", payment["amount"], payment["payment_method_id"])
    ctx.execute(
        "UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?", (reason, order_id)
    )
    return _answer(ctx, order_id)


def _price_difference(
    ctx: ToolContext, order_id: str, item_ids: Any, new_item_ids: Any, *, same_id_error: bool
) -> tuple[float, dict | None]:
    """What the new items cost more than the old ones, and the last new item's variant (see the module
    docstring). `same_id_error`: refuse an item swapped for itself, as modifying (not exchanging) does."""
    difference: float = 0  # τ²'s int 0, which stays an int when no item is exchanged
    last = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):  # as τ²: lengths checked before
        if same_id_error and item_id == new_item_id:
            raise ToolError("invalid_argument", "The new item id should be different from the old item id")
        line = _lookup.first_line(ctx, order_id, item_id)
        if line is None:
            raise ToolError("not_found", f"Item {item_id} not found")
        last = _lookup.variant(ctx, line["product_id"], new_item_id)
        if not last["available"]:
            raise ToolError("invalid_request", f"New item {new_item_id} not found or available")
        difference += last["price"] - line["price"]
    return difference, last


def _count_check(ctx: ToolContext, order_id: str, item_ids: Any, message: str) -> None:
    """τ²'s check that each item id is asked for no more often than the order holds it (on the ids as
    given: a text is counted by its characters, as `str.count` counts them)."""
    held = _lookup.item_ids(ctx, order_id)
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise ToolError("not_found", message.format(item_id=item_id))


@tool(world, writes=True)
def exchange_delivered_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> dict:
    """Exchange items in a delivered order to new items of the same product type.

    For a delivered order, return or exchange can be only done once by the agent.
    The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the list.
        new_item_ids: The item ids to be exchanged for, each such as '1008292230'.
            There could be duplicate items in the list. Each new item id should match the item id
            in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference,
            such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up
            from the user or order details.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if order["status"] != "delivered":
        raise ToolError("invalid_request", "Non-delivered order cannot be exchanged")
    _count_check(ctx, order_id, item_ids, "Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("invalid_argument", "The number of items to be exchanged should match.")
    difference, _ = _price_difference(ctx, order_id, item_ids, new_item_ids, same_id_error=False)
    difference = round(difference, 2)
    method = _lookup.payment_method(ctx, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < difference:
        raise ToolError("invalid_request", "Insufficient gift card balance to pay for the price difference")
    ctx.execute(
        "UPDATE orders SET status = 'exchange requested', exchange_payment_method_id = ?, "
        "exchange_price_difference = ? WHERE order_id = ?",
        (payment_method_id, difference, order_id),
    )
    _lookup.set_requested(ctx, order_id, "exchange", item_ids)
    _lookup.set_requested(ctx, order_id, "exchange_new", new_item_ids)
    return _answer(ctx, order_id)


@tool(world, writes=False)
def get_order_details(ctx: ToolContext, order_id: str) -> dict:
    """Get the status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
    """
    return _answer(ctx, _lookup.order(ctx, order_id)["order_id"])


@tool(world, writes=True)
def modify_pending_order_address(
    ctx: ToolContext,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> dict:
    """Modify the shipping address of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if "pending" not in order["status"]:  # τ²'s loose check: 'pending (item modified)' passes too
        raise ToolError("invalid_request", "Non-pending order cannot be modified")
    values = UserAddress(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    ).model_dump()
    ctx.execute(
        f"UPDATE orders SET {', '.join(f'{field} = ?' for field in ADDRESS)} WHERE order_id = ?",
        (*(values[field] for field in ADDRESS), order_id),
    )
    return _answer(ctx, order_id)


@tool(world, writes=True)
def modify_pending_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> dict:
    """Modify items in a pending order to new items of the same product type. For a pending order, this function can only be called once. The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be modified, each such as '1008292230'. There could be duplicate items in the list.
        new_item_ids: The item ids to be modified for, each such as '1008292230'. There could be duplicate items in the list. Each new item id should match the item id in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if order["status"] != "pending":
        raise ToolError("invalid_request", "Non-pending order cannot be modified")
    _count_check(ctx, order_id, item_ids, "{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("invalid_argument", "The number of items to be exchanged should match")
    difference, last = _price_difference(ctx, order_id, item_ids, new_item_ids, same_id_error=True)
    method = _lookup.payment_method(ctx, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < difference:
        raise ToolError("invalid_request", "Insufficient gift card balance to pay for the new item")
    payment = OrderPayment(
        transaction_type="payment" if difference > 0 else "refund",
        amount=abs(difference),
        payment_method_id=payment_method_id,
    )
    _lookup.add_payment(ctx, order_id, payment.transaction_type, payment.amount, payment.payment_method_id)
    if method["source"] == "gift_card":
        _lookup.add_to_gift_card(ctx, method, -difference)
    options = (
        ctx.rows(
            "SELECT option, value FROM variant_options WHERE item_id = ? ORDER BY position",
            (last["item_id"],),
        )
        if last
        else []
    )
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):  # as τ²: lengths checked before
        line = _lookup.first_line(ctx, order_id, item_id)  # after earlier swaps, as τ²'s search runs
        ctx.execute(
            "UPDATE order_items SET item_id = ?, price = ? WHERE order_id = ? AND line = ?",
            (new_item_id, last["price"], order_id, line["line"]),
        )
        ctx.execute(
            "DELETE FROM order_item_options WHERE order_id = ? AND line = ?", (order_id, line["line"])
        )
        ctx.db.executemany(
            "INSERT INTO order_item_options (order_id, line, option, position, value) VALUES (?, ?, ?, ?, ?)",
            [(order_id, line["line"], o["option"], i, o["value"]) for i, o in enumerate(options)],
        )
    ctx.execute("UPDATE orders SET status = 'pending (item modified)' WHERE order_id = ?", (order_id,))
    return _answer(ctx, order_id)


@tool(world, writes=True)
def modify_pending_order_payment(ctx: ToolContext, order_id: str, payment_method_id: str) -> dict:
    """Modify the payment method of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if "pending" not in order["status"]:
        raise ToolError("invalid_request", "Non-pending order cannot be modified")
    method = _lookup.payment_method(ctx, order["user_id"], payment_method_id)
    history = _lookup.payments(ctx, order_id)
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("invalid_request", "There should be exactly one payment for a pending order")
    old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
    if old_id == payment_method_id:
        raise ToolError("invalid_argument", "The new payment method should be different from the current one")
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError("invalid_request", "Insufficient gift card balance to pay for the order")
    _lookup.add_payment(ctx, order_id, "payment", amount, payment_method_id)
    _lookup.add_payment(ctx, order_id, "refund", amount, old_id)
    if method["source"] == "gift_card":
        _lookup.add_to_gift_card(ctx, method, -amount)
    old = _lookup.payment_method(ctx, order["user_id"], old_id)
    if old["source"] == "gift_card":
        _lookup.add_to_gift_card(ctx, old, amount)
    return _answer(ctx, order_id)


@tool(world, writes=True)
def return_delivered_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], payment_method_id: str
) -> dict:
    """Return some items of a delivered order.

    The order status will be changed to 'return requested'.
    The agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed.
    The user will receive follow-up email for how and where to return the item.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'.
            These can be looked up from the user or order details.
    """
    order = _lookup.order(ctx, order_id)
    order_id = order["order_id"]
    if order["status"] != "delivered":
        raise ToolError("invalid_request", "Non-delivered order cannot be returned")
    method = _lookup.payment_method(ctx, order["user_id"], payment_method_id)
    original = _lookup.payments(ctx, order_id)[0]["payment_method_id"]
    if method["source"] != "gift_card" and payment_method_id != original:
        raise ToolError("invalid_argument", "Payment method should be the original payment method")
    _count_check(ctx, order_id, item_ids, "Some item not found")
    ctx.execute(
        "UPDATE orders SET status = 'return requested', return_payment_method_id = ? WHERE order_id = ?",
        (payment_method_id, order_id),
    )
    _lookup.set_requested(ctx, order_id, "return", item_ids)
    return _answer(ctx, order_id)
