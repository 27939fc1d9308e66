"""Ticket tools: the support queue, conversations with customers, closing and escalating."""

from typing import Literal

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c

Team = Literal["billing", "logistics", "legal", "trust_safety", "supervisor"]
_PRIORITY = ("low", "normal", "high", "urgent")


@world.tool(writes=False)
def list_tickets(
    ctx: ToolContext,
    customer_id: str | None = None,
    status: c.TicketStatus | None = None,
    order_id: str | None = None,
    limit: int = 20,
) -> list[dict]:
    """List support tickets, newest first, filtered by customer, status or order.

    Args:
        customer_id: Only this customer's tickets, for example "CUS-0042".
        status: Only tickets in this status: open (waiting for us), pending (waiting for the customer),
            escalated, or closed.
        order_id: Only tickets about this order, for example "ORD-1042".
        limit: At most this many tickets (1 to 100).
    """
    if not 1 <= limit <= 100:
        raise ToolError("invalid_argument", "limit must be between 1 and 100.", field="limit")
    clauses, params = [], []
    if customer_id:
        clauses.append("customer_id = ?")
        params.append(c.customer(ctx, customer_id)["id"])
    if status:
        clauses.append("status = ?")
        params.append(status)
    if order_id:
        clauses.append("order_id = ?")
        params.append(c.order(ctx, order_id)["id"])
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return ctx.rows(
        "SELECT id, customer_id, order_id, subject, category, status, priority, channel, created_at, updated_at "
        f"FROM tickets{where} ORDER BY created_at DESC, id DESC LIMIT ?",
        (*params, limit),
    )


@world.tool(writes=False)
def get_ticket(ctx: ToolContext, ticket_id: str) -> dict:
    """Show a ticket with its whole conversation, the customer who opened it and any escalations.

    Internal notes are marked internal; the customer never saw them.

    Args:
        ticket_id: The ticket id, for example "TKT-5012".
    """
    row = c.ticket(ctx, ticket_id)
    customer = ctx.one(
        "SELECT id, first_name || ' ' || last_name AS name, email FROM customers WHERE id = ?",
        (row["customer_id"],),
    )
    messages = ctx.rows(
        "SELECT author, body, internal, created_at FROM ticket_messages WHERE ticket_id = ? "
        "ORDER BY created_at, id",
        (row["id"],),
    )
    for message in messages:
        message["internal"] = bool(message["internal"])
    return {
        **row,
        "customer": customer,
        "messages": messages,
        "escalations": ctx.rows(
            "SELECT id, team, reason, status, created_at FROM escalations "
            "WHERE ticket_id = ? ORDER BY created_at, id",
            (row["id"],),
        ),
    }


@world.tool(writes=True)
def create_ticket(
    ctx: ToolContext,
    customer_id: str,
    subject: str,
    message: str,
    category: c.TicketCategory,
    order_id: str | None = None,
    priority: Literal["low", "normal", "high", "urgent"] = "normal",
) -> dict:
    """Open a ticket to track an issue that needs follow-up, for a customer who contacted you without one.

    Args:
        customer_id: The customer id, for example "CUS-0042".
        subject: A short title, for example "Replacement for cracked plates".
        message: What the customer asked and what was done, for the record.
        category: The kind of issue.
        order_id: The order it is about, if any; it must be this customer's.
        priority: How urgent it is.
    """
    row = c.customer(ctx, customer_id)
    subject, message = c.require_text(subject, "subject"), c.require_text(message, "message")
    if order_id is not None:
        order = c.order(ctx, order_id)
        if order["customer_id"] != row["id"]:
            raise ToolError(
                "invalid_argument", f"Order {order['id']} belongs to another customer.", field="order_id"
            )
        order_id = order["id"]
    now = ctx.timestamp()
    ticket_id = ctx.new_id("TKT")
    ctx.execute(
        "INSERT INTO tickets (id, customer_id, order_id, subject, category, status, priority, channel, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, 'open', ?, 'chat', ?, ?)",
        (ticket_id, row["id"], order_id, subject, category, priority, now, now),
    )
    ctx.execute(
        "INSERT INTO ticket_messages (id, ticket_id, author, body, internal, created_at) "
        "VALUES (?, ?, 'agent', ?, 0, ?)",
        (ctx.new_id("MSG"), ticket_id, message, now),
    )
    return {"ticket_id": ticket_id, "status": "open"}


