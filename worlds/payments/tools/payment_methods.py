"""Cards: `/v1/payment_methods`, attach and detach, made from Stripe's test numbers, tokens and `pm_card_…` ids."""

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from atoll.worlds import ToolContext

from ..cards import ALIASES, CARDS, DECLINES, TestCard
from ..world import world
from . import _common as c
from . import _fields as f


class CardDetails(BaseModel):
    """`card[…]`: a test card number with its expiry, or a test token such as `tok_visa`."""

    model_config = ConfigDict(extra="forbid")
    number: str | None = None
    exp_month: int | None = None
    exp_year: int | None = None
    cvc: str | None = None
    token: str | None = None


class BillingDetails(BaseModel):
    """`billing_details[…]`: the cardholder."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    email: str | None = None


@c.loads("pm")
def payment_method_object(ctx: ToolContext, method_id: str) -> dict[str, Any]:
    return serialize(ctx, c.row(ctx, "payment_methods", method_id, "payment_method"))


def serialize(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    modelled = {
        "id": row["id"],
        "object": "payment_method",
        "billing_details": {**f.BILLING_DETAILS, "email": row["billing_email"], "name": row["billing_name"]},
        "card": f.shaped(
            f.CARD,
            {
                "brand": row["brand"],
                "checks": {
                    "address_line1_check": None,
                    "address_postal_code_check": None,
                    "cvc_check": "pass",
                },
                "country": row["country"],
                "display_brand": row["brand"],
                "exp_month": row["exp_month"],
                "exp_year": row["exp_year"],
                "fingerprint": row["fingerprint"],
                "funding": row["funding"],
                "last4": row["last4"],
                "networks": {"available": [row["brand"]], "preferred": None},
            },
        ),
        "created": c.unix(row["created"]),
        "customer": row["customer"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "type": "card",
    }
    return f.shaped(f.PAYMENT_METHOD, modelled)


def decline(code: str, **extra: Any) -> Exception:
    """Stripe's card error for a decline code (HTTP 402)."""
    error_code, message = DECLINES[code]
    return c.error(402, message, code=error_code, decline_code=code, **extra)


def _insert(
    ctx: ToolContext, card: TestCard, exp_month: int, exp_year: int, billing: BillingDetails | None = None
) -> str:
    method_id = c.new_id(ctx, "pm")
    fingerprint = hashlib.sha256(card.number.encode()).hexdigest()[:16]
    ctx.execute(
        "INSERT INTO payment_methods (id, brand, last4, exp_month, exp_year, funding, country, fingerprint, "
        "decline_code, declines_on, billing_name, billing_email, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            method_id,
            card.brand,
            card.last4,
            exp_month,
            exp_year,
            card.funding,
            card.country,
            fingerprint,
            card.decline_code,
            card.declines_on,
            billing.name if billing else None,
            billing.email if billing else None,
            ctx.timestamp(),
        ),
    )
    return method_id


def resolve(ctx: ToolContext, method_id: str, param: str = "payment_method") -> dict[str, Any]:
    """A saved card, or a fresh one made from a `pm_card_…` test id (as Stripe's test mode does)."""
    if method_id in ALIASES and method_id.startswith("pm_card_"):
        method_id = _insert(ctx, CARDS[ALIASES[method_id]], 12, ctx.today().year + 3)
    return c.row(ctx, "payment_methods", method_id, "PaymentMethod", param)


def attach(
    ctx: ToolContext, method_id: str, customer_id: str, param: str = "payment_method"
) -> dict[str, Any]:
    """Attach a card to a customer; a card that declines on attach is Stripe's 402 and nothing is saved."""
    method = resolve(ctx, method_id, param)
    if method["customer"] not in (None, customer_id):
        raise c.error(
            400,
            f"The payment method you provided has already been attached to a customer: {method['id']}.",
            param=param,
            code="payment_method_unexpected_state",
        )
    if method["declines_on"] == "attach":
        raise decline(method["decline_code"], param=param)
    ctx.execute("UPDATE payment_methods SET customer = ? WHERE id = ?", (customer_id, method["id"]))
    return {**method, "customer": customer_id}


