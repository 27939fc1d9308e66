"""Client tools: finding a record, checking who is calling, and the client's pets."""

from datetime import date

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


@world.tool(writes=False)
def find_client(
    ctx: ToolContext, email: str | None = None, name: str | None = None, phone: str | None = None
) -> list[dict]:
    """Search client records by email, name or phone number and list the matches (at most 10).

    Give at least one. Email matches exactly (case does not matter); name matches any part of the full
    name; phone matches the full number, punctuation ignored. Two clients can share a name.

    Args:
        email: The email on the record, for example "nora.lindqvist@gmail.com".
        name: All or part of the client's name, for example "Nora Lindqvist".
        phone: The phone number on the record, in any format, for example "206-555-0147".
    """
    clauses, params = [], []
    if email and email.strip():
        clauses.append("lower(email) = lower(?)")
        params.append(email.strip())
    if name and name.strip():
        clauses.append("lower(first_name || ' ' || last_name) LIKE lower(?)")
        params.append(f"%{' '.join(name.split())}%")
    if phone and phone.strip():
        digits = _digits(phone)[-10:]
        if len(digits) != 10:
            raise ToolError("invalid_argument", "phone must be a full 10-digit number.", field="phone")
        clauses.append("replace(replace(replace(replace(phone, '(', ''), ')', ''), '-', ''), ' ', '') = ?")
        params.append(digits)
    if not clauses:
        raise ToolError("invalid_argument", "Give an email, a name or a phone number to search by.")
    return ctx.rows(
        "SELECT id, first_name || ' ' || last_name AS name, email, "
        "(SELECT group_concat(name, ', ') FROM pets WHERE client_id = clients.id) AS pets "
        f"FROM clients WHERE {' AND '.join(clauses)} ORDER BY id LIMIT 10",
        tuple(params),
    )


@world.tool(writes=True)
def verify_client(ctx: ToolContext, client_id: str, phone: str, zip_code: str) -> dict:
    """Check the phone number and ZIP code the caller gave against the client's record; log the attempt.

    Pass only what the caller said. Whether the caller is verified is decided by the policy.

    Args:
        client_id: The record the caller claims, for example "CLI-0042".
        phone: The phone number the caller gave, in any format.
        zip_code: The five-digit ZIP code the caller gave.
    """
    row = c.client(ctx, client_id)
    phone = c.require_text(phone, "phone")
    zip_code = c.require_text(zip_code, "zip_code")
    phone_ok = len(_digits(phone)) >= 10 and _digits(phone)[-10:] == _digits(row["phone"])
    zip_ok = zip_code[:5] == row["zip"]
    verified = phone_ok and zip_ok
    ctx.execute(
        "INSERT INTO identity_checks (id, client_id, phone_ok, zip_ok, verified, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (ctx.new_id("IDV"), row["id"], int(phone_ok), int(zip_ok), int(verified), ctx.timestamp()),
    )
    return {"client_id": row["id"], "phone_matches": phone_ok, "zip_matches": zip_ok, "verified": verified}


@world.tool(writes=False)
def list_pets(ctx: ToolContext, client_id: str) -> list[dict]:
    """List a client's pets with species, breed, date of birth and age in weeks.

    Args:
        client_id: The client id, for example "CLI-0042".
    """
    row = c.client(ctx, client_id)
    pets = ctx.rows(
        "SELECT id, name, species, breed, born_on, deceased FROM pets WHERE client_id = ? ORDER BY id",
        (row["id"],),
    )
    for pet in pets:
        pet["age_weeks"] = (ctx.today() - date.fromisoformat(pet["born_on"])).days // 7
        pet["deceased"] = bool(pet["deceased"])
    return pets
