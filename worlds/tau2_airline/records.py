"""τ²'s airline records and this world's rows, both ways.

`*_rows` turn one record of τ²'s db.json (a flight, a user, a reservation) into the rows of its
tables; `*_record` read one back in τ²'s shape, key for key as τ²'s pydantic models dump it, which
is what τ²'s tools answer and what its grader hashes. The fixture is built with the first, the tools
answer with the second, and the agreement test uses both to compare a world's state with τ²'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

Query = Callable[..., list[dict[str, Any]]]
"""`query(sql, params)`: a ToolContext's `rows`, or an Instance's `query`."""
Tables = dict[str, list[dict[str, Any]]]

ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
TIMES = (
    "estimated_departure_time_est",
    "estimated_arrival_time_est",
    "actual_departure_time_est",
    "actual_arrival_time_est",
)
STATUS_TIMES = {  # the times each status carries, in the order τ²'s models dump them
    "available": (),
    "cancelled": (),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}
PASSENGER = ("first_name", "last_name", "dob")


def _merge(into: Tables, part: Tables) -> None:
    for table, rows in part.items():
        into.setdefault(table, []).extend(rows)


# -- records to rows ---------------------------------------------------------------------------------


def flight_rows(flight: dict[str, Any], position: int) -> Tables:
    number = flight["flight_number"]
    row = {"flight_number": number, "position": position}
    row |= {field: flight[field] for field in ("origin", "destination")}
    row |= {field: flight[field] for field in ("scheduled_departure_time_est", "scheduled_arrival_time_est")}
    tables: Tables = {"flights": [row], "flight_dates": [], "flight_cabins": []}
    for i, (date, status) in enumerate(flight["dates"].items()):
        if set(status) - {"status", "available_seats", "prices", *STATUS_TIMES[status["status"]]}:
            raise ValueError(f"flight {number} on {date}: fields {sorted(status)} do not fit its status")
        times = {field: status.get(field) for field in TIMES}
        tables["flight_dates"].append(
            {"flight_number": number, "date": date, "position": i, "status": status["status"], **times}
        )
        seats, prices = status.get("available_seats", {}), status.get("prices", {})
        if list(seats) != list(prices):
            raise ValueError(f"flight {number} on {date}: its seats and prices name other cabins")
        tables["flight_cabins"] += [
            {
                "flight_number": number,
                "date": date,
                "cabin": cabin,
                "position": j,
                "available_seats": seats[cabin],
                "price": prices[cabin],
            }
            for j, cabin in enumerate(seats)
        ]
    return tables


def user_rows(user: dict[str, Any], position: int) -> Tables:
    uid = user["user_id"]
    row = {
        "user_id": uid,
        "position": position,
        **user["name"],
        **{field: user["address"].get(field) for field in ADDRESS},
    }
    row |= {"email": user["email"], "dob": user["dob"], "membership": user["membership"]}
    methods = [
        {
            "user_id": uid,
            "id": method["id"],
            "position": i,
            "source": method["source"],
            "brand": method.get("brand"),
            "last_four": method.get("last_four"),
            "amount": method.get("amount"),
        }
        for i, method in enumerate(user["payment_methods"].values())
    ]
    passengers = [{"user_id": uid, "position": i, **p} for i, p in enumerate(user["saved_passengers"])]
    return {"users": [row], "payment_methods": methods, "saved_passengers": passengers}


def reservation_rows(reservation: dict[str, Any], position: int) -> Tables:
    rid = reservation["reservation_id"]
    fields = ("user_id", "origin", "destination", "flight_type", "cabin", "created_at")
    fields += ("total_baggages", "nonfree_baggages", "insurance")
    row = {"reservation_id": rid, "position": position, **{field: reservation[field] for field in fields}}
    row["status"] = reservation.get("status")
    return {
        "reservations": [row],
        "reservation_flights": [
            {"reservation_id": rid, "position": i, **f} for i, f in enumerate(reservation["flights"])
        ],
        "reservation_passengers": [
            {"reservation_id": rid, "position": i, **p} for i, p in enumerate(reservation["passengers"])
        ],
        "reservation_payments": [
            {"reservation_id": rid, "position": i, **p} for i, p in enumerate(reservation["payment_history"])
        ],
    }


def check_derived_lists(db: dict[str, Any]) -> None:
    """Each user's `reservations` are the reservations naming them, in db order (the tables derive the
    list rather than store it). Raises ValueError naming the first user for whom it is not so."""
    by_user: dict[str, list[str]] = defaultdict(list)
    for reservation in db["reservations"].values():
        by_user[reservation["user_id"]].append(reservation["reservation_id"])
    for user in db["users"].values():
        if user["reservations"] != by_user.get(user["user_id"], []):
            raise ValueError(
                f"user {user['user_id']}: `reservations` is not the list of reservations naming them"
            )


def tables_from_db(db: dict[str, Any]) -> Tables:
    """Every row of the world's tables for τ²'s whole database (db.json, or a dump of τ²'s FlightDB);
    the airports, which τ² keeps in its code, are the fixture's to add."""
    check_derived_lists(db)
    tables: Tables = {}
    for kind, rows_of in (("flights", flight_rows), ("users", user_rows), ("reservations", reservation_rows)):
        for position, record in enumerate(db[kind].values()):
            _merge(tables, rows_of(record, position))
    return tables


# -- rows to records ---------------------------------------------------------------------------------


def flight_date_record(date: dict[str, Any], cabins: list[dict[str, Any]]) -> dict[str, Any]:
    """One flight date in τ²'s shape: its status with the times (or seats and prices) that status carries."""
    record: dict[str, Any] = {"status": date["status"]}
    if date["status"] == "available":
        record["available_seats"] = {c["cabin"]: c["available_seats"] for c in cabins}
        record["prices"] = {c["cabin"]: c["price"] for c in cabins}
    record |= {field: date[field] for field in STATUS_TIMES[date["status"]]}
    return record


def flight_record(query: Query, flight_number: str) -> dict[str, Any] | None:
    found = query("SELECT * FROM flights WHERE flight_number = ?", (flight_number,))
    if not found:
        return None
    flight = found[0]
    dates = query("SELECT * FROM flight_dates WHERE flight_number = ? ORDER BY position", (flight_number,))
    cabins: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cabin in query(
        "SELECT * FROM flight_cabins WHERE flight_number = ? ORDER BY date, position", (flight_number,)
    ):
        cabins[cabin["date"]].append(cabin)
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
        "dates": {d["date"]: flight_date_record(d, cabins[d["date"]]) for d in dates},
    }


