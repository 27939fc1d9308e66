"""Subscriptions: `/v1/subscriptions` (create, update with prorations, cancel), and the agent tools
`list_subscriptions`, `update_subscription` and `cancel_subscription`.

Creating bills the first period at once (with `trial_period_days`, a $0 invoice for the trial, whose end
starts the first period). Changing a price or quantity mid-period prorates as Stripe does:
a credit for the unused time on the old line and a charge for the remaining time on the new one, each
`round(unit_amount × quantity × remaining / period)`, pending for the next invoice
(`create_prorations`) or invoiced and charged now (`always_invoice`). Time never passes by itself here:
no renewal runs, so a fixture's history holds the renewals.
"""

import calendar
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import TIMESTAMP_FORMAT, ToolContext

from ..world import world
from . import _common as c
from . import _fields as f
from . import billing
from . import payment_methods as methods
from .catalog import serialize_price

ProrationBehavior = Literal["create_prorations", "always_invoice", "none"]
PaymentBehavior = Literal["allow_incomplete", "error_if_incomplete", "default_incomplete"]
Status = Literal[
    "active", "past_due", "unpaid", "canceled", "incomplete", "incomplete_expired", "trialing", "paused"
]
_ENDED = ("canceled", "incomplete_expired")


class NewItem(BaseModel):
    """`items[n][…]` when creating: a recurring price and how many."""

    model_config = ConfigDict(extra="forbid")
    price: str
    quantity: int = Field(1, ge=1)


