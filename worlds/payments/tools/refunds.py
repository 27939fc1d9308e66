"""Refunds: `/v1/refunds`, and the agent tool `create_refund`.

A refund takes money back from one succeeded charge, in full or in part, never more than is left
unrefunded; the charge's `amount_refunded` and `refunded` follow.
"""

from typing import Any, Literal

from atoll.worlds import ToolContext

from ..world import world
from . import _common as c
from . import _fields as f

Reason = Literal["duplicate", "fraudulent", "requested_by_customer"]


@c.loads("re")
def refund_object(ctx: ToolContext, refund_id: str) -> dict[str, Any]:
    return serialize(ctx, c.row(ctx, "refunds", refund_id, "refund"))


def serialize(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    charge = ctx.one("SELECT customer, payment_method FROM charges WHERE id = ?", (row["charge"],)) or {}
    modelled = {
        "id": row["id"],
        "object": "refund",
        "amount": row["amount"],
        "balance_transaction": None,
        "charge": row["charge"],
        "created": c.unix(row["created"]),
        "currency": row["currency"],
        "customer": charge.get("customer"),
        "metadata": c.metadata(row["metadata"]),
        "payment_intent": row["payment_intent"],
        "payment_method": charge.get("payment_method"),
        "reason": row["reason"],
        "receipt_number": None,
        "status": row["status"],
    }
    return f.shaped(f.REFUND, modelled)


@c.includes("charge", "refunds")
def charge_refunds(ctx: ToolContext, charge: dict[str, Any]) -> dict[str, Any]:
    """`expand[]=refunds` on a charge: its refunds, newest first."""
    return c.listed(
        ctx,
        "refunds",
        f"/v1/charges/{charge['id']}/refunds",
        serialize,
        where="charge = ?",
        args=(charge["id"],),
        limit=100,
    )


def _charge_of(ctx: ToolContext, charge: str | None, payment_intent: str | None) -> dict[str, Any]:
    if (charge is None) == (payment_intent is None):
        raise c.error(
            400,
            "You must pass exactly one of charge or payment_intent.",
            param="charge",
            code="parameter_missing",
        )
    if charge is not None:
        return c.row(ctx, "charges", charge, "charge", "charge")
    intent = c.row(ctx, "payment_intents", payment_intent, "payment_intent", "payment_intent")
    if intent["status"] == "requires_capture":
        raise c.error(
            400,
            f"PaymentIntent {intent['id']} has not been captured: cancel it to release the authorization instead.",
            param="payment_intent",
            code="charge_not_refundable",
        )
    if intent["status"] != "succeeded" or intent["latest_charge"] is None:
        raise c.error(
            400,
            f"This PaymentIntent ({intent['id']}) does not have a successful charge to refund.",
            param="payment_intent",
            code="charge_not_refundable",
        )
    return c.row(ctx, "charges", intent["latest_charge"], "charge", "payment_intent")


@world.tool(writes=True)
@world.operation("POST", "/v1/refunds")
def create_refund(
    ctx: ToolContext,
    payment_intent: str | None = None,
    charge: str | None = None,
    amount: c.Amount | None = None,
    reason: Reason | None = None,
    metadata: c.Metadata | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """Refund a charge, in full (default) or in part; name the payment intent or the charge.

    Args:
        payment_intent: The payment intent whose charge to refund, `pi_…`.
        charge: Or the charge itself, `ch_…`.
        amount: In cents; default all that is not refunded yet.
        reason: `duplicate`, `fraudulent` or `requested_by_customer`.
        metadata: Your key-value pairs.
        expand: Fields to expand, such as `charge`.
    """
    paid = _charge_of(ctx, charge, payment_intent)
    if paid["status"] != "succeeded" or not paid["captured"]:
        raise c.error(
            400,
            f"Charge {paid['id']} did not succeed, so there is nothing to refund.",
            code="charge_not_refundable",
        )
    left = paid["amount_captured"] - paid["amount_refunded"]
    if left == 0:
        raise c.error(400, f"Charge {paid['id']} has already been refunded.", code="charge_already_refunded")
    amount = left if amount is None else amount
    if amount <= 0:
        raise c.error(400, "Invalid positive integer", param="amount", code="parameter_invalid_integer")
    if amount > left:
        raise c.error(
            400,
            f"Refund amount (${amount / 100:.2f}) is greater than unrefunded amount on charge (${left / 100:.2f})",
            param="amount",
            code="amount_too_large",
        )
    refund_id = c.new_id(ctx, "re")
    ctx.execute(
        "INSERT INTO refunds (id, amount, charge, payment_intent, currency, reason, status, metadata, created) "
        "VALUES (?, ?, ?, ?, ?, ?, 'succeeded', ?, ?)",
        (
            refund_id,
            amount,
            paid["id"],
            paid["payment_intent"],
            paid["currency"],
            reason,
            c.dumped(metadata),
            ctx.timestamp(),
        ),
    )
    refunded = paid["amount_refunded"] + amount
    ctx.execute(
        "UPDATE charges SET amount_refunded = ?, refunded = ? WHERE id = ?",
        (refunded, int(refunded == paid["amount_captured"]), paid["id"]),
    )
    return c.expanded(ctx, refund_object(ctx, refund_id), expand)


@world.operation("GET", "/v1/refunds/{refund}")
def retrieve_refund(ctx: ToolContext, refund: str, expand: c.Expand | None = None) -> dict:
    """Retrieve a refund.

    Args:
        refund: The refund's id, `re_…`.
        expand: Fields to expand, such as `charge`.
    """
    return c.expanded(ctx, refund_object(ctx, refund), expand)


@world.operation("GET", "/v1/refunds")
def list_refunds(
    ctx: ToolContext,
    charge: str | None = None,
    payment_intent: str | None = None,
    created: c.Created | None = None,
    limit: c.Limit = 10,
    starting_after: str | None = None,
    ending_before: str | None = None,
    expand: c.Expand | None = None,
) -> dict:
    """List refunds, newest first, optionally one charge's or one payment intent's.

    Args:
        charge: Only this charge's, `ch_…`.
        payment_intent: Only this payment intent's, `pi_…`.
        created: Only those created at this Unix time, or within `gt`, `gte`, `lt`, `lte` bounds.
        limit: How many to return, 1 to 100.
        starting_after: A refund id: the page after it.
        ending_before: A refund id: the page before it.
        expand: Fields to expand.
    """
    where, args = c.filters(created, charge=charge, payment_intent=payment_intent)
    return c.listed(
        ctx,
        "refunds",
        "/v1/refunds",
        serialize,
        where=where,
        args=args,
        limit=limit,
        starting_after=starting_after,
        ending_before=ending_before,
        expand=expand,
    )
