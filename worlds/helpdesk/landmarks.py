"""The landmark stories of landmarks.yaml, planted in every helpdesk fixture: one policy rule each.

The stories are data: this module checks the file against the models below, so a slip names the file
and the field when the world loads rather than failing halfway through a build, and turns each record
into rows through the story generator in shop.py. It also renders the catalogue that fixtures.py's
docstring shows, so that list can never drift from what the fixtures hold.
"""

from __future__ import annotations

import re
import string
import textwrap
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from atoll.worlds import WorldDefinitionError

from . import data
from .shop import Order, Shop, Text
from .tools._common import TicketCategory

PATH = Path(__file__).with_name("landmarks.yaml")

_CARRIERS = [f"{company} {service}" for company, service, *_ in data.CARRIERS]
_PRODUCTS = {(code, variant) for code, _, _, _, variants, _ in data.CATALOG for variant in variants}
_FIELDS = {"order", "total"}  # what ticket text may name; see _text()


# ---- times relative to the fixture clock ----------------------------------------------------------


@dataclass(frozen=True)
class Moment:
    """A day and time of day (`3 days ago at 19:12`), or a span before the clock (`2.5 hours ago`)."""

    days: int = 0
    hour: int = 0
    minute: int = 0
    before: timedelta | None = None

    def on(self, shop: Shop) -> datetime:
        if self.before is not None:
            return shop.now - self.before
        return shop.at(self.days, self.hour, self.minute)


_DAY_AT = re.compile(r"(today|yesterday|(\d+) days? ago) at (\d\d):(\d\d)")
_AGO = re.compile(r"(\d+(?:\.\d+)?) (hour|minute)s? ago")


def _moment(value: Any) -> Moment:
    text = value if isinstance(value, str) else ""
    if match := _DAY_AT.fullmatch(text):
        word, days, hour, minute = match.groups()
        days = {"today": 0, "yesterday": 1}.get(word) if days is None else int(days)
        if int(hour) < 24 and int(minute) < 60:
            return Moment(days, int(hour), int(minute))
    elif match := _AGO.fullmatch(text):
        amount, unit = match.groups()
        return Moment(before=timedelta(**{f"{unit}s": float(amount)}))
    raise ValueError(
        f"{value!r} is not a time: write 'today at 07:02', 'yesterday at 20:41', '25 days ago at 13:00', "
        "'2.5 hours ago' or '20 minutes ago'"
    )


When = Annotated[Moment, PlainValidator(_moment)]


# ---- the records --------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Address(_Record):
    line1: str
    line2: str | None = None
    city: str
    state: str
    zip: str


class Person(_Record):
    """A landmark customer; `number` fixes their CUS- id. A `note` says why someone with no open
    ticket of their own is a landmark (the catalogue prints it)."""

    first: str
    last: str
    email: str
    born: date
    pin: str = Field(pattern=r"^\d{4}$")
    phone: str = Field(pattern=r"^\(\d{3}\) \d{3}-\d{4}$")
    tier: Literal["standard", "plus"] = "standard"
    number: int = Field(gt=0)
    signed_up: When
    address: Address
    note: str | None = None


class Product(_Record):
    product: str
    variant: str = "One size"

    @model_validator(mode="after")
    def _in_catalogue(self) -> Product:
        if (self.product, self.variant) not in _PRODUCTS:
            raise ValueError(f"no product {self.product} {self.variant!r} in data.CATALOG")
        return self


class Stock(Product):
    stock: int = Field(ge=0)


class Line(Product):
    quantity: int = Field(1, gt=0)