def _payment_method(row: dict[str, Any]) -> dict[str, Any]:
    method = {"source": row["source"], "id": row["id"]}
    if row["source"] == "credit_card":
        method |= {"brand": row["brand"], "last_four": row["last_four"]}
    else:
        method["amount"] = row["amount"]
    return method


def user_record(query: Query, user_id: str) -> dict[str, Any] | None:
    found = query("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if not found:
        return None
    user = found[0]
    key = (user_id,)
    methods = query("SELECT * FROM payment_methods WHERE user_id = ? ORDER BY position", key)
    passengers = query("SELECT * FROM saved_passengers WHERE user_id = ? ORDER BY position", key)
    reservations = query("SELECT reservation_id FROM reservations WHERE user_id = ? ORDER BY position", key)
    return {
        "user_id": user["user_id"],
        "name": {"first_name": user["first_name"], "last_name": user["last_name"]},
        "address": {field: user[field] for field in ADDRESS},
        "email": user["email"],
        "dob": user["dob"],
        "payment_methods": {m["id"]: _payment_method(m) for m in methods},
        "saved_passengers": [{field: p[field] for field in PASSENGER} for p in passengers],
        "membership": user["membership"],
        "reservations": [r["reservation_id"] for r in reservations],
    }


def reservation_record(query: Query, reservation_id: str) -> dict[str, Any] | None:
    found = query("SELECT * FROM reservations WHERE reservation_id = ?", (reservation_id,))
    if not found:
        return None
    reservation = found[0]
    key = (reservation_id,)
    flights = query("SELECT * FROM reservation_flights WHERE reservation_id = ? ORDER BY position", key)
    passengers = query("SELECT * FROM reservation_passengers WHERE reservation_id = ? ORDER BY position", key)
    payments = query(
        "SELECT payment_id, amount FROM reservation_payments WHERE reservation_id = ? ORDER BY position", key
    )
    flight_fields = ("flight_number", "origin", "destination", "date", "price")
    return {
        "reservation_id": reservation["reservation_id"],
        "user_id": reservation["user_id"],
        "origin": reservation["origin"],
        "destination": reservation["destination"],
        "flight_type": reservation["flight_type"],
        "cabin": reservation["cabin"],
        "flights": [{field: f[field] for field in flight_fields} for f in flights],
        "passengers": [{field: p[field] for field in PASSENGER} for p in passengers],
        "payment_history": payments,
        "created_at": reservation["created_at"],
        "total_baggages": reservation["total_baggages"],
        "nonfree_baggages": reservation["nonfree_baggages"],
        "insurance": reservation["insurance"],
        "status": reservation["status"],
    }
