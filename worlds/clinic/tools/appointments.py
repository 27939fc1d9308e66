"""Appointment tools: a client's appointments, open slots, booking, cancelling and moving."""

from datetime import date

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c


@world.tool(writes=False)
def list_appointments(
    ctx: ToolContext, client_id: str, pet_id: str | None = None, include_past: bool = False
) -> list[dict]:
    """List a client's appointments, soonest first, each with its vet, pet and invoices.

    By default only upcoming booked ones; include_past adds past, cancelled and missed appointments
    with their fees.

    Args:
        client_id: The client id, for example "CLI-0042".
        pet_id: Only this pet's appointments, for example "PET-0042".
        include_past: Also list past, cancelled and missed (no_show) appointments.
    """
    row = c.client(ctx, client_id)
    clauses, params = ["client_id = ?"], [row["id"]]
    if pet_id:
        clauses.append("pet_id = ?")
        params.append(c.pet(ctx, pet_id)["id"])
    if not include_past:
        clauses.append("status = 'booked' AND starts_at >= ?")
        params.append(ctx.timestamp())
    ids = ctx.rows(
        f"SELECT id FROM appointments WHERE {' AND '.join(clauses)} ORDER BY starts_at, id", tuple(params)
    )
    return [c.appointment_summary(ctx, r["id"]) for r in ids]


@world.tool(writes=False)
def search_slots(
    ctx: ToolContext,
    date: str | None = None,
    service: c.Service | None = None,
    species: c.Species | None = None,
    vet_id: str | None = None,
    limit: int = 10,
) -> list[dict]:
    """List open appointment slots that have not started, earliest first (at most `limit`).

    Each slot names its vet, the services the vet offers and the species the vet treats.

    Args:
        date: Only this day, as YYYY-MM-DD, for example "2026-04-15".
        service: Only vets who offer this service.
        species: Only vets who treat this species.
        vet_id: Only this vet, for example "VET-01".
        limit: At most this many slots (1 to 30).
    """
    if not 1 <= limit <= 30:
        raise ToolError("invalid_argument", "limit must be between 1 and 30.", field="limit")
    clauses, params = ["s.status = 'open'", "s.starts_at > ?"], [ctx.timestamp()]
    if date:
        try:
            day = _parse_date(date)
        except ValueError:
            raise ToolError(
                "invalid_argument", f"date must be YYYY-MM-DD, got {date!r}.", field="date"
            ) from None
        clauses.append("date(s.starts_at) = ?")
        params.append(day)
    if service:
        clauses.append("(',' || v.services || ',') LIKE ?")
        params.append(f"%,{service},%")
    if species:
        clauses.append("(',' || v.species || ',') LIKE ?")
        params.append(f"%,{species},%")
    if vet_id:
        vet = ctx.one("SELECT id FROM vets WHERE id = ?", (vet_id.strip().upper(),))
        if vet is None:
            raise ToolError("not_found", f"No vet {vet_id}. Vet ids look like VET-01.", vet_id=vet_id)
        clauses.append("s.vet_id = ?")
        params.append(vet["id"])
    rows = ctx.rows(
        "SELECT s.id AS slot_id, s.starts_at, s.minutes, s.vet_id FROM slots s JOIN vets v ON v.id = s.vet_id "
        f"WHERE {' AND '.join(clauses)} ORDER BY s.starts_at, s.vet_id LIMIT ?",
        (*params, limit),
    )
    return [{**r, **c.vet_summary(ctx, r["vet_id"])} for r in rows]


def _parse_date(text: str) -> str:
    return date.fromisoformat(text.strip()[:10]).isoformat()


