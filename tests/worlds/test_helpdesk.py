"""The helpdesk world through the engine's public surface: its shape, its fixtures and its tools.

Write tools are checked by the diff they leave: the happy path changes the rows a grader would look
for, and an integrity refusal (ToolError) leaves the diff exactly as it was.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atoll.worlds import FixtureContext, Instance, get_world
from atoll.worlds.helpdesk import fixtures

WORLD = get_world("helpdesk")

# Landmarks of small_shop named in worlds/helpdesk/fixtures.py: (email, customer, open ticket, order).
LANDMARKS = [
    ("maya.chen@fastmail.com", "CUS-0018", "TKT-5014", "ORD-1085"),
    ("dokafor@gmail.com", "CUS-0005", "TKT-5024", "ORD-1051"),
    ("priya.raman@outlook.com", "CUS-0025", "TKT-5018", "ORD-1059"),
    ("lucas.martins@icloud.com", "CUS-0033", "TKT-5032", "ORD-1098"),
    ("hannah.schmidt@yahoo.com", "CUS-0014", "TKT-5028", "ORD-1092"),
    ("aisha.bello@gmail.com", "CUS-0040", "TKT-5029", "ORD-1100"),
    ("tomas.rivera@hotmail.com", "CUS-0010", "TKT-5026", "ORD-1096"),
    ("grace.liu@gmail.com", "CUS-0029", "TKT-5015", "ORD-1075"),
    ("omar.haddad@proton.me", "CUS-0003", "TKT-5023", "ORD-1072"),
    ("sofia.rossi@gmail.com", "CUS-0031", "TKT-5016", "ORD-1080"),
    ("ethan.brooks@icloud.com", "CUS-0022", "TKT-5034", "ORD-1081"),
    ("chloe.dubois@gmail.com", "CUS-0036", "TKT-5021", "ORD-1084"),
    ("robert.kim@comcast.net", "CUS-0001", "TKT-5017", "ORD-1088"),
    ("natalie.wright@aol.com", "CUS-0028", "TKT-5019", "ORD-1089"),
    ("kenji.w@gmail.com", "CUS-0008", "TKT-5030", "ORD-1071"),
    ("fatima.alsayed@outlook.com", "CUS-0032", "TKT-5035", "ORD-1068"),
    ("megan.obrien@gmail.com", "CUS-0042", "TKT-5036", "ORD-1086"),
    ("carlos.mendoza@yahoo.com", "CUS-0016", "TKT-5025", "ORD-1099"),
    ("ava.thompson@gmail.com", "CUS-0044", "TKT-5037", "ORD-1101"),
    ("jordan.taylor@hey.com", "CUS-0004", "TKT-5020", "ORD-1082"),
    ("isabel.ferreira@gmail.com", "CUS-0026", "TKT-5033", "ORD-1083"),
    ("samuel.adeyemi@outlook.com", "CUS-0011", "TKT-5022", "ORD-1056"),
    ("wei.zhang@gmail.com", "CUS-0006", "TKT-5027", "ORD-1079"),
]

# Each returns rows that break a rule every fixture must keep; :e is the fixture clock.
CONSISTENCY = {
    "a timestamp after the fixture clock": """
        SELECT id FROM orders WHERE placed_at > :e OR updated_at > :e
        UNION ALL SELECT shipment_id FROM shipment_events WHERE occurred_at > :e
        UNION ALL SELECT id FROM tickets WHERE created_at > :e OR updated_at > :e OR closed_at > :e
        UNION ALL SELECT id FROM ticket_messages WHERE created_at > :e
        UNION ALL SELECT id FROM refunds WHERE created_at > :e
        UNION ALL SELECT id FROM store_credits WHERE created_at > :e
        UNION ALL SELECT id FROM shipments WHERE delivered_at > :e OR shipped_at > :e
        UNION ALL SELECT id FROM returns WHERE created_at > :e OR received_at > :e""",
    "an order placed before its customer signed up": (
        "SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.placed_at < c.created_at"
    ),
    "an order whose total is not subtotal + shipping + tax": (
        "SELECT id FROM orders WHERE abs(subtotal + shipping_fee + tax - total) > 0.005"
    ),
    "an order whose subtotal is not the sum of its lines": (
        "SELECT o.id FROM orders o WHERE abs(o.subtotal - "
        "(SELECT sum(unit_price * quantity) FROM order_items i WHERE i.order_id = o.id)) > 0.005"
    ),
    "payments that do not add up to the total": (
        "SELECT o.id FROM orders o WHERE abs(o.total - (SELECT sum(amount) FROM payments p WHERE p.order_id = o.id))"
        " > 0.005"
    ),
    "refunds that do not match the payments' refunded amounts": (
        "SELECT o.id FROM orders o WHERE abs((SELECT coalesce(sum(amount), 0) FROM refunds r WHERE r.order_id = o.id)"
        " - (SELECT coalesce(sum(refunded_amount), 0) FROM payments p WHERE p.order_id = o.id)) > 0.005"
    ),
    "a payment refunded beyond its capture": "SELECT id FROM payments WHERE refunded_amount > captured_amount + 0.001",
    "a negative store-credit balance": (
        "SELECT customer_id FROM store_credits GROUP BY customer_id HAVING sum(amount) < -0.001"
    ),
    "a pending order with a captured payment": (
        "SELECT o.id FROM orders o JOIN payments p ON p.order_id = o.id WHERE o.status = 'pending' "
        "AND p.captured_amount > 0"
    ),
    "a delivered order with no delivered parcel": (
        "SELECT id FROM orders o WHERE status = 'delivered' AND NOT EXISTS "
        "(SELECT 1 FROM shipments s WHERE s.order_id = o.id AND s.status = 'delivered')"
    ),
    "an unshipped order whose parcel is moving": (
        "SELECT o.id FROM orders o JOIN shipments s ON s.order_id = o.id WHERE o.status IN ('pending', 'processing')"
        " AND s.status NOT IN ('label_created', 'cancelled')"
    ),
    "a refunded item with no refund": "SELECT id FROM order_items WHERE status = 'refunded' AND refund_id IS NULL",
    "a ticket message older than its ticket": (
        "SELECT m.id FROM ticket_messages m JOIN tickets t ON t.id = m.ticket_id WHERE m.created_at < t.created_at"
    ),
    "a ticket older than its order": (
        "SELECT t.id FROM tickets t JOIN orders o ON o.id = t.order_id WHERE t.created_at < o.placed_at"
    ),
    "a ticket about another customer's order": (
        "SELECT t.id FROM tickets t JOIN orders o ON o.id = t.order_id WHERE t.customer_id != o.customer_id"
    ),
    "carrier scans out of order": (
        "SELECT a.shipment_id FROM shipment_events a JOIN shipment_events b ON a.shipment_id = b.shipment_id "
        "AND b.seq = a.seq + 1 WHERE b.occurred_at < a.occurred_at"
    ),
    "a dangling foreign key": "SELECT * FROM pragma_foreign_key_check",
}


@pytest.fixture
def shop() -> Instance:
    with WORLD.instance("small_shop", seed=1) as inst:
        yield inst


def ok(inst: Instance, tool: str, **arguments) -> object:
    result = inst.call(tool, **arguments)
    assert result.ok, result.error
    return result.value


def refused(inst: Instance, tool: str, code: str, **arguments) -> None:
    """The call fails with `code` and changes nothing."""
    before = inst.diff().model_dump_json()
    result = inst.call(tool, **arguments)
    assert not result.ok and result.error.type == code, result
    assert inst.diff().model_dump_json() == before


def one(inst: Instance, sql: str, *params: object) -> dict:
    (row,) = inst.query(sql, params)
    return row


# ---- the world's shape --------------------------------------------------------------------------


def test_the_world_has_at_least_ten_tables_each_with_a_primary_key():
    assert len(WORLD.tables) >= 10
    assert all(table.primary_key for table in WORLD.tables.values())


def test_the_world_has_at_least_twenty_tools_each_describing_every_parameter():
    assert len(WORLD.tools) >= 20
    for tool in WORLD.tools.values():
        parameters = tool.parameters_schema()["properties"]
        undocumented = [name for name, spec in parameters.items() if not spec.get("description")]
        assert tool.description and not undocumented, (tool.name, undocumented)


def test_reads_and_writes_are_declared_as_a_grader_expects():
    writers = {name for name, tool in WORLD.tools.items() if tool.writes}
    assert {
        "refund_order",
        "refund_items",
        "partial_refund",
        "cancel_order",
        "update_shipping_address",
        "exchange_item",
        "issue_store_credit",
        "reply_to_ticket",
        "close_ticket",
        "escalate_ticket",
        "verify_identity",
    } <= writers
    assert {"get_order", "find_customer", "track_shipment", "get_ticket"}.isdisjoint(writers)


def test_the_policy_names_the_numbers_graders_test():
    policy = WORLD.documents["policy"]
    for rule in (
        "30 days from delivery",
        "60 days",
        "$50",
        "$100",
        "$250",
        "$500",
        "3 failed attempts",
        "20%",
    ):
        assert rule in policy, rule


# ---- fixtures ------------------------------------------------------------------------------------


def test_small_shop_has_tens_of_customers_about_a_hundred_orders_and_open_tickets(shop):
    counts = shop.row_counts()
    assert 30 <= counts["customers"] <= 80
    assert 80 <= counts["orders"] <= 150
    assert one(shop, "SELECT count(*) AS n FROM tickets WHERE status = 'open'")["n"] >= 20
    statuses = {r["status"] for r in shop.query("SELECT DISTINCT status FROM orders")}
    assert statuses == {"pending", "processing", "shipped", "delivered", "cancelled", "returned", "refunded"}


def test_big_retailer_has_five_thousand_customers_and_twenty_thousand_orders():
    with WORLD.instance("big_retailer") as inst:
        counts = inst.row_counts()
        lost = one(inst, "SELECT count(*) AS n FROM shipments WHERE status = 'lost'")["n"]
        late = one(inst, "SELECT count(*) AS n FROM shipments WHERE date(delivered_at) > promised_date")["n"]
    assert counts["customers"] >= 5000 and counts["orders"] >= 20000
    assert lost > 50 and late > 1000


@pytest.mark.parametrize("fixture", ["small_shop", "big_retailer"])
def test_fixture_rows_agree_with_each_other_and_with_the_clock(fixture):
    with WORLD.instance(fixture) as inst:
        epoch = str(inst.now())
        broken = {rule: inst.query(sql, {"e": epoch}) for rule, sql in CONSISTENCY.items()}
    assert {rule: rows[:3] for rule, rows in broken.items() if rows} == {}


def _build_small_shop(seed: int) -> str:
    connection = sqlite3.connect(":memory:")
    connection.executescript(WORLD.schema_sql)
    fixtures.small_shop(FixtureContext(connection, random.Random(seed), WORLD.fixtures["small_shop"].epoch))
    return hashlib.sha256("\n".join(connection.iterdump()).encode()).hexdigest()


def test_a_fixture_built_twice_from_one_seed_is_identical_and_another_seed_differs():
    assert _build_small_shop(7) == _build_small_shop(7)
    assert _build_small_shop(7) != _build_small_shop(8)


@pytest.mark.parametrize("fixture", ["small_shop", "big_retailer"])
def test_each_landmark_customer_has_their_open_ticket_about_their_order_in_every_fixture(fixture):
    with WORLD.instance(fixture) as inst:
        for email, customer_id, ticket_id, order_id in LANDMARKS:
            assert one(inst, "SELECT id FROM customers WHERE email = ?", email)["id"] == customer_id
            ticket = one(inst, "SELECT customer_id, order_id, status FROM tickets WHERE id = ?", ticket_id)
            assert ticket == {"customer_id": customer_id, "order_id": order_id, "status": "open"}, email


def test_landmark_orders_are_in_the_states_their_stories_need(shop):
    def order(order_id: str) -> dict:
        return shop.query(
            "SELECT o.status, o.total, s.status AS parcel, "
            "julianday(date(:now)) - julianday(date(s.delivered_at)) AS days_since_delivery, "
            "julianday(date(s.delivered_at)) - julianday(s.promised_date) AS days_late "
            "FROM orders o LEFT JOIN shipments s ON s.order_id = o.id WHERE o.id = :id",
            {"now": str(shop.now()), "id": order_id},
        )[0]

    assert order("ORD-1085")["days_since_delivery"] == 4  # Maya
    assert order("ORD-1051")["days_since_delivery"] == 52  # Daniel
    assert order("ORD-1059")["days_since_delivery"] == 41  # Priya, plus
    assert order("ORD-1098")["status"] == "processing"  # Lucas
    assert order("ORD-1092")["parcel"] == "in_transit"  # Hannah
    assert order("ORD-1100")["status"] == "pending"  # Aisha
    assert (order("ORD-1075")["parcel"], order("ORD-1075")["total"]) == ("lost", 124.41)  # Grace
    assert (order("ORD-1072")["parcel"], order("ORD-1072")["total"]) == ("lost", 570.28)  # Omar
    assert (order("ORD-1080")["days_late"], order("ORD-1080")["total"]) == (6, 74.79)  # Sofia
    assert order("ORD-1088")["total"] == 702.54  # Robert
    assert order("ORD-1089")["parcel"] == "delayed"  # Natalie
    assert order("ORD-1068")["status"] == "returned"  # Fatima, refunded in full
    assert (order("ORD-1082")["days_late"], order("ORD-1082")["total"]) == (4, 138.03)  # Jordan
    assert order("ORD-1056")["days_since_delivery"] == 45  # Samuel
    goodwill = one(
        shop,
        "SELECT sum(amount) AS total FROM store_credits WHERE customer_id = 'CUS-0004' "
        "AND kind = 'goodwill' AND created_at >= date(?, '-30 days')",
        str(shop.now()),
    )
    assert goodwill["total"] == 90
    stock = {r["id"]: r["stock"] for r in shop.query("SELECT id, stock FROM products")}
    assert stock["PRD-1031"] > 0 and stock["PRD-1065"] == 0  # Navy / L for Ethan; Size 9 for Chloe
    assert (
        one(shop, "SELECT status FROM returns WHERE order_id = 'ORD-1071'")["status"] == "received"
    )  # Kenji


# ---- reading -------------------------------------------------------------------------------------


def test_find_customer_matches_email_name_and_phone_and_lists_namesakes(shop):
    assert [c["id"] for c in ok(shop, "find_customer", email="MAYA.CHEN@fastmail.com")] == ["CUS-0018"]
    assert [c["id"] for c in ok(shop, "find_customer", phone="+1 503-628-0142")] == ["CUS-0018"]
    assert {c["email"] for c in ok(shop, "find_customer", name="maria garcia")} == {
        "maria.garcia@gmail.com",
        "mgarcia82@yahoo.com",
    }
    refused(shop, "find_customer", "invalid_argument")


def test_get_customer_shows_the_account_but_never_the_identity_facts(shop):
    customer = ok(shop, "get_customer", customer_id="CUS-0004")
    assert customer["store_credit_balance"] == 90 and "TKT-5020" in customer["open_tickets"]
    assert not {"date_of_birth", "support_pin"} & set(customer)
    refused(shop, "get_customer", "not_found", customer_id="CUS-9999")


def test_get_order_shows_items_payments_shipments_and_what_is_left_to_refund(shop):
    order = ok(shop, "get_order", order_id="ORD-1071")
    assert order["refundable"] == order["total"]
    assert [i["status"] for i in order["items"]] == ["active", "returned"]
    assert order["items"][1]["refund_value"] == 172.12  # $159 plus 8.25% California tax
    assert order["returns"][0]["item_ids"] == ["ITM-1071-2"]
    assert ok(shop, "get_order", order_id="ORD-1068")["refundable"] == 0


def test_read_tools_answer_without_changing_anything(shop):
    assert ok(shop, "list_customer_orders", customer_id="CUS-0029", status="shipped")[0]["id"] == "ORD-1075"
    assert "ORD-1088" in [o["id"] for o in ok(shop, "search_orders", product="espresso")]
    events = ok(shop, "track_shipment", order_id="ORD-1075")[0]["events"]
    assert events[-1]["status"] == "lost"
    product = ok(shop, "get_product", product_id="PRD-1030")
    assert {v["id"]: v["stock"] for v in product["variants"]}["PRD-1031"] == 14
    assert all(p["stock"] > 0 for p in ok(shop, "search_products", query="trail", in_stock_only=True))
    assert {t["id"] for t in ok(shop, "list_tickets", customer_id="CUS-0018", status="open")} == {"TKT-5014"}
    assert ok(shop, "get_ticket", ticket_id="TKT-5019")["messages"][-1]["body"].endswith(
        "lawyer contact you."
    )
    assert ok(shop, "get_store_credit", customer_id="CUS-0004")["balance"] == 90
    assert shop.diff().is_empty


# ---- writing: identity, contact, store credit ----------------------------------------------------


def test_verify_identity_logs_each_attempt_and_says_which_facts_matched(shop):
    result = ok(
        shop, "verify_identity", customer_id="CUS-0018", date_of_birth="04/17/1988", phone_last4="0142"
    )
    assert result["all_matched"] and result["matched"] == ["date_of_birth", "phone_last4"]
    result = ok(shop, "verify_identity", customer_id="CUS-0018", support_pin="1111", zip_code="97214")
    assert not result["all_matched"] and result["matched"] == ["zip_code"]
    logged = shop.diff().table("identity_checks").inserted
    assert sorted((row["facts_checked"], row["all_matched"]) for row in logged) == [
        ("date_of_birth,phone_last4", 1),
        ("zip_code,support_pin", 0),
    ]
    refused(shop, "verify_identity", "invalid_argument", customer_id="CUS-0018")


def test_update_customer_contact_changes_email_but_not_to_another_customers(shop):
    ok(shop, "update_customer_contact", customer_id="CUS-0018", email="maya@chen.dev")
    assert shop.diff().table("customers").updated[0].after == {"email": "maya@chen.dev"}
    refused(shop, "update_customer_contact", "conflict", customer_id="CUS-0018", email="dokafor@gmail.com")
    refused(shop, "update_customer_contact", "invalid_argument", customer_id="CUS-0018", phone="12345")


def test_issue_store_credit_adds_goodwill_and_refuses_bad_amounts(shop):
    credit = ok(
        shop,
        "issue_store_credit",
        customer_id="CUS-0031",
        amount=10,
        reason="Late delivery",
        order_id="ORD-1080",
        ticket_id="TKT-5016",
    )
    assert credit["balance"] == 10
    (row,) = shop.diff().table("store_credits").inserted
    assert (row["amount"], row["kind"], row["order_id"]) == (10.0, "goodwill", "ORD-1080")
    refused(shop, "issue_store_credit", "invalid_argument", customer_id="CUS-0031", amount=-5, reason="x")
    refused(shop, "issue_store_credit", "invalid_argument", customer_id="CUS-0031", amount=10.005, reason="x")
    refused(
        shop,
        "issue_store_credit",
        "invalid_argument",
        customer_id="CUS-0031",
        amount=5,
        reason="x",
        order_id="ORD-1085",
    )


# ---- writing: refunds ----------------------------------------------------------------------------


def test_refund_items_refunds_a_line_once(shop):
    refund = ok(shop, "refund_items", order_id="ORD-1085", item_ids=["ITM-1085-1"], reason="Plates cracked")
    assert refund["amount"] == 48.0  # Oregon has no sales tax
    diff = shop.diff()
    assert diff.table("refunds").inserted[0]["kind"] == "items"
    assert diff.table("order_items").updated[0].after["status"] == "refunded"
    assert diff.table("payments").updated[0].after == {
        "refunded_amount": 48.0,
        "status": "partially_refunded",
    }
    refused(
        shop, "refund_items", "invalid_state", order_id="ORD-1085", item_ids=["ITM-1085-1"], reason="again"
    )
    refused(
        shop, "refund_items", "not_found", order_id="ORD-1085", item_ids=["ITM-1051-1"], reason="wrong order"
    )


def test_refunding_a_received_return_finishes_the_order_as_returned(shop):
    ok(shop, "refund_items", order_id="ORD-1071", item_ids=["ITM-1071-1", "ITM-1071-2"], reason="Returned")
    diff = shop.diff()
    assert diff.table("returns").updated[0].after == {"status": "refunded"}
    assert diff.table("orders").updated[0].after["status"] == "refunded"  # the tees never came back
    assert (
        one(shop, "SELECT refunded_amount FROM payments WHERE id = 'PAY-1071'")["refunded_amount"] == 228.41
    )


def test_refund_order_refunds_what_is_left_and_never_more(shop):
    refund = ok(shop, "refund_order", order_id="ORD-1075", reason="Lost in transit")
    assert (refund["amount"], refund["refundable_left"]) == (124.41, 0)
    assert shop.diff().table("orders").updated[0].after["status"] == "refunded"
    refused(shop, "refund_order", "exceeds_paid", order_id="ORD-1075", reason="again")
    refused(shop, "refund_order", "exceeds_paid", order_id="ORD-1068", reason="already refunded")
    refused(shop, "refund_order", "invalid_state", order_id="ORD-1101", reason="pending: nothing charged")


def test_partial_refund_takes_an_amount_up_to_what_was_paid(shop):
    ok(shop, "partial_refund", order_id="ORD-1083", amount=24.80, reason="Chipped glaze, customer keeps it")
    (row,) = shop.diff().table("refunds").inserted
    assert (row["amount"], row["kind"], row["method"]) == (24.8, "amount", "original_payment")
    assert "order_items" not in shop.diff().tables
    refused(shop, "partial_refund", "exceeds_paid", order_id="ORD-1083", amount=500, reason="too much")
    refused(shop, "partial_refund", "invalid_argument", order_id="ORD-1083", amount=0, reason="nothing")


def test_a_refund_to_store_credit_lands_in_the_ledger(shop):
    ok(shop, "partial_refund", order_id="ORD-1083", amount=20, reason="Goodwill", method="store_credit")
    (credit,) = shop.diff().table("store_credits").inserted
    assert (credit["amount"], credit["kind"], credit["customer_id"]) == (20.0, "refund", "CUS-0026")


# ---- writing: orders -----------------------------------------------------------------------------


def test_cancel_order_refunds_a_captured_payment_and_restocks(shop):
    stock = one(
        shop,
        "SELECT stock FROM products WHERE id = (SELECT product_id FROM order_items WHERE id = 'ITM-1098-1')",
    )["stock"]
    result = ok(shop, "cancel_order", order_id="ORD-1098", reason="Found it locally")
    assert result["refunded"] == 300.48
    diff = shop.diff()
    assert diff.table("orders").updated[0].after["status"] == "cancelled"
    assert diff.table("refunds").inserted[0]["kind"] == "cancellation"
    assert diff.table("products").updated[0].after == {"stock": stock + 1}


def test_cancelling_a_pending_order_voids_the_authorisation_without_a_refund(shop):
    assert ok(shop, "cancel_order", order_id="ORD-1101", reason="Wrong colour")["authorization_voided"]
    assert "refunds" not in shop.diff().tables
    assert shop.diff().table("payments").updated[0].after == {"status": "voided"}


def test_cancelling_an_order_paid_partly_with_store_credit_gives_the_credit_back(shop):
    ok(shop, "cancel_order", order_id="ORD-1099", reason="Rug too big")
    (credit,) = shop.diff().table("store_credits").inserted
    assert (credit["amount"], credit["kind"]) == (25.0, "refund")
    assert {u.after["status"] for u in shop.diff().table("payments").updated} == {"refunded"}


def test_an_order_that_has_shipped_cannot_be_cancelled(shop):
    refused(shop, "cancel_order", "invalid_state", order_id="ORD-1092", reason="Sister bought towels")
    refused(shop, "cancel_order", "invalid_state", order_id="ORD-1085", reason="delivered")


def test_update_shipping_address_only_before_the_order_ships(shop):
    ok(
        shop,
        "update_shipping_address",
        order_id="ORD-1100",
        line1="48 Prospect Park W",
        line2="Apt 3B",
        city="Brooklyn",
        state="ny",
        zip_code="11215",
    )
    (update,) = shop.diff().table("orders").updated
    assert (update.after["ship_line1"], update.after["ship_line2"], update.after["ship_zip"]) == (
        "48 Prospect Park W",
        "Apt 3B",
        "11215",
    )
    refused(
        shop,
        "update_shipping_address",
        "invalid_state",
        order_id="ORD-1096",
        line1="700 E Commerce St",
        city="San Antonio",
        state="TX",
        zip_code="78205",
    )
    refused(
        shop,
        "update_shipping_address",
        "invalid_argument",
        order_id="ORD-1100",
        line1="1 Rue de Rivoli",
        city="Paris",
        state="FR",
        zip_code="75001",
    )


def test_add_order_note_records_an_internal_note(shop):
    ok(shop, "add_order_note", order_id="ORD-1085", note="Two plates cracked in transit")
    assert shop.diff().table("order_notes").inserted[0]["body"] == "Two plates cracked in transit"


# ---- writing: returns, exchanges, replacements ---------------------------------------------------


def test_start_return_opens_a_return_for_delivered_items_only(shop):
    result = ok(shop, "start_return", order_id="ORD-1059", item_ids=["ITM-1059-1"], reason="Rubs my heel")
    diff = shop.diff()
    assert diff.table("returns").inserted[0]["status"] == "label_sent"
    assert diff.table("return_items").inserted == [
        {"return_id": result["return_id"], "order_item_id": "ITM-1059-1"}
    ]
    assert diff.table("order_items").updated[0].after == {"status": "return_requested"}
    refused(
        shop, "start_return", "invalid_state", order_id="ORD-1092", item_ids=["ITM-1092-1"], reason="shipped"
    )
    refused(
        shop, "start_return", "invalid_state", order_id="ORD-1059", item_ids=["ITM-1059-1"], reason="twice"
    )


def test_exchange_item_needs_the_same_product_in_stock(shop):
    ok(
        shop,
        "exchange_item",
        order_id="ORD-1081",
        item_id="ITM-1081-1",
        new_product_id="PRD-1031",
        reason="Too small",
    )
    diff = shop.diff()
    assert diff.table("exchanges").inserted[0]["new_product_id"] == "PRD-1031"
    assert diff.table("products").updated[0].after == {"stock": 13}
    refused(
        shop,
        "exchange_item",
        "out_of_stock",
        order_id="ORD-1084",
        item_id="ITM-1084-1",
        new_product_id="PRD-1065",
        reason="Too small",
    )
    refused(
        shop,
        "exchange_item",
        "invalid_argument",
        order_id="ORD-1084",
        item_id="ITM-1084-1",
        new_product_id="PRD-1031",
        reason="Not the same product",
    )


def test_reship_order_sends_a_replacement_from_stock(shop):
    result = ok(shop, "reship_order", order_id="ORD-1075", reason="Lost in transit")
    (shipment,) = shop.diff().table("shipments").inserted
    assert (shipment["id"], shipment["status"], shipment["replaces_shipment_id"]) == (
        "SHP-1075-2",
        "label_created",
        "SHP-1075",
    )
    assert result["item_ids"] == ["ITM-1075-1", "ITM-1075-2"]
    assert len(shop.diff().table("products").updated) == 2
    refused(
        shop, "reship_order", "out_of_stock", order_id="ORD-1079", item_ids=["ITM-1079-1"], reason="Broken"
    )
    refused(shop, "reship_order", "invalid_state", order_id="ORD-1098", reason="Not shipped yet")


# ---- writing: tickets ----------------------------------------------------------------------------


def test_replying_to_an_open_ticket_waits_for_the_customer_and_closed_tickets_take_no_reply(shop):
    assert ok(shop, "reply_to_ticket", ticket_id="TKT-5014", message="A replacement is on its way.")[
        "status"
    ] == ("pending")
    assert (
        ok(shop, "reply_to_ticket", ticket_id="TKT-5016", message="Checking.", internal=True)["status"]
        == "open"
    )
    ok(shop, "close_ticket", ticket_id="TKT-5014", resolution="Reshipped the plates")
    update = next(u for u in shop.diff().table("tickets").updated if u.key == {"id": "TKT-5014"})
    assert (update.after["status"], update.after["resolution"]) == ("closed", "Reshipped the plates")
    refused(shop, "reply_to_ticket", "invalid_state", ticket_id="TKT-5014", message="More")
    refused(shop, "close_ticket", "invalid_state", ticket_id="TKT-5014", resolution="Again")


def test_escalate_ticket_hands_it_to_a_team_once(shop):
    ok(shop, "escalate_ticket", ticket_id="TKT-5019", team="legal", reason="Customer threatens a lawyer")
    diff = shop.diff()
    assert diff.table("escalations").inserted[0]["team"] == "legal"
    assert diff.table("tickets").updated[0].after == {
        "status": "escalated",
        "priority": "urgent",
        "updated_at": str(shop.now()),
    }
    refused(shop, "escalate_ticket", "invalid_state", ticket_id="TKT-5019", team="legal", reason="again")


def test_create_ticket_opens_one_for_the_customers_own_order(shop):
    ok(
        shop,
        "create_ticket",
        customer_id="CUS-0018",
        subject="Replacement plates",
        category="damaged_item",
        message="Customer called about cracked plates.",
        order_id="ORD-1085",
    )
    diff = shop.diff()
    assert diff.table("tickets").inserted[0]["status"] == "open"
    assert len(diff.table("ticket_messages").inserted) == 1
    refused(
        shop,
        "create_ticket",
        "invalid_argument",
        customer_id="CUS-0018",
        subject="x",
        category="other",
        message="x",
        order_id="ORD-1051",
    )


def test_the_same_calls_on_the_same_seed_leave_the_same_diff():
    def episode() -> str:
        with WORLD.instance("small_shop", seed=5) as inst:
            ok(inst, "verify_identity", customer_id="CUS-0029", support_pin="5530")
            ok(inst, "reship_order", order_id="ORD-1075", reason="Lost")
            ok(inst, "reply_to_ticket", ticket_id="TKT-5015", message="A replacement ships today.")
            return inst.diff().model_dump_json()

    assert episode() == episode()


@pytest.mark.parametrize("amount", [1.797e306, 1.7e308, 1e7])
def test_an_amount_no_shop_would_move_is_refused_not_a_crash(shop, amount):
    refused(shop, "partial_refund", "invalid_argument", order_id="ORD-1085", amount=amount, reason="x")
    refused(shop, "issue_store_credit", "invalid_argument", customer_id="CUS-0018", amount=amount, reason="x")


def test_property_tests_draw_the_same_examples_on_every_run():
    drawn: list[str] = []

    @given(st.floats())
    def draw(value: float) -> None:
        drawn.append(repr(value))  # repr: nan == nan

    draw()
    first = list(drawn)
    drawn.clear()
    draw()
    assert drawn == first


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(max_size=12),
    amount=st.floats(allow_nan=True, allow_infinity=True),
    tool=st.sampled_from(
        [
            "find_customer",
            "get_order",
            "partial_refund",
            "issue_store_credit",
            "verify_identity",
            "track_shipment",
            "search_orders",
        ]
    ),
)
def test_odd_arguments_are_refused_by_the_tool_never_crash_it(shop, text, amount, tool):
    arguments = {
        "find_customer": {"name": text, "email": text},
        "get_order": {"order_id": text},
        "partial_refund": {"order_id": "ORD-1085", "amount": amount, "reason": text},
        "issue_store_credit": {"customer_id": "CUS-0018", "amount": amount, "reason": text},
        "verify_identity": {"customer_id": "CUS-0018", "date_of_birth": text, "zip_code": text},
        "track_shipment": {"tracking_number": text},
        "search_orders": {"product": text, "placed_after": text or None},
    }[tool]
    result = shop.call(tool, **arguments)
    assert result.ok or result.error.type != "world_bug", result.error
