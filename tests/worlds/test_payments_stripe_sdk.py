"""The official `stripe` SDK drives `optimize serve --world payments` unchanged but for its base address.

The SDK is a dev dependency (pyproject's dev extra pins it); a missing one fails this module at import,
loudly, never skipped. The server is the real command in a subprocess, as a user starts it; assertions read
the SDK's own objects and exceptions, not raw JSON.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
import stripe  # a dev dependency: ImportError here is the loud failure the suite wants

from atoll.worlds.payments.fixtures import fixed_id
from atoll.worlds.payments.world import API_VERSION

KEY = "sk_test_atoll"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "atoll.cli",
        "serve",
        "--world",
        "payments",
        "--port",
        str(port),
        "--idle-timeout",
        "60",
    ]
    process = subprocess.Popen(
        command, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"optimize serve did not start: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def client(base: str, instance: str) -> stripe.StripeClient:
    """The SDK as an application builds it, pointed at one private instance of the world."""
    return stripe.StripeClient(
        KEY, base_addresses={"api": f"{base}/rest/payments/{instance}"}, max_network_retries=0
    )


def test_the_sdk_pins_the_api_version_the_world_answers_as() -> None:
    assert stripe.StripeClient(KEY)._requestor._options.stripe_version == API_VERSION


def test_a_customer_pays_by_card_and_gets_a_partial_refund(server: str) -> None:
    sdk = client(server, "card-flow")
    customer = sdk.v1.customers.create({"name": "Ada Moreau", "email": "ada@example.com"})
    assert isinstance(customer, stripe.Customer) and customer.id.startswith("cus_")

    card = sdk.v1.payment_methods.attach("pm_card_visa", {"customer": customer.id})
    assert (
        isinstance(card, stripe.PaymentMethod) and card.customer == customer.id and card.card.last4 == "4242"
    )

    intent = sdk.v1.payment_intents.create(
        {
            "amount": 4200,
            "currency": "usd",
            "customer": customer.id,
            "payment_method": card.id,
            "confirm": True,
            "expand": ["latest_charge"],
        }
    )
    assert isinstance(intent, stripe.PaymentIntent) and intent.status == "succeeded"
    assert isinstance(intent.latest_charge, stripe.Charge) and intent.latest_charge.amount_captured == 4200

    refund = sdk.v1.refunds.create(
        {"payment_intent": intent.id, "amount": 1200, "reason": "requested_by_customer"}
    )
    assert isinstance(refund, stripe.Refund) and refund.amount == 1200 and refund.status == "succeeded"
    charge = sdk.v1.charges.retrieve(intent.latest_charge.id)
    assert charge.amount_refunded == 1200 and charge.refunded is False

    with pytest.raises(stripe.InvalidRequestError) as too_much:
        sdk.v1.refunds.create({"payment_intent": intent.id, "amount": 5000})
    assert too_much.value.code == "amount_too_large" and too_much.value.param == "amount"
    assert too_much.value.http_status == 400


def test_a_declined_card_raises_the_sdks_own_card_error(server: str) -> None:
    sdk = client(server, "declines")
    customer = sdk.v1.customers.create({"email": "bo@example.com"})
    with pytest.raises(stripe.CardError) as declined:
        sdk.v1.payment_intents.create(
            {
                "amount": 2500,
                "currency": "usd",
                "customer": customer.id,
                "payment_method": "pm_card_chargeDeclinedInsufficientFunds",
                "confirm": True,
            }
        )
    assert declined.value.http_status == 402 and declined.value.code == "card_declined"
    assert declined.value.error.decline_code == "insufficient_funds"
    with pytest.raises(stripe.CardError) as expired:
        sdk.v1.payment_methods.attach("pm_card_chargeDeclinedExpiredCard", {"customer": customer.id})
    assert expired.value.code == "expired_card"
    assert sdk.v1.payment_intents.list({"customer": customer.id}).data == []  # a refused call wrote nothing


def test_lists_page_with_limit_and_cursors_and_auto_paging(server: str) -> None:
    sdk = client(server, "paging")
    made = [
        sdk.v1.customers.create({"name": f"Pager {n}", "email": "pager@example.com"}).id for n in range(5)
    ]
    first = sdk.v1.customers.list({"email": "pager@example.com", "limit": 2})
    assert isinstance(first, stripe.ListObject) and first.has_more is True
    assert [c.id for c in first.data] == made[::-1][:2]  # newest first
    second = sdk.v1.customers.list(
        {"email": "pager@example.com", "limit": 2, "starting_after": first.data[-1].id}
    )
    assert [c.id for c in second.data] == made[::-1][2:4]
    before = sdk.v1.customers.list(
        {"email": "pager@example.com", "limit": 2, "ending_before": second.data[0].id}
    )
    assert [c.id for c in before.data] == made[::-1][:2]
    assert [c.id for c in first.auto_paging_iter()] == made[::-1]


def test_an_idempotency_key_replays_the_first_answer_and_refuses_other_parameters(server: str) -> None:
    sdk = client(server, "idempotency")
    options = {"idempotency_key": "order-1042"}
    first = sdk.v1.customers.create({"email": "once@example.com"}, options)
    again = sdk.v1.customers.create({"email": "once@example.com"}, options)
    assert again.id == first.id
    assert again.last_response.headers["Idempotent-Replayed"] == "true"
    assert len(sdk.v1.customers.list({"email": "once@example.com"}).data) == 1
    with pytest.raises(stripe.IdempotencyError):
        sdk.v1.customers.create({"email": "other@example.com"}, options)


def test_the_fixture_history_reads_through_the_sdk_with_expand(server: str) -> None:
    sdk = client(server, "history")
    dana = sdk.v1.customers.list({"email": "dana.whitfield@gmail.com"}).data[0]
    assert dana.id == fixed_id("cus", "dana")
    intents = sdk.v1.payment_intents.list({"customer": dana.id, "expand": ["data.latest_charge"]})
    assert [i.amount for i in intents.data[:2]] == [18000, 18000]
    assert all(isinstance(i.latest_charge, stripe.Charge) for i in intents.data)
    sofia = sdk.v1.subscriptions.retrieve(fixed_id("sub", "sofia_unlimited"), {"expand": ["latest_invoice"]})
    assert sofia.status == "past_due" and sofia.latest_invoice.status == "open"
    assert sofia["items"].data[0].price.unit_amount == 12900


def test_a_subscription_upgrade_is_prorated_and_billed_now(server: str) -> None:
    sdk = client(server, "proration")
    marco = fixed_id("sub", "marco_basic")
    updated = sdk.v1.subscriptions.update(
        marco,
        {
            "items": [{"id": fixed_id("si", "marco_basic"), "price": fixed_id("price", "unlimited")}],
            "proration_behavior": "always_invoice",
            "expand": ["latest_invoice"],
        },
    )
    invoice = updated.latest_invoice
    assert isinstance(invoice, stripe.Invoice) and invoice.status == "paid"
    # The period runs 1 Nov 08:07 to 1 Dec 08:07; at 16 Nov 10:00, 21,487 of its 43,200 minutes are left:
    # a credit of 7900 × 21487/43200 and a charge of 12900 × 21487/43200, rounded to cents.
    assert sorted(line.amount for line in invoice.lines.data) == [-3929, 6416]
    assert invoice.amount_paid == 6416 - 3929


def test_errors_say_which_parameter_and_a_wrong_api_version_is_refused(server: str) -> None:
    sdk = client(server, "errors")
    with pytest.raises(stripe.InvalidRequestError) as unknown:
        sdk.v1.customers.create({"nmae": "typo"})
    assert unknown.value.param == "nmae" and unknown.value.code == "parameter_unknown"
    with pytest.raises(stripe.InvalidRequestError) as missing:
        sdk.v1.customers.retrieve("cus_doesnotexist")
    assert missing.value.http_status == 404 and missing.value.code == "resource_missing"
    old = stripe.StripeClient(
        KEY,
        base_addresses={"api": f"{server}/rest/payments/errors"},
        stripe_version="2024-06-20",
        max_network_retries=0,
    )
    with pytest.raises(stripe.InvalidRequestError) as version:
        old.v1.customers.list()
    assert version.value.code == "api_version_unsupported" and API_VERSION in str(version.value)