class ItemChange(BaseModel):
    """`items[n][…]` when updating: `id` names an existing item (change its price or quantity, or `deleted`);
    without `id`, a new item."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    price: str | None = None
    quantity: int | None = Field(None, ge=0)
    deleted: bool = False


@c.loads("sub")
def subscription_object(ctx: ToolContext, subscription_id: str) -> dict[str, Any]:
    return serialize(ctx, c.row(ctx, "subscriptions", subscription_id, "subscription"))


@c.loads("si")
def item_object(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    return _item(ctx, c.row(ctx, "subscription_items", item_id, "subscription_item"))


def _plan(price: dict[str, Any]) -> dict[str, Any]:
    """The legacy `plan` view of a recurring price, which Stripe still serves on subscription items."""
    modelled = {
        "id": price["id"],
        "object": "plan",
        "active": price["active"],
        "amount": price["unit_amount"],
        "amount_decimal": price["unit_amount_decimal"],
        "billing_scheme": price["billing_scheme"],
        "created": price["created"],
        "currency": price["currency"],
        "interval": price["recurring"]["interval"],
        "interval_count": price["recurring"]["interval_count"],
        "livemode": False,
        "metadata": price["metadata"],
        "nickname": price["nickname"],
        "product": price["product"],
        "usage_type": price["recurring"]["usage_type"],
    }
    return f.shaped(f.PLAN, modelled)


def _item(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    price = serialize_price(ctx, ctx.one("SELECT * FROM prices WHERE id = ?", (row["price"],)))
    modelled = {
        "id": row["id"],
        "object": "subscription_item",
        "created": c.unix(row["created"]),
        "current_period_end": c.unix(row["current_period_end"]),
        "current_period_start": c.unix(row["current_period_start"]),
        "metadata": c.metadata(row["metadata"]),
        "plan": _plan(price),
        "price": price,
        "quantity": row["quantity"],
        "subscription": row["subscription"],
    }
    return f.shaped(f.SUBSCRIPTION_ITEM, modelled)


def serialize(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    items = ctx.rows(
        "SELECT * FROM subscription_items WHERE subscription = ? ORDER BY created, rowid", (row["id"],)
    )
    period_end = items[0]["current_period_end"] if items else None
    modelled = {
        "id": row["id"],
        "object": "subscription",
        "billing_cycle_anchor": c.unix(row["billing_cycle_anchor"]),
        "cancel_at": c.unix(period_end) if row["cancel_at_period_end"] else None,
        "cancel_at_period_end": bool(row["cancel_at_period_end"]),
        "canceled_at": c.unix(row["canceled_at"]),
        "cancellation_details": {
            "comment": None,
            "feedback": None,
            "feedback_option": None,
            "reason": "cancellation_requested" if row["canceled_at"] or row["cancel_at_period_end"] else None,
        },
        "collection_method": row["collection_method"],
        "created": c.unix(row["created"]),
        "currency": "usd",
        "customer": row["customer"],
        "days_until_due": row["days_until_due"],
        "default_payment_method": row["default_payment_method"],
        "ended_at": c.unix(row["ended_at"]),
        "items": {
            "object": "list",
            "data": [_item(ctx, item) for item in items],
            "has_more": False,
            "url": f"/v1/subscription_items?subscription={row['id']}",
        },
        "latest_invoice": row["latest_invoice"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "start_date": c.unix(row["start_date"]),
        "status": row["status"],
        "trial_end": c.unix(row["trial_end"]),
        "trial_start": c.unix(row["trial_start"]),
    }
    return f.shaped(f.SUBSCRIPTION, modelled)


@c.includes("customer", "subscriptions")
def customer_subscriptions(ctx: ToolContext, customer: dict[str, Any]) -> dict[str, Any]:
    """`expand[]=subscriptions` on a customer: those not canceled, newest first."""
    return c.listed(
        ctx,
        "subscriptions",
        f"/v1/customers/{customer['id']}/subscriptions",
        serialize,
        where="customer = ? AND status != 'canceled'",
        args=(customer["id"],),
        limit=100,
    )


def period_after(start: datetime, interval: str, count: int) -> datetime:
    """The end of a billing period: `count` intervals after `start`, a month end clamped as Stripe does."""
    if interval == "day":
        return start + timedelta(days=count)
    if interval == "week":
        return start + timedelta(weeks=count)
    months = count * (12 if interval == "year" else 1)
    year, month = divmod(start.month - 1 + months, 12)
    year, month = start.year + year, month + 1
    return start.replace(year=year, month=month, day=min(start.day, calendar.monthrange(year, month)[1]))


def _recurring_price(ctx: ToolContext, price_id: str, param: str) -> dict[str, Any]:
    price = c.row(ctx, "prices", price_id, "price", param)
    if price["type"] != "recurring":
        raise c.error(
            400,
            f"The price specified ({price['id']}) is a one-time price; a subscription needs a recurring price.",
            param=param,
        )
    if not price["active"]:
        raise c.error(400, f"The price specified ({price['id']}) is inactive.", param=param)
    return price


def _payment_method(ctx: ToolContext, customer: str, method_id: str | None) -> str | None:
    if method_id is None:
        return None
    method = methods.resolve(ctx, method_id, "default_payment_method")
    if method["customer"] != customer:
        raise c.error(
            400,
            f"The payment method {method['id']} must be attached to {customer} to be its default.",
            param="default_payment_method",
            code="resource_missing",
        )
    return method["id"]


def _bill_now(ctx: ToolContext, subscription: dict[str, Any], invoice_id: str, payment_behavior: str) -> str:
    """Finalize the invoice and, for charge_automatically, try the card; the subscription's status afterwards."""
    ctx.execute("UPDATE subscriptions SET latest_invoice = ? WHERE id = ?", (invoice_id, subscription["id"]))
    invoice = billing.finalize(ctx, invoice_id)
    if invoice["status"] == "paid" or subscription["collection_method"] == "send_invoice":
        return "active"
    if payment_behavior == "default_incomplete":
        return "incomplete"
    code = billing.collect(ctx, invoice, billing.payment_method_for(ctx, invoice, None))
    if code is None:
        return "active"
    if payment_behavior == "error_if_incomplete":
        raise methods.decline(code)
    return "incomplete" if subscription["status"] == "incomplete" else "past_due"