@world.tool(writes=True)
def reply_to_ticket(ctx: ToolContext, ticket_id: str, message: str, internal: bool = False) -> dict:
    """Send the customer a reply on a ticket, or add an internal note the customer does not see.

    A reply to an open ticket sets it to pending (waiting for the customer). Closed tickets take no
    replies.

    Args:
        ticket_id: The ticket id, for example "TKT-5012".
        message: The text to send or note.
        internal: True for an internal note instead of a reply to the customer.
    """
    row = c.ticket(ctx, ticket_id)
    message = c.require_text(message, "message")
    if row["status"] == "closed":
        raise ToolError(
            "invalid_state",
            f"Ticket {row['id']} is closed; open a new ticket with create_ticket.",
            status=row["status"],
        )
    now = ctx.timestamp()
    message_id = ctx.new_id("MSG")
    ctx.execute(
        "INSERT INTO ticket_messages (id, ticket_id, author, body, internal, created_at) "
        "VALUES (?, ?, 'agent', ?, ?, ?)",
        (message_id, row["id"], message, int(internal), now),
    )
    status = "pending" if row["status"] == "open" and not internal else row["status"]
    ctx.execute("UPDATE tickets SET status = ?, updated_at = ? WHERE id = ?", (status, now, row["id"]))
    return {"message_id": message_id, "ticket_id": row["id"], "status": status}


@world.tool(writes=True)
def close_ticket(ctx: ToolContext, ticket_id: str, resolution: str) -> dict:
    """Close a ticket whose issue is resolved or declined, with a one-line resolution.

    Args:
        ticket_id: The ticket id, for example "TKT-5012".
        resolution: What was done, for example "Refunded the cracked plates".
    """
    row = c.ticket(ctx, ticket_id)
    resolution = c.require_text(resolution, "resolution")
    if row["status"] == "closed":
        raise ToolError("invalid_state", f"Ticket {row['id']} is already closed.", status=row["status"])
    now = ctx.timestamp()
    ctx.execute(
        "UPDATE tickets SET status = 'closed', closed_at = ?, updated_at = ?, resolution = ? WHERE id = ?",
        (now, now, resolution, row["id"]),
    )
    return {"ticket_id": row["id"], "status": "closed"}


@world.tool(writes=True)
def escalate_ticket(ctx: ToolContext, ticket_id: str, team: Team, reason: str) -> dict:
    """Hand a ticket to a specialist team; the ticket's status becomes escalated.

    Args:
        ticket_id: The ticket id, for example "TKT-5012".
        team: billing (large refunds, disputed charges), logistics (carrier claims), legal (legal threats),
            trust_safety (failed identity checks, fraud) or supervisor (over-limit requests, manager asked).
        reason: What the team needs to know, for example "Lost package on a $570 order".
    """
    row = c.ticket(ctx, ticket_id)
    reason = c.require_text(reason, "reason")
    if row["status"] == "closed":
        raise ToolError(
            "invalid_state",
            f"Ticket {row['id']} is closed; open a new ticket to escalate.",
            status=row["status"],
        )
    if (
        ctx.one(
            "SELECT 1 FROM escalations WHERE ticket_id = ? AND team = ? AND status = 'open'",
            (row["id"], team),
        )
        is not None
    ):
        raise ToolError("invalid_state", f"Ticket {row['id']} is already escalated to {team}.", team=team)
    now = ctx.timestamp()
    escalation_id = ctx.new_id("ESC")
    ctx.execute(
        "INSERT INTO escalations (id, ticket_id, team, reason, status, created_at) "
        "VALUES (?, ?, ?, ?, 'open', ?)",
        (escalation_id, row["id"], team, reason, now),
    )
    wanted = "urgent" if team in ("legal", "trust_safety") else "high"
    priority = max(row["priority"], wanted, key=_PRIORITY.index)
    ctx.execute(
        "UPDATE tickets SET status = 'escalated', priority = ?, updated_at = ? WHERE id = ?",
        (priority, now, row["id"]),
    )
    return {"escalation_id": escalation_id, "ticket_id": row["id"], "team": team, "status": "escalated"}