@world.tool(writes=True)
def book_appointment(ctx: ToolContext, pet_id: str, slot_id: str, service: c.Service, reason: str) -> dict:
    """Book an open slot for a pet. The appointment belongs to the pet's owner.

    Args:
        pet_id: The pet, for example "PET-0042".
        slot_id: An open slot from search_slots, for example "SLT-0415-1000-01".
        service: checkup, vaccination, dental or surgery.
        reason: Why the pet is coming in, in a few words, for example "Annual vaccines".
    """
    pet = c.pet(ctx, pet_id)
    if pet["deceased"]:
        raise ToolError(
            "invalid_state", f"{pet['name']} ({pet['id']}) is recorded as deceased.", pet_id=pet["id"]
        )
    reason = c.require_text(reason, "reason")
    slot = c.bookable_slot(ctx, slot_id)
    appointment_id = ctx.new_id("APT")
    now = ctx.timestamp()
    ctx.execute(
        "INSERT INTO appointments (id, client_id, pet_id, vet_id, slot_id, starts_at, service, reason, status, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'booked', ?, ?)",
        (appointment_id, pet["client_id"], pet["id"], slot["vet_id"], slot["id"], slot["starts_at"], service,
         reason, now, now),
    )  # fmt: skip
    ctx.execute("UPDATE slots SET status = 'booked' WHERE id = ?", (slot["id"],))
    return c.appointment_summary(ctx, appointment_id)


def _upcoming(ctx: ToolContext, appointment_id: str) -> dict:
    row = c.appointment(ctx, appointment_id)
    if row["status"] != "booked":
        raise ToolError(
            "invalid_state",
            f"Appointment {row['id']} is {row['status']}.",
            appointment_id=row["id"],
            status=row["status"],
        )
    if c.hours_until(ctx, row["starts_at"]) <= 0:
        raise ToolError(
            "invalid_state", f"Appointment {row['id']} has already started.", appointment_id=row["id"]
        )
    return row


@world.tool(writes=True)
def cancel_appointment(ctx: ToolContext, appointment_id: str, reason: str) -> dict:
    """Cancel a booked appointment at the client's request and free its slot.

    Less than 24 hours before the start, the clinic's system adds the $35 late-cancellation fee as an
    open invoice (see `fee` in the result).

    Args:
        appointment_id: The appointment, for example "APT-2001".
        reason: Why the client cancels, in a few words.
    """
    row = _upcoming(ctx, appointment_id)
    reason = c.require_text(reason, "reason")
    now = ctx.timestamp()
    hours = c.hours_until(ctx, row["starts_at"])
    ctx.execute(
        "UPDATE appointments SET status = 'cancelled', cancelled_at = ?, cancelled_by = 'client', "
        "cancel_reason = ?, updated_at = ? WHERE id = ?",
        (now, reason, now, row["id"]),
    )
    if row["slot_id"]:
        ctx.execute("UPDATE slots SET status = 'open' WHERE id = ?", (row["slot_id"],))
    fee = None
    if hours < c.LATE_WINDOW_HOURS:
        fee = {
            "invoice_id": c.next_invoice_id(ctx),
            "kind": "late_cancellation",
            "amount": c.LATE_CANCELLATION_FEE,
        }
        ctx.execute(
            "INSERT INTO invoices (id, client_id, appointment_id, kind, amount, status, created_at) "
            "VALUES (?, ?, ?, 'late_cancellation', ?, 'open', ?)",
            (fee["invoice_id"], row["client_id"], row["id"], c.LATE_CANCELLATION_FEE, now),
        )
        fee["status"] = "open"
    return {
        "appointment_id": row["id"],
        "status": "cancelled",
        "starts_at": row["starts_at"],
        "hours_before_start": round(hours, 1),
        "fee": fee,
    }


@world.tool(writes=True)
def reschedule_appointment(ctx: ToolContext, appointment_id: str, slot_id: str) -> dict:
    """Move a booked appointment to another open slot (same pet and service; the vet is the new slot's).

    Args:
        appointment_id: The appointment, for example "APT-2001".
        slot_id: An open slot from search_slots, for example "SLT-0417-1400-01".
    """
    row = _upcoming(ctx, appointment_id)
    slot = c.bookable_slot(ctx, slot_id)
    if row["slot_id"]:
        ctx.execute("UPDATE slots SET status = 'open' WHERE id = ?", (row["slot_id"],))
    ctx.execute("UPDATE slots SET status = 'booked' WHERE id = ?", (slot["id"],))
    ctx.execute(
        "UPDATE appointments SET slot_id = ?, vet_id = ?, starts_at = ?, updated_at = ? WHERE id = ?",
        (slot["id"], slot["vet_id"], slot["starts_at"], ctx.timestamp(), row["id"]),
    )
    return c.appointment_summary(ctx, row["id"])
