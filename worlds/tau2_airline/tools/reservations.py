"""Reservation tools: reading, booking and cancelling a reservation, and changing its bags, flights
and passengers.

Each checks what τ²'s tool checks, in the same order and with the same error texts, on the arguments
as the agent gave them, and leaves the rows τ²'s tool leaves, quirks included, because τ²'s grader
compares states: cancelling releases no seats and refunds every entry of the payment history, a change
of flights takes no seats, new reservations are numbered HATHAT, HATHAU, HATHAV, the cabin and bags an
update is given are stored as given, and a certificate listed twice in one booking is spent once before
the second use fails, with nothing booked.
"""

from typing import Any

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import as_models, tool
from ..records import reservation_record
from ..world import world
from . import _lookup
from ._models import CabinClass, FlightInfo, FlightType, Insurance, Passenger, Payment, Reservation

NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")  # τ² assumes at most three bookings per task
CREATED_AT = "%Y-%m-%dT%H:%M:%S"  # τ²'s timestamps; the fixture's clock is τ²'s "now", 2024-05-15 15:00


def _answer(ctx: ToolContext, reservation_id: str) -> dict:
    return reservation_record(ctx.rows, reservation_id)


def _set_passengers(ctx: ToolContext, reservation_id: str, passengers: list[Passenger]) -> None:
    ctx.execute("DELETE FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,))
    ctx.db.executemany(
        "INSERT INTO reservation_passengers (reservation_id, position, first_name, last_name, dob) "
        "VALUES (?, ?, ?, ?, ?)",
        [(reservation_id, i, p.first_name, p.last_name, p.dob) for i, p in enumerate(passengers)],
    )


def _set_flights(ctx: ToolContext, reservation_id: str, flights: list[dict]) -> None:
    ctx.execute("DELETE FROM reservation_flights WHERE reservation_id = ?", (reservation_id,))
    ctx.db.executemany(
        "INSERT INTO reservation_flights (reservation_id, position, flight_number, origin, destination, date, price) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (reservation_id, i, f["flight_number"], f["origin"], f["destination"], f["date"], f["price"])
            for i, f in enumerate(flights)
        ],
    )


def _bookable(ctx: ToolContext, info: Any, cabin: Any, travellers: int) -> tuple[dict, dict]:
    """The flight and its cabin on that date, refused unless it is available with enough seats."""
    flight = _lookup.flight(ctx, info.flight_number)
    date = _lookup.flight_date(ctx, info.flight_number, info.date)
    if date["status"] != "available":
        raise ToolError("invalid_request", f"Flight {info.flight_number} not available on date {info.date}")
    seats = _lookup.cabin(ctx, flight["flight_number"], date["date"], cabin)
    if seats["available_seats"] < travellers:
        raise ToolError("invalid_request", f"Not enough seats on flight {info.flight_number}")
    return flight, seats


