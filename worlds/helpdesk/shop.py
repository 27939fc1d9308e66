"""The story generator behind the helpdesk fixtures.

Every order lives a timeline (placed, captured, label, picked up, scans, delivered) and a fixture is
that timeline cut at the clock, so states, dates and tracking always agree: orders placed minutes ago
are `pending`, a few days old in transit (some `delayed`), older ones delivered, and some cancelled,
returned, refunded, lost, late, damaged or exchanged, with the tickets, refunds, store credit and
notes such stories leave. Ids are numbered once every row exists, so they follow time.
"""

import json
from bisect import bisect
from collections import defaultdict
from datetime import datetime, time, timedelta
from itertools import accumulate
from operator import itemgetter

from atoll.worlds import FixtureContext

from . import data

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
HISTORY_DAYS = 120  # orders are placed over the last 120 days, so many fall outside the return window

_TABLES = (
    "customers",
    "addresses",
    "products",
    "orders",
    "refunds",
    "order_items",
    "payments",
    "shipments",
    "shipment_events",
    "returns",
    "return_items",
    "exchanges",
    "tickets",
    "ticket_messages",
    "escalations",
    "store_credits",
    "order_notes",
)
_LATE = ("subject", "body", "contents")  # columns besides ids that may hold a Text or a list of ids
# Ids numbered once every row exists, in time order: kind -> (prefix, first number, minimum digits).
_NUMBERING = {
    "order": ("ORD", 1001, 0),
    "ticket": ("TKT", 5001, 0),
    "refund": ("RFD", 1, 4),
    "message": ("MSG", 1, 5),
    "return": ("RMA", 1, 4),
    "exchange": ("EXC", 1, 4),
    "escalation": ("ESC", 1, 4),
    "credit": ("SC", 1, 4),
    "note": ("NOTE", 1, 4),
}


def _ts(moment: datetime) -> str:
    """SQLite text, `YYYY-MM-DD HH:MM:SS` (str() then cut: three times faster than strftime)."""
    return str(moment)[:19]


class LazyId:
    """A row id whose number is given once all rows exist, so that numbers follow time order."""

    __slots__ = ("key", "kind", "prefix", "suffix")

    def __init__(self, kind: str, key: int, prefix: str, suffix: str = "") -> None:
        self.kind, self.key, self.prefix, self.suffix = kind, key, prefix, suffix


class Text:
    """Ticket text that names ids not yet numbered."""

    __slots__ = ("fields", "template")

    def __init__(self, template: str, **fields: object) -> None:
        self.template, self.fields = template, fields


class Order:
    """One order's rows and timeline, for the stories that follow it."""

    def __init__(self, oid: LazyId, person: dict, row: dict, items: list[dict], payments: list[dict]) -> None:
        self.id, self.person, self.row, self.items, self.payments = oid, person, row, items, payments
        self.shipments: list[dict] = []
        self.cancelled: datetime | None = None
        self.carrier = 0
        self.promised: datetime | None = None
        self.delivered: datetime | None = None

    @property
    def shipment(self) -> dict | None:
        """The first parcel; replacements follow it in `shipments`."""
        return self.shipments[0] if self.shipments else None

    @property
    def status(self) -> str:
        return self.row["status"]

    @property
    def late(self) -> bool:
        return self.delivered is not None and self.delivered.date() > self.promised.date()


