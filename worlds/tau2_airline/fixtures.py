"""The tau2_airline fixture: τ²'s airline db.json (checked against the pinned release's sha256) as rows,
plus the airports τ²'s list_all_airports answers from its code (the list below is τ²-bench's,
Copyright (c) 2025 Sierra Research, MIT License).

The epoch is τ²'s "now" (its tools stamp new reservations 2024-05-15T15:00:00, and its policy says
the current time is 2024-05-15 15:00:00 EST).
"""

from atoll.worlds import FixtureContext

from ..tau2 import read_json
from .records import tables_from_db
from .world import world

AIRPORTS = [
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
]


@world.fixture(
    "db",
    epoch="2024-05-15 15:00:00",
    default=True,
    description="τ²'s airline database: 300 flights over 30 dates, 500 users, 2,000 reservations.",
)
def db(fx: FixtureContext) -> None:
    fx.insert(
        "airports", [{"iata": code, "city": city, "position": i} for i, (code, city) in enumerate(AIRPORTS)]
    )
    for table, rows in tables_from_db(read_json("airline", "db.json")).items():
        fx.insert(table, rows)
