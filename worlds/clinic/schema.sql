-- Harborview Veterinary Clinic's front desk: clients, their pets, the vets, bookable slots, appointments,
-- invoices with their payments, notes on the client record and the identity-check log.
-- Money is REAL dollars rounded to cents. Timestamps are 'YYYY-MM-DD HH:MM:SS' text, dates 'YYYY-MM-DD',
-- both relative to the fixture clock. Ids are readable text with a prefix (CLI-0001, PET-0001, ...).
-- The tables enforce data integrity only; the desk policy (policy.md) is the agent's to follow.

CREATE TABLE clients (
    id         TEXT PRIMARY KEY,                    -- CLI-0001
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    phone      TEXT NOT NULL,                       -- (206) 555-0147
    zip        TEXT NOT NULL,                       -- five digits; identity checks
    created_at TEXT NOT NULL
);

CREATE TABLE pets (
    id         TEXT PRIMARY KEY,                    -- PET-0001
    client_id  TEXT NOT NULL REFERENCES clients (id),
    name       TEXT NOT NULL,
    species    TEXT NOT NULL CHECK (species IN ('dog', 'cat', 'rabbit', 'bird', 'reptile')),
    breed      TEXT NOT NULL,
    born_on    TEXT NOT NULL,                       -- date
    deceased   INTEGER NOT NULL DEFAULT 0 CHECK (deceased IN (0, 1))
);
CREATE INDEX pets_client ON pets (client_id);

CREATE TABLE vets (
    id       TEXT PRIMARY KEY,                      -- VET-01
    name     TEXT NOT NULL,
    services TEXT NOT NULL,                         -- comma list: checkup, vaccination, dental, surgery
    species  TEXT NOT NULL,                         -- comma list of the species the vet treats
    days     TEXT NOT NULL                          -- comma list of weekdays worked: Mon, Tue, ...
);

CREATE TABLE slots (
    id        TEXT PRIMARY KEY,                     -- SLT-0415-1000-01: month, day, time, vet number
    vet_id    TEXT NOT NULL REFERENCES vets (id),
    starts_at TEXT NOT NULL,
    minutes   INTEGER NOT NULL,
    status    TEXT NOT NULL CHECK (status IN ('open', 'booked'))
);
CREATE INDEX slots_start ON slots (starts_at);

CREATE TABLE appointments (
    id            TEXT PRIMARY KEY,                 -- APT-2001
    client_id     TEXT NOT NULL REFERENCES clients (id),
    pet_id        TEXT NOT NULL REFERENCES pets (id),
    vet_id        TEXT NOT NULL REFERENCES vets (id),
    slot_id       TEXT REFERENCES slots (id),
    starts_at     TEXT NOT NULL,
    service       TEXT NOT NULL CHECK (service IN ('checkup', 'vaccination', 'dental', 'surgery')),
    reason        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('booked', 'completed', 'cancelled', 'no_show')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    cancelled_at  TEXT,
    cancelled_by  TEXT CHECK (cancelled_by IN ('client', 'clinic')),
    cancel_reason TEXT
);
CREATE INDEX appointments_client ON appointments (client_id);
CREATE INDEX appointments_slot ON appointments (slot_id);

CREATE TABLE invoices (
    id             TEXT PRIMARY KEY,                -- INV-3001
    client_id      TEXT NOT NULL REFERENCES clients (id),
    appointment_id TEXT REFERENCES appointments (id),
    kind           TEXT NOT NULL CHECK (kind IN ('visit', 'late_cancellation', 'no_show')),
    amount         REAL NOT NULL CHECK (amount > 0),
    status         TEXT NOT NULL CHECK (status IN ('open', 'paid', 'waived', 'refunded')),
    created_at     TEXT NOT NULL,
    closed_at      TEXT,
    resolution     TEXT                             -- why it was waived or refunded
);
CREATE INDEX invoices_client ON invoices (client_id);

CREATE TABLE payments (
    id          TEXT PRIMARY KEY,                   -- PAY-3001
    invoice_id  TEXT NOT NULL REFERENCES invoices (id),
    amount      REAL NOT NULL CHECK (amount > 0),
    method      TEXT NOT NULL CHECK (method IN ('card', 'cash')),
    card_last4  TEXT,
    status      TEXT NOT NULL CHECK (status IN ('captured', 'refunded')),
    paid_at     TEXT NOT NULL,
    refunded_at TEXT
);
CREATE INDEX payments_invoice ON payments (invoice_id);

CREATE TABLE notes (
    id             TEXT PRIMARY KEY,                -- NOTE-0001
    client_id      TEXT NOT NULL REFERENCES clients (id),
    pet_id         TEXT REFERENCES pets (id),
    appointment_id TEXT REFERENCES appointments (id),
    body           TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX notes_client ON notes (client_id);

CREATE TABLE identity_checks (
    id         TEXT PRIMARY KEY,                    -- IDV-...
    client_id  TEXT NOT NULL REFERENCES clients (id),
    phone_ok   INTEGER NOT NULL CHECK (phone_ok IN (0, 1)),
    zip_ok     INTEGER NOT NULL CHECK (zip_ok IN (0, 1)),
    verified   INTEGER NOT NULL CHECK (verified IN (0, 1)),
    created_at TEXT NOT NULL
);