@tool(world, writes=True)
def book_reservation(
    ctx: ToolContext,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: FlightType,
    cabin: CabinClass,
    flights: list[FlightInfo | dict],
    passengers: list[Passenger | dict],
    payment_methods: list[Payment | dict],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: Insurance,
) -> dict:
    """Book a reservation.

    Args:
        user_id: The ID of the user to book the reservation such as 'sara_doe_496'`.
        origin: The IATA code for the origin city such as 'SFO'.
        destination: The IATA code for the destination city such as 'JFK'.
        flight_type: The type of flight such as 'one_way' or 'round_trip'.
        cabin: The cabin class such as 'basic_economy', 'economy', or 'business'.
        flights: An array of objects containing details about each piece of flight.
        passengers: An array of objects containing details about each passenger.
        payment_methods: An array of objects containing details about each payment method.
        total_baggages: The total number of baggage items to book the reservation.
        nonfree_baggages: The number of non-free baggage items to book the reservation.
        insurance: Whether the reservation has insurance.
    """
    flights = as_models(FlightInfo, flights)
    passengers = as_models(Passenger, passengers)
    payment_methods = as_models(Payment, payment_methods)
    _lookup.user(ctx, user_id)
    marks = ", ".join("?" * len(NEW_RESERVATION_IDS))
    taken = {
        row["reservation_id"]
        for row in ctx.rows(
            f"SELECT reservation_id FROM reservations WHERE reservation_id IN ({marks})", NEW_RESERVATION_IDS
        )
    }
    reservation_id = next((rid for rid in NEW_RESERVATION_IDS if rid not in taken), None)
    if reservation_id is None:
        raise ToolError("invalid_request", "Too many reservations")
    booking = Reservation(  # τ² validates these together (and its error names them all) before any flight
        reservation_id=reservation_id,
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type=flight_type,
        cabin=cabin,
        flights=[],
        passengers=passengers,
        payment_history=payment_methods,
        created_at=ctx.now().strftime(CREATED_AT),
        total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages,
        insurance=insurance,
    )

    total_price, booked = 0, []
    for info in flights:
        flight, seats = _bookable(ctx, info, cabin, len(passengers))
        booked.append(
            {
                "flight_number": flight["flight_number"],
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": info.date,
                "price": seats["price"],
            }
        )
        total_price += seats["price"] * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages  # as given: 2.0 makes the total a float, "2" a TypeError

    for payment in payment_methods:
        method = _lookup.payment_method(ctx, user_id, payment.payment_id)
        if method is None:
            raise ToolError("not_found", f"Payment method {payment.payment_id} not found")
        if method["source"] in {"gift_card", "certificate"} and method["amount"] < payment.amount:
            raise ToolError("invalid_request", f"Not enough balance in payment method {payment.payment_id}")
    total_payment = sum(payment.amount for payment in payment_methods)
    if total_payment != total_price:
        raise ToolError(
            "invalid_request",
            f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}",
        )

    for payment in payment_methods:  # checked above: now take the money, a certificate whole
        method = _lookup.payment_method(ctx, user_id, payment.payment_id)
        if method is None:  # a certificate listed twice: τ²'s second `payment_methods[id]` raises KeyError
            raise KeyError(payment.payment_id)
        if method["source"] == "gift_card":
            _lookup.set_balance(ctx, method, method["amount"] - payment.amount)
        elif method["source"] == "certificate":
            _lookup.remove_payment_method(ctx, method)
    for info in flights:
        ctx.execute(
            "UPDATE flight_cabins SET available_seats = available_seats - ? "
            "WHERE flight_number = ? AND date = ? AND cabin = ?",
            (len(passengers), info.flight_number, info.date, cabin),
        )
    ctx.execute(
        "INSERT INTO reservations (reservation_id, user_id, position, origin, destination, flight_type, cabin, "
        "created_at, total_baggages, nonfree_baggages, insurance, status) "
        "VALUES (?, ?, (SELECT coalesce(max(position), -1) + 1 FROM reservations), ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        (
            reservation_id,
            booking.user_id,
            booking.origin,
            booking.destination,
            booking.flight_type,
            booking.cabin,
            booking.created_at,
            booking.total_baggages,
            booking.nonfree_baggages,
            booking.insurance,
        ),
    )
    _set_flights(ctx, reservation_id, booked)
    _set_passengers(ctx, reservation_id, booking.passengers)
    for payment in booking.payment_history:
        _lookup.add_payment(ctx, reservation_id, payment.payment_id, payment.amount)
    return _answer(ctx, reservation_id)


@tool(world, writes=True)
def cancel_reservation(ctx: ToolContext, reservation_id: str) -> dict:
    """Cancel the whole reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
    """
    reservation_id = _lookup.reservation(ctx, reservation_id)["reservation_id"]
    history = ctx.rows(
        "SELECT payment_id, amount FROM reservation_payments WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    for payment in history:
        _lookup.add_payment(ctx, reservation_id, payment["payment_id"], -payment["amount"])
    ctx.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = ?", (reservation_id,))
    return _answer(ctx, reservation_id)


@tool(world, writes=False)
def get_reservation_details(ctx: ToolContext, reservation_id: str) -> dict:
    """Get the details of a reservation.

    Args:
        reservation_id: The reservation ID, such as '8JX2WO'.
    """
    return _answer(ctx, _lookup.reservation(ctx, reservation_id)["reservation_id"])


@tool(world, writes=True)
def update_reservation_baggages(
    ctx: ToolContext, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> dict:
    """Update the baggage information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'
        total_baggages: The updated total number of baggage items included in the reservation.
        nonfree_baggages: The updated number of non-free baggage items included in the reservation.
        payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.
    """
    reservation = _lookup.reservation(ctx, reservation_id)
    reservation_id = reservation["reservation_id"]
    _lookup.user(ctx, reservation["user_id"])
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _lookup.pay_for_update(ctx, reservation["user_id"], payment_id, total_price)
    if payment is not None:
        _lookup.add_payment(ctx, reservation_id, payment.payment_id, payment.amount)
    ctx.execute(  # as given, as τ²'s assignment stores them
        "UPDATE reservations SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
        (total_baggages, nonfree_baggages, reservation_id),
    )
    return _answer(ctx, reservation_id)


@tool(world, writes=True)
def update_reservation_flights(
    ctx: ToolContext,
    reservation_id: str,
    cabin: CabinClass,
    flights: list[FlightInfo | dict],
    payment_id: str,
) -> dict:
    """Update the flight information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        cabin: The cabin class of the reservation
        flights: An array of objects containing details about each piece of flight in the ENTIRE new reservation. Even if the a flight segment is not changed, it should still be included in the array.
        payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.
    """
    flights = as_models(FlightInfo, flights)
    reservation = _lookup.reservation(ctx, reservation_id)
    reservation_id = reservation["reservation_id"]
    _lookup.user(ctx, reservation["user_id"])
    current = ctx.rows(
        "SELECT * FROM reservation_flights WHERE reservation_id = ? ORDER BY position", (reservation_id,)
    )
    travellers = ctx.one(
        "SELECT count(*) AS n FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,)
    )["n"]
    total_price, kept = 0, []
    for info in flights:
        same = next(
            (
                f
                for f in current
                if f["flight_number"] == info.flight_number
                and f["date"] == info.date
                and cabin == reservation["cabin"]
            ),
            None,
        )
        if same is None:  # a new flight: checked as a booking checks it, priced in the new cabin
            flight, seats = _bookable(ctx, info, cabin, travellers)
            same = {
                "flight_number": flight["flight_number"],
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": info.date,
                "price": seats["price"],
            }
        total_price += same["price"] * travellers
        kept.append(same)
    total_price -= sum(f["price"] for f in current) * travellers
    payment = _lookup.pay_for_update(ctx, reservation["user_id"], payment_id, total_price)
    if payment is not None:
        _lookup.add_payment(ctx, reservation_id, payment.payment_id, payment.amount)
    _set_flights(ctx, reservation_id, kept)
    ctx.execute("UPDATE reservations SET cabin = ? WHERE reservation_id = ?", (cabin, reservation_id))
    return _answer(ctx, reservation_id)


@tool(world, writes=True)
def update_reservation_passengers(
    ctx: ToolContext, reservation_id: str, passengers: list[Passenger | dict]
) -> dict:
    """Update the passenger information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        passengers: An array of objects containing details about each passenger.
    """
    passengers = as_models(Passenger, passengers)
    reservation_id = _lookup.reservation(ctx, reservation_id)["reservation_id"]
    travellers = ctx.one(
        "SELECT count(*) AS n FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,)
    )["n"]
    if len(passengers) != travellers:
        raise ToolError("invalid_argument", "Number of passengers does not match")
    _set_passengers(ctx, reservation_id, passengers)
    return _answer(ctx, reservation_id)
