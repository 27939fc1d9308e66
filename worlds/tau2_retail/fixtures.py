"""The tau2_retail fixture: τ²'s retail db.json (checked against the pinned release's sha256) as rows.

τ²'s retail tools never read the clock; the epoch is the airline domain's "now" so both worlds agree.
"""

from atoll.worlds import FixtureContext

from ..tau2 import read_json
from .records import tables_from_db
from .world import world


@world.fixture(
    "db",
    epoch="2024-05-15 15:00:00",
    default=True,
    description="τ²'s retail database: 500 users, 1,000 orders, 50 products with 591 variants.",
)
def db(fx: FixtureContext) -> None:
    for table, rows in tables_from_db(read_json("retail", "db.json")).items():
        fx.insert(table, rows)