@world.operation("POST", "/v1/payment_methods")
def create_payment_method(
    ctx: ToolContext,
    type: Literal["card"],
    card: CardDetails,
    billing_details: BillingDetails | None = None,
    metadata: c.Metadata | None = None,
) -> dict:
    """Create a card from a test card number (4242 4242 4242 4242, …) or a test token (`tok_visa`, …).

    Args:
        type: Only `card`.
        card: `number`, `exp_month`, `exp_year`, `cvc`; or `token`.
        billing_details: The cardholder's name and email.
        metadata: Your key-value pairs.
    """
    if card.token is not None:
        if not card.token.startswith("tok_") or card.token not in ALIASES:
            raise c.error(400, f"No such token: '{card.token}'", code="resource_missing", param="card[token]")
        test_card, month, year = CARDS[ALIASES[card.token]], 12, ctx.today().year + 3
    else:
        number = (card.number or "").replace(" ", "")
        if not number:
            raise c.error(
                400, "Missing required param: card[number].", code="parameter_missing", param="card[number]"
            )
        if number not in CARDS:
            raise c.error(
                402, "Your card number is incorrect.", code="incorrect_number", param="card[number]"
            )
        if card.exp_month is None or not 1 <= card.exp_month <= 12:
            raise c.error(
                402,
                "Your card's expiration month is invalid.",
                code="invalid_expiry_month",
                param="card[exp_month]",
            )
        if card.exp_year is None or (card.exp_year, card.exp_month) < (ctx.today().year, ctx.today().month):
            raise c.error(
                402,
                "Your card's expiration year is invalid.",
                code="invalid_expiry_year",
                param="card[exp_year]",
            )
        test_card, month, year = CARDS[number], card.exp_month, card.exp_year
    method_id = _insert(ctx, test_card, month, year, billing_details)
    if metadata:
        ctx.execute("UPDATE payment_methods SET metadata = ? WHERE id = ?", (c.dumped(metadata), method_id))
    return payment_method_object(ctx, method_id)


@world.operation("GET", "/v1/payment_methods/{payment_method}")
def retrieve_payment_method(ctx: ToolContext, payment_method: str) -> dict:
    """Retrieve a card.

    Args:
        payment_method: The card's id, `pm_…`.
    """
    return payment_method_object(ctx, payment_method)


@world.operation("POST", "/v1/payment_methods/{payment_method}/attach")
def attach_payment_method(
    ctx: ToolContext, payment_method: str, customer: str, expand: c.Expand | None = None
) -> dict:
    """Attach a card to a customer so it can be charged again.

    Args:
        payment_method: The card's id, `pm_…`, or a test id such as `pm_card_visa`.
        customer: The customer's id, `cus_…`.
        expand: Fields to expand, such as `customer`.
    """
    owner = c.live_customer(ctx, customer)
    method = attach(ctx, payment_method, owner["id"], param="payment_method")
    return c.expanded(ctx, payment_method_object(ctx, method["id"]), expand)


@world.operation("POST", "/v1/payment_methods/{payment_method}/detach")
def detach_payment_method(ctx: ToolContext, payment_method: str) -> dict:
    """Detach a card from its customer; it can no longer be charged.

    Args:
        payment_method: The card's id, `pm_…`.
    """
    method = c.row(ctx, "payment_methods", payment_method, "PaymentMethod", "payment_method")
    if method["customer"] is None:
        raise c.error(
            400,
            "The payment method you provided is not attached to a customer so detachment is impossible.",
            code="payment_method_unexpected_state",
        )
    ctx.execute(
        "UPDATE customers SET default_payment_method = NULL WHERE default_payment_method = ?", (method["id"],)
    )
    ctx.execute(
        "UPDATE subscriptions SET default_payment_method = NULL WHERE default_payment_method = ?",
        (method["id"],),
    )
    ctx.execute("UPDATE payment_methods SET customer = NULL WHERE id = ?", (method["id"],))
    return payment_method_object(ctx, method["id"])


@world.operation("GET", "/v1/payment_methods")
def list_payment_methods(
    ctx: ToolContext,
    customer: str | None = None,
    type: Literal["card"] | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
) -> dict:
    """List the cards attached to a customer, newest first.

    Args:
        customer: The customer's id, `cus_…`.
        type: Only `card`.
        limit: How many to return, 1 to 100.
        starting_after: A card id: the page after it.
        ending_before: A card id: the page before it.
    """
    if customer is None:
        raise c.error(400, "Missing required param: customer.", code="parameter_missing", param="customer")
    url = "/v1/payment_methods"
    return c.listed(
        ctx,
        "payment_methods",
        url,
        serialize,
        where="customer = ?",
        args=(customer,),
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
    )


@world.operation("GET", "/v1/customers/{customer}/payment_methods")
def list_customer_payment_methods(
    ctx: ToolContext,
    customer: str,
    type: Literal["card"] | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
) -> dict:
    """List a customer's cards, newest first.

    Args:
        customer: The customer's id, `cus_…`.
        type: Only `card`.
        limit: How many to return, 1 to 100.
        starting_after: A card id: the page after it.
        ending_before: A card id: the page before it.
    """
    owner = c.live_customer(ctx, customer)
    return c.listed(
        ctx,
        "payment_methods",
        f"/v1/customers/{owner['id']}/payment_methods",
        serialize,
        where="customer = ?",
        args=(owner["id"],),
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
    )
