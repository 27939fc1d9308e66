"""What several clinic tools share: lookups that refuse unknown ids, text checks and time arithmetic.

The tools enforce data integrity only (no booking a taken slot, no waiving a paid bill); the desk
policy is the agent's to follow.
"""

from datetime import datetime
from typing import Literal

from atoll.worlds import ToolContext, ToolError

Service = Literal["checkup", "vaccination", "dental", "surgery"]
Species = Literal["dog", "cat", "rabbit", "bird", "reptile"]

LATE_CANCELLATION_FEE = 35.0
LATE_WINDOW_HOURS = 24


def require_text(value: str, field: str) -> str:
    text = value.strip()
    if not text:
        raise ToolError("invalid_argument", f"{field} must not be empty.", field=field)
    return text


def _lookup(ctx: ToolContext, table: str, value: str, example: str, hint: str = "") -> dict:
    key = value.strip().upper()
    row = ctx.one(f"SELECT * FROM {table} WHERE id = ?", (key,))
    if row is None:
        what = table.rstrip("s")
        raise ToolError(
            "not_found", f"No {what} {value}. Ids look like {example}.{hint}", **{f"{what}_id": value}
        )
    return row


def client(ctx: ToolContext, client_id: str) -> dict:
    return _lookup(ctx, "clients", client_id, "CLI-0042", " find_client searches by email, name or phone.")


def pet(ctx: ToolContext, pet_id: str) -> dict:
    return _lookup(ctx, "pets", pet_id, "PET-0042", " list_pets lists a client's pets.")


def slot(ctx: ToolContext, slot_id: str) -> dict:
    return _lookup(ctx, "slots", slot_id, "SLT-0415-1000-01", " search_slots lists open slots.")


def appointment(ctx: ToolContext, appointment_id: str) -> dict:
    return _lookup(
        ctx, "appointments", appointment_id, "APT-2001", " list_appointments lists a client's appointments."
    )


def invoice(ctx: ToolContext, invoice_id: str) -> dict:
    return _lookup(ctx, "invoices", invoice_id, "INV-3001", " list_appointments shows each one's invoices.")


def next_invoice_id(ctx: ToolContext) -> str:
    """Invoices are numbered in sequence (INV-4060 follows INV-4059), as the clinic's billing system does."""
    row = ctx.one("SELECT MAX(CAST(substr(id, 5) AS INTEGER)) AS n FROM invoices")
    return f"INV-{(row['n'] or 3000) + 1}"


def hours_until(ctx: ToolContext, starts_at: str) -> float:
    return (datetime.fromisoformat(starts_at) - ctx.now()).total_seconds() / 3600


def bookable_slot(ctx: ToolContext, slot_id: str) -> dict:
    """An open slot that has not started, with its vet."""
    row = slot(ctx, slot_id)
    if row["status"] != "open":
        raise ToolError(
            "slot_taken",
            f"Slot {row['id']} is already booked; search_slots lists open ones.",
            slot_id=row["id"],
        )
    if hours_until(ctx, row["starts_at"]) <= 0:
        raise ToolError("invalid_state", f"Slot {row['id']} has already started.", slot_id=row["id"])
    return row


def vet_summary(ctx: ToolContext, vet_id: str) -> dict:
    vet = ctx.one("SELECT * FROM vets WHERE id = ?", (vet_id,))
    return {
        "vet_id": vet["id"],
        "vet_name": vet["name"],
        "services": vet["services"].split(","),
        "species": vet["species"].split(","),
    }


def appointment_summary(ctx: ToolContext, appointment_id: str) -> dict:
    row = ctx.one(
        "SELECT a.id, a.client_id, a.pet_id, p.name AS pet_name, p.species, a.vet_id, v.name AS vet_name, "
        "a.slot_id, a.starts_at, a.service, a.reason, a.status, a.cancelled_at, a.cancelled_by, a.cancel_reason "
        "FROM appointments a JOIN pets p ON p.id = a.pet_id JOIN vets v ON v.id = a.vet_id WHERE a.id = ?",
        (appointment_id,),
    )
    row["invoices"] = ctx.rows(
        "SELECT id, kind, amount, status, created_at, resolution FROM invoices WHERE appointment_id = ? "
        "ORDER BY created_at, id",
        (appointment_id,),
    )
    return row