def _prorate(
    ctx: ToolContext,
    subscription: dict[str, Any],
    item: dict[str, Any],
    price: dict[str, Any],
    quantity: int,
    sign: int,
) -> None:
    """One proration line for `quantity` of `price` over the rest of the item's period: a credit (sign -1) for
    what was paid and is not used, a charge (+1) for what is added."""
    start = datetime.strptime(item["current_period_start"], TIMESTAMP_FORMAT)
    end = datetime.strptime(item["current_period_end"], TIMESTAMP_FORMAT)
    now = ctx.now()
    if quantity == 0 or not start <= now < end:
        return
    fraction = (end - now).total_seconds() / (end - start).total_seconds()
    amount = sign * round(price["unit_amount"] * quantity * fraction)
    product = ctx.one("SELECT name FROM products WHERE id = ?", (price["product"],))["name"]
    what = f"{quantity} × {product}" if quantity > 1 else product
    when = now.strftime("%d %b %Y")
    billing.add_item(
        ctx,
        subscription["customer"],
        unit_amount=price["unit_amount"],
        quantity=quantity,
        amount=amount,
        price=price["id"],
        description=f"{'Unused' if sign < 0 else 'Remaining'} time on {what} after {when}",
        subscription=subscription["id"],
        subscription_item=item["id"],
        proration=True,
        period=(ctx.timestamp(), item["current_period_end"]),
    )


