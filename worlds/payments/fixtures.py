"""The payments world's fixture, `lumen_studio`: a yoga studio's Stripe account on Monday 2026-11-16, 10:00 UTC.

Built from data.py and `fx.rng`: seven prices (drop-in, class pack, private session, workshop, and three
memberships), 15 landmark customers whose stories the eval suite asks about and 25 background ones,
a card each, their one-off payments and every membership renewal since each subscription began (an
invoice, a payment intent and a charge per period). Landmark ids are fixed (`fixed_id`); background ids
come from the RNG.

Landmark stories (now = Mon 2026-11-16 10:00):

- Dana Whitfield: charged twice for a 10-class pack ($180) on 14 Nov, 89 s apart: one is a duplicate.
- Marco Ruiz, Chloe Martin: Basic members ($79/month, periods from the 1st) who may upgrade.
- Grace Okoro: Unlimited member ($129/month) who may downgrade to Basic.
- Ben Forde, Tomás Vega: members who may cancel (at the end of the paid period).
- Sofia Marchetti: Unlimited, past due: her 1 Nov renewal failed on an expired card; she saved a new
  Mastercard on 10 Nov that nothing uses yet.
- Paolo Ricci: Annual unlimited ($1,290) bought on 6 Nov.
- Priya Natarajan: 10-class pack bought 13 Aug (95 days ago). Ravi Shah: one bought 27 Oct, unused.
  Hannah Reed: one bought 4 Nov.
- Elena Petrova: a $45 workshop charge refunded in full on 20 Oct.
- Kwame Mensah: two $22 drop-ins, on 3 and 10 Nov (not a duplicate).
- Aiko Tanaka: a $22 drop-in yesterday (15 Nov). Omar Farouk: a private session paid on 5 Oct.
"""

from __future__ import annotations

import hashlib
import json
import string
from datetime import datetime, timedelta
from typing import Any

from atoll.worlds import TIMESTAMP_FORMAT, FixtureContext

from . import data
from .cards import CARDS
from .tools._common import ID_LENGTH
from .tools.subscriptions import period_after
from .world import world

EPOCH = "2026-11-16 10:00:00"
ACCOUNT_ID = "acct_1LumenYogaStudio"
_ALPHABET = string.ascii_letters + string.digits
_BACKGROUND_CUSTOMERS = 25
_ONE_OFF = ("drop_in", "class_pack", "private", "workshop")


def fixed_id(prefix: str, key: str) -> str:
    """A landmark's Stripe-shaped id, a function of its key alone, so tasks can name it."""
    number = int.from_bytes(hashlib.sha256(f"{prefix}:{key}".encode()).digest(), "big")
    chars = []
    for _ in range(ID_LENGTH.get(prefix, 24)):
        number, digit = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return f"{prefix}_{''.join(chars)}"


def _ts(moment: datetime) -> str:
    return moment.strftime(TIMESTAMP_FORMAT)


