"""Customer tools: finding an account, checking who is asking, contact details and store credit."""

import re
from datetime import datetime

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


@world.tool(writes=False)
def find_customer(
    ctx: ToolContext, email: str | None = None, name: str | None = None, phone: str | None = None
) -> list[dict]:
    """Search customer accounts by email, name or phone number and list the matches (at most 10).

    Give at least one of the three. Email matches exactly (case does not matter); name matches any part
    of the full name; phone matches the full number, punctuation ignored. Several customers can share a
    name, so confirm which account is the right one before acting on it.

    Args:
        email: The email address on the account, for example "maya.chen@fastmail.com".
        name: All or part of the customer's name, for example "Maya Chen".
        phone: The phone number on the account, in any format, for example "503-628-0142".
    """
    clauses, params = [], []
    if email and email.strip():
        clauses.append("lower(c.email) = lower(?)")
        params.append(email.strip())
    if name and name.strip():
        clauses.append("lower(c.first_name || ' ' || c.last_name) LIKE lower(?)")
        params.append(f"%{' '.join(name.split())}%")
    if phone and phone.strip():
        digits = _digits(phone)
        if len(digits) == 11 and digits.startswith("1"):
            digits = digits[1:]
        if len(digits) != 10:
            raise ToolError("invalid_argument", "phone must be a full 10-digit US number.", field="phone")
        clauses.append("replace(replace(replace(replace(c.phone, '(', ''), ')', ''), '-', ''), ' ', '') = ?")
        params.append(digits)
    if not clauses:
        raise ToolError("invalid_argument", "Give an email, a name or a phone number to search by.")
    return ctx.rows(
        "SELECT c.id, c.first_name || ' ' || c.last_name AS name, c.email, a.city, a.state "
        "FROM customers c LEFT JOIN addresses a ON a.customer_id = c.id AND a.is_default = 1 "
        f"WHERE {' AND '.join(clauses)} ORDER BY c.id LIMIT 10",
        tuple(params),
    )


@world.tool(writes=False)
def get_customer(ctx: ToolContext, customer_id: str) -> dict:
    """Show a customer's account: contact details, tier, addresses, store credit, orders and open tickets.

    Identity facts (date of birth, support PIN) are never shown; check them with verify_identity.

    Args:
        customer_id: The customer id, for example "CUS-0042".
    """
    row = c.customer(ctx, customer_id)
    cid = row["id"]
    return {
        "id": cid,
        "name": f"{row['first_name']} {row['last_name']}",
        "email": row["email"],
        "phone": row["phone"],
        "tier": row["tier"],
        "customer_since": row["created_at"][:10],
        "addresses": ctx.rows(
            "SELECT id, label, line1, line2, city, state, zip, is_default FROM addresses "
            "WHERE customer_id = ? ORDER BY is_default DESC, id",
            (cid,),
        ),
        "store_credit_balance": c.store_credit_balance(ctx, cid),
        "order_count": ctx.one("SELECT count(*) AS n FROM orders WHERE customer_id = ?", (cid,))["n"],
        "open_tickets": [
            r["id"]
            for r in ctx.rows(
                "SELECT id FROM tickets WHERE customer_id = ? AND status != 'closed' ORDER BY id", (cid,)
            )
        ],
    }


def _normal_date(text: str) -> str | None:
    for form in ("%Y-%m-%d", "%m/%d/%Y", "%B %d, %Y", "%b %d, %Y", "%d %B %Y"):
        try:
            return datetime.strptime(text.strip(), form).date().isoformat()
        except ValueError:
            continue
    return None


@world.tool(writes=True)
def verify_identity(
    ctx: ToolContext,
    customer_id: str,
    date_of_birth: str | None = None,
    phone_last4: str | None = None,
    zip_code: str | None = None,
    support_pin: str | None = None,
) -> dict:
    """Check identity facts the customer gave you against their account, and log the attempt.

    Pass only facts the customer supplied. The result lists which facts were checked and which
    matched; a ZIP code matches any address on file. Whether that is enough is decided by the policy.

    Args:
        customer_id: The account the person claims to own, for example "CUS-0042".
        date_of_birth: Date of birth as the customer gave it, for example "1988-04-17" or "04/17/1988".
        phone_last4: The last four digits of the phone number on the account.
        zip_code: A five-digit ZIP code of one of the customer's addresses.
        support_pin: The customer's four-digit support PIN.
    """
    row = c.customer(ctx, customer_id)
    given = {
        "date_of_birth": date_of_birth,
        "phone_last4": phone_last4,
        "zip_code": zip_code,
        "support_pin": support_pin,
    }
    given = {fact: value.strip() for fact, value in given.items() if value is not None and value.strip()}
    if not given:
        raise ToolError(
            "invalid_argument",
            "Give at least one fact to check: date_of_birth, phone_last4, zip_code or support_pin.",
        )
    zips = {r["zip"] for r in ctx.rows("SELECT zip FROM addresses WHERE customer_id = ?", (row["id"],))}
    checks = {
        "date_of_birth": lambda v: _normal_date(v) == row["date_of_birth"],
        "phone_last4": lambda v: len(_digits(v)) == 4 and _digits(row["phone"]).endswith(_digits(v)),
        "zip_code": lambda v: v[:5] in zips,
        "support_pin": lambda v: v == row["support_pin"],
    }
    matched = [fact for fact, value in given.items() if checks[fact](value)]
    ctx.execute(
        "INSERT INTO identity_checks (id, customer_id, facts_checked, facts_matched, all_matched, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            ctx.new_id("IDV"),
            row["id"],
            ",".join(given),
            ",".join(matched),
            int(len(matched) == len(given)),
            ctx.timestamp(),
        ),
    )
    return {
        "customer_id": row["id"],
        "checked": list(given),
        "matched": matched,
        "all_matched": len(matched) == len(given),
    }


