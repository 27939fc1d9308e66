"""Payment intents and charges: `/v1/payment_intents` (create, confirm, capture, cancel), `/v1/charges`, and the
agent tool `list_payment_intents`.

Confirming charges the card: a charge row, the intent `succeeded` (or `requires_capture` for manual
capture). A declined confirmation is Stripe's 402 card error and, as every refused call in Atoll, writes
nothing; invoices and subscriptions keep their failed attempts instead (see `attempt`).
"""

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from atoll.worlds import ToolContext

from ..world import world
from . import _common as c
from . import _fields as f
from . import payment_methods as methods

MINIMUM_AMOUNT = 50  # cents: Stripe's smallest USD charge
SetupFutureUsage = Literal["off_session", "on_session"]
# Stripe's limit on a statement descriptor suffix, and the characters it refuses in one.
_SUFFIX_LENGTH = 22
_SUFFIX_REFUSED = set("<>\\'\"*")
# The fields `GET /v1/payment_intents/search` queries, as Stripe's search offers them for payment intents.
SEARCH_FIELDS = {
    "amount": c.SearchField("amount", "number"),
    "created": c.SearchField("created", "time"),
    "currency": c.SearchField("currency", "exact"),
    "customer": c.SearchField("customer", "exact"),
    "status": c.SearchField("status", "exact"),
}
_CANCELABLE = ("requires_payment_method", "requires_confirmation", "requires_capture", "requires_action")