class Shop:
    """Accumulates every table's rows for one fixture, then numbers and inserts them."""

    def __init__(self, fx: FixtureContext, stock_max: int) -> None:
        self.rng = fx.rng
        self.now: datetime = fx.epoch
        self.rows: dict[str, list[dict]] = {table: [] for table in _TABLES}
        self.people: list[dict] = []
        self._next_key: dict[str, int] = defaultdict(int)
        self._when: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
        self._pinned: dict[str, dict[int, int]] = defaultdict(dict)
        self._emails: set[str] = set()
        self._tracking: set[str] = set()
        self._catalog(stock_max)
        self._carrier_weights = list(accumulate(c[4] for c in data.CARRIERS))
        self._domain_weights = list(accumulate(w for _, w in data.EMAIL_DOMAINS))
        self._brand_weights = list(accumulate(w for _, w in data.CARD_BRANDS))

    # ---- time and ids -------------------------------------------------------------------------

    def at(self, days_ago: float, hour: int = 10, minute: int = 0) -> datetime:
        """A moment `days_ago` whole days before the clock's date, at the given time of day."""
        return datetime.combine(self.now.date() - timedelta(days=days_ago), time(hour, minute))

    def _new(self, kind: str, when: datetime, pin: int | None = None) -> LazyId:
        """A row id numbered later by time, or fixed to `pin` (landmarks keep their ids)."""
        key = self._next_key[kind]
        self._next_key[kind] = key + 1
        self._when[kind].append((when, key))
        if pin is not None:
            self._pinned[kind][key] = pin
        return LazyId(kind, key, _NUMBERING[kind][0])

    def _tracking_number(self, pattern: str) -> str:
        rng = self.rng
        head = pattern.rstrip("#?")
        size = len(pattern) - len(head)
        while True:
            if pattern.endswith("#"):
                number = f"{head}{rng.randrange(10**size):0{size}d}"
            else:
                number = head + "".join(rng.choices("0123456789ABCDEFGHJKLMNPRTVWXY", k=size))
            if number not in self._tracking:
                self._tracking.add(number)
                return number

    # ---- catalogue and people -----------------------------------------------------------------

    def _catalog(self, stock_max: int) -> None:
        rng = self.rng
        self.families: list[list[dict]] = []
        self.by_variant: dict[tuple[str, str], dict] = {}
        number = 1001
        for code, name, category, price, variants, final_sale in data.CATALOG:
            family = []
            for n, variant in enumerate(variants, 1):
                roll = rng.random()
                stock = 0 if roll < 0.08 else rng.randint(1, 5) if roll < 0.22 else rng.randint(6, stock_max)
                product = {
                    "id": f"PRD-{number}",
                    "sku": f"LG-{code}-{n:02d}",
                    "family": name.split(" (")[0].lower().replace(",", "").replace(" ", "-"),
                    "name": name,
                    "variant": variant,
                    "category": category,
                    "price": price,
                    "stock": stock,
                    "final_sale": int(final_sale),
                }
                number += 1
                family.append(product)
                self.by_variant[code, variant] = product
                self.rows["products"].append(product)
            self.families.append(family)

    def product(self, code: str, variant: str = "One size") -> dict:
        return self.by_variant[code, variant]

    def add_person(
        self,
        first: str,
        last: str,
        *,
        created: datetime,
        number: int | None = None,
        email: str | None = None,
        phone: str | None = None,
        dob: str | None = None,
        pin: str | None = None,
        tier: str | None = None,
        address: tuple | None = None,
        more_addresses: int = 0,
    ) -> dict:
        """A customer, numbered later by number_people() unless `number` fixes it. `pin` is the support
        PIN; `address` is (line1, line2, city, state, zip)."""
        rng = self.rng
        if address is None:
            place = rng.choice(data.CITIES)
            address = self._random_address(place)
        else:
            place = next(c for c in data.CITIES if c[:2] == address[2:4])
        if email is None:
            email = self._email(first, last)
        self._emails.add(email)
        row = {
            "id": None,
            "first_name": first,
            "last_name": last,
            "email": email,
            "phone": phone or self._phone(place[3]),
            "date_of_birth": dob
            or f"{rng.randint(1950, 2005)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "support_pin": pin or f"{rng.randrange(10000):04d}",
            "tier": tier or ("plus" if rng.random() < 0.15 else "standard"),
            "created_at": _ts(created),
        }
        labels = ("home", "work", "other")
        addresses = [address] + [
            self._random_address(place if rng.random() < 0.7 else rng.choice(data.CITIES))
            for _ in range(more_addresses)
        ]
        person = {
            "number": number,
            "row": row,
            "created": created,
            "name": f"{first} {last}",
            "addresses": [
                {
                    "id": None,
                    "customer_id": None,
                    "label": labels[n],
                    "line1": a[0],
                    "line2": a[1],
                    "city": a[2],
                    "state": a[3],
                    "zip": a[4],
                    "is_default": int(n == 0),
                }
                for n, a in enumerate(addresses)
            ],
            "cards": [self._card() for _ in range(1 if rng.random() < 0.7 else 2)],
        }
        self.people.append(person)
        return person

    def random_person(self) -> dict:
        rng = self.rng
        span = 4 * 365 if rng.random() < 0.85 else HISTORY_DAYS
        created = self.now - timedelta(days=rng.uniform(1, span), seconds=rng.randrange(86400))
        roll = rng.random()
        return self.add_person(
            rng.choice(data.FIRST_NAMES),
            rng.choice(data.LAST_NAMES),
            created=created,
            more_addresses=0 if roll < 0.8 else 1 if roll < 0.97 else 2,
        )

    def number_people(self) -> None:
        """Give customers and addresses ids in order of sign-up, as a real shop's database would,
        except customers with a pinned number."""
        self.people.sort(key=lambda p: p["created"])
        numbers = _number([p["number"] for p in self.people], first=1)
        width = max(4, len(str(max(numbers))))
        address_number = 1
        for n, person in zip(numbers, self.people, strict=True):
            person["id"] = person["row"]["id"] = f"CUS-{n:0{width}d}"
            self.rows["customers"].append(person["row"])
            for address in person["addresses"]:
                address["id"] = f"ADR-{address_number:0{width}d}"
                address["customer_id"] = person["id"]
                address_number += 1
                self.rows["addresses"].append(address)

    def _random_address(self, place: tuple) -> tuple:
        rng = self.rng
        line1 = f"{rng.randint(10, 9899)} {rng.choice(data.STREET_NAMES)} {rng.choice(data.STREET_SUFFIXES)}"
        line2 = rng.choice(data.UNIT_FORMATS).format(n=rng.randint(1, 40)) if rng.random() < 0.25 else None
        return line1, line2, place[0], place[1], f"{place[2]}{rng.randint(1, 99):02d}"

    def _phone(self, area: str) -> str:
        rng = self.rng
        exchange = rng.randint(201, 989)
        if exchange % 100 == 11:  # N11 codes are never exchanges
            exchange += 1
        return f"({area}) {exchange}-{rng.randrange(10000):04d}"

    def _email(self, first: str, last: str) -> str:
        rng = self.rng
        f = "".join(ch for ch in first.lower() if ch.isalnum())
        last_part = "".join(ch for ch in last.lower() if ch.isalnum())
        domain = data.EMAIL_DOMAINS[_pick(rng, self._domain_weights)][0]
        local = rng.choice(
            (
                f"{f}.{last_part}",
                f"{f}{last_part}",
                f"{f[0]}{last_part}",
                f"{f}_{last_part}",
                f"{last_part}.{f}",
                f"{f}.{last_part}{rng.randint(1, 99)}",
                f"{f}{rng.randint(70, 99)}",
            )
        )
        email = f"{local}@{domain}"
        while email in self._emails:
            email = f"{local}{rng.randint(1, 999)}@{domain}"
        return email

    def _card(self) -> tuple[str, str]:
        return data.CARD_BRANDS[_pick(self.rng, self._brand_weights)][0], f"{self.rng.randrange(10000):04d}"

    # ---- orders -------------------------------------------------------------------------------

    def random_lines(self, sized_only: bool = False) -> list[tuple[dict, int]]:
        rng = self.rng
        families = [f for f in self.families if len(f) > 1] if sized_only else self.families
        count = _pick(rng, (55, 85, 97, 100)) + 1
        return [
            (rng.choice(family), 1 if rng.random() < 0.9 else rng.randint(2, 3))
            for family in rng.sample(families, count)
        ]

    def order(
        self,
        person: dict,
        placed: datetime,
        lines: list[tuple[dict, int]],
        *,
        carrier: int | None = None,
        pay: str | None = None,
        address: dict | None = None,
        capture_h: float | None = None,
        label_h: float | None = None,
        ship_h: float | None = None,
        transit: int | None = None,
        cancel_h: float | None = None,
        lost: bool = False,
        store_credit: float | None = None,
        pin: int | None = None,
    ) -> Order:
        """One order and everything its timeline has produced by the clock.

        Times are hours after `placed` (capture, label, pick-up, cancellation) and whole days after
        pick-up (transit). Unset ones are drawn. A `lost` parcel is never delivered. `pay="split"` pays
        `store_credit` dollars (drawn when unset) from store credit and the rest by card. `pin` fixes
        the order's number.
        """
        rng, now = self.rng, self.now
        carrier = _pick(rng, self._carrier_weights) if carrier is None else carrier
        _, _, promise_days, _, _ = data.CARRIERS[carrier]
        capture_h = rng.uniform(0.3, 3) if capture_h is None else capture_h
        label_h = capture_h + rng.uniform(2, 20) if label_h is None else label_h
        ship_h = label_h + rng.uniform(1, 10) if ship_h is None else ship_h
        capture, label, ship = placed + capture_h * HOUR, placed + label_h * HOUR, placed + ship_h * HOUR
        cancel = placed + cancel_h * HOUR if cancel_h is not None else None
        if cancel is not None and cancel >= now:
            cancel = None
        if transit is None:
            transit = promise_days + _delay_days(rng)
        deliver = datetime.combine((ship + transit * DAY).date(), time(rng.randint(9, 19), rng.randrange(60)))
        deliver = max(deliver, ship + 8 * HOUR)

        if cancel is not None:
            status, updated = "cancelled", cancel
        elif now < capture:
            status, updated = "pending", placed
        elif now < ship:
            status, updated = "processing", capture
        elif lost or now < deliver:
            status, updated = "shipped", ship
        else:
            status, updated = "delivered", deliver

        address = address or person["addresses"][0]
        oid = self._new("order", placed, pin)
        items, subtotal = [], 0.0
        for n, (product, quantity) in enumerate(lines, 1):
            variant = product["variant"]
            items.append(
                {
                    "id": LazyId("order", oid.key, "ITM", f"-{n}"),
                    "order_id": oid,
                    "product_id": product["id"],
                    "product_name": product["name"]
                    if variant == "One size"
                    else f"{product['name']} - {variant}",
                    "quantity": quantity,
                    "unit_price": product["price"],
                    "status": "cancelled" if status == "cancelled" else "active",
                    "refund_id": None,
                }
            )
            subtotal += product["price"] * quantity
        subtotal = round(subtotal, 2)
        if promise_days <= 3:
            fee = data.EXPRESS_FEE
        else:
            fee = 0.0 if subtotal >= data.FREE_SHIPPING_OVER else data.GROUND_FEE
        rate = data.TAX_RATES.get(address["state"], data.DEFAULT_TAX_RATE)
        tax = round(subtotal * rate, 2)
        total = round(subtotal + fee + tax, 2)
        row = {
            "id": oid,
            "customer_id": person["id"],
            "status": status,
            "placed_at": _ts(placed),
            "updated_at": _ts(updated),
            "ship_name": person["name"],
            "ship_line1": address["line1"],
            "ship_line2": address["line2"],
            "ship_city": address["city"],
            "ship_state": address["state"],
            "ship_zip": address["zip"],
            "subtotal": subtotal,
            "shipping_fee": fee,
            "tax_rate": rate,
            "tax": tax,
            "total": total,
            "cancel_reason": None,
        }
        self.rows["orders"].append(row)
        self.rows["order_items"].extend(items)

        captured = status != "pending" and not (cancel is not None and cancel < capture)
        if pay is None:
            roll = rng.random()
            pay = "card" if roll < 0.72 else "paypal" if roll < 0.93 else "split"
        if pay == "split" and not captured:
            pay = "card"
        payments = self._payments(oid, person, placed, total, pay, captured, cancel, store_credit)
        o = Order(oid, person, row, items, payments)
        o.carrier, o.cancelled = carrier, cancel
        o.promised = datetime.combine((placed + (1 + promise_days) * DAY).date(), time(20))

        if cancel is not None:
            row["cancel_reason"] = rng.choice(
                (
                    "Customer request: ordered by mistake",
                    "Customer request: no longer needed",
                    "Customer request: found it cheaper elsewhere",
                    "Payment could not be verified",
                )
            )
            if captured:
                self.refund(
                    o,
                    total,
                    "cancellation",
                    "original_payment",
                    "Order cancelled before shipment",
                    cancel + 0.1 * HOUR,
                    by="system",
                )
        if now >= label and not (cancel is not None and cancel < label):
            self._shipment(o, label, ship, deliver, lost=lost, cancel=cancel)
            if o.shipment["status"] == "delivered":
                o.delivered = deliver
        return o

    def _payments(
        self,
        oid: LazyId,
        person: dict,
        placed: datetime,
        total: float,
        pay: str,
        captured: bool,
        cancel: datetime | None,
        store_credit: float | None,
    ) -> list[dict]:
        rng = self.rng
        status = "captured" if captured else "voided" if cancel is not None else "authorized"
        parts = []
        if pay == "split":
            credit = float(store_credit or min(rng.choice((10, 15, 20, 25, 30, 40)), int(total) - 1))
            earned = max(person["created"] + HOUR, placed - timedelta(days=rng.uniform(3, 60)))
            self.credit(person, credit, "goodwill", "Goodwill credit", earned)
            self.credit(person, -credit, "redemption", "Applied at checkout", placed, order=oid)
            parts = [("card", round(total - credit, 2)), ("store_credit", credit)]
        else:
            parts = [(pay, total)]
        payments = []
        for n, (method, amount) in enumerate(parts, 1):
            brand, last4 = rng.choice(person["cards"]) if method == "card" else (None, None)
            payments.append(
                {
                    "id": LazyId("order", oid.key, "PAY", "" if n == 1 else f"-{n}"),
                    "order_id": oid,
                    "method": method,
                    "card_brand": brand,
                    "card_last4": last4,
                    "amount": amount,
                    "captured_amount": amount if captured else 0.0,
                    "refunded_amount": 0.0,
                    "status": status,
                    "created_at": _ts(placed),
                }
            )
        self.rows["payments"].extend(payments)
        return payments

    def _shipment(
        self,
        o: Order,
        label: datetime,
        ship: datetime,
        deliver: datetime,
        *,
        lost: bool,
        cancel: datetime | None,
        suffix: str = "",
        replaces: LazyId | None = None,
        contents: list | None = None,
    ) -> dict:
        """A shipment and its carrier scans up to the clock; its status is the last scan's."""
        rng, now = self.rng, self.now
        carrier, service, _, pattern, _ = data.CARRIERS[o.carrier]
        city = f"{o.row['ship_city']}, {o.row['ship_state']}"
        hub = rng.choice(data.TRANSIT_HUBS)
        promised = (
            o.promised
            if replaces is None
            else datetime.combine((label + (1 + data.CARRIERS[o.carrier][2]) * DAY).date(), time(20))
        )
        events = [(label, "label_created", data.WAREHOUSE, "Shipping label created, awaiting item")]
        if cancel is not None:
            events.append((cancel + 0.1 * HOUR, "cancelled", data.WAREHOUSE, "Label voided by shipper"))
        else:
            span = deliver - ship
            events.append((ship, "in_transit", data.WAREHOUSE, "Picked up by carrier"))
            events.append((ship + span * 0.4, "in_transit", hub, "Arrived at carrier facility"))
            morning = datetime.combine(promised.date(), time(6, rng.randrange(60)))
            if lost:
                if ship < morning:
                    events.append((morning, "delayed", hub, rng.choice(data.DELAY_NOTES)))
                events.append(
                    (
                        morning + 10 * DAY,
                        "lost",
                        hub,
                        "Package could not be located; carrier investigation closed",
                    )
                )
            else:
                if deliver.date() > promised.date() + DAY and ship < morning:
                    events.append((morning, "delayed", hub, rng.choice(data.DELAY_NOTES)))
                events.append(
                    (
                        datetime.combine(deliver.date(), time(7, rng.randrange(60))),
                        "out_for_delivery",
                        city,
                        "Out for delivery",
                    )
                )
                events.append((deliver, "delivered", city, rng.choice(data.DELIVERY_NOTES)))
        events = sorted(e for e in events if e[0] <= now)
        status = events[-1][1]
        if status in ("in_transit", "out_for_delivery") and now.date() > promised.date():
            status = "delayed"
        sid = LazyId("order", o.id.key, "SHP", suffix)
        shipment = {
            "id": sid,
            "order_id": o.id,
            "carrier": carrier,
            "service": service,
            "tracking_number": self._tracking_number(pattern),
            "status": status,
            "created_at": _ts(label),
            "shipped_at": _ts(ship) if cancel is None and ship <= now else None,
            "promised_date": promised.date().isoformat(),
            "delivered_at": _ts(deliver) if status == "delivered" else None,
            "replaces_shipment_id": replaces,
            "contents": contents,
        }
        self.rows["shipments"].append(shipment)
        o.shipments.append(shipment)
        self.rows["shipment_events"].extend(
            {
                "shipment_id": sid,
                "seq": n,
                "occurred_at": _ts(when),
                "status": what,
                "location": where,
                "description": text,
            }
            for n, (when, what, where, text) in enumerate(events, 1)
        )
        return shipment

    # ---- what happens after an order ---------------------------------------------------------

    def item_refund(self, o: Order, item: dict) -> float:
        """An item's price with its share of tax: what refund_items pays back for it."""
        return round(item["unit_price"] * item["quantity"] * (1 + o.row["tax_rate"]) + 1e-9, 2)

    def refundable(self, o: Order) -> float:
        return round(sum(p["captured_amount"] - p["refunded_amount"] for p in o.payments), 2)

    def refund(
        self,
        o: Order,
        amount: float,
        kind: str,
        method: str,
        reason: str,
        when: datetime,
        *,
        items: list[dict] = (),
        by: str = "agent",
    ) -> LazyId:
        """A refund spread over the order's payments in id order; store-credit parts go back as credit."""
        amount = round(amount, 2)
        rid = self._new("refund", when)
        self.rows["refunds"].append(
            {
                "id": rid,
                "order_id": o.id,
                "amount": amount,
                "kind": kind,
                "method": method,
                "reason": reason,
                "created_by": by,
                "created_at": _ts(when),
            }
        )
        remaining, to_credit = amount, 0.0
        for payment in o.payments:
            take = round(min(remaining, payment["captured_amount"] - payment["refunded_amount"]), 2)
            if take <= 0:
                continue
            payment["refunded_amount"] = round(payment["refunded_amount"] + take, 2)
            payment["status"] = (
                "refunded"
                if payment["refunded_amount"] >= payment["captured_amount"]
                else "partially_refunded"
            )
            if method == "store_credit" or payment["method"] == "store_credit":
                to_credit += take
            remaining = round(remaining - take, 2)
        if to_credit:
            self.credit(
                o.person,
                round(to_credit, 2),
                "refund",
                f"Refund {reason.lower()}",
                when,
                order=o.id,
                refund=rid,
            )
        for item in items:
            item["status"], item["refund_id"] = "refunded", rid
        if all(item["status"] == "refunded" for item in o.items) and o.status != "cancelled":
            o.row["status"], o.row["updated_at"] = ("returned" if kind == "items" else "refunded"), _ts(when)
        return rid

    def credit(
        self,
        person: dict,
        amount: float,
        kind: str,
        reason: str,
        when: datetime,
        *,
        order: LazyId | None = None,
        ticket: LazyId | None = None,
        refund: LazyId | None = None,
    ) -> None:
        self.rows["store_credits"].append(
            {
                "id": self._new("credit", when),
                "customer_id": person["id"],
                "amount": round(amount, 2),
                "kind": kind,
                "reason": reason,
                "order_id": order,
                "ticket_id": ticket,
                "refund_id": refund,
                "created_at": _ts(when),
            }
        )

    def start_return(
        self,
        o: Order,
        items: list[dict],
        requested: datetime,
        reason: str,
        *,
        shipped_back: datetime | None = None,
        received: datetime | None = None,
        refunded: datetime | None = None,
    ) -> None:
        """A return's label, trip back and refund, each step only if the clock has passed it."""
        now = self.now
        rid = self._new("return", requested)
        status = "label_sent"
        if shipped_back and shipped_back <= now:
            status = "in_transit"
        if received and received <= now:
            status = "received"
        self.rows["returns"].append(
            {
                "id": rid,
                "order_id": o.id,
                "status": status,
                "reason": reason,
                "tracking_number": self._tracking_number("1Z????????????????"),
                "created_at": _ts(requested),
                "received_at": _ts(received) if status == "received" else None,
            }
        )
        self.rows["return_items"].extend({"return_id": rid, "order_item_id": item["id"]} for item in items)
        for item in items:
            item["status"] = "returned" if status == "received" else "return_requested"
        if status == "received" and refunded and refunded <= now:
            self.rows["returns"][-1]["status"] = "refunded"
            value = sum(self.item_refund(o, item) for item in items)
            self.refund(
                o,
                min(value, self.refundable(o)),
                "items",
                "original_payment",
                f"Return {reason.lower()}",
                refunded,
                items=items,
                by="warehouse",
            )

    def reship(self, o: Order, when: datetime, items: list[dict] | None = None) -> dict:
        """A replacement parcel, for the whole order or some items."""
        rng = self.rng
        promise_days = data.CARRIERS[o.carrier][2]
        ship = when + rng.uniform(4, 20) * HOUR
        deliver = datetime.combine(
            (ship + promise_days * DAY).date(), time(rng.randint(9, 19), rng.randrange(60))
        )
        suffix = f"-{len(o.shipments) + 1}"
        shipment = self._shipment(
            o,
            when,
            ship,
            deliver,
            lost=False,
            cancel=None,
            suffix=suffix,
            replaces=o.shipment["id"],
            contents=None if items is None else [item["id"] for item in items],
        )
        if shipment["status"] == "delivered" and o.status == "shipped":
            o.row["status"], o.row["updated_at"] = "delivered", shipment["delivered_at"]
        return shipment

    def exchange(self, o: Order, item: dict, new_product: dict, when: datetime, reason: str) -> None:
        age = (self.now - when).days
        status = "awaiting_return" if age < 6 else "replacement_shipped" if age < 14 else "completed"
        self.rows["exchanges"].append(
            {
                "id": self._new("exchange", when),
                "order_id": o.id,
                "order_item_id": item["id"],
                "new_product_id": new_product["id"],
                "quantity": item["quantity"],
                "status": status,
                "reason": reason,
                "created_at": _ts(when),
            }
        )
        item["status"] = "exchanged"

    def note(self, o: Order, body: str, when: datetime, author: str = "agent") -> None:
        self.rows["order_notes"].append(
            {
                "id": self._new("note", when),
                "order_id": o.id,
                "author": author,
                "body": body,
                "created_at": _ts(when),
            }
        )

    def ticket(
        self,
        person: dict,
        category: str,
        created: datetime,
        subject: str | Text,
        body: str | Text,
        *,
        order: Order | None = None,
        status: str = "open",
        priority: str = "normal",
        channel: str = "email",
        replies: tuple[tuple[str, str | Text, datetime], ...] = (),
        resolution: str | None = None,
        pin: int | None = None,
    ) -> LazyId:
        """A ticket opened by the customer's message; `replies` are (author, body, when) after it."""
        tid = self._new("ticket", created, pin)
        messages = [("customer", body, created, 0), *((a, b, w, 0) for a, b, w in replies)]
        closed_at = messages[-1][2] if status == "closed" else None
        self.rows["tickets"].append(
            {
                "id": tid,
                "customer_id": person["id"],
                "order_id": order.id if order else None,
                "subject": subject,
                "category": category,
                "status": status,
                "priority": priority,
                "channel": channel,
                "created_at": _ts(created),
                "updated_at": _ts(messages[-1][2]),
                "closed_at": _ts(closed_at) if closed_at else None,
                "resolution": resolution,
            }
        )
        self.rows["ticket_messages"].extend(
            {
                "id": self._new("message", when),
                "ticket_id": tid,
                "author": author,
                "body": text,
                "internal": internal,
                "created_at": _ts(when),
            }
            for author, text, when, internal in messages
        )
        return tid

    def escalate(self, ticket: LazyId, team: str, reason: str, when: datetime, status: str = "open") -> None:
        self.rows["escalations"].append(
            {
                "id": self._new("escalation", when),
                "ticket_id": ticket,
                "team": team,
                "reason": reason,
                "status": status,
                "created_at": _ts(when),
            }
        )

    # ---- the background -----------------------------------------------------------------------

    def quiet_history(self, person: dict) -> None:
        """Zero to two uneventful old orders, so landmark customers look like real ones."""
        rng = self.rng
        for _ in range(rng.choice((0, 1, 1, 2))):
            start = max(person["created"], self.now - HISTORY_DAYS * DAY)
            end = self.now - 60 * DAY
            if start < end:
                placed = start + (end - start) * rng.random()
                carrier = _pick(rng, self._carrier_weights)
                self.order(
                    person,
                    placed,
                    self.random_lines(),
                    carrier=carrier,
                    transit=data.CARRIERS[carrier][2] - rng.randint(0, 1),
                )

    def random_orders(self, people: list[dict], count: int) -> None:
        """`count` orders spread over the last HISTORY_DAYS, a few customers buying far more than most."""
        rng, now = self.rng, self.now
        weights = list(accumulate(rng.paretovariate(1.6) for _ in people))
        for _ in range(count):
            person = people[_pick(rng, weights)]
            start = max(person["created"], now - HISTORY_DAYS * DAY)
            placed = start + (now - start) * rng.random()
            self._random_story(person, placed)
        for person in people:
            if rng.random() < 0.04:
                self._general_ticket(person)

    def _random_story(self, person: dict, placed: datetime) -> None:
        rng = self.rng
        roll = rng.random()
        cancel_h = rng.uniform(0.1, 3) if roll < 0.05 else None
        lost = 0.05 <= roll < 0.065
        o = self.order(
            person, placed, self.random_lines(sized_only=0.065 <= roll < 0.09), cancel_h=cancel_h, lost=lost
        )
        first = person["row"]["first_name"]
        item = o.items[0]
        fields = {"first": first, "order": o.id, "item": item["product_name"]}
        if o.status == "cancelled":
            if rng.random() < 0.3:
                self._closed_ticket(person, o, "cancellation", o.cancelled - 0.05 * HOUR, fields)
        elif lost:
            self._lost_story(o, fields)
        elif o.status == "shipped" and o.shipment["status"] == "delayed" and rng.random() < 0.5:
            self._open_ticket(person, o, "where_is_my_order", fields)
        elif o.status == "processing" and rng.random() < 0.1:
            self._open_ticket(person, o, "cancellation", fields)
        elif o.status == "delivered":
            self._delivered_story(o, fields, roll)

    def _delivered_story(self, o: Order, fields: dict, roll: float) -> None:
        rng, now = self.rng, self.now
        person, delivered = o.person, o.delivered
        after = rng.random()
        if 0.065 <= roll < 0.09:
            item = o.items[0]
            family = next(f for f in self.families if any(p["id"] == item["product_id"] for p in f))
            others = [p for p in family if p["id"] != item["product_id"]]
            when = delivered + rng.uniform(2, 20) * DAY
            if when < now:
                self.exchange(
                    o, item, rng.choice(others), when, rng.choice(("Wrong size", "Prefers another colour"))
                )
                self._closed_ticket(person, o, "exchange", when - 0.2 * HOUR, fields, channel="chat")
        elif after < 0.05:
            items = o.items if rng.random() < 0.5 else o.items[:1]
            requested = delivered + rng.uniform(1, 25) * DAY
            if requested < now:
                shipped_back = requested + rng.uniform(1, 3) * DAY
                received = shipped_back + rng.uniform(3, 7) * DAY
                self.start_return(
                    o,
                    items,
                    requested,
                    rng.choice(("Changed my mind", "Doesn't fit", "Not as pictured", "Ordered by mistake")),
                    shipped_back=shipped_back,
                    received=received,
                    refunded=received + rng.uniform(2, 30) * HOUR,
                )
                if rng.random() < 0.5:
                    self._closed_ticket(person, o, "return_request", requested - 0.3 * HOUR, fields)
        elif after < 0.08:
            self._damaged_story(o, fields)
        elif after < 0.086:
            self._billing_story(o, fields)
        elif o.late and rng.random() < 0.35:
            self._late_story(o, fields)

    def _damaged_story(self, o: Order, fields: dict) -> None:
        rng, now = self.rng, self.now
        item = o.items[0]
        reported = o.delivered + rng.uniform(2, 96) * HOUR
        if reported >= now:
            return
        subject, body = rng.choice(data.TICKET_TEXT["damaged_item"])
        if now - reported < 2 * DAY:
            self.ticket(
                o.person,
                "damaged_item",
                reported,
                subject,
                Text(body, **fields),
                order=o,
                priority="high" if item["unit_price"] >= 100 else "normal",
            )
            return
        answered = reported + rng.uniform(1, 20) * HOUR
        if rng.random() < 0.6:
            self.refund(
                o,
                min(self.item_refund(o, item), self.refundable(o)),
                "items",
                "original_payment",
                "Damaged in transit",
                answered,
                items=[item],
            )
            reply = data.CLOSED_REPLY["damaged_refund"]
        else:
            self.reship(o, answered, [item])
            reply = data.CLOSED_REPLY["damaged_reship"]
        self.note(o, f"Customer reported {item['product_name']} damaged on arrival.", answered)
        self.ticket(
            o.person,
            "damaged_item",
            reported,
            subject,
            Text(body, **fields),
            order=o,
            status="closed",
            replies=(("agent", Text(reply, **fields), answered),),
            resolution=reply.split(".")[0].split("! ")[-1],
        )

    def _late_story(self, o: Order, fields: dict) -> None:
        rng, now = self.rng, self.now
        reported = o.delivered + rng.uniform(2, 48) * HOUR
        if reported >= now:
            return
        subject, body = rng.choice(data.TICKET_TEXT["late_delivery"])
        if now - reported < 2 * DAY:
            self.ticket(o.person, "late_delivery", reported, subject, Text(body, **fields), order=o)
            return
        answered = reported + rng.uniform(1, 20) * HOUR
        amount = 10 if o.row["total"] < 100 else 20
        reply = data.CLOSED_REPLY["late_delivery"].format(amount=amount)
        tid = self.ticket(
            o.person,
            "late_delivery",
            reported,
            subject,
            Text(body, **fields),
            order=o,
            status="closed",
            replies=(("agent", reply, answered),),
            resolution=f"${amount} late-delivery credit issued",
        )
        self.credit(o.person, amount, "goodwill", "Late delivery", answered, order=o.id, ticket=tid)

    def _lost_story(self, o: Order, fields: dict) -> None:
        """A parcel the carrier loses: an open ticket while recent, else refunded or reshipped."""
        rng, now = self.rng, self.now
        reported = o.promised + rng.uniform(1, 6) * DAY
        if reported >= now:
            return
        subject, body = rng.choice(data.TICKET_TEXT["where_is_my_order"])
        declared = o.promised + 10 * DAY
        resolved = declared + rng.uniform(1, 3) * DAY
        if resolved >= now:
            self.ticket(
                o.person,
                "where_is_my_order",
                reported,
                subject,
                Text(body, **fields),
                order=o,
                priority="high",
            )
            return
        if rng.random() < 0.5:
            self.refund(
                o,
                o.row["total"],
                "full",
                "original_payment",
                "Lost in transit",
                resolved,
                items=[i for i in o.items if i["status"] == "active"],
            )
            reply = data.CLOSED_REPLY["lost_refund"]
        else:
            self.reship(o, resolved)
            reply = data.CLOSED_REPLY["lost_reship"]
        self.note(o, "Carrier declared the parcel lost.", resolved)
        replies = [("agent", reply, resolved)]
        if o.row["total"] > 250:  # policy: logistics files a carrier claim first
            replies.insert(
                0, ("agent", "I've passed this to our logistics team to open a carrier claim.", declared)
            )
        tid = self.ticket(
            o.person,
            "where_is_my_order",
            reported,
            subject,
            Text(body, **fields),
            order=o,
            status="closed",
            priority="high",
            replies=tuple(replies),
            resolution=reply.split(". ")[-1].rstrip("."),
        )
        if o.row["total"] > 250:
            self.escalate(tid, "logistics", "Lost package above $250", declared, status="resolved")

    def _open_ticket(self, person: dict, o: Order | None, category: str, fields: dict) -> None:
        rng, now = self.rng, self.now
        earliest = now - 60 * HOUR
        if o is not None:  # never before the order it is about
            earliest = max(earliest, datetime.strptime(o.row["placed_at"], "%Y-%m-%d %H:%M:%S") + 0.2 * HOUR)
        created = earliest + (now - earliest) * rng.uniform(0.1, 0.95)
        subject, body = rng.choice(data.TICKET_TEXT[category])
        replies, status = (), "open"
        if rng.random() < 0.3:  # the desk asked something and waits for the customer
            replies, status = (
                (("agent", rng.choice(data.FOLLOW_UPS), created + (now - created) * 0.5),),
                "pending",
            )
        self.ticket(
            person,
            category,
            created,
            Text(subject, **fields),
            Text(body, **fields),
            order=o,
            status=status,
            replies=replies,
            channel=rng.choice(("email", "email", "chat", "web_form")),
        )

    def _billing_story(self, o: Order, fields: dict) -> None:
        """A customer sees two charges: billing looks into it (still open when recent)."""
        rng, now = self.rng, self.now
        created = datetime.strptime(o.row["placed_at"], "%Y-%m-%d %H:%M:%S") + rng.uniform(1, 6) * DAY
        if created >= now:
            return
        subject, body = data.TICKET_TEXT["billing"][0]
        handed = created + rng.uniform(1, 8) * HOUR
        recent = now - created < 3 * DAY
        replies = [("agent", "I've passed this to our billing team, who will check the charges.", handed)]
        if not recent:
            replies.append(("agent", data.CLOSED_REPLY["billing"], handed + rng.uniform(1, 2) * DAY))
        tid = self.ticket(
            o.person,
            "billing",
            created,
            subject,
            Text(body, **fields),
            order=o,
            status="escalated" if recent else "closed",
            priority="high",
            replies=tuple(replies),
            resolution=None if recent else "Authorisation hold, not a second charge",
        )
        self.escalate(
            tid,
            "billing",
            "Customer reports a double charge",
            handed,
            status="open" if recent else "resolved",
        )

    def _closed_ticket(
        self,
        person: dict,
        o: Order | None,
        category: str,
        created: datetime,
        fields: dict,
        channel: str | None = None,
    ) -> None:
        rng, now = self.rng, self.now
        subject, body = rng.choice(data.TICKET_TEXT[category])
        answered = created + rng.uniform(0.1, 20) * HOUR
        replies = [("agent", Text(data.CLOSED_REPLY[category], **fields), answered)]
        if rng.random() < 0.4:
            replies.append(("customer", rng.choice(data.THANKS), answered + rng.uniform(0.2, 10) * HOUR))
        if replies[-1][2] >= now:
            return
        self.ticket(
            person,
            category,
            created,
            Text(subject, **fields),
            Text(body, **fields),
            order=o,
            status="closed",
            channel=channel or rng.choice(("email", "chat", "web_form")),
            replies=tuple(replies),
            resolution=data.CLOSED_REPLY[category].split(". ")[0],
        )

    def _general_ticket(self, person: dict) -> None:
        """A question with no order: product questions, log-in trouble, marketing opt-outs."""
        rng, now = self.rng, self.now
        category = rng.choice(("product_question", "product_question", "account"))
        product = rng.choice(rng.choice(self.families))
        fields = {"first": person["row"]["first_name"], "item": product["name"], "order": ""}
        if rng.random() < 0.25:
            self._open_ticket(person, None, category, fields)
        else:
            created = max(person["created"], now - HISTORY_DAYS * DAY) + rng.uniform(0, 1) * (
                now - 3 * DAY - max(person["created"], now - HISTORY_DAYS * DAY)
            )
            self._closed_ticket(person, None, category, created, fields)

    # ---- numbering and insertion --------------------------------------------------------------

    def insert_into(self, fx: FixtureContext) -> None:
        numbers = {}
        for kind, moments in self._when.items():
            _, first, digits = _NUMBERING[kind]
            pinned = self._pinned[kind]
            keys = [key for _, key in sorted(moments)]
            assigned = dict(zip(keys, _number([pinned.get(key) for key in keys], first), strict=True))
            width = max(digits, len(str(max(assigned.values())))) if digits else 0
            numbers[kind] = {key: f"{n:0{width}d}" for key, n in assigned.items()}

        def final(value: object) -> object:
            kind = type(value)
            if kind is LazyId:
                return f"{value.prefix}-{numbers[value.kind][value.key]}{value.suffix}"
            if kind is Text:
                return value.template.format(**{k: final(v) for k, v in value.fields.items()})
            if kind is list:
                return json.dumps([final(v) for v in value])
            return value

        for table in _TABLES:
            rows = self.rows[table]
            if table == "shipments":  # a replacement parcel refers to the original one
                rows.sort(key=lambda r: r["replaces_shipment_id"] is not None)
            if rows:  # executemany: sqlite-utils' insert_all takes seconds on the big fixture
                columns = list(rows[0])
                values = itemgetter(*columns)
                # Only ids, ticket text and parcel contents are filled in late; converting just those
                # columns halves the time of this loop on the big fixture.
                late = [n for n, c in enumerate(columns) if c == "id" or c.endswith("_id") or c in _LATE]
                records = []
                for row in rows:
                    record = list(values(row))
                    for n in late:
                        record[n] = final(record[n])
                    records.append(record)
                fx.db.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    records,
                )


def _number(pins: list[int | None], first: int) -> list[int]:
    """Numbers for rows in time order: pinned ones keep theirs, the rest count up from `first`,
    skipping the pinned numbers, so a landmark's id does not move when the background changes."""
    taken = {pin for pin in pins if pin is not None}
    numbers, following = [], first
    for pin in pins:
        if pin is None:
            while following in taken:
                following += 1
            pin, following = following, following + 1
        numbers.append(pin)
    return numbers


def _pick(rng, cumulative: list[float] | tuple) -> int:
    """The index of a weighted choice, given cumulative weights."""
    return bisect(cumulative, rng.random() * cumulative[-1])


def _delay_days(rng) -> int:
    """Days a parcel takes beyond its promise: most on time, some early, about one in ten late."""
    roll = rng.random()
    if roll < 0.15:
        return -1
    if roll < 0.8:
        return 0
    if roll < 0.9:
        return 1
    return rng.randint(3, 8)
