-- The payments world: a Stripe account's objects, one table per resource, one row per object.
-- Ids are Stripe-shaped (cus_…, pi_…); amounts are integers in the currency's smallest unit (cents);
-- timestamps are SQLite text (YYYY-MM-DD HH:MM:SS, UTC), served as Unix seconds; metadata is a JSON
-- object of strings. Columns named like the API's fields hold those fields.

CREATE TABLE account (
    id TEXT PRIMARY KEY,
    business_name TEXT NOT NULL,
    email TEXT NOT NULL,
    country TEXT NOT NULL,
    default_currency TEXT NOT NULL,
    invoice_prefix TEXT NOT NULL,
    created TEXT NOT NULL
);

CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT,
    email TEXT,
    phone TEXT,
    description TEXT,
    balance INTEGER NOT NULL DEFAULT 0,
    default_payment_method TEXT,
    address TEXT,  -- JSON: city, country, line1, line2, postal_code, state
    shipping TEXT,  -- JSON: address, name, phone
    preferred_locales TEXT NOT NULL DEFAULT '[]',  -- JSON list
    tax_exempt TEXT NOT NULL DEFAULT 'none' CHECK (tax_exempt IN ('none', 'exempt', 'reverse')),
    metadata TEXT NOT NULL DEFAULT '{}',
    deleted INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL
);
CREATE INDEX customers_email ON customers (email);

