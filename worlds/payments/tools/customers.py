"""Customers: `/v1/customers` (and `/v1/customers/search`), and the agent tools `create_customer` and
`list_customers`."""

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from atoll.worlds import ToolContext

from ..world import world
from . import _common as c
from . import _fields as f
from . import payment_methods as methods

TaxExempt = Literal["none", "exempt", "reverse"]
# The fields `GET /v1/customers/search` queries, as Stripe's search offers them for customers.
SEARCH_FIELDS = {
    "created": c.SearchField("created", "time"),
    "email": c.SearchField("email", "text"),
    "name": c.SearchField("name", "text"),
    "phone": c.SearchField("phone", "text"),
}


class InvoiceSettings(BaseModel):
    """`invoice_settings[…]`: which saved card invoices and subscriptions charge."""

    model_config = ConfigDict(extra="forbid")
    default_payment_method: str | None = None


@c.loads("cus")
def customer_object(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    return serialize(ctx, c.row(ctx, "customers", customer_id, "customer"))


def serialize(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    if row["deleted"]:
        return {"id": row["id"], "object": "customer", "deleted": True}
    delinquent = ctx.one(
        "SELECT 1 FROM invoices WHERE customer = ? AND status = 'open' AND attempt_count > 0", (row["id"],)
    )
    modelled = {
        "id": row["id"],
        "object": "customer",
        "address": json.loads(row["address"]) if row["address"] else None,
        "balance": row["balance"],
        "created": c.unix(row["created"]),
        "currency": "usd",
        "default_source": None,
        "delinquent": delinquent is not None,
        "description": row["description"],
        "email": row["email"],
        "invoice_settings": {
            "custom_fields": None,
            "default_payment_method": row["default_payment_method"],
            "footer": None,
            "rendering_options": None,
        },
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "name": row["name"],
        "phone": row["phone"],
        "preferred_locales": json.loads(row["preferred_locales"]),
        "shipping": c.shipping_object(row["shipping"]),
        "tax_exempt": row["tax_exempt"],
        "test_clock": None,
    }
    return f.shaped(f.CUSTOMER, modelled)


def _empty_list(url: str) -> dict[str, Any]:
    return {"object": "list", "data": [], "has_more": False, "url": url}


# What `expand[]` fills in on a customer besides `subscriptions` (subscriptions.py): no legacy sources, no
# tax ids, no credit balance, no tax location.
c.includes("customer", "sources")(lambda ctx, cus: _empty_list(f"/v1/customers/{cus['id']}/sources"))
c.includes("customer", "tax_ids")(lambda ctx, cus: _empty_list(f"/v1/customers/{cus['id']}/tax_ids"))
c.includes("customer", "invoice_credit_balance")(lambda ctx, cus: {})
c.includes("customer", "tax")(
    lambda ctx, cus: {
        "automatic_tax": "not_collecting",
        "ip_address": None,
        "location": None,
        "provider": "stripe",
    }
)


def _default_method(ctx: ToolContext, customer_id: str, settings: InvoiceSettings | None) -> str | None:
    if settings is None or settings.default_payment_method is None:
        return None
    method = c.row(
        ctx,
        "payment_methods",
        settings.default_payment_method,
        "payment_method",
        "invoice_settings[default_payment_method]",
    )
    if method["customer"] != customer_id:
        raise c.error(
            400,
            f"The payment method '{method['id']}' must be attached to the customer to be its default.",
            param="invoice_settings[default_payment_method]",
            code="resource_missing",
        )
    return method["id"]


@world.tool(writes=True)
@world.operation("POST", "/v1/customers")
def create_customer(
    ctx: ToolContext,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    description: str | None = None,
    payment_method: str | None = None,
    invoice_settings: InvoiceSettings | None = None,
    address: c.Address | Literal[""] | None = None,
    shipping: c.Shipping | Literal[""] | None = None,
    preferred_locales: list[str] | None = None,
    tax_exempt: TaxExempt | Literal[""] | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Create a customer.

    Args:
        name: The customer's full name or business name.
        email: The customer's email address.
        phone: The customer's phone number.
        description: An internal note about the customer.
        payment_method: A card (`pm_…` or a test card such as `pm_card_visa`) to attach to the new customer.
        invoice_settings: `default_payment_method`: the attached card invoices charge.
        address: The customer's postal address: `line1`, `line2`, `city`, `state`, `postal_code`, `country`.
        shipping: Where to ship: `name`, `address`, `phone`.
        preferred_locales: Languages the customer prefers, such as `en` or `fr-CA`, most preferred first.
        tax_exempt: `none`, `exempt` or `reverse`.
        metadata: Your key-value pairs.
        expand: Fields to expand, such as `invoice_settings.default_payment_method`.
    """
    customer_id = c.new_id(ctx, "cus")
    ctx.execute(
        "INSERT INTO customers (id, name, email, phone, description, address, shipping, preferred_locales, "
        "tax_exempt, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            customer_id,
            name,
            email,
            phone,
            description,
            c.stored(address),
            c.stored(shipping),
            json.dumps(preferred_locales or []),
            tax_exempt or "none",
            c.dumped(metadata),
            ctx.timestamp(),
        ),
    )
    if payment_method is not None:
        methods.attach(ctx, payment_method, customer_id, param="payment_method")
    default = _default_method(ctx, customer_id, invoice_settings)
    if default is not None:
        ctx.execute("UPDATE customers SET default_payment_method = ? WHERE id = ?", (default, customer_id))
    return c.expanded(ctx, customer_object(ctx, customer_id), expand)


@world.operation("GET", "/v1/customers/{customer}")
def retrieve_customer(ctx: ToolContext, customer: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a customer (a deleted one answers `deleted: true`).

    Args:
        customer: The customer's id, `cus_…`.
        expand: Fields to expand.
    """
    return c.expanded(ctx, customer_object(ctx, customer), expand)


@world.operation("POST", "/v1/customers/{customer}")
def update_customer(
    ctx: ToolContext,
    customer: str,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    description: str | None = None,
    invoice_settings: InvoiceSettings | None = None,
    address: c.Address | Literal[""] | None = None,
    shipping: c.Shipping | Literal[""] | None = None,
    preferred_locales: list[str] | Literal[""] | None = None,
    tax_exempt: TaxExempt | Literal[""] | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Update a customer: the fields given change (`""` unsets one), metadata keys merge (an empty value
    removes a key).

    Args:
        customer: The customer's id, `cus_…`.
        name: The new name.
        email: The new email address.
        phone: The new phone number.
        description: The new internal note.
        invoice_settings: `default_payment_method`: the attached card invoices charge.
        address: The new postal address (it replaces the old one whole).
        shipping: The new shipping details.
        preferred_locales: The new preferred languages.
        tax_exempt: `none`, `exempt` or `reverse`.
        metadata: Keys to set.
        expand: Fields to expand.
    """
    found = c.live_customer(ctx, customer, "id")
    changes: dict[str, Any] = {"name": name, "email": email, "phone": phone, "description": description}
    for column, value in changes.items():
        if value is not None:
            ctx.execute(f"UPDATE customers SET {column} = ? WHERE id = ?", (value or None, found["id"]))
    stored: dict[str, Any] = {}
    if address is not None:
        stored["address"] = c.stored(address)
    if shipping is not None:
        stored["shipping"] = c.stored(shipping)
    if preferred_locales is not None:
        stored["preferred_locales"] = json.dumps(preferred_locales or [])
    if tax_exempt is not None:
        stored["tax_exempt"] = tax_exempt or "none"
    for column, value in stored.items():
        ctx.execute(f"UPDATE customers SET {column} = ? WHERE id = ?", (value, found["id"]))
    if metadata is not None:
        ctx.execute(
            "UPDATE customers SET metadata = ? WHERE id = ?",
            (c.merged_metadata(found["metadata"], metadata), found["id"]),
        )
    if invoice_settings is not None:
        default = _default_method(ctx, found["id"], invoice_settings)
        ctx.execute("UPDATE customers SET default_payment_method = ? WHERE id = ?", (default, found["id"]))
    return c.expanded(ctx, customer_object(ctx, found["id"]), expand)


@world.operation("DELETE", "/v1/customers/{customer}")
def delete_customer(ctx: ToolContext, customer: str) -> dict:
    """Delete a customer: its subscriptions are canceled at once and its cards detached.

    Args:
        customer: The customer's id, `cus_…`.
    """
    found = c.live_customer(ctx, customer, "id")
    now = ctx.timestamp()
    ctx.execute(
        "UPDATE subscriptions SET status = 'canceled', canceled_at = ?, ended_at = ? "
        "WHERE customer = ? AND status NOT IN ('canceled', 'incomplete_expired')",
        (now, now, found["id"]),
    )
    ctx.execute("UPDATE payment_methods SET customer = NULL WHERE customer = ?", (found["id"],))
    ctx.execute(
        "UPDATE customers SET deleted = 1, default_payment_method = NULL WHERE id = ?", (found["id"],)
    )
    return {"id": found["id"], "object": "customer", "deleted": True}


@world.tool(writes=False)
@world.operation("GET", "/v1/customers")
def list_customers(
    ctx: ToolContext,
    email: str | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List customers, newest first; filter by exact email.

    Args:
        email: Only customers with this email (case-sensitive, as Stripe).
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A customer id: the page after it.
        ending_before: A customer id: the page before it.
        expand: Fields to expand, such as `data.invoice_settings.default_payment_method`.
    """
    where, args = c.filters(created, email=email)
    return c.listed(
        ctx,
        "customers",
        "/v1/customers",
        serialize,
        where=f"{where} AND deleted = 0",
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )


@world.operation("GET", "/v1/customers/search")
def search_customers(
    ctx: ToolContext,
    query: str,
    limit: c.Limit = 10,
    page: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Search customers with Stripe's query language, newest first: `email`, `name`, `phone` (`:` exact in
    any case, `~` contains), `created` (`:`, `>`, `<`, `>=`, `<=` on Unix seconds) and `metadata["key"]`;
    `-` negates a clause; clauses join by AND or by OR.

    Args:
        query: Such as `name~"whit" AND metadata["plan"]:"gold"`.
        limit: How many to return, 1 to 100.
        page: The `next_page` token of the previous page.
        expand: Fields to expand, such as `data.invoice_settings.default_payment_method`, or `total_count`.
    """
    where, args = c.search_condition(query, SEARCH_FIELDS, "customers")
    return c.searched(
        ctx,
        "customers",
        "/v1/customers/search",
        serialize,
        where=f"({where}) AND deleted = 0",
        args=args,
        limit=limit,
        page=page,
        expand=expand,
    )