@world.operation("POST", "/v1/subscriptions")
def create_subscription(
    ctx: ToolContext,
    customer: str,
    items: list[NewItem],
    default_payment_method: str | None = None,
    collection_method: Literal["charge_automatically", "send_invoice"] = "charge_automatically",
    days_until_due: int | None = None,
    payment_behavior: PaymentBehavior = "allow_incomplete",
    cancel_at_period_end: bool = False,
    trial_period_days: Annotated[int, Field(ge=1, le=730)] | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Subscribe a customer to recurring prices; the first period is invoiced and charged at once, or after
    a free trial.

    Args:
        customer: The customer's id, `cus_…`.
        items: The prices (`items[0][price]`) and quantities.
        default_payment_method: The customer's card that pays; default the customer's default.
        collection_method: `charge_automatically` or `send_invoice`.
        days_until_due: Days to pay, with `send_invoice`.
        payment_behavior: On a decline: `allow_incomplete` keeps it `incomplete`, `error_if_incomplete` refuses.
        cancel_at_period_end: End it when the first period ends.
        trial_period_days: Days of free trial: it is `trialing`, its first invoice is $0 for the trial, and
            the first period starts (and is billed) when the trial ends.
        metadata: Your key-value pairs.
        expand: Fields to expand, such as `latest_invoice`.
    """
    owner = c.live_customer(ctx, customer)
    if not items:
        raise c.error(400, "Missing required param: items.", param="items", code="parameter_missing")
    prices = [_recurring_price(ctx, item.price, f"items[{n}][price]") for n, item in enumerate(items)]
    if len({(p["recurring_interval"], p["recurring_interval_count"]) for p in prices}) > 1:
        raise c.error(
            400, "All prices on a subscription must have the same recurring interval.", param="items"
        )
    method = _payment_method(ctx, owner["id"], default_payment_method)
    now = ctx.now()
    start = ctx.timestamp()
    trial_end = None
    if trial_period_days is not None:
        trial_end = (now + timedelta(days=trial_period_days)).strftime(TIMESTAMP_FORMAT)
        end = trial_end
    else:
        end = period_after(
            now, prices[0]["recurring_interval"], prices[0]["recurring_interval_count"]
        ).strftime(TIMESTAMP_FORMAT)
    subscription_id = c.new_id(ctx, "sub")
    ctx.execute(
        "INSERT INTO subscriptions (id, customer, status, default_payment_method, collection_method, days_until_due, "
        "cancel_at_period_end, billing_cycle_anchor, start_date, trial_start, trial_end, metadata, created) "
        "VALUES (?, ?, 'incomplete', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            subscription_id,
            owner["id"],
            method,
            collection_method,
            days_until_due,
            int(cancel_at_period_end),
            trial_end or start,
            start,
            start if trial_end else None,
            trial_end,
            c.dumped(metadata),
            start,
        ),
    )
    invoice_id = billing.new_invoice(
        ctx,
        owner["id"],
        billing_reason="subscription_create",
        subscription=subscription_id,
        collection_method=collection_method,
        days_until_due=days_until_due,
        period=(start, start),
    )
    for item, price in zip(items, prices, strict=True):
        item_id = c.new_id(ctx, "si")
        ctx.execute(
            "INSERT INTO subscription_items (id, subscription, price, quantity, current_period_start, current_period_end, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (item_id, subscription_id, price["id"], item.quantity, start, end, start),
        )
        product = ctx.one("SELECT name FROM products WHERE id = ?", (price["product"],))["name"]
        billing.add_item(
            ctx,
            owner["id"],
            unit_amount=0 if trial_end else price["unit_amount"],
            quantity=item.quantity,
            price=price["id"],
            invoice=invoice_id,
            description=f"Trial period for {product}" if trial_end else f"{item.quantity} × {product}",
            subscription=subscription_id,
            subscription_item=item_id,
            period=(start, end),
        )
    subscription = c.row(ctx, "subscriptions", subscription_id, "subscription")
    status = _bill_now(ctx, subscription, invoice_id, payment_behavior)
    if trial_end is not None:  # the $0 invoice paid itself; the card is first charged when the trial ends
        status = "trialing"
    ctx.execute("UPDATE subscriptions SET status = ? WHERE id = ?", (status, subscription_id))
    return c.expanded(ctx, subscription_object(ctx, subscription_id), expand)


@world.operation("GET", "/v1/subscriptions/{subscription}")
def retrieve_subscription(ctx: ToolContext, subscription: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a subscription with its items.

    Args:
        subscription: The subscription's id, `sub_…`.
        expand: Fields to expand, such as `latest_invoice`.
    """
    return c.expanded(ctx, subscription_object(ctx, subscription), expand)


def _change_items(
    ctx: ToolContext, subscription: dict[str, Any], changes: list[ItemChange], prorate: bool
) -> None:
    current = {
        i["id"]: i
        for i in ctx.rows("SELECT * FROM subscription_items WHERE subscription = ?", (subscription["id"],))
    }
    template = next(iter(current.values()))
    for n, change in enumerate(changes):
        if change.id is None:
            if change.price is None or change.deleted:
                raise c.error(
                    400, "A new item needs a price.", param=f"items[{n}][price]", code="parameter_missing"
                )
            price = _recurring_price(ctx, change.price, f"items[{n}][price]")
            quantity = 1 if change.quantity is None else change.quantity
            item_id = c.new_id(ctx, "si")
            ctx.execute(
                "INSERT INTO subscription_items (id, subscription, price, quantity, current_period_start, "
                "current_period_end, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    item_id,
                    subscription["id"],
                    price["id"],
                    quantity,
                    template["current_period_start"],
                    template["current_period_end"],
                    ctx.timestamp(),
                ),
            )
            if prorate:
                _prorate(ctx, subscription, {**template, "id": item_id}, price, quantity, +1)
            continue
        item = current.get(change.id)
        if item is None:
            raise c.missing("subscription_item", change.id, f"items[{n}][id]")
        old_price = ctx.one("SELECT * FROM prices WHERE id = ?", (item["price"],))
        new_price = _recurring_price(ctx, change.price, f"items[{n}][price]") if change.price else old_price
        quantity = item["quantity"] if change.quantity is None else change.quantity
        if (new_price["recurring_interval"], new_price["recurring_interval_count"]) != (
            old_price["recurring_interval"],
            old_price["recurring_interval_count"],
        ):
            raise c.error(
                400,
                "This world prorates only between prices of the same interval; cancel and subscribe anew instead.",
                param=f"items[{n}][price]",
            )
        if change.deleted:
            if len(current) == 1:
                raise c.error(
                    400,
                    "A subscription needs at least one item; cancel it instead.",
                    param=f"items[{n}][deleted]",
                )
            if prorate:
                _prorate(ctx, subscription, item, old_price, item["quantity"], -1)
            ctx.execute("DELETE FROM subscription_items WHERE id = ?", (item["id"],))
            del current[item["id"]]
            continue
        if (new_price["id"], quantity) == (old_price["id"], item["quantity"]):
            continue
        if prorate:
            _prorate(ctx, subscription, item, old_price, item["quantity"], -1)
            _prorate(ctx, subscription, item, new_price, quantity, +1)
        ctx.execute(
            "UPDATE subscription_items SET price = ?, quantity = ? WHERE id = ?",
            (new_price["id"], quantity, item["id"]),
        )


