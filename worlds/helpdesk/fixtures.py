"""Fixture builders for the helpdesk world: `small_shop` and `big_retailer`.

Both are built by the story generator in shop.py from `fx.rng`, with the clock at EPOCH (Monday
2 March 2026, 09:00): states, dates and tracking agree with that clock, and ids follow time. Orders
span the last 120 days, so many fall outside the return window; some are cancelled, returned,
refunded, lost, late, damaged or exchanged, with the tickets, refunds, credit and notes that leave.

Both fixtures also hold the landmark stories of landmarks.yaml: open tickets that each test one policy
rule. Landmark customers, orders and tickets keep the same ids in both fixtures (the background takes
the other numbers in time order); tests/worlds/test_helpdesk.py pins them. Identity facts are the
support PIN, date of birth and last 4 phone digits.

The catalogue of landmarks below is generated from landmarks.yaml when this module loads (see
`landmarks.catalogue()`), so it always says what the fixtures hold:

"""

from atoll.worlds import FixtureContext

from . import landmarks
from .shop import Shop
from .world import world

__doc__ = f"{__doc__ or ''}{landmarks.catalogue()}\n"  # None under python -OO

EPOCH = "2026-03-02 09:00:00"


@world.fixture(
    "small_shop",
    epoch=EPOCH,
    seed=7,
    description="Larkspur Goods as a small shop: about 45 customers and 100 orders.",
)
def small_shop(fx: FixtureContext) -> None:
    _build(fx, customers=18, orders=50, stock_max=60)


@world.fixture(
    "big_retailer",
    epoch=EPOCH,
    seed=11,
    description="Larkspur Goods at scale: 5,000 customers and 20,000 orders.",
)
def big_retailer(fx: FixtureContext) -> None:
    _build(fx, customers=5000, orders=20000, stock_max=400)


def _build(fx: FixtureContext, *, customers: int, orders: int, stock_max: int) -> None:
    """`customers` and `orders` come on top of the landmark stories and their customers' histories."""
    shop = Shop(fx, stock_max)
    people = landmarks.add_people(shop)
    background = [shop.random_person() for _ in range(customers)]
    shop.number_people()
    landmarks.add_stories(shop, people)
    for person in people.values():
        shop.quiet_history(person)
    shop.random_orders(background, orders)
    shop.insert_into(fx)