class AutomaticPaymentMethods(BaseModel):
    """`automatic_payment_methods[enabled]`: accepted; cards are the only method here."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool
    allow_redirects: Literal["always", "never"] | None = None


@c.loads("pi")
def payment_intent_object(ctx: ToolContext, intent_id: str) -> dict[str, Any]:
    return serialize_intent(ctx, c.row(ctx, "payment_intents", intent_id, "payment_intent"))


@c.loads("ch")
def charge_object(ctx: ToolContext, charge_id: str) -> dict[str, Any]:
    return serialize_charge(ctx, c.row(ctx, "charges", charge_id, "charge"))


def serialize_intent(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    secret = hashlib.sha256(row["id"].encode()).hexdigest()[:24]
    error = json.loads(row["last_payment_error"]) if row["last_payment_error"] else None
    modelled = {
        "id": row["id"],
        "object": "payment_intent",
        "amount": row["amount"],
        "amount_capturable": row["amount_capturable"],
        "amount_received": row["amount_received"],
        "canceled_at": c.unix(row["canceled_at"]),
        "cancellation_reason": row["cancellation_reason"],
        "capture_method": row["capture_method"],
        "client_secret": f"{row['id']}_secret_{secret}",
        "confirmation_method": "automatic",
        "created": c.unix(row["created"]),
        "currency": row["currency"],
        "customer": row["customer"],
        "description": row["description"],
        "last_payment_error": f.shaped(f.PAYMENT_ERROR, error) if error else None,
        "latest_charge": row["latest_charge"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "payment_method": row["payment_method"],
        "payment_method_types": ["card"],
        "receipt_email": row["receipt_email"],
        "setup_future_usage": row["setup_future_usage"],
        "statement_descriptor_suffix": row["statement_descriptor_suffix"],
        "status": row["status"],
    }
    return f.shaped(f.PAYMENT_INTENT, modelled)


def serialize_charge(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    card = ctx.one("SELECT * FROM payment_methods WHERE id = ?", (row["payment_method"],)) or {}
    intent = ctx.one(
        "SELECT receipt_email, statement_descriptor_suffix FROM payment_intents WHERE id = ?",
        (row["payment_intent"],),
    ) or {"receipt_email": None, "statement_descriptor_suffix": None}
    account = ctx.one("SELECT business_name FROM account")
    descriptor = account["business_name"].upper()[:22] if account else None
    suffix = intent["statement_descriptor_suffix"]
    if descriptor and suffix:
        descriptor = f"{descriptor[:10].rstrip()}* {suffix}"[:22]
    succeeded = row["status"] == "succeeded"
    modelled = {
        "id": row["id"],
        "object": "charge",
        "amount": row["amount"],
        "amount_captured": row["amount_captured"],
        "amount_refunded": row["amount_refunded"],
        "balance_transaction": None,
        "billing_details": {
            **f.BILLING_DETAILS,
            "email": card.get("billing_email"),
            "name": card.get("billing_name"),
        },
        "calculated_statement_descriptor": descriptor,
        "captured": bool(row["captured"]),
        "created": c.unix(row["created"]),
        "currency": row["currency"],
        "customer": row["customer"],
        "description": row["description"],
        "disputed": False,
        "failure_code": row["failure_code"],
        "failure_message": row["failure_message"],
        "livemode": False,
        "metadata": c.metadata(row["metadata"]),
        "outcome": {
            **f.OUTCOME,
            "network_status": "approved_by_network" if succeeded else "declined_by_network",
            "reason": None if succeeded else row["failure_code"],
            "risk_level": "normal",
            "seller_message": "Payment complete." if succeeded else "The bank declined the payment.",
            "type": "authorized" if succeeded else "issuer_declined",
        },
        "paid": succeeded,
        "payment_intent": row["payment_intent"],
        "payment_method": row["payment_method"],
        "payment_method_details": {
            "card": f.shaped(
                f.CHARGE_CARD,
                {
                    **{
                        k: card.get(k)
                        for k in (
                            "brand",
                            "country",
                            "exp_month",
                            "exp_year",
                            "fingerprint",
                            "funding",
                            "last4",
                        )
                    },
                    "amount_authorized": row["amount"] if succeeded else None,
                    "checks": {
                        "address_line1_check": None,
                        "address_postal_code_check": None,
                        "cvc_check": "pass" if succeeded else None,
                    },
                    "electronic_commerce_indicator": None,
                    "network": card.get("brand"),
                },
            ),
            "type": "card",
        },
        "receipt_email": intent["receipt_email"],
        "receipt_url": None,
        "refunded": bool(row["refunded"]),
        "statement_descriptor_suffix": suffix,
        "status": row["status"],
    }
    return f.shaped(f.CHARGE, modelled)


def attempt(ctx: ToolContext, intent: dict[str, Any], method: dict[str, Any]) -> str | None:
    """Charge `method` for `intent` and record the outcome on both: None when it paid, else the decline code
    (the failed charge and the intent's `last_payment_error` stay, as Stripe keeps them)."""
    charge_id = c.new_id(ctx, "ch")
    code = method["decline_code"]
    capture = intent["capture_method"] == "automatic"
    amount = intent["amount"]
    failure = methods.DECLINES[code] if code else None
    ctx.execute(
        "INSERT INTO charges (id, amount, amount_captured, currency, customer, payment_intent, payment_method, status, "
        "captured, failure_code, failure_message, description, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            charge_id,
            amount,
            amount if capture and not code else 0,
            intent["currency"],
            intent["customer"],
            intent["id"],
            method["id"],
            "failed" if code else "succeeded",
            int(capture and not code),
            failure[0] if failure else None,
            failure[1] if failure else None,
            intent["description"],
            ctx.timestamp(),
        ),
    )
    if failure:
        last_error = {
            "type": "card_error",
            "code": failure[0],
            "decline_code": code,
            "message": failure[1],
            "charge": charge_id,
        }
        ctx.execute(
            "UPDATE payment_intents SET status = 'requires_payment_method', payment_method = ?, latest_charge = ?, "
            "last_payment_error = ? WHERE id = ?",
            (method["id"], charge_id, json.dumps(last_error), intent["id"]),
        )
        return code
    ctx.execute(
        "UPDATE payment_intents SET status = ?, payment_method = ?, latest_charge = ?, amount_received = ?, "
        "amount_capturable = ?, last_payment_error = NULL WHERE id = ?",
        (
            "succeeded" if capture else "requires_capture",
            method["id"],
            charge_id,
            amount if capture else 0,
            0 if capture else amount,
            intent["id"],
        ),
    )
    return None