@world.tool(writes=True)
def update_customer_contact(
    ctx: ToolContext, customer_id: str, email: str | None = None, phone: str | None = None
) -> dict:
    """Change the email address or phone number on a customer's account.

    Args:
        customer_id: The customer id, for example "CUS-0042".
        email: The new email address; it must not belong to another account.
        phone: The new 10-digit US phone number, in any format.
    """
    row = c.customer(ctx, customer_id)
    if email is None and phone is None:
        raise ToolError("invalid_argument", "Give a new email or a new phone number.")
    if email is not None:
        email = email.strip().lower()
        if not _EMAIL.match(email):
            raise ToolError("invalid_argument", f"{email!r} is not an email address.", field="email")
        other = ctx.one("SELECT id FROM customers WHERE lower(email) = ? AND id != ?", (email, row["id"]))
        if other is not None:
            raise ToolError("conflict", "That email address belongs to another account.", field="email")
        ctx.execute("UPDATE customers SET email = ? WHERE id = ?", (email, row["id"]))
    if phone is not None:
        digits = _digits(phone)
        if len(digits) == 11 and digits.startswith("1"):
            digits = digits[1:]
        if len(digits) != 10:
            raise ToolError("invalid_argument", "phone must be a 10-digit US number.", field="phone")
        ctx.execute(
            "UPDATE customers SET phone = ? WHERE id = ?",
            (f"({digits[:3]}) {digits[3:6]}-{digits[6:]}", row["id"]),
        )
    return ctx.one("SELECT id, email, phone FROM customers WHERE id = ?", (row["id"],))


@world.tool(writes=False)
def get_store_credit(ctx: ToolContext, customer_id: str) -> dict:
    """Show a customer's store-credit balance and ledger, newest first.

    The ledger holds goodwill credits, refunds paid as credit, and credit spent at checkout (negative).

    Args:
        customer_id: The customer id, for example "CUS-0042".
    """
    row = c.customer(ctx, customer_id)
    return {
        "customer_id": row["id"],
        "balance": c.store_credit_balance(ctx, row["id"]),
        "ledger": ctx.rows(
            "SELECT id, amount, kind, reason, order_id, ticket_id, created_at FROM store_credits "
            "WHERE customer_id = ? ORDER BY created_at DESC, id DESC",
            (row["id"],),
        ),
    }


@world.tool(writes=True)
def issue_store_credit(
    ctx: ToolContext,
    customer_id: str,
    amount: float,
    reason: str,
    order_id: str | None = None,
    ticket_id: str | None = None,
) -> dict:
    """Add goodwill store credit to a customer's account. The credit is spendable at checkout at once.

    Args:
        customer_id: The customer id, for example "CUS-0042".
        amount: Dollars to credit, for example 10.00.
        reason: Why, in a few words the customer could read, for example "Late delivery".
        order_id: The order this credit is about, if any.
        ticket_id: The ticket this credit resolves, if any.
    """
    row = c.customer(ctx, customer_id)
    amount = c.check_amount(amount)
    reason = c.require_text(reason, "reason")
    if order_id is not None:
        order_id = c.order(ctx, order_id)["id"]
        if ctx.one("SELECT 1 FROM orders WHERE id = ? AND customer_id = ?", (order_id, row["id"])) is None:
            raise ToolError(
                "invalid_argument", f"Order {order_id} belongs to another customer.", field="order_id"
            )
    if ticket_id is not None:
        ticket = c.ticket(ctx, ticket_id)
        if ticket["customer_id"] != row["id"]:
            raise ToolError(
                "invalid_argument", f"Ticket {ticket['id']} belongs to another customer.", field="ticket_id"
            )
        ticket_id = ticket["id"]
    credit_id = ctx.new_id("SC")
    ctx.execute(
        "INSERT INTO store_credits (id, customer_id, amount, kind, reason, order_id, ticket_id, created_at) "
        "VALUES (?, ?, ?, 'goodwill', ?, ?, ?, ?)",
        (credit_id, row["id"], amount, reason, order_id, ticket_id, ctx.timestamp()),
    )
    return {
        "credit_id": credit_id,
        "customer_id": row["id"],
        "amount": amount,
        "balance": c.store_credit_balance(ctx, row["id"]),
    }
