"""Billing and record tools: waiving a fee, refunding a payment, and notes on a client's record."""

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c

_FEES = ("late_cancellation", "no_show")


@world.tool(writes=True)
def waive_fee(ctx: ToolContext, invoice_id: str, reason: str) -> dict:
    """Waive an unpaid late-cancellation or no-show fee: the invoice becomes waived and is not owed.

    Args:
        invoice_id: The fee's invoice, for example "INV-3001".
        reason: Why it is waived, in a few words.
    """
    row = c.invoice(ctx, invoice_id)
    reason = c.require_text(reason, "reason")
    if row["kind"] not in _FEES:
        raise ToolError(
            "invalid_state", f"Invoice {row['id']} is a {row['kind']} bill, not a fee.", invoice_id=row["id"]
        )
    if row["status"] == "paid":
        raise ToolError(
            "invalid_state",
            f"Invoice {row['id']} is already paid; refund_payment pays it back.",
            invoice_id=row["id"],
            status=row["status"],
        )
    if row["status"] != "open":
        raise ToolError(
            "invalid_state",
            f"Invoice {row['id']} is {row['status']}.",
            invoice_id=row["id"],
            status=row["status"],
        )
    ctx.execute(
        "UPDATE invoices SET status = 'waived', closed_at = ?, resolution = ? WHERE id = ?",
        (ctx.timestamp(), reason, row["id"]),
    )
    return {"invoice_id": row["id"], "kind": row["kind"], "amount": row["amount"], "status": "waived"}


@world.tool(writes=True)
def refund_payment(ctx: ToolContext, invoice_id: str, reason: str) -> dict:
    """Refund a paid invoice in full to the card or cash it was paid with; the invoice becomes refunded.

    Args:
        invoice_id: The paid invoice, for example "INV-3003".
        reason: Why it is refunded, in a few words.
    """
    row = c.invoice(ctx, invoice_id)
    reason = c.require_text(reason, "reason")
    if row["status"] != "paid":
        raise ToolError(
            "invalid_state",
            f"Invoice {row['id']} is {row['status']}, not paid: nothing to refund.",
            invoice_id=row["id"],
            status=row["status"],
        )
    now = ctx.timestamp()
    payments = ctx.rows("SELECT * FROM payments WHERE invoice_id = ? AND status = 'captured'", (row["id"],))
    ctx.execute(
        "UPDATE payments SET status = 'refunded', refunded_at = ? WHERE invoice_id = ?", (now, row["id"])
    )
    ctx.execute(
        "UPDATE invoices SET status = 'refunded', closed_at = ?, resolution = ? WHERE id = ?",
        (now, reason, row["id"]),
    )
    return {
        "invoice_id": row["id"],
        "refunded": row["amount"],
        "to": [f"card ending {p['card_last4']}" if p["method"] == "card" else "cash" for p in payments],
        "status": "refunded",
    }


@world.tool(writes=True)
def add_note(
    ctx: ToolContext,
    client_id: str,
    body: str,
    pet_id: str | None = None,
    appointment_id: str | None = None,
) -> dict:
    """Add an internal note to a client's record, for example for the practice manager.

    Args:
        client_id: The client id, for example "CLI-0042".
        body: The note: what happened or what someone should follow up.
        pet_id: The pet the note is about, if any.
        appointment_id: The appointment the note is about, if any.
    """
    row = c.client(ctx, client_id)
    body = c.require_text(body, "body")
    if pet_id is not None:
        pet = c.pet(ctx, pet_id)
        if pet["client_id"] != row["id"]:
            raise ToolError("invalid_argument", f"Pet {pet['id']} belongs to another client.", field="pet_id")
        pet_id = pet["id"]
    if appointment_id is not None:
        appointment = c.appointment(ctx, appointment_id)
        if appointment["client_id"] != row["id"]:
            raise ToolError(
                "invalid_argument",
                f"Appointment {appointment['id']} belongs to another client.",
                field="appointment_id",
            )
        appointment_id = appointment["id"]
    note_id = ctx.new_id("NOTE")
    ctx.execute(
        "INSERT INTO notes (id, client_id, pet_id, appointment_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (note_id, row["id"], pet_id, appointment_id, body, ctx.timestamp()),
    )
    return {"note_id": note_id, "client_id": row["id"]}
