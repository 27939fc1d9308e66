"""Products and prices: `/v1/products`, `/v1/prices`, and the agent tools that create and list them."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.worlds import ToolContext

from ..world import world
from . import _common as c
from . import _fields as f


class Recurring(BaseModel):
    """`recurring[…]`: how often a subscription price bills."""

    model_config = ConfigDict(extra="forbid")
    interval: Literal["day", "week", "month", "year"]
    interval_count: int = Field(1, ge=1, le=12)


@c.loads("prod")
def product_object(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    return serialize_product(ctx, c.row(ctx, "products", product_id, "product"))


@c.loads("price")
def price_object(ctx: ToolContext, price_id: str) -> dict[str, Any]:
    return serialize_price(ctx, c.row(ctx, "prices", price_id, "price"))


def serialize_product(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    modelled = {
        "id": row["id"],
        "object": "product",
        "active": bool(row["active"]),
        "created": c.unix(row["created"]),
        "default_price": row["default_price"],
        "description": row["description"],
        "images": [],
        "livemode": False,
        "marketing_features": [],
        "metadata": c.metadata(row["metadata"]),
        "name": row["name"],
        "package_dimensions": None,
        "shippable": None,
        "type": "service",
        "updated": c.unix(row["updated"]),
        "url": None,
    }
    return f.shaped(f.PRODUCT, modelled)


def serialize_price(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    recurring = None
    if row["type"] == "recurring":
        recurring = {
            "interval": row["recurring_interval"],
            "interval_count": row["recurring_interval_count"],
            "meter": None,
            "trial_period_days": None,
            "usage_type": "licensed",
        }
    modelled = {
        "id": row["id"],
        "object": "price",
        "active": bool(row["active"]),
        "billing_scheme": "per_unit",
        "created": c.unix(row["created"]),
        "currency": row["currency"],
        "livemode": False,
        "lookup_key": row["lookup_key"],
        "metadata": c.metadata(row["metadata"]),
        "nickname": row["nickname"],
        "product": row["product"],
        "recurring": recurring,
        "tax_behavior": "unspecified",
        "type": row["type"],
        "unit_amount": row["unit_amount"],
        "unit_amount_decimal": str(row["unit_amount"]),
    }
    return f.shaped(f.PRICE, modelled)


@world.tool(writes=True)
@world.operation("POST", "/v1/products")
def create_product(
    ctx: ToolContext,
    name: str,
    description: str | None = None,
    active: bool = True,
    metadata: c.Metadata | None = None,
) -> dict:
    """Create a product: something the business sells, priced by one or more prices.

    Args:
        name: The product's name, as customers see it.
        description: What it is.
        active: Whether it can be sold.
        metadata: Your key-value pairs.
    """
    if not name.strip():
        raise c.error(400, "Missing required param: name.", param="name", code="parameter_missing")
    product_id = c.new_id(ctx, "prod")
    now = ctx.timestamp()
    ctx.execute(
        "INSERT INTO products (id, name, description, active, metadata, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (product_id, name, description, int(active), c.dumped(metadata), now, now),
    )
    return product_object(ctx, product_id)


@world.operation("GET", "/v1/products/{id}")
def retrieve_product(ctx: ToolContext, id: str) -> dict:
    """Retrieve a product.

    Args:
        id: The product's id, `prod_…`.
    """
    return product_object(ctx, id)


@world.tool(writes=False)
@world.operation("GET", "/v1/products")
def list_products(
    ctx: ToolContext,
    active: bool | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
) -> dict:
    """List products, newest first.

    Args:
        active: Only active (true) or archived (false) products.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A product id: the page after it.
        ending_before: A product id: the page before it.
    """
    where, args = c.filters(created, active=None if active is None else int(active))
    return c.listed(
        ctx,
        "products",
        "/v1/products",
        serialize_product,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
    )


@world.tool(writes=True)
@world.operation("POST", "/v1/prices")
def create_price(
    ctx: ToolContext,
    product: str,
    unit_amount: c.Amount,
    currency: str,
    recurring: Recurring | None = None,
    nickname: str | None = None,
    lookup_key: str | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Create a price for a product: one-time, or recurring for subscriptions.

    Args:
        product: The product's id, `prod_…`.
        unit_amount: In cents.
        currency: `usd`.
        recurring: `interval` (day, week, month, year) and `interval_count` for a subscription price.
        nickname: An internal name.
        lookup_key: A unique key to find the price by.
        metadata: Your key-value pairs.
        expand: Fields to expand, such as `product`.
    """
    owner = c.row(ctx, "products", product, "product", "product")
    if unit_amount < 0:
        raise c.error(
            400, "Invalid non-negative integer", param="unit_amount", code="parameter_invalid_integer"
        )
    if currency.lower() != "usd":
        raise c.error(
            400, f"Invalid currency: {currency}. This account settles in usd only.", param="currency"
        )
    if lookup_key and ctx.one("SELECT 1 FROM prices WHERE lookup_key = ?", (lookup_key,)):
        raise c.error(
            400, f"A price (lookup_key: {lookup_key}) already uses that lookup key.", param="lookup_key"
        )
    price_id = c.new_id(ctx, "price")
    ctx.execute(
        "INSERT INTO prices (id, product, unit_amount, currency, type, recurring_interval, recurring_interval_count, "
        "nickname, lookup_key, metadata, created) VALUES (?, ?, ?, 'usd', ?, ?, ?, ?, ?, ?, ?)",
        (
            price_id,
            owner["id"],
            unit_amount,
            "recurring" if recurring else "one_time",
            recurring.interval if recurring else None,
            recurring.interval_count if recurring else None,
            nickname,
            lookup_key,
            c.dumped(metadata),
            ctx.timestamp(),
        ),
    )
    if owner["default_price"] is None:
        ctx.execute("UPDATE products SET default_price = ? WHERE id = ?", (price_id, owner["id"]))
    return c.expanded(ctx, price_object(ctx, price_id), expand)


@world.operation("GET", "/v1/prices/{price}")
def retrieve_price(ctx: ToolContext, price: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a price.

    Args:
        price: The price's id, `price_…`.
        expand: Fields to expand, such as `product`.
    """
    return c.expanded(ctx, price_object(ctx, price), expand)


@world.tool(writes=False)
@world.operation("GET", "/v1/prices")
def list_prices(
    ctx: ToolContext,
    product: str | None = None,
    active: bool | None = None,
    type: Literal["one_time", "recurring"] | None = None,
    lookup_keys: Annotated[list[str], Field(max_length=10)] | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List prices, newest first, optionally one product's.

    Args:
        product: Only this product's, `prod_…`.
        active: Only active (true) or archived (false) prices.
        type: `one_time` or `recurring`.
        lookup_keys: Only the prices with these lookup keys (up to 10).
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A price id: the page after it.
        ending_before: A price id: the page before it.
        expand: Fields to expand, such as `data.product`.
    """
    where, args = c.filters(
        created, product=product, active=None if active is None else int(active), type=type
    )
    if lookup_keys:
        where = f"{where} AND lookup_key IN ({', '.join('?' * len(lookup_keys))})"
        args = (*args, *lookup_keys)
    return c.listed(
        ctx,
        "prices",
        "/v1/prices",
        serialize_price,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )
