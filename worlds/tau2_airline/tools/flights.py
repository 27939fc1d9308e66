"""Flight tools: the airports, searching direct and one-stop flights on a date, and a flight's status."""

from typing import Any

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import key, tool
from ..world import world
from . import _lookup


@tool(world, writes=False)
def list_all_airports(ctx: ToolContext) -> list[dict]:
    """Returns a list of all available airports."""
    return ctx.rows("SELECT iata, city FROM airports ORDER BY position")


def _direct(
    ctx: ToolContext, date: Any, origin: Any, destination: Any, leave_after: str | None = None
) -> list[dict]:
    """τ²'s direct-flight search: available flights on `date`, in flight order, as τ²'s DirectFlight.
    As given: None matches every airport, any other non-text none; the date is read (as a dict key)
    only for a flight whose airports matched."""
    if not all(value is None or isinstance(value, str) for value in (origin, destination)):
        return []
    if not isinstance(date, str):
        matched = ctx.one(
            "SELECT 1 FROM flights WHERE (? IS NULL OR origin = ?) AND (? IS NULL OR destination = ?)",
            (origin, origin, destination, destination),
        )
        if matched is not None:
            key(date)
        return []
    found = ctx.rows(
        "SELECT f.* FROM flights f JOIN flight_dates d ON d.flight_number = f.flight_number AND d.date = ? "
        "WHERE d.status = 'available' AND (? IS NULL OR f.origin = ?) AND (? IS NULL OR f.destination = ?) "
        "AND (? IS NULL OR f.scheduled_departure_time_est >= ?) ORDER BY f.position",
        (date, origin, origin, destination, destination, leave_after, leave_after),
    )
    flights = []
    for flight in found:
        cabins = ctx.rows(
            "SELECT cabin, available_seats, price FROM flight_cabins WHERE flight_number = ? AND date = ? "
            "ORDER BY position",
            (flight["flight_number"], date),
        )
        flights.append(
            {
                "flight_number": flight["flight_number"],
                "origin": flight["origin"],
                "destination": flight["destination"],
                "status": "available",
                "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                "date": None,
                "available_seats": {c["cabin"]: c["available_seats"] for c in cabins},
                "prices": {c["cabin"]: c["price"] for c in cabins},
            }
        )
    return flights


@tool(world, writes=False)
def search_direct_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> list[dict]:
    """Search for direct flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
    """
    return _direct(ctx, date, origin, destination)


@tool(world, writes=False)
def search_onestop_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> list[list[dict]]:
    """Search for one-stop flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
    """
    pairs = []
    for first in _direct(ctx, date, origin, None):
        first["date"] = date
        arrival = first["scheduled_arrival_time_est"]
        if "+1" in arrival:
            # τ²'s next day, literally: always May 2024, the day not zero-padded (so a search on the 1st
            # looks for second legs on '2024-05-2', a date no flight has).
            try:
                next_date = f"2024-05-{int(date[-2:]) + 1}"
            except ValueError as error:
                raise ToolError("invalid_argument", str(error)) from None
        else:
            next_date = date
        for second in _direct(ctx, next_date, first["destination"], destination, leave_after=arrival):
            second["date"] = next_date
            pairs.append([first, second])
    return pairs


@tool(world, writes=False)
def get_flight_status(ctx: ToolContext, flight_number: str, date: str) -> str:
    """Get the status of a flight.

    Args:
        flight_number: The flight number.
        date: The date of the flight.
    """
    return _lookup.flight_date(ctx, flight_number, date)["status"]