def new_intent(
    ctx: ToolContext,
    amount: c.Amount,
    currency: str,
    customer: str | None,
    *,
    description: str | None = None,
    capture_method: str = "automatic",
    metadata: c.Metadata | None = None,
) -> dict[str, Any]:
    if amount < MINIMUM_AMOUNT:
        raise c.error(400, "Amount must be at least $0.50 usd", code="amount_too_small", param="amount")
    if currency.lower() != "usd":
        raise c.error(
            400, f"Invalid currency: {currency}. This account settles in usd only.", param="currency"
        )
    intent_id = c.new_id(ctx, "pi")
    ctx.execute(
        "INSERT INTO payment_intents (id, amount, currency, customer, status, capture_method, description, metadata, "
        "created) VALUES (?, ?, 'usd', ?, 'requires_payment_method', ?, ?, ?, ?)",
        (intent_id, amount, customer, capture_method, description, c.dumped(metadata), ctx.timestamp()),
    )
    return c.row(ctx, "payment_intents", intent_id, "payment_intent")


def _usable_method(ctx: ToolContext, method_id: str, customer: str | None) -> dict[str, Any]:
    method = methods.resolve(ctx, method_id)
    if method["customer"] is not None and method["customer"] != customer:
        raise c.error(
            400,
            f"The provided PaymentMethod {method['id']} belongs to another customer; attach it to {customer} first.",
            param="payment_method",
            code="payment_method_unexpected_state",
        )
    return method


def _suffix(value: str | None) -> str | None:
    """A valid `statement_descriptor_suffix` (None and "" as None), or Stripe's 400."""
    if not value:
        return None
    if len(value) > _SUFFIX_LENGTH or _SUFFIX_REFUSED & set(value) or not any(ch.isalpha() for ch in value):
        raise c.error(
            400,
            f"The statement descriptor suffix must be at most {_SUFFIX_LENGTH} characters, hold a letter, and "
            "none of < > \\ ' \" *.",
            param="statement_descriptor_suffix",
            code="parameter_invalid_string",
        )
    return value


def _store(ctx: ToolContext, intent_id: str, **columns: Any) -> None:
    """Set the given columns of an intent, leaving out those that are None (`""` clears one)."""
    for column, value in columns.items():
        if value is not None:
            ctx.execute(f"UPDATE payment_intents SET {column} = ? WHERE id = ?", (value or None, intent_id))


def _confirm(ctx: ToolContext, intent: dict[str, Any], payment_method: str | None, *, existed: bool) -> None:
    """Charge the intent's card; a decline raises (naming the intent only if it outlives the rollback)."""
    if intent["status"] not in ("requires_payment_method", "requires_confirmation"):
        raise c.error(
            400,
            f"This PaymentIntent's status is {intent['status']}; only one in requires_payment_method or "
            "requires_confirmation can be confirmed.",
            code="payment_intent_unexpected_state",
        )
    method_id = payment_method or intent["payment_method"]
    if method_id is None:
        raise c.error(
            400,
            "You cannot confirm this PaymentIntent because it's missing a payment method. Pass payment_method.",
            code="payment_intent_unexpected_state",
            param="payment_method",
        )
    method = _usable_method(ctx, method_id, intent["customer"])
    code = attempt(ctx, intent, method)
    if code is not None:
        raise methods.decline(code, **({"payment_intent": intent["id"]} if existed else {}))