def _text(template: str) -> str:
    """Ticket text is formatted once ids are numbered: it may name only {order} and {total}."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        raise ValueError(f"{error} (write {{{{ and }}}} for a brace)") from None
    if names - _FIELDS:
        raise ValueError(f"text may name only {{order}} and {{total}}, not {{{sorted(names - _FIELDS)[0]}}}")
    return template


TicketText = Annotated[str, AfterValidator(_text)]


class Reply(_Record):
    author: Literal["customer", "agent"]
    body: TicketText
    when: When


class Credit(_Record):
    """Goodwill store credit given on the ticket; `names_order` records the order beside the ticket."""

    amount: float = Field(gt=0)
    reason: str
    when: When
    names_order: bool = False


class Ticket(_Record):
    """A ticket about the order. `customer` defaults to the order's; someone else's ticket names the
    order in its text but is not linked to it (a ticket about another customer's order is no row a
    real helpdesk holds). An open ticket is a landmark: it needs `number`, `asks` and `policy`."""

    customer: str | None = None
    category: TicketCategory
    opened: When
    subject: str
    body: TicketText
    channel: Literal["email", "chat", "phone", "web_form"] = "email"
    priority: Literal["low", "normal", "high", "urgent"] = "normal"
    status: Literal["open", "closed"] = "open"
    replies: list[Reply] = []
    resolution: str | None = None
    number: int | None = None
    credit: Credit | None = None
    asks: str | None = None
    policy: str | None = None

    @model_validator(mode="after")
    def _landmark(self) -> Ticket:
        missing = [f for f in ("number", "asks", "policy") if getattr(self, f) is None]
        if self.status == "open" and missing:
            raise ValueError(f"an open ticket is a landmark: it needs {', '.join(missing)}")
        return self


class Return(_Record):
    """A return of some `lines` (1-based; all when unset), each step only if the clock has passed it."""

    lines: list[int] | None = None
    requested: When
    reason: str
    shipped_back: When | None = None
    received: When | None = None
    refunded: When | None = None


class Refund(_Record):
    """The whole order refunded to the original payment."""

    reason: str
    when: When


class Note(_Record):
    body: str
    when: When


class LandmarkOrder(_Record):
    """An order and what followed it, in this order: its return, refund, note and tickets.
    `lines: random` draws the items as the background does."""

    customer: str
    placed: When | None = None
    delivered_days_ago: int | None = Field(None, ge=0)
    transit: int | None = Field(None, ge=0)
    lost: bool = False
    lines: list[Line] | None
    carrier: str
    pay: Literal["card", "paypal", "split"]
    store_credit: float | None = Field(None, gt=0)
    capture_h: float = 1
    label_h: float = 6
    ship_h: float = 20
    number: int | None = None
    return_: Return | None = Field(None, alias="return")
    refund: Refund | None = None
    note: Note | None = None
    tickets: list[Ticket] = []

    @field_validator("lines", mode="before")
    @classmethod
    def _random_lines(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("give the order's lines, or random")
        return None if value == "random" else value

    @field_validator("carrier")
    @classmethod
    def _known_carrier(cls, value: str) -> str:
        if value not in _CARRIERS:
            raise ValueError(f"no carrier {value!r}; carriers: {', '.join(_CARRIERS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> LandmarkOrder:
        if (self.placed is None) == (self.delivered_days_ago is None):
            raise ValueError("give exactly one of placed and delivered_days_ago")
        if self.delivered_days_ago is not None and self.transit is None:
            raise ValueError("delivered_days_ago needs transit, the days the parcel travels")
        if any(t.status == "open" for t in self.tickets) and self.number is None:
            raise ValueError("an order with a landmark ticket needs a number")
        count = len(self.lines or ())
        if self.return_ and self.return_.lines and not all(1 <= n <= count for n in self.return_.lines):
            raise ValueError(f"return.lines: the order has lines 1 to {count}")
        return self


class Landmarks(_Record):
    """The whole file: stock levels the stories depend on, the people, then their orders."""

    stock: list[Stock]
    people: dict[str, Person]
    orders: list[LandmarkOrder]

    @model_validator(mode="after")
    def _cross_references(self) -> Landmarks:
        """Names that must resolve across records, and numbers that must stay unique."""
        for n, order in enumerate(self.orders):
            named = [("customer", order.customer)]
            named += [
                (f"tickets[{i}].customer", t.customer) for i, t in enumerate(order.tickets) if t.customer
            ]
            for field, key in named:
                if key not in self.people:
                    raise ValueError(f"orders[{n}].{field}: no person {key!r} in people")
        numbered = [
            [(f"people.{key}.number", p.number) for key, p in self.people.items()],
            [(f"orders[{n}].number", o.number) for n, o in enumerate(self.orders) if o.number],
            [
                (f"orders[{n}].tickets[{i}].number", t.number)
                for n, o in enumerate(self.orders)
                for i, t in enumerate(o.tickets)
                if t.number
            ],
        ]
        for kind in numbered:
            seen: dict[int, str] = {}
            for field, number in kind:
                if number in seen:
                    raise ValueError(f"{field}: {number} is taken by {seen[number]}")
                seen[number] = field
        with_ticket = {t.customer or o.customer for o in self.orders for t in o.tickets if t.status == "open"}
        for key, person in self.people.items():
            if key not in with_ticket and person.note is None:
                raise ValueError(
                    f"people.{key}: has no open ticket, so needs a note saying why they are here"
                )
        return self


# ---- loading --------------------------------------------------------------------------------------


def load(path: Path = PATH) -> Landmarks:
    """The landmark file, checked; any problem raises WorldDefinitionError naming the file and field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise WorldDefinitionError(f"{path}: cannot be read: {error.strerror}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise WorldDefinitionError(
            f"{path}: {where}not valid YAML: {getattr(error, 'problem', error)}"
        ) from None
    try:
        return Landmarks.model_validate(raw)
    except ValidationError as error:
        raise WorldDefinitionError("; ".join(f"{path}: {p}" for p in _problems(error))) from None


def _problems(error: ValidationError) -> list[str]:
    """Each problem as `field.path[0]: message`, the way the file's author reads it."""
    found = []
    for item in error.errors():
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"]).lstrip(".")
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "required, but missing"
        else:
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] != "value_error":
                message += f" (got {item['input']!r})"
        found.append(f"{field}: {message}" if field else message)
    return found