@world.tool(writes=True)
@world.operation("POST", "/v1/subscriptions/{subscription}")
def update_subscription(
    ctx: ToolContext,
    subscription: str,
    items: list[ItemChange] | None = None,
    proration_behavior: ProrationBehavior = "create_prorations",
    payment_behavior: Literal["allow_incomplete", "error_if_incomplete"] = "allow_incomplete",
    cancel_at_period_end: bool | None = None,
    default_payment_method: str | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Change a subscription: swap a price or quantity (prorated), or cancel at the period's end.

    Args:
        subscription: The subscription's id, `sub_…`.
        items: Changes: `{id: si_…, price: price_…}` swaps the price, `{id, quantity}` changes the quantity,
            `{id, deleted: true}` removes an item, `{price}` adds one.
        proration_behavior: `create_prorations` (lines on the next invoice), `always_invoice` (bill the
            difference now) or `none`.
        payment_behavior: With `always_invoice`, what a declined card does: keep the invoice open
            (`allow_incomplete`) or refuse the change (`error_if_incomplete`).
        cancel_at_period_end: true ends it when the period ends; false keeps it going.
        default_payment_method: The customer's card that pays from now on.
        metadata: Keys to set (an empty value removes a key).
        expand: Fields to expand, such as `latest_invoice`.
    """
    found = c.row(ctx, "subscriptions", subscription, "subscription", "subscription")
    if found["status"] in _ENDED:
        raise c.error(
            400,
            f"A canceled subscription can only update its cancellation_details and metadata ({found['id']}).",
            code="subscription_canceled",
        )
    if items:  # a trial is free: changing it leaves nothing to prorate
        _change_items(
            ctx, found, items, prorate=proration_behavior != "none" and found["status"] != "trialing"
        )
    if cancel_at_period_end is not None:
        ctx.execute(
            "UPDATE subscriptions SET cancel_at_period_end = ? WHERE id = ?",
            (int(cancel_at_period_end), found["id"]),
        )
    if default_payment_method is not None:
        method = _payment_method(ctx, found["customer"], default_payment_method)
        ctx.execute("UPDATE subscriptions SET default_payment_method = ? WHERE id = ?", (method, found["id"]))
    if metadata is not None:
        ctx.execute(
            "UPDATE subscriptions SET metadata = ? WHERE id = ?",
            (c.merged_metadata(found["metadata"], metadata), found["id"]),
        )
    if items and proration_behavior == "always_invoice":
        _invoice_pending(
            ctx,
            c.row(ctx, "subscriptions", found["id"], "subscription"),
            "subscription_update",
            payment_behavior,
        )
    return c.expanded(ctx, subscription_object(ctx, found["id"]), expand)


def _invoice_pending(
    ctx: ToolContext, subscription: dict[str, Any], reason: str, payment_behavior: str
) -> None:
    """Invoice the subscription's pending lines now (the prorations just made) and collect it."""
    pending = ctx.one(
        "SELECT count(*) AS n FROM invoice_items WHERE subscription = ? AND invoice IS NULL",
        (subscription["id"],),
    )["n"]
    if not pending:
        return
    invoice_id = billing.new_invoice(
        ctx,
        subscription["customer"],
        billing_reason=reason,
        subscription=subscription["id"],
        collection_method=subscription["collection_method"],
        days_until_due=30,
    )
    ctx.execute(
        "UPDATE invoice_items SET invoice = ? WHERE subscription = ? AND invoice IS NULL",
        (invoice_id, subscription["id"]),
    )
    status = _bill_now(ctx, subscription, invoice_id, payment_behavior)
    if subscription["status"] not in _ENDED:
        ctx.execute("UPDATE subscriptions SET status = ? WHERE id = ?", (status, subscription["id"]))


@world.tool(writes=True)
@world.operation("DELETE", "/v1/subscriptions/{subscription}")
def cancel_subscription(
    ctx: ToolContext,
    subscription: str,
    prorate: bool = False,
    invoice_now: bool = False,
    expand: c.Expand | None = None,
) -> dict:
    """Cancel a subscription now. Its open invoices stay open; nothing is refunded unless `prorate` credits the
    unused time.

    Args:
        subscription: The subscription's id, `sub_…`.
        prorate: Credit the unused time of the current period (a pending credit line).
        invoice_now: Invoice pending lines at once (with `prorate`, the credit goes to the customer's balance).
        expand: Fields to expand.
    """
    found = c.row(ctx, "subscriptions", subscription, "subscription", "subscription")
    if found["status"] in _ENDED:
        raise c.error(
            400, f"This subscription ({found['id']}) is already canceled.", code="subscription_canceled"
        )
    if prorate:
        for item in ctx.rows("SELECT * FROM subscription_items WHERE subscription = ?", (found["id"],)):
            price = ctx.one("SELECT * FROM prices WHERE id = ?", (item["price"],))
            _prorate(ctx, found, item, price, item["quantity"], -1)
    now = ctx.timestamp()
    ctx.execute(
        "UPDATE subscriptions SET status = 'canceled', canceled_at = ?, ended_at = ? WHERE id = ?",
        (now, now, found["id"]),
    )
    if invoice_now:
        _invoice_pending(
            ctx,
            c.row(ctx, "subscriptions", found["id"], "subscription"),
            "subscription_cycle",
            "allow_incomplete",
        )
    return c.expanded(ctx, subscription_object(ctx, found["id"]), expand)


@world.tool(writes=False)
@world.operation("GET", "/v1/subscriptions")
def list_subscriptions(
    ctx: ToolContext,
    customer: str | None = None,
    price: str | None = None,
    status: Status | Literal["all", "ended"] | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List subscriptions, newest first; by default all but canceled ones.

    Args:
        customer: Only this customer's, `cus_…`.
        price: Only those with an item on this price, `price_…`.
        status: Only this status; `all` includes canceled ones, `ended` only those.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A subscription id: the page after it.
        ending_before: A subscription id: the page before it.
        expand: Fields to expand, such as `data.latest_invoice`.
    """
    where, args = c.filters(created, customer=customer)
    if status is None:
        where += " AND status != 'canceled'"
    elif status == "ended":
        where += " AND status IN ('canceled', 'incomplete_expired')"
    elif status != "all":
        where, args = f"{where} AND status = ?", (*args, status)
    if price is not None:
        where, args = (
            f"{where} AND id IN (SELECT subscription FROM subscription_items WHERE price = ?)",
            (*args, price),
        )
    return c.listed(
        ctx,
        "subscriptions",
        "/v1/subscriptions",
        serialize,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )
