-- τ²-bench's retail store (data from τ²-bench, Copyright (c) 2025 Sierra Research, MIT License):
-- its db.json normalised into the tables a shop's database would have. Every list of τ²'s keeps its
-- order in a `position` (or `line`) column, so each tool rebuilds τ²'s answer exactly, and the
-- fixture holds db.json and nothing else (tests/worlds/test_tau2_retail.py turns it back into db.json).
-- A user's orders are the orders with their user_id, by position; an order's exchange and return
-- lists exist once its exchange (return) payment method is set.

CREATE TABLE products (
    product_id TEXT PRIMARY KEY,                 -- '6086499569'
    name       TEXT NOT NULL,
    position   INTEGER NOT NULL UNIQUE
);

CREATE TABLE variants (                          -- the items of a product, one per option combination
    item_id    TEXT PRIMARY KEY,                 -- '1008292230'
    product_id TEXT NOT NULL REFERENCES products (product_id),
    position   INTEGER NOT NULL,                 -- place in the product's variants
    available  INTEGER NOT NULL CHECK (available IN (0, 1)),
    price      REAL NOT NULL
);
CREATE INDEX variants_product ON variants (product_id, position);

CREATE TABLE variant_options (
    item_id  TEXT NOT NULL REFERENCES variants (item_id),
    option   TEXT NOT NULL,                      -- 'color'
    position INTEGER NOT NULL,
    value    TEXT NOT NULL,                      -- 'blue'
    PRIMARY KEY (item_id, option)
);

CREATE TABLE users (
    user_id    TEXT PRIMARY KEY,                 -- 'sara_doe_496'
    position   INTEGER NOT NULL UNIQUE,          -- τ²'s lookups return the first match in this order
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    email      TEXT NOT NULL,
    address1   TEXT NOT NULL,                    -- the default address
    address2   TEXT NOT NULL,
    city       TEXT NOT NULL,
    country    TEXT NOT NULL,
    state      TEXT NOT NULL,
    zip        TEXT NOT NULL
);
CREATE INDEX users_zip ON users (zip);

CREATE TABLE payment_methods (
    id        TEXT PRIMARY KEY,                  -- 'credit_card_9513926', 'gift_card_0000000', 'paypal_…'
    user_id   TEXT NOT NULL REFERENCES users (user_id),
    position  INTEGER NOT NULL,                  -- place among the user's payment methods
    source    TEXT NOT NULL CHECK (source IN ('credit_card', 'gift_card', 'paypal')),
    brand     TEXT,                              -- credit cards
    last_four TEXT,                              -- credit cards
    balance   REAL                               -- gift cards
);
CREATE INDEX payment_methods_user ON payment_methods (user_id, position);

CREATE TABLE orders (
    order_id                   TEXT PRIMARY KEY, -- '#W0000000'
    user_id                    TEXT NOT NULL REFERENCES users (user_id),
    position                   INTEGER NOT NULL UNIQUE,
    address1                   TEXT NOT NULL,    -- where it ships
    address2                   TEXT NOT NULL,
    city                       TEXT NOT NULL,
    country                    TEXT NOT NULL,
    state                      TEXT NOT NULL,
    zip                        TEXT NOT NULL,
    status                     TEXT NOT NULL CHECK (status IN ('processed', 'pending', 'pending (item modified)',
                                 'delivered', 'cancelled', 'exchange requested', 'return requested')),
    cancel_reason              TEXT,
    exchange_payment_method_id TEXT,
    exchange_price_difference,                   -- untyped: τ² stores 0 (no items) as an int, else a float
    return_payment_method_id   TEXT
);
CREATE INDEX orders_user ON orders (user_id, position);

CREATE TABLE order_items (                       -- the lines of an order, as bought
    order_id   TEXT NOT NULL REFERENCES orders (order_id),
    line       INTEGER NOT NULL,
    name       TEXT NOT NULL,
    product_id TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    price      REAL NOT NULL,
    PRIMARY KEY (order_id, line)
);

CREATE TABLE order_item_options (
    order_id TEXT NOT NULL,
    line     INTEGER NOT NULL,
    option   TEXT NOT NULL,
    position INTEGER NOT NULL,
    value    TEXT NOT NULL,
    PRIMARY KEY (order_id, line, option),
    FOREIGN KEY (order_id, line) REFERENCES order_items (order_id, line)
);

CREATE TABLE fulfillments (                      -- shipments: tracking ids and the items they carry
    order_id    TEXT NOT NULL REFERENCES orders (order_id),
    fulfillment INTEGER NOT NULL,
    PRIMARY KEY (order_id, fulfillment)
);

CREATE TABLE fulfillment_tracking (
    order_id    TEXT NOT NULL,
    fulfillment INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    tracking_id TEXT NOT NULL,
    PRIMARY KEY (order_id, fulfillment, position),
    FOREIGN KEY (order_id, fulfillment) REFERENCES fulfillments (order_id, fulfillment)
);

CREATE TABLE fulfillment_items (
    order_id    TEXT NOT NULL,
    fulfillment INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    item_id     TEXT NOT NULL,
    PRIMARY KEY (order_id, fulfillment, position),
    FOREIGN KEY (order_id, fulfillment) REFERENCES fulfillments (order_id, fulfillment)
);

CREATE TABLE order_payments (                    -- the payment history: payments and refunds, in order
    order_id          TEXT NOT NULL REFERENCES orders (order_id),
    position          INTEGER NOT NULL,
    transaction_type  TEXT NOT NULL CHECK (transaction_type IN ('payment', 'refund')),
    amount            REAL NOT NULL,
    payment_method_id TEXT NOT NULL,
    PRIMARY KEY (order_id, position)
);

CREATE TABLE order_requested_items (             -- items asked to be returned or exchanged, sorted as τ² sorts them
    order_id TEXT NOT NULL REFERENCES orders (order_id),
    request  TEXT NOT NULL CHECK (request IN ('return', 'exchange', 'exchange_new')),
    position INTEGER NOT NULL,
    item_id  TEXT NOT NULL,
    PRIMARY KEY (order_id, request, position)
);
