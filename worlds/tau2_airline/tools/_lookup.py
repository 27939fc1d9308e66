"""The lookups several airline tools share, refusing with τ²'s own error texts (see the retail world's
`tools/_lookup.py` for why the texts are τ²'s). Ids are looked up as τ²'s dicts look them up (`key`)."""

from typing import Any

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import key
from ._models import Payment

Row = dict[str, Any]


def user(ctx: ToolContext, user_id: str) -> Row:
    row = ctx.one("SELECT * FROM users WHERE user_id = ?", (key(user_id),))
    if row is None:
        raise ToolError("not_found", f"User {user_id} not found")
    return row


def reservation(ctx: ToolContext, reservation_id: str) -> Row:
    row = ctx.one("SELECT * FROM reservations WHERE reservation_id = ?", (key(reservation_id),))
    if row is None:
        raise ToolError("not_found", f"Reservation {reservation_id} not found")
    return row


def flight(ctx: ToolContext, flight_number: str) -> Row:
    row = ctx.one("SELECT * FROM flights WHERE flight_number = ?", (key(flight_number),))
    if row is None:
        raise ToolError("not_found", f"Flight {flight_number} not found")
    return row


def flight_date(ctx: ToolContext, flight_number: str, date: str) -> Row:
    flight(ctx, flight_number)
    row = ctx.one(
        "SELECT * FROM flight_dates WHERE flight_number = ? AND date = ?", (flight_number, key(date))
    )
    if row is None:
        raise ToolError("not_found", f"Flight {flight_number} not found on date {date}")
    return row


def cabin(ctx: ToolContext, flight_number: str, date: str, cabin: Any) -> Row:
    """Seats left and price in one cabin of an available flight date, as τ²'s `available_seats[cabin]`
    reads them: a cabin the date does not have raises Python's KeyError."""
    rows = ctx.rows(
        "SELECT * FROM flight_cabins WHERE flight_number = ? AND date = ? ORDER BY position",
        (flight_number, date),
    )
    return {row["cabin"]: row for row in rows}[cabin]


def payment_method(ctx: ToolContext, user_id: str, payment_id: Any) -> Row | None:
    return ctx.one("SELECT * FROM payment_methods WHERE user_id = ? AND id = ?", (user_id, key(payment_id)))


def set_balance(ctx: ToolContext, method: Row, amount: float) -> None:
    ctx.execute(
        "UPDATE payment_methods SET amount = ? WHERE user_id = ? AND id = ?",
        (amount, method["user_id"], method["id"]),
    )


def remove_payment_method(ctx: ToolContext, method: Row) -> None:
    """Delete a used certificate; the user's later methods move up, as in τ²'s mapping."""
    ctx.execute("DELETE FROM payment_methods WHERE user_id = ? AND id = ?", (method["user_id"], method["id"]))
    ctx.execute(
        "UPDATE payment_methods SET position = position - 1 WHERE user_id = ? AND position > ?",
        (method["user_id"], method["position"]),
    )


def add_payment(ctx: ToolContext, reservation_id: str, payment_id: str, amount: int) -> None:
    """Append one entry to the reservation's payment history."""
    ctx.execute(
        "INSERT INTO reservation_payments (reservation_id, position, payment_id, amount) "
        "VALUES (?, (SELECT count(*) FROM reservation_payments WHERE reservation_id = ?), ?, ?)",
        (reservation_id, reservation_id, payment_id, amount),
    )


def pay_for_update(ctx: ToolContext, user_id: str, payment_id: Any, total: float) -> Payment | None:
    """τ²'s payment for a change of flights or bags: refuse certificates and short gift cards, take the
    amount off a gift card, then the payment to record (none for a total of 0). τ² builds that payment
    after the gift card is charged, so a total that is no whole number fails with the card charged."""
    method = payment_method(ctx, user_id, payment_id)
    if method is None:
        raise ToolError("not_found", "Payment method not found")
    if method["source"] == "certificate":
        raise ToolError("invalid_request", "Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total:
        raise ToolError("invalid_request", "Gift card balance is not enough")
    if method["source"] == "gift_card":
        set_balance(ctx, method, method["amount"] - total)
    return Payment(payment_id=payment_id, amount=total) if total != 0 else None
