"""The clinic world's fixture, `harborview`: a small clinic on Monday 13 April 2026, 08:30.

Built from `fx.rng` and data.py: four vets with the services and species they take, hourly slots for
two weeks from the epoch (on the days each vet works), 26 landmark clients whose stories the eval
suite asks about, 24 background clients, and background bookings that fill about a third of the
slots. Slot ids read as `SLT-<MMDD>-<HHMM>-<vet number>`. Identity facts are the phone number and the
ZIP code on the record.

Landmark stories (now = Mon 2026-04-13 08:30):

- Nora Lindqvist (CLI-0001; (206) 555-0147, 98103): Biscuit's checkup APT-2001, Wed 15 Apr 10:00,
  Dr. Osei: more than 24 h away, so a free cancellation or a lookup.
- Marcus Webb (CLI-0002; (206) 555-0183, 98117): Rocket's checkup APT-2002 today 14:00: a late
  cancellation ($35 fee).
- Priya Natarajan (CLI-0003; (425) 555-0126, 98052): Miso's vaccination APT-2003 today 15:00; Miso is
  in hospital: cancel and waive the fee.
- Hugo Almeida (CLI-0004; (206) 555-0161, 98122): Clover is a rabbit: only Dr. Carvalho (VET-03) sees
  rabbits; Wed 11:00 is open with both Dr. Osei and Dr. Carvalho.
- Sofia Marchetti (CLI-0005; (253) 555-0108, 98402): Luna was born 2026-03-09 (5 weeks): too young
  for vaccines.
- Daniel Cho (CLI-0006; (206) 555-0139, 98109): Max needs vaccines; Dr. Berg does not vaccinate; on
  Thu 16 Apr 10:00 only Dr. Reilly (VET-04) fits.
- Grace Okoro (CLI-0007): open no-show fee INV-3001 ($50); she forgot. Ben Forde (CLI-0008; (425)
  555-0152, 98033): open no-show fee INV-3002; Juno was in the emergency hospital.
- Elena Petrova (CLI-0009; (206) 555-0194, 98115): paid a $35 late fee (INV-3003) on a cancellation
  made four days ahead: refund it.
- Sam Whitaker (CLI-0010; (206) 555-0111, 98107): charged twice $320 for one dental visit (INV-3004,
  INV-3005): practice manager.
- Two James Millers: jmiller@gmail.com (CLI-0011; (206) 555-0120, 98105; Otis, APT-2004 Fri 09:00)
  and james.miller77@yahoo.com (CLI-0012; (253) 555-0190, 98405; Bella, APT-2005 Tue 14 Apr 10:00,
  25.5 h away: free to cancel).
- Aiko Tanaka (CLI-0013; (206) 555-0133, 98199): Kiwi the budgerigar; Sushi's dental APT-2006 Thu
  14:00 with Dr. Osei, whose only open Friday-afternoon slot is 14:00.
- Ravi Shah (CLI-0014): Tank the tortoise; Dr. Carvalho's first open Friday slot is 10:00.
- Lucy Brennan (CLI-0015): Hazel's checkup APT-2007 Tue 09:00 with Dr. Reilly; Thu 09:00 is open.
- Omar Farouk (CLI-0016; (206) 555-0102, 98118): Simba's checkup APT-2008 today 11:00 (late).
- Chloe Martin (CLI-0017): Peanut. Tomás Vega (CLI-0018): Nala; Dr. Berg's Thu 14:00 is open.
- Fatima Zahra (CLI-0019): Zara's checkup APT-2010 Tue 15:00. Ingrid Holm (CLI-0020): Bolt's
  vaccination APT-2011 today 16:00. Kwame Mensah (CLI-0021): Ziggy's checkup APT-2012 Tue 21 Apr 10:00.
- Paolo Ricci (CLI-0022): Bruno's checkup APT-2013 today 10:00. Mei Lin (CLI-0023): Tofu's checkup
  APT-2014 today 16:00. Sara Cohen (CLI-0024): Pixel's vaccination APT-2015 Wed 09:00 with Dr.
  Carvalho; on Thu 11:00 Dr. Osei is taken, Dr. Berg does not vaccinate, Dr. Reilly is open.
- Leo Park (CLI-0025): Nori; Dr. Reilly's Tue 14:00 is open. Hannah Reed (CLI-0026): paid a $50
  no-show fee (INV-3006) for an appointment the clinic cancelled.
"""

from datetime import datetime, timedelta

from atoll.worlds import FixtureContext

from . import data
from .world import world

EPOCH = "2026-04-13 08:30:00"
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@world.fixture(
    "harborview",
    epoch=EPOCH,
    seed=5,
    description="Harborview Veterinary Clinic: 4 vets, 50 clients, two weeks of slots.",
)
def harborview(fx: FixtureContext) -> None:
    rng = fx.rng
    now = fx.epoch

    def ts(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%d %H:%M:%S")

    fx.insert(
        "vets",
        [{"id": v, "name": n, "services": s, "species": sp, "days": d} for v, n, s, sp, d in data.VETS],
    )
    vets = {row[0]: row for row in data.VETS}

    # Clients and pets: the landmarks, then the background.
    clients, pets = [], []
    for cid, first, last, email, phone, zip_code, their_pets in data.CLIENTS:
        since = now - timedelta(days=rng.randint(200, 2000))
        clients.append(_client(cid, first, last, email, phone, zip_code, ts(since)))
        for pid, name, species, breed, born in their_pets:
            pets.append(_pet(pid, cid, name, species, breed, born))
    background_pets = []
    used_emails = {row["email"] for row in clients}
    for n in range(24):
        cid = f"CLI-{len(data.CLIENTS) + n + 1:04d}"
        first, last = rng.choice(data.FIRST_NAMES), rng.choice(data.LAST_NAMES)
        email = f"{first.lower()}.{last.lower()}@{rng.choice(data.EMAIL_DOMAINS)}"
        while email in used_emails:
            email = f"{first.lower()}.{last.lower()}{rng.randint(2, 99)}@{rng.choice(data.EMAIL_DOMAINS)}"
        used_emails.add(email)
        phone = f"(206) 555-{200 + n:04d}"
        since = now - timedelta(days=rng.randint(30, 2500))
        clients.append(_client(cid, first, last, email, phone, rng.choice(data.ZIPS), ts(since)))
        for _ in range(rng.choice((1, 1, 2))):
            species = rng.choices([s for s, _ in data.SPECIES_WEIGHTS], [w for _, w in data.SPECIES_WEIGHTS])[
                0
            ]
            born = (now - timedelta(days=rng.randint(200, 4000))).date().isoformat()
            pid = f"PET-{len(pets) + 1:04d}"
            pet = _pet(pid, cid, rng.choice(data.PET_NAMES), species, rng.choice(data.BREEDS[species]), born)
            pets.append(pet)
            background_pets.append(pet)
    fx.insert("clients", clients)
    fx.insert("pets", pets)
    pet_by_id = {pet["id"]: pet for pet in pets}

    # Slots for the two weeks, on the days each vet works.
    slots = {}
    for day in range(data.SLOT_DAYS):
        date = now.date() + timedelta(days=day)
        weekday = _WEEKDAYS[date.weekday()]
        for vid, *_, days in data.VETS:
            if weekday not in days.split(","):
                continue
            for hour in data.SLOT_HOURS:
                start = datetime(date.year, date.month, date.day, hour)
                sid = f"SLT-{start:%m%d-%H%M}-{vid[-2:]}"
                slots[sid] = {
                    "id": sid,
                    "vet_id": vid,
                    "starts_at": ts(start),
                    "minutes": data.SLOT_MINUTES,
                    "status": "open",
                }

    appointments, invoices, payments = [], [], []

    def appointment(aid, pid, vid, start, service, reason, status="booked", created=None, **extra):
        slot_id = f"SLT-{start[5:7]}{start[8:10]}-{start[11:13]}{start[14:16]}-{vid[-2:]}"
        if slot_id in slots:
            assert slots[slot_id]["status"] == "open", slot_id
            slots[slot_id]["status"] = "booked" if status == "booked" else "open"
        else:
            slot_id = None
        created = created or ts(datetime.fromisoformat(start) - timedelta(days=rng.randint(3, 30)))
        appointments.append(
            {
                "id": aid,
                "client_id": pet_by_id[pid]["client_id"],
                "pet_id": pid,
                "vet_id": vid,
                "slot_id": slot_id,
                "starts_at": start,
                "service": service,
                "reason": reason,
                "status": status,
                "created_at": created,
                "updated_at": extra.get("cancelled_at") or created,
                "cancelled_at": extra.get("cancelled_at"),
                "cancelled_by": extra.get("cancelled_by"),
                "cancel_reason": extra.get("cancel_reason"),
            }
        )

    def invoice(iid, aid, client_id, kind, amount, status, created, paid_at):
        invoices.append(
            {
                "id": iid,
                "client_id": client_id,
                "appointment_id": aid,
                "kind": kind,
                "amount": amount,
                "status": status,
                "created_at": created,
                "closed_at": paid_at,
                "resolution": None,
            }
        )
        if paid_at is not None:
            payments.append(
                {
                    "id": iid.replace("INV", "PAY"),
                    "invoice_id": iid,
                    "amount": amount,
                    "method": "card",
                    "card_last4": f"{rng.randint(0, 9999):04d}",
                    "status": "captured",
                    "paid_at": paid_at,
                    "refunded_at": None,
                }
            )

    for aid, pid, vid, start, service, reason in data.UPCOMING:
        appointment(aid, pid, vid, start, service, reason)
    for (aid, pid, vid, start, service, reason, status, cancelled_at, by, why), bills in data.PAST:
        appointment(
            aid,
            pid,
            vid,
            start,
            service,
            reason,
            status,
            cancelled_at=cancelled_at,
            cancelled_by=by,
            cancel_reason=why,
        )
        for iid, kind, amount, inv_status, created, paid_at in bills:
            invoice(iid, aid, pet_by_id[pid]["client_id"], kind, amount, inv_status, created, paid_at)

    # Background bookings: about a third of the free slots, every FORCE_BOOKED one, none KEEP_OPEN.
    number = 2101
    for sid, slot in slots.items():
        if slot["status"] != "open" or sid in data.KEEP_OPEN:
            continue
        if sid not in data.FORCE_BOOKED and rng.random() >= 0.35:
            continue
        vet = vets[slot["vet_id"]]
        takes = [pet for pet in background_pets if pet["species"] in vet[3].split(",")]
        pet = rng.choice(takes)
        service = rng.choice(
            [s for s in vet[2].split(",") if pet["species"] in ("dog", "cat") or s != "dental"]
        )
        appointment(
            f"APT-{number}", pet["id"], vet[0], slot["starts_at"], service, rng.choice(data.REASONS[service])
        )
        number += 1

    # Quiet history: up to two completed, paid visits per client over the last 90 days.
    number, bill = 1001, 4001
    for pet in pets:
        if pet["born_on"] > (now - timedelta(days=120)).date().isoformat():
            continue  # a young pet has no history yet
        for _ in range(rng.randint(0, 2)):
            vet = rng.choice([v for v in data.VETS if pet["species"] in v[3].split(",")])
            day = now.date() - timedelta(days=rng.randint(7, 90))
            while _WEEKDAYS[day.weekday()] not in vet[4].split(","):
                day -= timedelta(days=1)
            start = datetime(day.year, day.month, day.day, rng.choice(data.SLOT_HOURS))
            service = "vaccination" if "vaccination" in vet[2] and rng.random() < 0.3 else "checkup"
            aid = f"APT-{number}"
            appointment(
                aid, pet["id"], vet[0], ts(start), service, rng.choice(data.REASONS[service]), "completed"
            )
            paid = ts(start + timedelta(minutes=50))
            invoice(f"INV-{bill}", aid, pet["client_id"], "visit", data.PRICES[service], "paid", paid, paid)
            number += 1
            bill += 1

    fx.insert("slots", list(slots.values()))
    fx.insert("appointments", sorted(appointments, key=lambda row: row["id"]))
    fx.insert("invoices", invoices)
    fx.insert("payments", payments)


def _client(cid: str, first: str, last: str, email: str, phone: str, zip_code: str, since: str) -> dict:
    return {
        "id": cid,
        "first_name": first,
        "last_name": last,
        "email": email,
        "phone": phone,
        "zip": zip_code,
        "created_at": since,
    }


def _pet(pid: str, cid: str, name: str, species: str, breed: str, born: str) -> dict:
    return {
        "id": pid,
        "client_id": cid,
        "name": name,
        "species": species,
        "breed": breed,
        "born_on": born,
        "deceased": 0,
    }