class _Builder:
    """Collects the fixture's rows, then inserts them table by table."""

    def __init__(self, fx: FixtureContext) -> None:
        self.fx = fx
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.prices = {
            key: (fixed_id("price", key), name, amount, interval)
            for key, name, _, amount, interval, _ in data.PRICES
        }

    def add(self, table: str, **row: Any) -> dict[str, Any]:
        if table != "account":
            row.setdefault("metadata", "{}")
        self.rows.setdefault(table, []).append(row)
        return row

    def random_id(self, prefix: str) -> str:
        return f"{prefix}_{''.join(self.fx.rng.choices(_ALPHABET, k=ID_LENGTH.get(prefix, 24)))}"

    def card(self, method_id: str, customer: str, number: str, month: int, year: int, at: str) -> None:
        card = CARDS[number]
        self.add(
            "payment_methods",
            id=method_id,
            customer=customer,
            brand=card.brand,
            last4=card.last4,
            exp_month=month,
            exp_year=year,
            funding=card.funding,
            country=card.country,
            fingerprint=hashlib.sha256(f"{number}:{customer}".encode()).hexdigest()[:16],
            decline_code=card.decline_code,
            declines_on=card.declines_on,
            billing_name=None,
            billing_email=None,
            created=at,
        )

    def payment(
        self,
        intent_id: str,
        charge_id: str,
        customer: str,
        method: str,
        amount: int,
        at: str,
        description: str,
        *,
        failure: tuple[str, str, str] | None = None,
    ) -> None:
        """A payment intent and its charge: succeeded, or failed with (code, decline code, message)."""
        error = None
        if failure:
            code, decline, message = failure
            error = json.dumps(
                {
                    "type": "card_error",
                    "code": code,
                    "decline_code": decline,
                    "message": message,
                    "charge": charge_id,
                }
            )
        self.add(
            "payment_intents",
            id=intent_id,
            amount=amount,
            amount_received=0 if failure else amount,
            amount_capturable=0,
            currency="usd",
            customer=customer,
            payment_method=method,
            status="requires_payment_method" if failure else "succeeded",
            capture_method="automatic",
            description=description,
            latest_charge=charge_id,
            last_payment_error=error,
            canceled_at=None,
            cancellation_reason=None,
            created=at,
        )
        self.add(
            "charges",
            id=charge_id,
            amount=amount,
            amount_captured=0 if failure else amount,
            amount_refunded=0,
            currency="usd",
            customer=customer,
            payment_intent=intent_id,
            payment_method=method,
            status="failed" if failure else "succeeded",
            captured=0 if failure else 1,
            refunded=0,
            failure_code=failure[0] if failure else None,
            failure_message=failure[2] if failure else None,
            description=description,
            created=at,
        )

    def refund(self, refund_id: str, charge_id: str, amount: int, at: str) -> None:
        charge = next(r for r in self.rows["charges"] if r["id"] == charge_id)
        charge["amount_refunded"] += amount
        charge["refunded"] = int(charge["amount_refunded"] == charge["amount_captured"])
        self.add(
            "refunds",
            id=refund_id,
            amount=amount,
            charge=charge_id,
            payment_intent=charge["payment_intent"],
            currency="usd",
            reason="requested_by_customer",
            status="succeeded",
            created=at,
        )

    def subscription(
        self, key: str, customer: str, price_key: str, method: str, start: str, *, fails_last: bool
    ) -> None:
        price_id, name, amount, interval = self.prices[price_key]
        subscription_id, item_id = fixed_id("sub", key), fixed_id("si", key)
        starts = [datetime.strptime(start, TIMESTAMP_FORMAT)]
        while (following := period_after(starts[0], interval, len(starts))) <= self.fx.epoch:
            starts.append(following)
        current_end = period_after(starts[0], interval, len(starts))
        for n, period_start in enumerate(starts):
            last = n == len(starts) - 1
            failed = last and fails_last
            period_end = period_after(starts[0], interval, n + 1)
            invoice_id, at = fixed_id("in", f"{key}:{n}"), _ts(period_start)
            intent_id, charge_id = fixed_id("pi", f"{key}:{n}"), fixed_id("ch", f"{key}:{n}")
            failure = ("expired_card", "expired_card", "Your card has expired.") if failed else None
            self.payment(
                intent_id, charge_id, customer, method, amount, at, "Subscription update", failure=failure
            )
            self.add(
                "invoices",
                id=invoice_id,
                number=None,
                customer=customer,
                subscription=subscription_id,
                status="open" if failed else "paid",
                collection_method="charge_automatically",
                billing_reason="subscription_create" if n == 0 else "subscription_cycle",
                currency="usd",
                description=None,
                subtotal=amount,
                total=amount,
                amount_due=amount,
                amount_paid=0 if failed else amount,
                amount_remaining=amount if failed else 0,
                attempt_count=1,
                payment_intent=intent_id,
                days_until_due=None,
                due_date=None,
                period_start=at,
                period_end=at,
                auto_advance=1,
                finalized_at=at,
                paid_at=None if failed else at,
                voided_at=None,
                created=at,
            )
            self.add(
                "invoice_items",
                id=fixed_id("ii", f"{key}:{n}"),
                customer=customer,
                invoice=invoice_id,
                subscription=subscription_id,
                subscription_item=item_id,
                price=price_id,
                amount=amount,
                unit_amount=amount,
                quantity=1,
                currency="usd",
                description=f"1 × {name}",
                proration=0,
                period_start=at,
                period_end=_ts(period_end),
                created=at,
            )
        self.add(
            "subscriptions",
            id=subscription_id,
            customer=customer,
            status="past_due" if fails_last else "active",
            default_payment_method=method,
            collection_method="charge_automatically",
            cancel_at_period_end=0,
            canceled_at=None,
            ended_at=None,
            latest_invoice=fixed_id("in", f"{key}:{len(starts) - 1}"),
            billing_cycle_anchor=start,
            start_date=start,
            created=start,
        )
        self.add(
            "subscription_items",
            id=item_id,
            subscription=subscription_id,
            price=price_id,
            quantity=1,
            current_period_start=_ts(starts[-1]),
            current_period_end=_ts(current_end),
            created=start,
        )

    def number_invoices(self) -> None:
        for n, invoice in enumerate(
            sorted(self.rows["invoices"], key=lambda r: (r["created"], r["id"])), start=1
        ):
            invoice["number"] = f"LUMEN-{n:04d}"

    def insert(self) -> None:
        for table in (
            "account",
            "products",
            "prices",
            "customers",
            "payment_methods",
            "payment_intents",
            "charges",
            "refunds",
            "subscriptions",
            "subscription_items",
            "invoices",
            "invoice_items",
        ):
            rows = sorted(self.rows.get(table, []), key=lambda r: (r.get("created", ""), r["id"]))
            self.fx.insert(table, rows)


