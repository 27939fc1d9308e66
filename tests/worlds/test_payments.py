"""The payments world through its tools and operations: Stripe's rules on money, lists and ids, on the fixture
a billing agent meets; and how operations are declared."""

from __future__ import annotations

import pytest

from atoll.worlds import ToolContext, World, WorldDefinitionError, get_world
from atoll.worlds.payments.fixtures import fixed_id

WORLD = get_world("payments")
MCP_TOOLS = {
    "get_stripe_account_info",
    "retrieve_balance",
    "fetch_stripe_resources",
    "create_customer",
    "list_customers",
    "create_product",
    "list_products",
    "create_price",
    "list_prices",
    "create_invoice",
    "create_invoice_item",
    "finalize_invoice",
    "list_invoices",
    "create_refund",
    "list_payment_intents",
    "list_subscriptions",
    "update_subscription",
    "cancel_subscription",
}


@pytest.fixture
def studio():
    with WORLD.instance("lumen_studio") as instance:
        yield instance


def value(result):
    assert result.ok, result.error
    return result.value


def test_the_agent_tools_are_stripes_mcp_names_and_every_one_but_fetch_is_an_operation_too():
    assert set(WORLD.tools) == MCP_TOOLS
    operated = {op.tool.function.__name__ for op in WORLD.operations.values()}
    assert MCP_TOOLS - operated == {"fetch_stripe_resources"}
    assert len(WORLD.operations) >= 45 and all(op.path.startswith("/v1/") for op in WORLD.operations.values())


def test_the_fixture_holds_the_landmarks_the_suite_asks_about(studio):
    dana = value(studio.call("list_customers", email="dana.whitfield@gmail.com"))["data"]
    assert [c["id"] for c in dana] == [fixed_id("cus", "dana")]
    paid = value(studio.call("list_payment_intents", customer=fixed_id("cus", "dana"), limit=2))["data"]
    assert [p["amount"] for p in paid] == [18000, 18000] and paid[0]["created"] - paid[1]["created"] == 89
    sofia = value(
        studio.call(
            "fetch_stripe_resources", id=fixed_id("sub", "sofia_unlimited"), expand=["latest_invoice"]
        )
    )
    assert sofia["status"] == "past_due" and sofia["latest_invoice"]["attempt_count"] == 1
    assert (
        value(studio.call("fetch_stripe_resources", id=fixed_id("ch", "elena_workshop")))["refunded"] is True
    )


def test_the_same_seed_draws_the_same_ids_and_another_seed_others():
    def new_customer(seed: int) -> str:
        with WORLD.instance("lumen_studio", seed=seed) as instance:
            return value(instance.call("create_customer", name="Ada"))["id"]

    assert new_customer(1) == new_customer(1) != new_customer(2)
    assert new_customer(1).startswith("cus_") and len(new_customer(1)) == 18


def test_a_refund_never_exceeds_what_is_left_on_the_charge(studio):
    pack = fixed_id("pi", "hannah_pack")
    assert value(studio.call("create_refund", payment_intent=pack, amount=10800))["amount"] == 10800
    over = studio.call("create_refund", payment_intent=pack, amount=7300)
    assert over.error.type == "amount_too_large" and over.error.details["param"] == "amount"
    rest = value(studio.call("create_refund", payment_intent=pack))
    assert rest["amount"] == 7200
    again = studio.call("create_refund", payment_intent=pack)
    assert again.error.type == "charge_already_refunded" and again.error.details["status"] == 400
    charge = studio.diff().table("charges").updated[0]
    assert charge.after == {"amount_refunded": 18000, "refunded": 1}


def test_lists_page_newest_first_with_both_cursors(studio):
    everyone = value(studio.call("list_customers", limit=100))["data"]
    first = value(studio.call("list_customers", limit=3))
    assert first["has_more"] and first["url"] == "/v1/customers" and first["data"] == everyone[:3]
    after = value(studio.call("list_customers", limit=3, starting_after=everyone[2]["id"]))["data"]
    assert after == everyone[3:6]
    before = value(studio.call("list_customers", limit=2, ending_before=everyone[3]["id"]))["data"]
    assert before == everyone[1:3]
    assert [c["created"] for c in everyone] == sorted((c["created"] for c in everyone), reverse=True)
    bad = studio.call("list_customers", starting_after="cus_gone")
    assert bad.error.type == "resource_missing" and bad.error.details["param"] == "starting_after"


def test_expanding_a_field_that_holds_no_id_is_refused(studio):
    refused = studio.call("list_payment_intents", expand=["data.amount"])
    assert refused.error.details["param"] == "expand" and "cannot be expanded" in refused.error.message


