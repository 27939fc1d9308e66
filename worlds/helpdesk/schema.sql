-- Larkspur Goods, an online shop: its customers, orders and the support desk that answers them.
-- Money is REAL dollars rounded to cents. Timestamps are 'YYYY-MM-DD HH:MM:SS' text, dates 'YYYY-MM-DD',
-- both relative to the fixture clock. Ids are readable text with a prefix (CUS-0001, ORD-1001, ...).
-- The tables enforce data integrity only; the support policy (policy.md) is the agent's to follow.

CREATE TABLE customers (
    id            TEXT PRIMARY KEY,                 -- CUS-0001
    first_name    TEXT NOT NULL,
    last_name     TEXT NOT NULL,
    email         TEXT NOT NULL UNIQUE,
    phone         TEXT NOT NULL,                    -- (503) 555-0142
    date_of_birth TEXT NOT NULL,                    -- identity checks only, never shown to the agent
    support_pin   TEXT NOT NULL,                    -- 4 digits, identity checks only
    tier          TEXT NOT NULL CHECK (tier IN ('standard', 'plus')),
    created_at    TEXT NOT NULL
);

CREATE TABLE addresses (
    id          TEXT PRIMARY KEY,                   -- ADR-0001
    customer_id TEXT NOT NULL REFERENCES customers (id),
    label       TEXT NOT NULL CHECK (label IN ('home', 'work', 'other')),
    line1       TEXT NOT NULL,
    line2       TEXT,
    city        TEXT NOT NULL,
    state       TEXT NOT NULL,                      -- two-letter US state code
    zip         TEXT NOT NULL,                      -- five digits
    is_default  INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1))
);
CREATE INDEX addresses_customer ON addresses (customer_id);

CREATE TABLE products (
    id         TEXT PRIMARY KEY,                    -- PRD-1001, one row per size or colour
    sku        TEXT NOT NULL UNIQUE,
    family     TEXT NOT NULL,                       -- variants of one product share a family and a price
    name       TEXT NOT NULL,
    variant    TEXT NOT NULL,                       -- 'Navy / M', 'Size 9', 'One size'
    category   TEXT NOT NULL,
    price      REAL NOT NULL CHECK (price >= 0),
    stock      INTEGER NOT NULL CHECK (stock >= 0),
    final_sale INTEGER NOT NULL DEFAULT 0 CHECK (final_sale IN (0, 1))
);
CREATE INDEX products_family ON products (family);