CREATE TABLE payment_methods (
    id TEXT PRIMARY KEY,
    customer TEXT REFERENCES customers (id),
    brand TEXT NOT NULL,
    last4 TEXT NOT NULL,
    exp_month INTEGER NOT NULL,
    exp_year INTEGER NOT NULL,
    funding TEXT NOT NULL,
    country TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    -- The test card's behaviour (worlds/payments/cards.py): NULL pays; else the decline, on attach or charge.
    decline_code TEXT,
    declines_on TEXT CHECK (declines_on IN ('attach', 'charge')),
    billing_name TEXT,
    billing_email TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX payment_methods_customer ON payment_methods (customer);

CREATE TABLE payment_intents (
    id TEXT PRIMARY KEY,
    amount INTEGER NOT NULL CHECK (amount > 0),
    amount_received INTEGER NOT NULL DEFAULT 0,
    amount_capturable INTEGER NOT NULL DEFAULT 0,
    currency TEXT NOT NULL,
    customer TEXT REFERENCES customers (id),
    payment_method TEXT REFERENCES payment_methods (id),
    status TEXT NOT NULL,
    capture_method TEXT NOT NULL DEFAULT 'automatic',
    description TEXT,
    receipt_email TEXT,
    setup_future_usage TEXT CHECK (setup_future_usage IN ('off_session', 'on_session')),
    statement_descriptor_suffix TEXT,
    latest_charge TEXT,
    last_payment_error TEXT,
    canceled_at TEXT,
    cancellation_reason TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX payment_intents_customer ON payment_intents (customer);

CREATE TABLE charges (
    id TEXT PRIMARY KEY,
    amount INTEGER NOT NULL,
    amount_captured INTEGER NOT NULL,
    amount_refunded INTEGER NOT NULL DEFAULT 0,
    currency TEXT NOT NULL,
    customer TEXT REFERENCES customers (id),
    payment_intent TEXT REFERENCES payment_intents (id),
    payment_method TEXT REFERENCES payment_methods (id),
    status TEXT NOT NULL CHECK (status IN ('succeeded', 'pending', 'failed')),
    captured INTEGER NOT NULL,
    refunded INTEGER NOT NULL DEFAULT 0,
    failure_code TEXT,
    failure_message TEXT,
    description TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL,
    CHECK (amount_refunded <= amount_captured)
);
CREATE INDEX charges_customer ON charges (customer);
CREATE INDEX charges_payment_intent ON charges (payment_intent);

CREATE TABLE refunds (
    id TEXT PRIMARY KEY,
    amount INTEGER NOT NULL CHECK (amount > 0),
    charge TEXT NOT NULL REFERENCES charges (id),
    payment_intent TEXT REFERENCES payment_intents (id),
    currency TEXT NOT NULL,
    reason TEXT,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX refunds_charge ON refunds (charge);

CREATE TABLE products (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    active INTEGER NOT NULL DEFAULT 1,
    default_price TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);

CREATE TABLE prices (
    id TEXT PRIMARY KEY,
    product TEXT NOT NULL REFERENCES products (id),
    unit_amount INTEGER NOT NULL CHECK (unit_amount >= 0),
    currency TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('one_time', 'recurring')),
    recurring_interval TEXT CHECK (recurring_interval IN ('day', 'week', 'month', 'year')),
    recurring_interval_count INTEGER,
    nickname TEXT,
    lookup_key TEXT UNIQUE,
    active INTEGER NOT NULL DEFAULT 1,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX prices_product ON prices (product);

CREATE TABLE subscriptions (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL REFERENCES customers (id),
    status TEXT NOT NULL,
    default_payment_method TEXT REFERENCES payment_methods (id),
    collection_method TEXT NOT NULL DEFAULT 'charge_automatically',
    days_until_due INTEGER,
    cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
    canceled_at TEXT,
    ended_at TEXT,
    latest_invoice TEXT,
    billing_cycle_anchor TEXT NOT NULL,
    start_date TEXT NOT NULL,
    trial_start TEXT,
    trial_end TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX subscriptions_customer ON subscriptions (customer);

CREATE TABLE subscription_items (
    id TEXT PRIMARY KEY,
    subscription TEXT NOT NULL REFERENCES subscriptions (id),
    price TEXT NOT NULL REFERENCES prices (id),
    quantity INTEGER NOT NULL CHECK (quantity >= 0),
    current_period_start TEXT NOT NULL,
    current_period_end TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX subscription_items_subscription ON subscription_items (subscription);

CREATE TABLE invoices (
    id TEXT PRIMARY KEY,
    number TEXT UNIQUE,
    customer TEXT NOT NULL REFERENCES customers (id),
    subscription TEXT REFERENCES subscriptions (id),
    status TEXT NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void', 'uncollectible')),
    collection_method TEXT NOT NULL,
    billing_reason TEXT NOT NULL,
    currency TEXT NOT NULL,
    description TEXT,
    subtotal INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    amount_due INTEGER NOT NULL DEFAULT 0,
    amount_paid INTEGER NOT NULL DEFAULT 0,
    amount_remaining INTEGER NOT NULL DEFAULT 0,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    payment_intent TEXT REFERENCES payment_intents (id),
    default_payment_method TEXT REFERENCES payment_methods (id),
    days_until_due INTEGER,
    due_date TEXT,
    period_start TEXT NOT NULL,
    period_end TEXT NOT NULL,
    auto_advance INTEGER NOT NULL DEFAULT 0,
    finalized_at TEXT,
    paid_at TEXT,
    voided_at TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX invoices_customer ON invoices (customer);

-- Invoice items are the lines of an invoice; one with no invoice is pending for the customer's next.
CREATE TABLE invoice_items (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL REFERENCES customers (id),
    invoice TEXT REFERENCES invoices (id),
    subscription TEXT REFERENCES subscriptions (id),
    subscription_item TEXT REFERENCES subscription_items (id),
    price TEXT REFERENCES prices (id),
    amount INTEGER NOT NULL,
    unit_amount INTEGER NOT NULL,
    quantity INTEGER NOT NULL DEFAULT 1,
    currency TEXT NOT NULL,
    description TEXT,
    proration INTEGER NOT NULL DEFAULT 0,
    period_start TEXT NOT NULL,
    period_end TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL
);
CREATE INDEX invoice_items_customer ON invoice_items (customer);
CREATE INDEX invoice_items_invoice ON invoice_items (invoice);