def test_a_downgrade_leaves_prorations_pending_for_the_next_invoice(studio):
    grace = fixed_id("sub", "grace_unlimited")
    value(
        studio.call(
            "update_subscription",
            subscription=grace,
            items=[{"id": fixed_id("si", "grace_unlimited"), "price": fixed_id("price", "basic")}],
        )
    )
    pending = studio.diff().table("invoice_items").inserted
    # 21,412 of the period's 43,200 minutes are left (1 Nov 06:52 to 1 Dec 06:52, now 16 Nov 10:00).
    assert sorted(i["amount"] for i in pending) == [
        round(-12900 * 21412 / 43200),
        round(7900 * 21412 / 43200),
    ] and {i["invoice"] for i in pending} == {None}
    assert all(i["proration"] == 1 for i in pending)
    assert studio.diff().table("invoices").inserted == []


def test_a_subscription_on_a_card_that_fails_is_kept_incomplete_with_its_open_invoice(studio):
    ada = value(studio.call("create_customer", name="Ada", payment_method="pm_card_chargeCustomerFail"))
    card = ada["id"], studio.query("SELECT id FROM payment_methods WHERE customer = ?", (ada["id"],))[0]["id"]
    made = studio.request(
        "POST /v1/subscriptions",
        customer=card[0],
        items=[{"price": fixed_id("price", "basic")}],
        default_payment_method=card[1],
        expand=["latest_invoice"],
    )
    assert made.ok and made.value["status"] == "incomplete"
    assert (
        made.value["latest_invoice"]["status"] == "open"
        and made.value["latest_invoice"]["attempt_count"] == 1
    )
    refused = studio.request(
        "POST /v1/subscriptions",
        customer=card[0],
        items=[{"price": fixed_id("price", "basic")}],
        default_payment_method=card[1],
        payment_behavior="error_if_incomplete",
    )
    assert refused.error.type == "card_declined" and refused.error.details["status"] == 402


def test_an_invoice_is_drafted_itemised_and_finalized_with_the_next_number(studio):
    omar = fixed_id("cus", "omar")
    draft = value(
        studio.call("create_invoice", customer=omar, collection_method="send_invoice", days_until_due=14)
    )
    item = studio.call(
        "create_invoice_item",
        customer=omar,
        price=fixed_id("price", "private"),
        quantity=2,
        invoice=draft["id"],
    )
    assert value(item)["amount"] == 16000
    final = value(studio.call("finalize_invoice", invoice=draft["id"]))
    assert final["status"] == "open" and final["amount_due"] == 16000
    assert (
        final["number"] == "LUMEN-0062"
        and final["due_date"] - final["status_transitions"]["finalized_at"] == 14 * 86400
    )
    late = studio.call("create_invoice_item", customer=omar, amount=500, currency="usd", invoice=draft["id"])
    assert late.error.type == "invoice_not_editable"


def test_a_recurring_price_cannot_be_an_invoice_item(studio):
    refused = studio.call(
        "create_invoice_item", customer=fixed_id("cus", "omar"), price=fixed_id("price", "basic")
    )
    assert refused.error.details["param"] == "price" and "one_time" in refused.error.message


def test_manual_capture_authorizes_then_captures_part(studio):
    intent = studio.request(
        "POST /v1/payment_intents",
        amount=5000,
        currency="usd",
        payment_method="pm_card_visa",
        confirm=True,
        capture_method="manual",
    ).value
    assert intent["status"] == "requires_capture" and intent["amount_capturable"] == 5000
    captured = studio.request(
        "POST /v1/payment_intents/{intent}/capture", intent=intent["id"], amount_to_capture=3000
    )
    assert captured.value["status"] == "succeeded" and captured.value["amount_received"] == 3000
    refund = studio.call("create_refund", payment_intent=intent["id"], amount=3001)
    assert refund.error.type == "amount_too_large"


def test_a_card_that_declines_on_attach_saves_nothing(studio):
    refused = studio.call("create_customer", name="Bo", payment_method="pm_card_chargeDeclinedExpiredCard")
    assert refused.error.type == "expired_card" and refused.error.details["type"] == "card_error"
    assert studio.diff().is_empty