CREATE TABLE orders (
    id           TEXT PRIMARY KEY,                  -- ORD-1001
    customer_id  TEXT NOT NULL REFERENCES customers (id),
    status       TEXT NOT NULL CHECK (status IN
                   ('pending', 'processing', 'shipped', 'delivered', 'cancelled', 'returned', 'refunded')),
    placed_at    TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    ship_name    TEXT NOT NULL,
    ship_line1   TEXT NOT NULL,
    ship_line2   TEXT,
    ship_city    TEXT NOT NULL,
    ship_state   TEXT NOT NULL,
    ship_zip     TEXT NOT NULL,
    subtotal     REAL NOT NULL,
    shipping_fee REAL NOT NULL,
    tax_rate     REAL NOT NULL,
    tax          REAL NOT NULL,
    total        REAL NOT NULL,
    cancel_reason TEXT
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE INDEX orders_status ON orders (status);

CREATE TABLE refunds (
    id         TEXT PRIMARY KEY,                    -- RFD-0001
    order_id   TEXT NOT NULL REFERENCES orders (id),
    amount     REAL NOT NULL CHECK (amount > 0),
    kind       TEXT NOT NULL CHECK (kind IN ('full', 'items', 'amount', 'cancellation')),
    method     TEXT NOT NULL CHECK (method IN ('original_payment', 'store_credit')),
    reason     TEXT NOT NULL,
    created_by TEXT NOT NULL,                       -- 'agent', 'system' or 'warehouse'
    created_at TEXT NOT NULL
);
CREATE INDEX refunds_order ON refunds (order_id);

CREATE TABLE order_items (
    id           TEXT PRIMARY KEY,                  -- ITM-1001-1: the order number and the line
    order_id     TEXT NOT NULL REFERENCES orders (id),
    product_id   TEXT NOT NULL REFERENCES products (id),
    product_name TEXT NOT NULL,                     -- name and variant as sold
    quantity     INTEGER NOT NULL CHECK (quantity > 0),
    unit_price   REAL NOT NULL,
    status       TEXT NOT NULL CHECK (status IN
                   ('active', 'cancelled', 'return_requested', 'returned', 'refunded', 'exchanged')),
    refund_id    TEXT REFERENCES refunds (id)
);
CREATE INDEX order_items_order ON order_items (order_id);

CREATE TABLE payments (
    id              TEXT PRIMARY KEY,               -- PAY-1001 (PAY-1001-2 for a second payment)
    order_id        TEXT NOT NULL REFERENCES orders (id),
    method          TEXT NOT NULL CHECK (method IN ('card', 'paypal', 'store_credit')),
    card_brand      TEXT,
    card_last4      TEXT,
    amount          REAL NOT NULL,                  -- authorised
    captured_amount REAL NOT NULL DEFAULT 0,
    refunded_amount REAL NOT NULL DEFAULT 0,
    status          TEXT NOT NULL CHECK (status IN
                      ('authorized', 'captured', 'voided', 'partially_refunded', 'refunded')),
    created_at      TEXT NOT NULL,
    CHECK (refunded_amount <= captured_amount + 0.001)
);
CREATE INDEX payments_order ON payments (order_id);

CREATE TABLE shipments (
    id                   TEXT PRIMARY KEY,          -- SHP-1001 (SHP-1001-2 for a replacement)
    order_id             TEXT NOT NULL REFERENCES orders (id),
    carrier              TEXT NOT NULL,
    service              TEXT NOT NULL,
    tracking_number      TEXT NOT NULL UNIQUE,
    status               TEXT NOT NULL CHECK (status IN
                           ('label_created', 'in_transit', 'delayed', 'out_for_delivery', 'delivered',
                            'lost', 'cancelled')),
    created_at           TEXT NOT NULL,
    shipped_at           TEXT,
    promised_date        TEXT NOT NULL,
    delivered_at         TEXT,
    replaces_shipment_id TEXT REFERENCES shipments (id),
    contents             TEXT                       -- JSON list of order item ids; NULL: the whole order
);
CREATE INDEX shipments_order ON shipments (order_id);

CREATE TABLE shipment_events (
    shipment_id TEXT NOT NULL REFERENCES shipments (id),
    seq         INTEGER NOT NULL,
    occurred_at TEXT NOT NULL,
    status      TEXT NOT NULL,
    location    TEXT NOT NULL,
    description TEXT NOT NULL,
    PRIMARY KEY (shipment_id, seq)
) WITHOUT ROWID;

CREATE TABLE returns (
    id              TEXT PRIMARY KEY,               -- RMA-0001
    order_id        TEXT NOT NULL REFERENCES orders (id),
    status          TEXT NOT NULL CHECK (status IN ('label_sent', 'in_transit', 'received', 'refunded')),
    reason          TEXT NOT NULL,
    tracking_number TEXT NOT NULL UNIQUE,
    created_at      TEXT NOT NULL,
    received_at     TEXT
);
CREATE INDEX returns_order ON returns (order_id);

CREATE TABLE return_items (
    return_id     TEXT NOT NULL REFERENCES returns (id),
    order_item_id TEXT NOT NULL REFERENCES order_items (id),
    PRIMARY KEY (return_id, order_item_id)
) WITHOUT ROWID;

CREATE TABLE exchanges (
    id             TEXT PRIMARY KEY,                -- EXC-0001
    order_id       TEXT NOT NULL REFERENCES orders (id),
    order_item_id  TEXT NOT NULL REFERENCES order_items (id),
    new_product_id TEXT NOT NULL REFERENCES products (id),
    quantity       INTEGER NOT NULL CHECK (quantity > 0),
    status         TEXT NOT NULL CHECK (status IN ('awaiting_return', 'replacement_shipped', 'completed')),
    reason         TEXT NOT NULL,
    created_at     TEXT NOT NULL
);

CREATE TABLE tickets (
    id          TEXT PRIMARY KEY,                   -- TKT-5001
    customer_id TEXT NOT NULL REFERENCES customers (id),
    order_id    TEXT REFERENCES orders (id),
    subject     TEXT NOT NULL,
    category    TEXT NOT NULL CHECK (category IN
                  ('damaged_item', 'late_delivery', 'where_is_my_order', 'return_request', 'cancellation',
                   'address_change', 'exchange', 'billing', 'product_question', 'account', 'other')),
    status      TEXT NOT NULL CHECK (status IN ('open', 'pending', 'escalated', 'closed')),
    priority    TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    channel     TEXT NOT NULL CHECK (channel IN ('email', 'chat', 'phone', 'web_form')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    closed_at   TEXT,
    resolution  TEXT
);
CREATE INDEX tickets_customer ON tickets (customer_id);
CREATE INDEX tickets_status ON tickets (status);

CREATE TABLE ticket_messages (
    id         TEXT PRIMARY KEY,                    -- MSG-00001
    ticket_id  TEXT NOT NULL REFERENCES tickets (id),
    author     TEXT NOT NULL CHECK (author IN ('customer', 'agent', 'system')),
    body       TEXT NOT NULL,
    internal   INTEGER NOT NULL DEFAULT 0 CHECK (internal IN (0, 1)),  -- 1: a note the customer never sees
    created_at TEXT NOT NULL
);
CREATE INDEX ticket_messages_ticket ON ticket_messages (ticket_id);

CREATE TABLE escalations (
    id         TEXT PRIMARY KEY,                    -- ESC-0001
    ticket_id  TEXT NOT NULL REFERENCES tickets (id),
    team       TEXT NOT NULL CHECK (team IN ('billing', 'logistics', 'legal', 'trust_safety', 'supervisor')),
    reason     TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
    created_at TEXT NOT NULL
);
CREATE INDEX escalations_ticket ON escalations (ticket_id);

CREATE TABLE store_credits (
    id          TEXT PRIMARY KEY,                   -- SC-0001; a ledger: issues positive, redemptions negative
    customer_id TEXT NOT NULL REFERENCES customers (id),
    amount      REAL NOT NULL CHECK (amount <> 0),
    kind        TEXT NOT NULL CHECK (kind IN ('goodwill', 'refund', 'redemption')),
    reason      TEXT NOT NULL,
    order_id    TEXT REFERENCES orders (id),
    ticket_id   TEXT REFERENCES tickets (id),
    refund_id   TEXT REFERENCES refunds (id),
    created_at  TEXT NOT NULL
);
CREATE INDEX store_credits_customer ON store_credits (customer_id);

CREATE TABLE order_notes (
    id         TEXT PRIMARY KEY,                    -- NOTE-0001
    order_id   TEXT NOT NULL REFERENCES orders (id),
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX order_notes_order ON order_notes (order_id);

CREATE TABLE identity_checks (
    id            TEXT PRIMARY KEY,                 -- IDV-...: every verify_identity call, so graders see it
    customer_id   TEXT NOT NULL REFERENCES customers (id),
    facts_checked TEXT NOT NULL,                    -- comma-separated fact names
    facts_matched TEXT NOT NULL,
    all_matched   INTEGER NOT NULL CHECK (all_matched IN (0, 1)),
    created_at    TEXT NOT NULL
);
CREATE INDEX identity_checks_customer ON identity_checks (customer_id);
