"""The REST face of `optimize serve`: one dispatcher behind the agent tool and the HTTP operation, per-key
instances reclaimed like sessions, Stripe's wire conventions, and the guard in front of it all."""

from __future__ import annotations

import httpx
import pytest

from atoll.worlds import get_world
from atoll.worlds.payments.fixtures import fixed_id
from atoll.worlds.payments.world import API_VERSION
from atoll.worlds.serve import ResetRequest, SessionManager, WorldCatalog, create_app
from atoll.worlds.serve._form import FormError, bracketed, decode

AUTH = {"authorization": "Bearer sk_test_anything"}
FORM = {**AUTH, "content-type": "application/x-www-form-urlencoded"}
DUPLICATE = fixed_id("pi", "dana_pack_again")


@pytest.fixture(scope="module")
def url(shop, serve):
    app = create_app(["payments", shop], defaults=ResetRequest(world="payments"), idle_seconds=60)
    with serve(app) as base:
        yield base


def test_the_same_refund_through_the_tool_and_through_rest_gives_the_same_diff(url):
    with get_world("payments").instance("lumen_studio", seed=4) as instance:
        tool = instance.call("create_refund", payment_intent=DUPLICATE, amount=9000, reason="duplicate")
        by_tool = instance.diff().model_dump()
    assert httpx.put(f"{url}/rest/payments/same-diff", json={"seed": 4}).status_code == 200
    answer = httpx.post(
        f"{url}/rest/payments/same-diff/v1/refunds",
        content=f"payment_intent={DUPLICATE}&amount=9000&reason=duplicate",
        headers=FORM,
    )
    assert answer.status_code == 200 and answer.json() == tool.value
    state = httpx.get(f"{url}/rest/payments/same-diff").json()
    assert state["diff"] == by_tool
    assert [call["tool"] for call in state["calls"]] == ["POST /v1/refunds"]


def test_answers_carry_the_pinned_version_and_a_request_id(url):
    answer = httpx.get(f"{url}/rest/payments/headers/v1/balance", headers=AUTH)
    assert answer.status_code == 200 and answer.json()["object"] == "balance"
    assert answer.headers["stripe-version"] == API_VERSION
    assert answer.headers["request-id"].startswith("req_")


def test_bracketed_parameters_reach_the_operation_nested(url):
    product = httpx.post(
        f"{url}/rest/payments/nested/v1/products", content="name=Mat+rental", headers=FORM
    ).json()
    price = httpx.post(
        f"{url}/rest/payments/nested/v1/prices",
        content=f"product={product['id']}&unit_amount=1500&currency=usd&recurring[interval]=month"
        "&metadata[shelf]=front&expand[]=product",
        headers=FORM,
    ).json()
    assert price["recurring"]["interval"] == "month" and price["unit_amount"] == 1500
    assert price["metadata"] == {"shelf": "front"} and price["product"]["name"] == "Mat rental"