LANDMARKS = load()


# ---- records into rows ----------------------------------------------------------------------------


def add_people(shop: Shop, landmarks: Landmarks = LANDMARKS) -> dict[str, dict]:
    """Every landmark customer, in file order (their cards come from the fixture's random draws)."""
    return {
        key: shop.add_person(
            p.first,
            p.last,
            created=p.signed_up.on(shop),
            email=p.email,
            phone=p.phone,
            dob=p.born.isoformat(),
            pin=p.pin,
            tier=p.tier,
            address=(p.address.line1, p.address.line2, p.address.city, p.address.state, p.address.zip),
            number=p.number,
        )
        for key, p in landmarks.people.items()
    }


def add_stories(shop: Shop, people: dict[str, dict], landmarks: Landmarks = LANDMARKS) -> None:
    """The stock levels, then every order with what followed it, in file order."""
    for s in landmarks.stock:
        shop.product(s.product, s.variant)["stock"] = s.stock
    for record in landmarks.orders:
        _add_order(shop, people, record)


def _add_order(shop: Shop, people: dict[str, dict], record: LandmarkOrder) -> None:
    if record.lines is None:
        lines = shop.random_lines()
    else:
        lines = [(shop.product(line.product, line.variant), line.quantity) for line in record.lines]
    if record.placed is not None:
        placed = record.placed.on(shop)
    else:  # picked up 20 hours after placing, it arrives `delivered_days_ago` days ago
        placed = shop.at(record.delivered_days_ago + 1 + record.transit, 10)
    o = shop.order(
        people[record.customer],
        placed,
        lines,
        carrier=_CARRIERS.index(record.carrier),
        transit=record.transit,
        pay=record.pay,
        store_credit=record.store_credit,
        capture_h=record.capture_h,
        label_h=record.label_h,
        ship_h=record.ship_h,
        lost=record.lost,
        pin=record.number,
    )
    if r := record.return_:
        items = list(o.items) if r.lines is None else [o.items[n - 1] for n in r.lines]
        shop.start_return(
            o,
            items,
            r.requested.on(shop),
            r.reason,
            shipped_back=_on(shop, r.shipped_back),
            received=_on(shop, r.received),
            refunded=_on(shop, r.refunded),
        )
    if record.refund:
        when = record.refund.when.on(shop)
        shop.refund(
            o, o.row["total"], "full", "original_payment", record.refund.reason, when, items=list(o.items)
        )
    if record.note:
        shop.note(o, record.note.body, record.note.when.on(shop))
    for ticket in record.tickets:
        _add_ticket(shop, people, o, record.customer, ticket)


def _on(shop: Shop, moment: Moment | None) -> datetime | None:
    return None if moment is None else moment.on(shop)


def _add_ticket(shop: Shop, people: dict[str, dict], o: Order, owner: str, record: Ticket) -> None:
    fields = {"order": o.id, "total": f"{o.row['total']:.2f}"}
    person = people[record.customer or owner]
    tid = shop.ticket(
        person,
        record.category,
        record.opened.on(shop),
        record.subject,
        Text(record.body, **fields),
        order=o if record.customer in (None, owner) else None,
        status=record.status,
        priority=record.priority,
        channel=record.channel,
        replies=tuple((r.author, Text(r.body, **fields), r.when.on(shop)) for r in record.replies),
        resolution=record.resolution,
        pin=record.number,
    )
    if c := record.credit:
        order = o.id if c.names_order else None
        shop.credit(person, c.amount, "goodwill", c.reason, c.when.on(shop), order=order, ticket=tid)


# ---- the catalogue --------------------------------------------------------------------------------


def catalogue(landmarks: Landmarks = LANDMARKS) -> str:
    """One entry per landmark ticket (who, their ids and identity facts, what they ask, what policy
    expects), then the landmark customers with no ticket of their own."""
    people = landmarks.people
    entries, with_ticket = [], set()
    for order in landmarks.orders:
        for ticket in order.tickets:
            if ticket.status == "open":
                key = ticket.customer or order.customer
                with_ticket.add(key)
                whose = "" if key == order.customer else f" ({people[order.customer].first}'s)"
                entries.append(
                    f"{_who(people[key])}: TKT-{ticket.number} on ORD-{order.number}{whose}: {ticket.asks} "
                    f"Policy: {ticket.policy}"
                )
    for key, person in people.items():
        if key not in with_ticket:
            numbers = ", ".join(f"ORD-{o.number}" for o in landmarks.orders if o.customer == key and o.number)
            entries.append(f"{_who(person)}: {numbers}. {person.note}")
    return "\n".join(textwrap.fill(e, 104, initial_indent="- ", subsequent_indent="  ") for e in entries)


def _who(p: Person) -> str:
    plus = ", plus" if p.tier == "plus" else ""
    return (
        f"{p.first} {p.last} ({p.email}, CUS-{p.number:04d}; PIN {p.pin}, born {p.born}, "
        f"phone ends {p.phone[-4:]}{plus})"
    )
