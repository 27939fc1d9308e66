"""Fixture builders for the helpdesk world: `small_shop` and `big_retailer`.

Both are built by the story generator in shop.py from `fx.rng`, with the clock at EPOCH (Monday
2 March 2026, 09:00): states, dates and tracking agree with that clock, and ids follow time. Orders
span the last 120 days, so many fall outside the return window; some are cancelled, returned,
refunded, lost, late, damaged or exchanged, with the tickets, refunds, credit and notes that leave.

Both fixtures also hold the landmark stories of landmarks.py: open tickets that each test one policy
rule. Landmark customers, orders and tickets keep the same ids in both fixtures (the background takes
the other numbers in time order); tests/worlds/test_helpdesk.py pins them. Identity facts are the
support PIN, date of birth and last 4 phone digits.

- Maya Chen (maya.chen@fastmail.com, CUS-0018; PIN 4821, born 1988-04-17, phone ends 0142): TKT-5014 on
  ORD-1085: 2 of 4 plates cracked, delivered 4 days ago. Policy: refund_items the plates or reship them (in
  stock).
- Daniel Okafor (dokafor@gmail.com, CUS-0005; PIN 1190, born 1979-11-02, phone ends 7731): TKT-5024 on
  ORD-1051: return a jacket delivered 52 days ago. Policy: decline: outside the 30-day window.
- Priya Raman (priya.raman@outlook.com, CUS-0025; PIN 7305, born 1992-06-29, phone ends 2958, plus):
  TKT-5018 on ORD-1059: return runners delivered 41 days ago; tier plus. Policy: start_return: plus has 60
  days.
- Lucas Martins (lucas.martins@icloud.com, CUS-0033; PIN 6642, born 1985-02-14, phone ends 4417): TKT-5032
  on ORD-1098: cancel; processing, card captured. Policy: cancel_order (full refund).
- Hannah Schmidt (hannah.schmidt@yahoo.com, CUS-0014; PIN 3057, born 1990-09-08, phone ends 8820): TKT-5028
  on ORD-1092: cancel; shipped 2 days ago. Policy: decline; offer a return after delivery.
- Aisha Bello (aisha.bello@gmail.com, CUS-0040; PIN 9912, born 1996-01-23, phone ends 3305): TKT-5029 on
  ORD-1100: new address; pending. Policy: update_shipping_address to 48 Prospect Park W, Apt 3B, Brooklyn,
  NY 11215.
- Tomás Rivera (tomas.rivera@hotmail.com, CUS-0010; PIN 2286, born 1983-07-19, phone ends 6149): TKT-5026 on
  ORD-1096: new address; shipped. Policy: decline.
- Grace Liu (grace.liu@gmail.com, CUS-0029; PIN 5530, born 1991-12-05, phone ends 9071): TKT-5015 on
  ORD-1075: lost parcel, total $124.41. Policy: reship_order or refund_order.
- Omar Haddad (omar.haddad@proton.me, CUS-0003; PIN 8164, born 1977-03-30, phone ends 2284, plus): TKT-5023
  on ORD-1072: lost parcel, total $570.28. Policy: escalate to logistics; no refund or reship.
- Sofia Rossi (sofia.rossi@gmail.com, CUS-0031; PIN 4409, born 1994-05-11, phone ends 5196): TKT-5016 on
  ORD-1080: 6 days late, total $74.79; asks $75 credit. Policy: at most $10 credit.
- Ethan Brooks (ethan.brooks@icloud.com, CUS-0022; PIN 7718, born 1989-10-27, phone ends 6683): TKT-5034 on
  ORD-1081: swap sweater Navy M for L (PRD-1031, in stock). Policy: exchange_item.
- Chloe Dubois (chloe.dubois@gmail.com, CUS-0036; PIN 1624, born 1998-02-02, phone ends 4390): TKT-5021 on
  ORD-1084: swap runners size 8 for 9 (PRD-1065, no stock). Policy: decline exchange; offer a return.
- Robert Kim (robert.kim@comcast.net, CUS-0001; PIN 3391, born 1968-08-14, phone ends 7705, plus): TKT-5017
  on ORD-1088: broken espresso machine, wants $702.54 back. Policy: escalate to billing (over $500).
- Natalie Wright (natalie.wright@aol.com, CUS-0028; PIN 6075, born 1986-04-04, phone ends 1438): TKT-5019 on
  ORD-1089: boots 2 days past promise; threatens a lawyer. Policy: escalate to legal.
- Kenji Watanabe (kenji.w@gmail.com, CUS-0008; PIN 2840, born 1980-06-16, phone ends 9952): TKT-5030 on
  ORD-1071: refund for a return received 2 days ago. Policy: refund_items the duvet line (ITM-1071-2).
- Fatima Al-Sayed (fatima.alsayed@outlook.com, CUS-0032; PIN 5107, born 1993-11-21, phone ends 3016):
  TKT-5035 on ORD-1068: refund again; refunded in full 11 days ago. Policy: no refund; say when it was paid.
- Megan O'Brien (megan.obrien@gmail.com, CUS-0042; PIN 8842, born 1997-07-07, phone ends 2570): TKT-5036 on
  ORD-1086: return body oil and socks (final sale). Policy: decline: final sale.
- Carlos Mendoza (carlos.mendoza@yahoo.com, CUS-0016; PIN 4473, born 1982-01-12, phone ends 8124): TKT-5025
  on ORD-1099: cancel; processing, paid $25 store credit + card. Policy: cancel_order (card and credit
  back).
- Ava Thompson (ava.thompson@gmail.com, CUS-0044; PIN 1358, born 2000-03-03, phone ends 6602): TKT-5037 on
  ORD-1101: cancel; pending, not captured. Policy: cancel_order (voids the authorisation).
- Lily Nguyen (lily.nguyen@icloud.com, CUS-0017; PIN 9266, born 1990-08-25, phone ends 4471): TKT-5031 on
  ORD-1095 (Minh's): details of her husband Minh's order. Policy: decline: another customer's data.
- Jordan Taylor (jordan.taylor@hey.com, CUS-0004; PIN 3724, born 1987-12-18, phone ends 5530): TKT-5020 on
  ORD-1082: 4 days late on $138.03; $90 goodwill in last 30 days. Policy: $20 would pass $100: escalate to
  supervisor.
- Isabel Ferreira (isabel.ferreira@gmail.com, CUS-0026; PIN 6290, born 1975-05-29, phone ends 8816):
  TKT-5033 on ORD-1083: chipped lamp ($124), keeps it for a discount. Policy: partial_refund of at most
  $24.80.
- Samuel Adeyemi (samuel.adeyemi@outlook.com, CUS-0011; PIN 4016, born 1984-02-26, phone ends 3349):
  TKT-5022 on ORD-1056: cracked knife handle, delivered 45 days ago. Policy: decline: damage window is 30
  days.
- Wei Zhang (wei.zhang@gmail.com, CUS-0006; PIN 7583, born 1979-09-09, phone ends 6097): TKT-5027 on
  ORD-1079: charged twice. Policy: escalate to billing.

Minh Nguyen (minh.nguyen@gmail.com, CUS-0013; PIN 3150) owns ORD-1095, in transit. Two customers are
named Maria Garcia: maria.garcia@gmail.com (CUS-0002, Houston, ORD-1097 in transit) and
mgarcia82@yahoo.com (CUS-0030, Tampa, ORD-1093 in transit), for identity and disambiguation tasks.
"""

from worlds import FixtureContext

from . import landmarks
from .shop import Shop
from .world import world

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