def test_a_refusal_is_stripes_envelope_with_its_status_and_parameter(url):
    answer = httpx.post(
        f"{url}/rest/payments/refusals/v1/refunds",
        content=f"payment_intent={DUPLICATE}&amount=lots",
        headers=FORM,
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "type": "invalid_request_error",
        "code": "parameter_invalid_integer",
        "param": "amount",
        "message": answer.json()["error"]["message"],
    }
    nested = httpx.post(
        f"{url}/rest/payments/refusals/v1/subscriptions",
        content=f"customer={fixed_id('cus', 'ben')}&items[0][price]=x&items[0][quantiy]=2",
        headers=FORM,
    ).json()["error"]
    assert nested["param"] == "items[0][quantiy]" and nested["code"] == "parameter_unknown"
    missing = httpx.get(f"{url}/rest/payments/refusals/v1/customers/cus_nobody", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "resource_missing"
    route = httpx.get(f"{url}/rest/payments/refusals/v1/payouts", headers=AUTH)
    assert route.status_code == 404 and "Unrecognized request URL (GET: /v1/payouts)" in route.text


def test_a_replayed_idempotency_key_writes_nothing_and_says_so(url):
    headers = {**FORM, "idempotency-key": "refund-once"}
    body = f"payment_intent={DUPLICATE}&reason=duplicate"
    first = httpx.post(f"{url}/rest/payments/replay/v1/refunds", content=body, headers=headers)
    again = httpx.post(f"{url}/rest/payments/replay/v1/refunds", content=body, headers=headers)
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert httpx.get(f"{url}/rest/payments/replay").json()["diff_summary"]["refunds"]["inserted"] == 1
    other = httpx.post(
        f"{url}/rest/payments/replay/v1/refunds", content=body + "&amount=100", headers=headers
    )
    assert other.status_code == 400 and other.json()["error"]["type"] == "idempotency_error"


def test_a_declined_card_is_a_402_card_error_and_the_key_replays_it(url):
    headers = {**FORM, "idempotency-key": "declined"}
    body = "amount=2000&currency=usd&payment_method=pm_card_chargeDeclined&confirm=true"
    first = httpx.post(f"{url}/rest/payments/decline/v1/payment_intents", content=body, headers=headers)
    assert first.status_code == 402
    assert first.json()["error"] | {"message": ""} == {
        "type": "card_error",
        "code": "card_declined",
        "param": None,
        "decline_code": "generic_decline",
        "message": "",
    }
    again = httpx.post(f"{url}/rest/payments/decline/v1/payment_intents", content=body, headers=headers)
    assert again.status_code == 402 and again.headers["idempotent-replayed"] == "true"


def test_requests_without_a_key_or_with_another_api_version_are_refused(url):
    bare = httpx.get(f"{url}/rest/payments/auth/v1/customers")
    assert bare.status_code == 401 and "Authorization" in bare.json()["error"]["message"]
    old = httpx.get(
        f"{url}/rest/payments/auth/v1/customers", headers={**AUTH, "stripe-version": "2020-08-27"}
    )
    assert old.status_code == 400 and old.json()["error"]["code"] == "api_version_unsupported"


def test_a_world_without_operations_and_an_unknown_world_say_so(url):
    shop = httpx.get(f"{url}/rest/shop/k/v1/anything", headers=AUTH)
    assert shop.status_code == 404 and "declares no HTTP operations" in shop.json()["error"]["message"]
    nowhere = httpx.get(f"{url}/rest/atlantis/k/v1/anything", headers=AUTH)
    assert nowhere.status_code == 404 and "atlantis" in nowhere.json()["error"]["message"]


def test_keys_are_private_instances_and_a_closed_one_starts_afresh(url):
    form = "name=Only+here"
    made = httpx.post(f"{url}/rest/payments/alice/v1/customers", content=form, headers=FORM).json()
    assert httpx.get(f"{url}/rest/payments/bob/v1/customers/{made['id']}", headers=AUTH).status_code == 404
    assert httpx.delete(f"{url}/rest/payments/alice").json()["closed"] is True
    assert httpx.get(f"{url}/rest/payments/alice").status_code == 404
    assert httpx.get(f"{url}/rest/payments/alice/v1/customers/{made['id']}", headers=AUTH).status_code == 404


def test_a_bad_instance_key_or_fixture_is_a_clear_error(url):
    assert "instance key" in httpx.get(f"{url}/rest/payments/{'k' * 65}/v1/balance", headers=AUTH).text
    wrong = httpx.put(f"{url}/rest/payments/fixture", json={"fixture": "nope"})
    assert wrong.status_code == 400 and "lumen_studio" in wrong.json()["error"]["message"]


def test_the_guard_still_refuses_form_posts_a_web_page_could_send(url):
    page = httpx.post(
        f"{url}/rest/payments/guard/v1/customers",
        content="name=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert page.status_code == 415
    foreign = httpx.post(
        f"{url}/rest/payments/guard/v1/customers",
        content="name=x",
        headers={**FORM, "origin": "http://evil.example"},
    )
    assert foreign.status_code == 403


def test_a_token_server_takes_the_token_as_the_api_key(shop, serve):
    with serve(create_app(["payments"], token="s3cret")) as base:
        wrong = httpx.get(f"{base}/rest/payments/t/v1/balance", headers=AUTH)
        right = httpx.get(f"{base}/rest/payments/t/v1/balance", headers={"authorization": "Bearer s3cret"})
    assert wrong.status_code == 401 and right.status_code == 200


async def test_an_idle_key_expires_with_its_session_and_says_how_to_reopen():
    from atoll.worlds.serve import RestInstances
    from atoll.worlds.serve._rest import RestError

    now = [0.0]
    manager = SessionManager(WorldCatalog(["payments"]), idle_seconds=10, clock=lambda: now[0])
    instances = RestInstances(manager)
    entry = await instances.open("payments", "sleepy")
    now[0] = 11
    manager.reap()
    assert entry.session.closed
    with pytest.raises(RestError) as gone:
        instances.existing("payments", "sleepy")
    assert gone.value.status == 410 and "PUT /rest/payments/sleepy" in gone.value.body["message"]


@pytest.mark.parametrize(
    ("encoded", "decoded"),
    [
        ("a=1&b=two", {"a": "1", "b": "two"}),
        ("metadata[plan]=gold&metadata[seat]=", {"metadata": {"plan": "gold", "seat": ""}}),
        ("expand[]=customer&expand[]=latest_charge", {"expand": ["customer", "latest_charge"]}),
        (
            "items[1][price]=b&items[0][price]=a&items[0][quantity]=2",
            {"items": [{"price": "a", "quantity": "2"}, {"price": "b"}]},
        ),
        ("expand[0]=data.customer", {"expand": ["data.customer"]}),
        ("name=Ada+Moreau%21", {"name": "Ada Moreau!"}),
    ],
)
def test_form_bodies_decode_stripes_bracket_notation(encoded, decoded):
    assert decode(encoded) == decoded


@pytest.mark.parametrize(
    ("encoded", "param"),
    [
        ("a=1&a[b]=2", "a[b]"),
        ("a[b=1", "a[b"),
        ("a[][b]=1", "a[][b]"),
        ("items[1][price]=x", "items"),
        ("a=1&a=2", "a"),
    ],
)
def test_a_form_that_cannot_be_decoded_names_the_parameter(encoded, param):
    with pytest.raises(FormError) as bad:
        decode(encoded)
    assert bad.value.param == param


def test_an_error_location_is_named_in_bracket_notation():
    assert bracketed(("items", 0, "price")) == "items[0][price]" and bracketed(("amount",)) == "amount"
