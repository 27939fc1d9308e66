"""Invoices and invoice items: `/v1/invoices` (create, finalize, pay, void), `/v1/invoiceitems`, and the agent tools
`create_invoice`, `create_invoice_item`, `finalize_invoice` and `list_invoices`.

An invoice starts as a draft holding invoice items; finalizing numbers it and fixes its total (a customer's
credit balance pays what it can, a negative total becomes credit); paying charges a card through a payment
intent, as Stripe does.
"""

import json
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import TIMESTAMP_FORMAT, ToolContext

from ..world import world
from . import _common as c
from . import _fields as f
from . import payment_methods as methods
from . import payments

CollectionMethod = Literal["charge_automatically", "send_invoice"]


class Pricing(BaseModel):
    """`pricing[price]`: the one-time price an invoice item bills."""

    model_config = ConfigDict(extra="forbid")
    price: str


@c.loads("in")
def invoice_object(ctx: ToolContext, invoice_id: str) -> dict[str, Any]:
    return serialize_invoice(ctx, c.row(ctx, "invoices", invoice_id, "invoice"))


@c.loads("ii")
def invoice_item_object(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    return serialize_item(ctx, c.row(ctx, "invoice_items", item_id, "invoiceitem"))


def _pricing(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any] | None:
    if row["price"] is None:
        return None
    product = ctx.one("SELECT product FROM prices WHERE id = ?", (row["price"],))
    return {
        "price_details": {"price": row["price"], "product": product["product"]},
        "type": "price_details",
        "unit_amount_decimal": str(row["unit_amount"]),
    }


def serialize_item(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    parent = None
    if row["subscription"]:
        parent = {
            "subscription_details": {
                "subscription": row["subscription"],
                "subscription_item": row["subscription_item"],
            },
            "type": "subscription_details",
        }
    modelled = {
        "id": row["id"],
        "object": "invoiceitem",
        "amount": row["amount"],
        "currency": row["currency"],
        "customer": row["customer"],
        "date": c.unix(row["created"]),
        "description": row["description"],
        "discountable": True,
        "invoice": row["invoice"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "net_amount": row["amount"],
        "parent": parent,
        "period": {"end": c.unix(row["period_end"]), "start": c.unix(row["period_start"])},
        "pricing": _pricing(ctx, row),
        "proration": bool(row["proration"]),
        "quantity": row["quantity"],
        "quantity_decimal": str(row["quantity"]),
    }
    return f.shaped(f.INVOICE_ITEM, modelled)


def _line(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    modelled = {
        "id": f"il_{row['id'][3:]}",
        "object": "line_item",
        "amount": row["amount"],
        "currency": row["currency"],
        "description": row["description"],
        "invoice": row["invoice"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "parent": {
            "invoice_item_details": {
                "invoice_item": row["id"],
                "proration": bool(row["proration"]),
                "proration_details": {"credited_items": None} if row["proration"] else None,
                "subscription": row["subscription"],
            },
            "subscription_item_details": None,
            "type": "invoice_item_details",
        },
        "period": {"end": c.unix(row["period_end"]), "start": c.unix(row["period_start"])},
        "pricing": _pricing(ctx, row),
        "quantity": row["quantity"],
        "quantity_decimal": str(row["quantity"]),
        "subscription": row["subscription"],
        "subtotal": row["amount"],
    }
    return f.shaped(f.LINE_ITEM, modelled)


def serialize_invoice(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    customer = ctx.one(
        "SELECT name, email, phone, address, shipping, tax_exempt FROM customers WHERE id = ?",
        (row["customer"],),
    )
    account = ctx.one("SELECT business_name, country FROM account")
    lines = ctx.rows("SELECT * FROM invoice_items WHERE invoice = ? ORDER BY created, rowid", (row["id"],))
    payments_list = []
    if row["payment_intent"]:
        payments_list.append(
            {
                "id": f"inpay_{row['payment_intent'][3:]}",
                "object": "invoice_payment",
                "amount_paid": row["amount_paid"] if row["status"] == "paid" else 0,
                "amount_requested": row["amount_due"],
                "created": c.unix(row["finalized_at"] or row["created"]),
                "currency": row["currency"],
                "invoice": row["id"],
                "is_default": True,
                "livemode": False,
                "payment": {
                    "charge": None,
                    "payment_intent": row["payment_intent"],
                    "payment_record": None,
                    "type": "payment_intent",
                },
                "status": "paid" if row["status"] == "paid" else "open",
                "status_transitions": {"canceled_at": None, "paid_at": c.unix(row["paid_at"])},
            }
        )
    parent = None
    if row["subscription"]:
        parent = {
            "quote_details": None,
            "subscription_details": {
                "metadata": None,
                "subscription": row["subscription"],
                "subscription_proration_date": None,
            },
            "type": "subscription_details",
        }
    finalized = row["status"] != "draft"
    modelled = {
        "id": row["id"],
        "object": "invoice",
        "account_country": account["country"] if account else None,
        "account_name": account["business_name"] if account else None,
        "amount_due": row["amount_due"],
        "amount_paid": row["amount_paid"],
        "amount_remaining": row["amount_remaining"],
        "attempt_count": row["attempt_count"],
        "attempted": row["attempt_count"] > 0,
        "auto_advance": bool(row["auto_advance"]),
        "billing_reason": row["billing_reason"],
        "collection_method": row["collection_method"],
        "created": c.unix(row["created"]),
        "currency": row["currency"],
        "customer": row["customer"],
        "customer_address": json.loads(customer["address"]) if customer["address"] else None,
        "customer_email": customer["email"],
        "customer_name": customer["name"],
        "customer_phone": customer["phone"],
        "customer_shipping": c.shipping_object(customer["shipping"]),
        "customer_tax_exempt": customer["tax_exempt"],
        "default_payment_method": row["default_payment_method"],
        "description": row["description"],
        "due_date": c.unix(row["due_date"]),
        "effective_at": c.unix(row["finalized_at"]),
        "ending_balance": 0 if finalized else None,
        "lines": {
            "object": "list",
            "data": [_line(ctx, line) for line in lines],
            "has_more": False,
            "url": f"/v1/invoices/{row['id']}/lines",
        },
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "number": row["number"],
        "parent": parent,
        "payments": {
            "object": "list",
            "data": payments_list,
            "has_more": False,
            "url": "/v1/invoice_payments",
        },
        "period_end": c.unix(row["period_end"]),
        "period_start": c.unix(row["period_start"]),
        "starting_balance": 0,
        "status": row["status"],
        "status_transitions": {
            "finalized_at": c.unix(row["finalized_at"]),
            "marked_uncollectible_at": None,
            "paid_at": c.unix(row["paid_at"]),
            "voided_at": c.unix(row["voided_at"]),
        },
        "subtotal": row["subtotal"],
        "subtotal_excluding_tax": row["subtotal"],
        "total": row["total"],
        "total_excluding_tax": row["total"],
    }
    return f.shaped(f.INVOICE, modelled)


# -- the billing engine, shared with subscriptions -------------------------------------------------------


def new_invoice(
    ctx: ToolContext,
    customer: str,
    *,
    billing_reason: str,
    subscription: str | None = None,
    collection_method: CollectionMethod = "charge_automatically",
    days_until_due: int | None = None,
    description: str | None = None,
    auto_advance: bool = False,
    metadata: c.Metadata | None = None,
    period: tuple[str, str] | None = None,
) -> str:
    if collection_method == "send_invoice" and days_until_due is None:
        raise c.error(
            400,
            "Missing required param: days_until_due (needed with send_invoice).",
            param="days_until_due",
            code="parameter_missing",
        )
    invoice_id = c.new_id(ctx, "in")
    now = ctx.timestamp()
    start, end = period or (now, now)
    ctx.execute(
        "INSERT INTO invoices (id, customer, subscription, status, collection_method, billing_reason, currency, "
        "description, days_until_due, period_start, period_end, auto_advance, metadata, created) "
        "VALUES (?, ?, ?, 'draft', ?, ?, 'usd', ?, ?, ?, ?, ?, ?, ?)",
        (
            invoice_id,
            customer,
            subscription,
            collection_method,
            billing_reason,
            description,
            days_until_due,
            start,
            end,
            int(auto_advance),
            c.dumped(metadata),
            now,
        ),
    )
    return invoice_id


def add_item(
    ctx: ToolContext,
    customer: str,
    *,
    unit_amount: c.Amount,
    quantity: int = 1,
    description: str | None,
    price: str | None = None,
    invoice: str | None = None,
    subscription: str | None = None,
    subscription_item: str | None = None,
    proration: bool = False,
    period: tuple[str, str] | None = None,
    amount: c.Amount | None = None,
    metadata: c.Metadata | None = None,
) -> str:
    item_id = c.new_id(ctx, "ii")
    now = ctx.timestamp()
    start, end = period or (now, now)
    ctx.execute(
        "INSERT INTO invoice_items (id, customer, invoice, subscription, subscription_item, price, amount, unit_amount, "
        "quantity, currency, description, proration, period_start, period_end, metadata, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'usd', ?, ?, ?, ?, ?, ?)",
        (
            item_id,
            customer,
            invoice,
            subscription,
            subscription_item,
            price,
            unit_amount * quantity if amount is None else amount,
            unit_amount,
            quantity,
            description,
            int(proration),
            start,
            end,
            c.dumped(metadata),
            now,
        ),
    )
    return item_id


def finalize(ctx: ToolContext, invoice_id: str) -> dict[str, Any]:
    """Number a draft, fix its totals and open it (or mark it paid when nothing is due)."""
    draft = c.row(ctx, "invoices", invoice_id, "invoice", "invoice")
    if draft["status"] != "draft":
        raise c.error(
            400,
            "This invoice is already finalized, you can't re-finalize a non-draft invoice.",
            code="invoice_not_editable",
        )
    total = ctx.one(
        "SELECT coalesce(sum(amount), 0) AS t FROM invoice_items WHERE invoice = ?", (invoice_id,)
    )["t"]
    customer = c.row(ctx, "customers", draft["customer"], "customer", "customer")
    credit = max(-customer["balance"], 0)
    applied = min(credit, total) if total > 0 else total  # a negative total becomes credit
    ctx.execute("UPDATE customers SET balance = balance + ? WHERE id = ?", (applied, customer["id"]))
    due = total - applied
    account = ctx.one("SELECT invoice_prefix FROM account")
    count = ctx.one("SELECT count(number) AS n FROM invoices")["n"]
    now = ctx.timestamp()
    due_date = None
    if draft["collection_method"] == "send_invoice":
        due_date = (ctx.now() + timedelta(days=draft["days_until_due"])).strftime(TIMESTAMP_FORMAT)
    ctx.execute(
        "UPDATE invoices SET number = ?, status = ?, subtotal = ?, total = ?, amount_due = ?, amount_remaining = ?, "
        "finalized_at = ?, paid_at = ?, due_date = ? WHERE id = ?",
        (
            f"{account['invoice_prefix']}-{count + 1:04d}",
            "open" if due > 0 else "paid",
            total,
            total,
            due,
            due,
            now,
            None if due > 0 else now,
            due_date,
            invoice_id,
        ),
    )
    return c.row(ctx, "invoices", invoice_id, "invoice")


def payment_method_for(ctx: ToolContext, invoice: dict[str, Any], given: str | None) -> dict[str, Any]:
    """The card an invoice charges: the one given, else the invoice's default, else its subscription's, else
    its customer's."""
    method_id = given or invoice["default_payment_method"]
    if method_id is None and invoice["subscription"]:
        method_id = ctx.one(
            "SELECT default_payment_method AS m FROM subscriptions WHERE id = ?", (invoice["subscription"],)
        )["m"]
    if method_id is None:
        method_id = ctx.one(
            "SELECT default_payment_method AS m FROM customers WHERE id = ?", (invoice["customer"],)
        )["m"]
    if method_id is None:
        raise c.error(
            400,
            f"Customer {invoice['customer']} has no attached payment source or default payment method. Please "
            "consider adding a default payment method.",
            code="invoice_no_payment_method",
        )
    method = methods.resolve(ctx, method_id, "payment_method")
    if method["customer"] != invoice["customer"]:
        raise c.error(
            400,
            f"The payment method {method['id']} is not attached to customer {invoice['customer']}.",
            param="payment_method",
        )
    return method


def collect(ctx: ToolContext, invoice: dict[str, Any], method: dict[str, Any]) -> str | None:
    """Try to pay an open invoice with `method`: None when it paid, else the decline code; the attempt is kept
    (attempt_count, the intent and its failed charge), as Stripe keeps a failed collection."""
    intent_id = invoice["payment_intent"]
    if intent_id is None:
        intent = payments.new_intent(
            ctx, invoice["amount_remaining"], "usd", invoice["customer"], description="Payment for Invoice"
        )
        intent_id = intent["id"]
        ctx.execute("UPDATE invoices SET payment_intent = ? WHERE id = ?", (intent_id, invoice["id"]))
    intent = c.row(ctx, "payment_intents", intent_id, "payment_intent")
    code = payments.attempt(ctx, intent, method)
    ctx.execute("UPDATE invoices SET attempt_count = attempt_count + 1 WHERE id = ?", (invoice["id"],))
    if code is None:
        mark_paid(ctx, invoice["id"])
    return code


def mark_paid(ctx: ToolContext, invoice_id: str) -> None:
    ctx.execute(
        "UPDATE invoices SET status = 'paid', amount_paid = amount_due, amount_remaining = 0, paid_at = ? WHERE id = ?",
        (ctx.timestamp(), invoice_id),
    )
    ctx.execute(
        "UPDATE subscriptions SET status = 'active' WHERE latest_invoice = ? AND status IN ('past_due', 'incomplete', 'unpaid')",
        (invoice_id,),
    )


# -- operations ------------------------------------------------------------------------------------------


@world.tool(writes=True)
@world.operation("POST", "/v1/invoices")
def create_invoice(
    ctx: ToolContext,
    customer: str,
    collection_method: CollectionMethod = "charge_automatically",
    days_until_due: int | None = None,
    description: str | None = None,
    auto_advance: bool = False,
    pending_invoice_items_behavior: Literal["exclude", "include"] = "exclude",
    subscription: str | None = None,
    default_payment_method: str | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Create a draft invoice for a customer; add items to it, then finalize it.

    Args:
        customer: The customer's id, `cus_…`.
        collection_method: `charge_automatically` (the saved card pays) or `send_invoice` (the customer pays).
        days_until_due: Days to pay, with `send_invoice`.
        description: Shown on the invoice.
        auto_advance: Accepted; this world never finalizes on its own.
        pending_invoice_items_behavior: `include` pulls in the customer's pending invoice items.
        subscription: With `include`, only that subscription's pending items.
        default_payment_method: The customer's card that pays this invoice, before the subscription's
            and the customer's defaults.
        metadata: Your key-value pairs.
        expand: Fields to expand.
    """
    owner = c.live_customer(ctx, customer)
    method = None
    if default_payment_method is not None:
        method = methods.resolve(ctx, default_payment_method, "default_payment_method")
        if method["customer"] != owner["id"]:
            raise c.error(
                400,
                f"The payment method {method['id']} must be attached to {owner['id']} to pay its invoices.",
                param="default_payment_method",
                code="resource_missing",
            )
    invoice_id = new_invoice(
        ctx,
        owner["id"],
        billing_reason="manual",
        subscription=subscription,
        collection_method=collection_method,
        days_until_due=days_until_due,
        description=description,
        auto_advance=auto_advance,
        metadata=metadata,
    )
    if method is not None:
        ctx.execute("UPDATE invoices SET default_payment_method = ? WHERE id = ?", (method["id"], invoice_id))
    if pending_invoice_items_behavior == "include":
        where, args = c.filters(customer=owner["id"], subscription=subscription)
        ctx.execute(
            f"UPDATE invoice_items SET invoice = ? WHERE invoice IS NULL AND {where}", (invoice_id, *args)
        )
    return c.expanded(ctx, invoice_object(ctx, invoice_id), expand)


@world.operation("GET", "/v1/invoices/{invoice}")
def retrieve_invoice(ctx: ToolContext, invoice: str, expand: c.Expand | None = None) -> dict:
    """Retrieve an invoice with its lines.

    Args:
        invoice: The invoice's id, `in_…`.
        expand: Fields to expand, such as `customer`.
    """
    return c.expanded(ctx, invoice_object(ctx, invoice), expand)


@world.operation("GET", "/v1/invoices/{invoice}/lines")
def list_invoice_lines(
    ctx: ToolContext,
    invoice: str,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
) -> dict:
    """An invoice's lines.

    Args:
        invoice: The invoice's id, `in_…`.
        limit: How many to return, 1 to 100.
        starting_after: An invoice item id: the page after it.
        ending_before: An invoice item id: the page before it.
    """
    found = c.row(ctx, "invoices", invoice, "invoice", "invoice")
    return c.listed(
        ctx,
        "invoice_items",
        f"/v1/invoices/{found['id']}/lines",
        _line,
        where="invoice = ?",
        args=(found["id"],),
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
    )


@world.tool(writes=True)
@world.operation("POST", "/v1/invoices/{invoice}/finalize")
def finalize_invoice(
    ctx: ToolContext, invoice: str, auto_advance: bool | None = None, expand: c.Expand | None = None
) -> dict:
    """Finalize a draft invoice: it gets its number and total and is open for payment.

    Args:
        invoice: The invoice's id, `in_…`.
        auto_advance: Accepted; this world never collects on its own.
        expand: Fields to expand.
    """
    finalized = finalize(ctx, invoice)
    return c.expanded(ctx, invoice_object(ctx, finalized["id"]), expand)


@world.operation("POST", "/v1/invoices/{invoice}/pay")
def pay_invoice(
    ctx: ToolContext,
    invoice: str,
    payment_method: str | None = None,
    paid_out_of_band: bool = False,
    expand: c.Expand | None = None,
) -> dict:
    """Pay an open invoice now with a card (a decline is a 402 card error), or mark it paid outside Stripe.

    Args:
        invoice: The invoice's id, `in_…`.
        payment_method: The customer's card to charge; default the subscription's or the customer's default.
        paid_out_of_band: The customer paid some other way.
        expand: Fields to expand.
    """
    found = c.row(ctx, "invoices", invoice, "invoice", "invoice")
    if found["status"] != "open":
        raise c.error(
            400,
            f"Invoice {found['id']} is {found['status']}; only an open invoice can be paid.",
            code="invoice_unexpected_state",
        )
    if paid_out_of_band:
        mark_paid(ctx, found["id"])
    else:
        code = collect(ctx, found, payment_method_for(ctx, found, payment_method))
        if code is not None:
            raise methods.decline(code)
    return c.expanded(ctx, invoice_object(ctx, found["id"]), expand)


@world.operation("POST", "/v1/invoices/{invoice}/void")
def void_invoice(ctx: ToolContext, invoice: str, expand: c.Expand | None = None) -> dict:
    """Void an open invoice: it is no longer owed.

    Args:
        invoice: The invoice's id, `in_…`.
        expand: Fields to expand.
    """
    found = c.row(ctx, "invoices", invoice, "invoice", "invoice")
    if found["status"] != "open":
        raise c.error(
            400,
            f"You can only void open invoices; this one is {found['status']}.",
            code="invoice_unexpected_state",
        )
    ctx.execute(
        "UPDATE invoices SET status = 'void', voided_at = ? WHERE id = ?", (ctx.timestamp(), found["id"])
    )
    if found["payment_intent"]:
        ctx.execute(
            "UPDATE payment_intents SET status = 'canceled', canceled_at = ? WHERE id = ? AND status != 'succeeded'",
            (ctx.timestamp(), found["payment_intent"]),
        )
    return c.expanded(ctx, invoice_object(ctx, found["id"]), expand)


@world.tool(writes=False)
@world.operation("GET", "/v1/invoices")
def list_invoices(
    ctx: ToolContext,
    customer: str | None = None,
    subscription: str | None = None,
    status: Literal["draft", "open", "paid", "uncollectible", "void"] | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List invoices, newest first, optionally one customer's or one subscription's.

    Args:
        customer: Only this customer's, `cus_…`.
        subscription: Only this subscription's, `sub_…`.
        status: Only invoices in this status.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: An invoice id: the page after it.
        ending_before: An invoice id: the page before it.
        expand: Fields to expand.
    """
    where, args = c.filters(created, customer=customer, subscription=subscription, status=status)
    return c.listed(
        ctx,
        "invoices",
        "/v1/invoices",
        serialize_invoice,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )


@world.tool(writes=True)
@world.operation("POST", "/v1/invoiceitems")
def create_invoice_item(
    ctx: ToolContext,
    customer: str,
    price: str | None = None,
    pricing: Pricing | None = None,
    amount: c.Amount | None = None,
    currency: str | None = None,
    quantity: Annotated[int, Field(ge=1)] = 1,
    invoice: str | None = None,
    description: str | None = None,
    metadata: c.Metadata | None = None,
) -> dict:
    """Add a line for a customer: on a draft invoice, or pending for their next invoice.

    Args:
        customer: The customer's id, `cus_…`.
        price: A one-time price to bill, `price_…`.
        pricing: Or `pricing[price]`, as the current API names it.
        amount: Or an amount in cents (with `currency`), for a custom line.
        currency: `usd`, with `amount`.
        quantity: How many of the price.
        invoice: The draft invoice to add it to, `in_…`; default pending.
        description: The line's text; default the product's name.
        metadata: Your key-value pairs.
    """
    owner = c.live_customer(ctx, customer)
    price_id = price or (pricing.price if pricing else None)
    if (price_id is None) == (amount is None):
        raise c.error(
            400,
            "You must pass exactly one of price (or pricing[price]) and amount.",
            param="price",
            code="parameter_missing",
        )
    if invoice is not None:
        draft = c.row(ctx, "invoices", invoice, "invoice", "invoice")
        if draft["status"] != "draft":
            raise c.error(
                400,
                f"Invoice {draft['id']} is {draft['status']}: items can only be added to a draft.",
                param="invoice",
                code="invoice_not_editable",
            )
        if draft["customer"] != owner["id"]:
            raise c.error(400, f"Invoice {draft['id']} belongs to another customer.", param="invoice")
    if price_id is not None:
        found = c.row(ctx, "prices", price_id, "price", "price")
        if found["type"] != "one_time":
            raise c.error(
                400,
                "The price specified is set to `type=recurring` but this field only accepts prices with `type=one_time`.",
                param="price",
            )
        product = ctx.one("SELECT name FROM products WHERE id = ?", (found["product"],))
        item_id = add_item(
            ctx,
            owner["id"],
            unit_amount=found["unit_amount"],
            quantity=quantity,
            price=found["id"],
            invoice=invoice,
            description=description or product["name"],
            metadata=metadata,
        )
    else:
        if currency is None or currency.lower() != "usd":
            raise c.error(
                400, "Missing required param: currency (usd).", param="currency", code="parameter_missing"
            )
        item_id = add_item(
            ctx,
            owner["id"],
            unit_amount=amount,
            quantity=quantity,
            invoice=invoice,
            description=description,
            metadata=metadata,
        )
    return invoice_item_object(ctx, item_id)


@world.operation("GET", "/v1/invoiceitems/{invoiceitem}")
def retrieve_invoice_item(ctx: ToolContext, invoiceitem: str) -> dict:
    """Retrieve an invoice item.

    Args:
        invoiceitem: The invoice item's id, `ii_…`.
    """
    return invoice_item_object(ctx, invoiceitem)


@world.operation("DELETE", "/v1/invoiceitems/{invoiceitem}")
def delete_invoice_item(ctx: ToolContext, invoiceitem: str) -> dict:
    """Delete an invoice item that is pending or on a draft invoice.

    Args:
        invoiceitem: The invoice item's id, `ii_…`.
    """
    item = c.row(ctx, "invoice_items", invoiceitem, "invoiceitem", "invoiceitem")
    if (
        item["invoice"]
        and ctx.one("SELECT status FROM invoices WHERE id = ?", (item["invoice"],))["status"] != "draft"
    ):
        raise c.error(
            400,
            "This invoice item is on a finalized invoice and can no longer be deleted.",
            code="invoice_not_editable",
        )
    ctx.execute("DELETE FROM invoice_items WHERE id = ?", (item["id"],))
    return {"id": item["id"], "object": "invoiceitem", "deleted": True}


@world.operation("GET", "/v1/invoiceitems")
def list_invoice_items(
    ctx: ToolContext,
    customer: str | None = None,
    invoice: str | None = None,
    pending: bool | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
) -> dict:
    """List invoice items, newest first.

    Args:
        customer: Only this customer's, `cus_…`.
        invoice: Only this invoice's, `in_…`.
        pending: Only items on no invoice yet (true) or on one (false).
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: An invoice item id: the page after it.
        ending_before: An invoice item id: the page before it.
    """
    where, args = c.filters(created, customer=customer, invoice=invoice)
    if pending is not None:
        where += " AND invoice IS NULL" if pending else " AND invoice IS NOT NULL"
    return c.listed(
        ctx,
        "invoice_items",
        "/v1/invoiceitems",
        serialize_item,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
    )