@world.operation("POST", "/v1/payment_intents")
def create_payment_intent(
    ctx: ToolContext,
    amount: c.Amount,
    currency: str,
    customer: str | None = None,
    payment_method: str | None = None,
    confirm: bool = False,
    capture_method: Literal["automatic", "automatic_async", "manual"] = "automatic",
    description: str | None = None,
    off_session: bool | None = None,
    payment_method_types: list[Literal["card"]] | None = None,
    automatic_payment_methods: AutomaticPaymentMethods | None = None,
    receipt_email: str | None = None,
    setup_future_usage: SetupFutureUsage | None = None,
    statement_descriptor_suffix: str | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Create a payment intent; with `confirm` and a card it is charged at once.

    Args:
        amount: In cents, at least 50.
        currency: `usd`.
        customer: The paying customer's id, `cus_…`.
        payment_method: The card to charge, `pm_…` or a test id such as `pm_card_visa`.
        confirm: Charge now.
        capture_method: `manual` authorizes only, for a later capture.
        description: Shown on the charge.
        off_session: The customer is not present (accepted; no authentication is ever asked for).
        payment_method_types: Only `card`.
        automatic_payment_methods: Accepted; cards are the only method.
        receipt_email: Where the receipt would go (kept; no email is sent).
        setup_future_usage: `off_session` or `on_session`: the card is kept for later payments (kept; the
            card is saved to the customer by attaching it).
        statement_descriptor_suffix: Up to 22 characters after the account's name on the card statement.
        metadata: Your key-value pairs.
        expand: Fields to expand, such as `latest_charge`.
    """
    if customer is not None:
        c.live_customer(ctx, customer)
    suffix = _suffix(statement_descriptor_suffix)
    capture = "manual" if capture_method == "manual" else "automatic"
    intent = new_intent(
        ctx, amount, currency, customer, description=description, capture_method=capture, metadata=metadata
    )
    _store(
        ctx,
        intent["id"],
        receipt_email=receipt_email,
        setup_future_usage=setup_future_usage,
        statement_descriptor_suffix=suffix,
    )
    intent = c.row(ctx, "payment_intents", intent["id"], "payment_intent")
    if payment_method is not None:
        method = _usable_method(ctx, payment_method, customer)
        ctx.execute(
            "UPDATE payment_intents SET payment_method = ?, status = 'requires_confirmation' WHERE id = ?",
            (method["id"], intent["id"]),
        )
        intent = c.row(ctx, "payment_intents", intent["id"], "payment_intent")
    if confirm:
        _confirm(ctx, intent, None, existed=False)
    return c.expanded(ctx, payment_intent_object(ctx, intent["id"]), expand)


@world.operation("GET", "/v1/payment_intents/{intent}")
def retrieve_payment_intent(ctx: ToolContext, intent: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a payment intent.

    Args:
        intent: The payment intent's id, `pi_…`.
        expand: Fields to expand, such as `latest_charge`.
    """
    return c.expanded(ctx, payment_intent_object(ctx, intent), expand)


@world.operation("POST", "/v1/payment_intents/{intent}")
def update_payment_intent(
    ctx: ToolContext,
    intent: str,
    amount: c.Amount | None = None,
    description: str | None = None,
    payment_method: str | None = None,
    receipt_email: str | None = None,
    setup_future_usage: SetupFutureUsage | Literal[""] | None = None,
    statement_descriptor_suffix: str | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Update a payment intent that has not been charged yet.

    Args:
        intent: The payment intent's id, `pi_…`.
        amount: The new amount in cents.
        description: The new description.
        payment_method: The card to charge on confirmation.
        receipt_email: Where the receipt would go; `""` clears it.
        setup_future_usage: `off_session` or `on_session`; `""` clears it.
        statement_descriptor_suffix: The new suffix; `""` clears it.
        metadata: Keys to set (an empty value removes a key).
        expand: Fields to expand.
    """
    found = c.row(ctx, "payment_intents", intent, "payment_intent", "intent")
    if found["status"] not in ("requires_payment_method", "requires_confirmation"):
        raise c.error(
            400,
            f"This PaymentIntent's status is {found['status']}; it can no longer be updated.",
            code="payment_intent_unexpected_state",
        )
    if amount is not None:
        if amount < MINIMUM_AMOUNT:
            raise c.error(400, "Amount must be at least $0.50 usd", code="amount_too_small", param="amount")
        ctx.execute("UPDATE payment_intents SET amount = ? WHERE id = ?", (amount, found["id"]))
    if description is not None:
        ctx.execute(
            "UPDATE payment_intents SET description = ? WHERE id = ?", (description or None, found["id"])
        )
    if payment_method is not None:
        method = _usable_method(ctx, payment_method, found["customer"])
        ctx.execute(
            "UPDATE payment_intents SET payment_method = ?, status = 'requires_confirmation' WHERE id = ?",
            (method["id"], found["id"]),
        )
    if metadata is not None:
        ctx.execute(
            "UPDATE payment_intents SET metadata = ? WHERE id = ?",
            (c.merged_metadata(found["metadata"], metadata), found["id"]),
        )
    _store(
        ctx,
        found["id"],
        receipt_email=receipt_email,
        setup_future_usage=setup_future_usage,
        statement_descriptor_suffix=(
            None if statement_descriptor_suffix is None else _suffix(statement_descriptor_suffix) or ""
        ),
    )
    return c.expanded(ctx, payment_intent_object(ctx, found["id"]), expand)


@world.operation("POST", "/v1/payment_intents/{intent}/confirm")
def confirm_payment_intent(
    ctx: ToolContext,
    intent: str,
    payment_method: str | None = None,
    off_session: bool | None = None,
    receipt_email: str | None = None,
    setup_future_usage: SetupFutureUsage | Literal[""] | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Confirm a payment intent: charge its card (or `payment_method`); a decline is a 402 card error.

    Args:
        intent: The payment intent's id, `pi_…`.
        payment_method: The card to charge instead of the one on the intent.
        off_session: Accepted; no authentication is ever asked for.
        receipt_email: Where the receipt would go (kept; no email is sent).
        setup_future_usage: `off_session` or `on_session`; `""` clears it.
        expand: Fields to expand, such as `latest_charge`.
    """
    found = c.row(ctx, "payment_intents", intent, "payment_intent", "intent")
    _store(ctx, found["id"], receipt_email=receipt_email, setup_future_usage=setup_future_usage)
    _confirm(ctx, found, payment_method, existed=True)
    return c.expanded(ctx, payment_intent_object(ctx, found["id"]), expand)


@world.operation("POST", "/v1/payment_intents/{intent}/capture")
def capture_payment_intent(
    ctx: ToolContext, intent: str, amount_to_capture: c.Amount | None = None, expand: c.Expand | None = None
) -> dict:
    """Capture an authorized payment intent, in full or in part (the rest is released).

    Args:
        intent: The payment intent's id, `pi_…`.
        amount_to_capture: In cents, at most the authorized amount; default all of it.
        expand: Fields to expand.
    """
    found = c.row(ctx, "payment_intents", intent, "payment_intent", "intent")
    if found["status"] != "requires_capture":
        raise c.error(
            400,
            f"This PaymentIntent could not be captured because it has a status of {found['status']}.",
            code="payment_intent_unexpected_state",
        )
    amount = found["amount_capturable"] if amount_to_capture is None else amount_to_capture
    if not 0 < amount <= found["amount_capturable"]:
        raise c.error(
            400,
            f"The amount to capture must be between 1 and {found['amount_capturable']}.",
            code="amount_too_large",
            param="amount_to_capture",
        )
    ctx.execute(
        "UPDATE charges SET amount_captured = ?, captured = 1 WHERE id = ?", (amount, found["latest_charge"])
    )
    ctx.execute(
        "UPDATE payment_intents SET status = 'succeeded', amount_received = ?, amount_capturable = 0 WHERE id = ?",
        (amount, found["id"]),
    )
    return c.expanded(ctx, payment_intent_object(ctx, found["id"]), expand)


@world.operation("POST", "/v1/payment_intents/{intent}/cancel")
def cancel_payment_intent(
    ctx: ToolContext,
    intent: str,
    cancellation_reason: Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"]
    | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Cancel a payment intent that has not succeeded (an authorization is released).

    Args:
        intent: The payment intent's id, `pi_…`.
        cancellation_reason: Why.
        expand: Fields to expand.
    """
    found = c.row(ctx, "payment_intents", intent, "payment_intent", "intent")
    if found["status"] not in _CANCELABLE:
        raise c.error(
            400,
            f"You cannot cancel this PaymentIntent because it has a status of {found['status']}. Only a PaymentIntent "
            f"with one of the following statuses may be canceled: {', '.join(_CANCELABLE)}.",
            code="payment_intent_unexpected_state",
        )
    ctx.execute(
        "UPDATE payment_intents SET status = 'canceled', canceled_at = ?, cancellation_reason = ?, "
        "amount_capturable = 0 WHERE id = ?",
        (ctx.timestamp(), cancellation_reason, found["id"]),
    )
    return c.expanded(ctx, payment_intent_object(ctx, found["id"]), expand)


@world.tool(writes=False)
@world.operation("GET", "/v1/payment_intents")
def list_payment_intents(
    ctx: ToolContext,
    customer: str | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List payment intents, newest first, optionally one customer's.

    Args:
        customer: Only this customer's, `cus_…`.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A payment intent id: the page after it.
        ending_before: A payment intent id: the page before it.
        expand: Fields to expand, such as `data.latest_charge` (to see what was refunded).
    """
    where, args = c.filters(created, customer=customer)
    return c.listed(
        ctx,
        "payment_intents",
        "/v1/payment_intents",
        serialize_intent,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )


@world.operation("GET", "/v1/payment_intents/search")
def search_payment_intents(
    ctx: ToolContext,
    query: str,
    limit: c.Limit = 10,
    page: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Search payment intents with Stripe's query language, newest first: `amount` and `created` (`:`, `>`,
    `<`, `>=`, `<=`), `currency`, `customer`, `status` (`:`) and `metadata["key"]`; `-` negates a clause;
    clauses join by AND or by OR.

    Args:
        query: Such as `status:"succeeded" AND amount>10000`.
        limit: How many to return, 1 to 100.
        page: The `next_page` token of the previous page.
        expand: Fields to expand, such as `data.latest_charge`, or `total_count`.
    """
    where, args = c.search_condition(query, SEARCH_FIELDS, "payment_intents")
    return c.searched(
        ctx,
        "payment_intents",
        "/v1/payment_intents/search",
        serialize_intent,
        where=where,
        args=args,
        limit=limit,
        page=page,
        expand=expand,
    )


@world.operation("GET", "/v1/charges/{charge}")
def retrieve_charge(ctx: ToolContext, charge: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a charge.

    Args:
        charge: The charge's id, `ch_…`.
        expand: Fields to expand, such as `payment_intent`.
    """
    return c.expanded(ctx, charge_object(ctx, charge), expand)


@world.operation("GET", "/v1/charges")
def list_charges(
    ctx: ToolContext,
    customer: str | None = None,
    payment_intent: str | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List charges, newest first, optionally one customer's or one payment intent's.

    Args:
        customer: Only this customer's, `cus_…`.
        payment_intent: Only this payment intent's, `pi_…`.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A charge id: the page after it.
        ending_before: A charge id: the page before it.
        expand: Fields to expand.
    """
    where, args = c.filters(created, customer=customer, payment_intent=payment_intent)
    return c.listed(
        ctx,
        "charges",
        "/v1/charges",
        serialize_charge,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )
