-- τ²-bench's airline (data from τ²-bench, Copyright (c) 2025 Sierra Research, MIT License): its db.json
-- normalised into the tables an airline's database would have. Every list and mapping of τ²'s keeps
-- its order in a `position` column, so each tool rebuilds τ²'s answer exactly, and the fixture holds
-- db.json and nothing else (tests/worlds/test_tau2_airline.py turns it back into db.json). A user's
-- reservations are the reservations with their user_id, by position. Times are τ²'s EST text.

CREATE TABLE airports (                           -- the list τ²'s list_all_airports answers (not in db.json)
    iata     TEXT PRIMARY KEY,
    city     TEXT NOT NULL,
    position INTEGER NOT NULL UNIQUE
);

CREATE TABLE flights (                            -- a scheduled flight, flown on many dates
    flight_number                TEXT PRIMARY KEY, -- 'HAT001'
    position                     INTEGER NOT NULL UNIQUE,
    origin                       TEXT NOT NULL,
    destination                  TEXT NOT NULL,
    scheduled_departure_time_est TEXT NOT NULL,   -- '06:00:00'
    scheduled_arrival_time_est   TEXT NOT NULL    -- '07:00:00', or '01:00:00+1' the next day
);
CREATE INDEX flights_route ON flights (origin, destination);

CREATE TABLE flight_dates (                       -- one flight on one date; which times it has depend on status
    flight_number                TEXT NOT NULL REFERENCES flights (flight_number),
    date                         TEXT NOT NULL,   -- '2024-05-15'
    position                     INTEGER NOT NULL,
    status                       TEXT NOT NULL CHECK (status IN
                                   ('available', 'landed', 'cancelled', 'delayed', 'flying', 'on time')),
    estimated_departure_time_est TEXT,
    estimated_arrival_time_est   TEXT,
    actual_departure_time_est    TEXT,
    actual_arrival_time_est      TEXT,
    PRIMARY KEY (flight_number, date)
);

CREATE TABLE flight_cabins (                      -- seats left and price per cabin of an available flight date
    flight_number   TEXT NOT NULL,
    date            TEXT NOT NULL,
    cabin           TEXT NOT NULL CHECK (cabin IN ('basic_economy', 'economy', 'business')),
    position        INTEGER NOT NULL,
    available_seats INTEGER NOT NULL,
    price           INTEGER NOT NULL,             -- whole dollars
    PRIMARY KEY (flight_number, date, cabin),
    FOREIGN KEY (flight_number, date) REFERENCES flight_dates (flight_number, date)
);

CREATE TABLE users (
    user_id    TEXT PRIMARY KEY,                  -- 'sara_doe_496'
    position   INTEGER NOT NULL UNIQUE,
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    address1   TEXT NOT NULL,
    address2   TEXT,
    city       TEXT NOT NULL,
    country    TEXT NOT NULL,
    state      TEXT NOT NULL,
    zip        TEXT NOT NULL,
    email      TEXT NOT NULL,
    dob        TEXT NOT NULL,
    membership TEXT NOT NULL CHECK (membership IN ('gold', 'silver', 'regular'))
);

CREATE TABLE payment_methods (                    -- ids are per user: certificate_3221322 is anyone's first new certificate
    user_id   TEXT NOT NULL REFERENCES users (user_id),
    id        TEXT NOT NULL,                      -- 'credit_card_7815826', 'gift_card_…', 'certificate_…'
    position  INTEGER NOT NULL,
    source    TEXT NOT NULL CHECK (source IN ('credit_card', 'gift_card', 'certificate')),
    brand     TEXT,                               -- credit cards
    last_four TEXT,                               -- credit cards
    amount    REAL,                               -- what is left on a gift card or certificate
    PRIMARY KEY (user_id, id)
);

CREATE TABLE saved_passengers (
    user_id    TEXT NOT NULL REFERENCES users (user_id),
    position   INTEGER NOT NULL,
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    dob        TEXT NOT NULL,
    PRIMARY KEY (user_id, position)
);

CREATE TABLE reservations (
    reservation_id   TEXT PRIMARY KEY,            -- 'ZFA04Y'
    user_id          TEXT NOT NULL REFERENCES users (user_id),
    position         INTEGER NOT NULL UNIQUE,
    origin           TEXT NOT NULL,
    destination      TEXT NOT NULL,
    flight_type      TEXT NOT NULL,               -- 'one_way', 'round_trip'
    -- cabin and the bags hold what update_reservation_flights and update_reservation_baggages were given,
    -- untyped like τ²'s record after an assignment: "2" stays a text and 2.0 a real, as in τ²'s state.
    cabin,
    created_at       TEXT NOT NULL,               -- '2024-05-02T03:10:19'
    total_baggages,
    nonfree_baggages,
    insurance        TEXT NOT NULL,               -- 'yes', 'no'
    status           TEXT                         -- NULL, or 'cancelled'
);
CREATE INDEX reservations_user ON reservations (user_id, position);

CREATE TABLE reservation_flights (
    reservation_id TEXT NOT NULL REFERENCES reservations (reservation_id),
    position       INTEGER NOT NULL,
    flight_number  TEXT NOT NULL,
    origin         TEXT NOT NULL,
    destination    TEXT NOT NULL,
    date           TEXT NOT NULL,
    price          INTEGER NOT NULL,              -- per passenger, when booked
    PRIMARY KEY (reservation_id, position)
);

CREATE TABLE reservation_passengers (
    reservation_id TEXT NOT NULL REFERENCES reservations (reservation_id),
    position       INTEGER NOT NULL,
    first_name     TEXT NOT NULL,
    last_name      TEXT NOT NULL,
    dob            TEXT NOT NULL,
    PRIMARY KEY (reservation_id, position)
);

CREATE TABLE reservation_payments (               -- the payment history: payments, and refunds as negative amounts
    reservation_id TEXT NOT NULL REFERENCES reservations (reservation_id),
    position       INTEGER NOT NULL,
    payment_id     TEXT NOT NULL,
    amount         INTEGER NOT NULL,
    PRIMARY KEY (reservation_id, position)
);