@world.fixture(
    "lumen_studio",
    epoch=EPOCH,
    seed=3,
    default=True,
    description="Lumen Yoga Studio: 40 customers, 7 prices, 9 months of payments and membership renewals.",
)
def lumen_studio(fx: FixtureContext) -> None:
    build = _Builder(fx)
    build.add(
        "account",
        id=ACCOUNT_ID,
        business_name="Lumen Yoga Studio",
        email="billing@lumenyoga.example",
        country="US",
        default_currency="usd",
        invoice_prefix="LUMEN",
        created="2026-01-12 09:00:00",
    )
    opened = "2026-01-12 09:30:00"
    for key, name, description, amount, interval, count in data.PRICES:
        price_id = build.prices[key][0]
        build.add(
            "products",
            id=fixed_id("prod", key),
            name=name,
            description=description,
            active=1,
            default_price=price_id,
            created=opened,
            updated=opened,
        )
        build.add(
            "prices",
            id=price_id,
            product=fixed_id("prod", key),
            unit_amount=amount,
            currency="usd",
            type="recurring" if interval else "one_time",
            recurring_interval=interval,
            recurring_interval_count=count,
            nickname=None,
            lookup_key=key,
            active=1,
            created=opened,
        )
    _landmarks(build)
    _background(build)
    build.number_invoices()
    build.insert()


def _landmarks(build: _Builder) -> None:
    defaults: dict[str, str] = {}
    for key, customer_key, number, month, year, at in data.CARDS:
        build.card(fixed_id("pm", key), fixed_id("cus", customer_key), number, month, year, at)
        defaults.setdefault(customer_key, fixed_id("pm", key))
    for key, name, email, phone, since in data.CUSTOMERS:
        build.add(
            "customers",
            id=fixed_id("cus", key),
            name=name,
            email=email,
            phone=phone,
            description=None,
            balance=0,
            default_payment_method=defaults.get(key),
            deleted=0,
            created=since,
        )
    for key, customer_key, price_key, quantity, at, refunded, refunded_at in data.PAYMENTS:
        _, name, amount, _ = build.prices[price_key]
        customer = fixed_id("cus", customer_key)
        build.payment(
            fixed_id("pi", key),
            fixed_id("ch", key),
            customer,
            defaults[customer_key],
            amount * quantity,
            at,
            name,
        )
        if refunded:
            build.refund(fixed_id("re", key), fixed_id("ch", key), refunded, refunded_at)
    for key, customer_key, price_key, card_key, start in data.SUBSCRIPTIONS:
        build.subscription(
            key,
            fixed_id("cus", customer_key),
            price_key,
            fixed_id("pm", card_key),
            start,
            fails_last=key in data.FAILED_RENEWALS,
        )


def _background(build: _Builder) -> None:
    rng, now = build.fx.rng, build.fx.epoch
    for n in range(_BACKGROUND_CUSTOMERS):
        first, last = data.FIRST_NAMES[n], rng.choice(data.LAST_NAMES)
        since = now - timedelta(days=rng.randint(30, 300), minutes=rng.randint(0, 600))
        customer, method = build.random_id("cus"), build.random_id("pm")
        build.card(
            method,
            customer,
            rng.choice(["4242424242424242", "5555555555554444", "378282246310005"]),
            rng.randint(1, 12),
            rng.randint(2027, 2031),
            _ts(since),
        )
        build.add(
            "customers",
            id=customer,
            name=f"{first} {last}",
            email=f"{first}.{last}{n}@example.com".lower(),
            phone=f"+1 206 555 {1200 + n:04d}",
            description=None,
            balance=0,
            default_payment_method=method,
            deleted=0,
            created=_ts(since),
        )
        for _ in range(rng.randint(1, 4)):
            price_key = rng.choice(_ONE_OFF)
            _, name, amount, _ = build.prices[price_key]
            at = since + timedelta(days=rng.uniform(0, (now - since).days - 1))
            charge_id = build.random_id("ch")
            build.payment(build.random_id("pi"), charge_id, customer, method, amount, _ts(at), name)
            if rng.random() < 0.08:
                build.refund(build.random_id("re"), charge_id, amount // 2, _ts(at + timedelta(days=3)))
        if rng.random() < 0.3:
            plan = rng.choice(["basic", "unlimited"])
            build.subscription(
                f"bg{n}", customer, plan, method, _ts(since + timedelta(days=1)), fails_last=False
            )