def test_an_operation_must_name_its_path_placeholders_as_str_parameters():
    world = World("ops", schema="CREATE TABLE t (id TEXT PRIMARY KEY);")

    def thing(ctx: ToolContext, thing_id: int) -> dict:
        """Read a thing."""
        return {}

    def other(ctx: ToolContext) -> dict:
        """Read another."""
        return {}

    with pytest.raises(WorldDefinitionError, match="must be `thing_id: str`"):
        world.operation("GET", "/v1/things/{thing_id}")(thing)
    with pytest.raises(WorldDefinitionError, match="placeholder {other_id} is not a parameter"):
        world.operation("GET", "/v1/others/{other_id}")(other)
    with pytest.raises(WorldDefinitionError, match="method must be one of"):
        world.operation("PATCH", "/v1/others")(other)
    world.operation("GET", "/v1/others")(other)
    with pytest.raises(WorldDefinitionError, match="registered twice"):
        world.operation("GET", "/v1/others")(other)


def test_a_get_operation_that_writes_is_a_world_bug_and_rolls_back():
    world = World("sneaky", schema="CREATE TABLE t (id TEXT PRIMARY KEY);")

    @world.operation("GET", "/v1/t")
    def peek(ctx: ToolContext) -> dict:
        """Look, but write."""
        ctx.execute("INSERT INTO t VALUES ('x')")
        return {}

    @world.fixture("empty", epoch="2026-01-01 00:00:00")
    def empty(fx) -> None:
        pass

    with world.instance("empty") as instance:
        result = instance.request("GET /v1/t")
        assert result.error.type == "world_bug" and instance.diff().is_empty
        assert instance.request("GET /v1/nothing").error.type == "unknown_tool"


def search(studio, resource: str, query: str, **more):
    return studio.request(f"GET /v1/{resource}/search", query=query, **more)


def test_search_reads_stripes_query_language(studio):
    dana, sofia = fixed_id("cus", "dana"), fixed_id("cus", "sofia")
    found = value(search(studio, "customers", 'email:"DANA.Whitfield@gmail.com"'))
    assert found["object"] == "search_result" and [c["id"] for c in found["data"]] == [dana]
    either = value(search(studio, "customers", "name~'whit' OR name~\"MARCHETTI\""))["data"]
    assert {c["id"] for c in either} == {dana, sofia}
    everyone = value(studio.call("list_customers", limit=100))["data"]
    assert len(value(search(studio, "customers", 'metadata["plan"]:null', limit=100))["data"]) == len(
        everyone
    )
    middle = everyone[len(everyone) // 2]["created"]
    newer = value(search(studio, "customers", f"created>{middle}", limit=100))["data"]
    listed = value(studio.call("list_customers", created={"gt": middle}, limit=100))["data"]
    assert newer == listed and 0 < len(newer) < len(everyone)
    failed = value(search(studio, "payment_intents", 'status:"requires_payment_method" AND -amount:12900'))
    assert failed["data"] == []
    renewals = value(
        search(studio, "payment_intents", f'status:"requires_payment_method" AND customer:"{sofia}"')
    )
    assert [i["amount"] for i in renewals["data"]] == [12900]


def test_a_query_outside_the_language_is_refused_naming_the_query(studio):
    for resource, query, words in [
        ("customers", 'nmae:"Dana"', "unsupported search field"),
        ("customers", 'name:"a" AND email:"b" OR phone:"c"', "cannot mix AND and OR"),
        ("customers", 'name~"da"', "3 characters"),
        ("customers", "name:", "Could not parse"),
        ("payment_intents", 'amount~"180"', "whole number"),
        ("payment_intents", "amount>lots", "whole number"),
        ("payment_intents", 'status>"paid"', "only with `:`"),
        ("payment_intents", f"amount>{2**64}", "out of range"),
    ]:
        refused = search(studio, resource, query)
        assert not refused.ok and refused.error.details["param"] == "query", query
        assert words in refused.error.message, (query, refused.error.message)


def test_created_bounds_split_a_list_without_overlap(studio):
    every = value(studio.call("list_payment_intents", limit=100))["data"]
    cut = every[len(every) // 2]["created"]
    before = value(studio.call("list_payment_intents", created={"lt": cut}, limit=100))["data"]
    since = value(studio.call("list_payment_intents", created={"gte": cut}, limit=100))["data"]
    assert since == every[: len(since)] and before[: len(every) - len(since)] == every[len(since) :]
    assert since[-1]["created"] >= cut > before[0]["created"]
    assert len(value(studio.call("list_payment_intents", created={"gt": -(2**40)}))["data"]) == 10
    assert value(studio.call("list_payment_intents", created={"gte": 2**62}))["data"] == []
    exactly = value(studio.call("list_payment_intents", created=cut, limit=100))["data"]
    assert exactly and all(i["created"] == cut for i in exactly)
