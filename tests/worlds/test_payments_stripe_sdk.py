"""The official `stripe` SDK drives `optimize serve --world payments` unchanged but for its base address.

The SDK is a dev dependency (pyproject's dev extra pins it); a missing one fails this module at import,
loudly, never skipped. The server is the real command in a subprocess, as a user starts it; assertions read
the SDK's own objects and exceptions, not raw JSON.
"""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import time
import typing
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import stripe  # a dev dependency: ImportError here is the loud failure the suite wants
from stripe import SearchResultObject, StripeObject

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


# -- every field the SDK declares -------------------------------------------------------------------------


def _declared(cls: type) -> dict[str, Any]:
    """The fields a class of the SDK declares for the API version it pins (its own annotations)."""
    annotations = inspect.get_annotations(cls)
    return {
        name: hint
        for name, hint in annotations.items()
        if not name.isupper() and typing.get_origin(hint) is not typing.ClassVar
    }


def _literals(hint: Any) -> set[Any]:
    if typing.get_origin(hint) is typing.Literal:
        return set(typing.get_args(hint))
    return set().union(*(_literals(arg) for arg in typing.get_args(hint)))


def _holds_object(hint: Any) -> bool:
    return any(isinstance(a, type) and issubclass(a, StripeObject) for a in typing.get_args(hint))


def unread(value: Any, path: str = "") -> list[str]:
    """Every field that reading `value` (an SDK object), and every object inside it, attribute by attribute
    raises AttributeError on: the fields its class declares in the pinned version. A deleted object carries
    only `id`, `object` and `deleted`, and `deleted` only there. A polymorphic object (`type: "card"` beside
    `card`, `acss_debit`, …) carries the branch its type names, as Stripe sends it."""
    if isinstance(value, list):
        return [gap for n, item in enumerate(value) for gap in unread(item, f"{path}[{n}]")]
    if not isinstance(value, StripeObject) or type(value).__name__ == "UntypedStripeObject":
        return []
    if getattr(value, "deleted", None):
        return []
    fields = _declared(type(value))
    kind = getattr(value, "type", None) if "type" in fields else None
    if isinstance(kind, str) and kind in fields:
        branches = _literals(fields["type"]) & set(fields) or {
            name for name, hint in fields.items() if name != "type" and _holds_object(hint)
        }
        fields = {name: hint for name, hint in fields.items() if name not in branches or name == kind}
    gaps = []
    for name in fields:
        if name == "deleted":
            continue
        try:
            field = value[name] if name == "items" else getattr(value, name)  # `.items` is the dict method
        except (AttributeError, KeyError):
            gaps.append(f"{path}.{name} ({type(value).__qualname__})")
            continue
        gaps.extend(unread(field, f"{path}.{name}"))
    if isinstance(value, stripe.ListObject | SearchResultObject):
        gaps.extend(unread(value.data, f"{path}.data"))
    return gaps


def test_the_field_check_names_a_missing_field_and_honours_deleted_and_typed_objects() -> None:
    card = {"id": "pm_1", "object": "payment_method", "type": "card", "card": {"brand": "visa"}}
    gaps = unread(stripe.PaymentMethod.construct_from(card, KEY))
    assert ".created (PaymentMethod)" in gaps and ".card.last4 (PaymentMethod.Card)" in gaps
    assert not any(".acss_debit" in gap or ".deleted" in gap for gap in gaps)
    deleted = {"id": "cus_1", "object": "customer", "deleted": True}
    assert unread(stripe.Customer.construct_from(deleted, KEY)) == []


def test_every_object_carries_every_field_its_sdk_class_declares(server: str) -> None:
    sdk = client(server, "fields")
    customer = sdk.v1.customers.create(
        {
            "name": "Ada Moreau",
            "email": "ada@example.com",
            "address": {"line1": "1 Pike St", "city": "Seattle", "postal_code": "98101", "country": "US"},
            "shipping": {"name": "Ada Moreau", "address": {"line1": "1 Pike St", "country": "US"}},
            "preferred_locales": ["fr", "en"],
            "tax_exempt": "exempt",
            "payment_method": "pm_card_visa",
        }
    )
    card = sdk.v1.payment_methods.list({"customer": customer.id}).data[0]
    paid = sdk.v1.payment_intents.create(
        {
            "amount": 4200,
            "currency": "usd",
            "customer": customer.id,
            "payment_method": card.id,
            "confirm": True,
            "receipt_email": "ada@example.com",
            "setup_future_usage": "off_session",
            "statement_descriptor_suffix": "MAT RENTAL",
            "expand": ["latest_charge", "customer", "payment_method"],
        }
    )
    held = sdk.v1.payment_intents.create(
        {"amount": 5000, "currency": "usd", "customer": customer.id, "payment_method": card.id}
    )
    refund = sdk.v1.refunds.create({"payment_intent": paid.id, "amount": 1200, "expand": ["charge"]})
    product = sdk.v1.products.create({"name": "Mat rental"})
    price = sdk.v1.prices.create(
        {"product": product.id, "unit_amount": 900, "currency": "usd", "expand": ["product"]}
    )
    monthly = sdk.v1.prices.create(
        {"product": product.id, "unit_amount": 1500, "currency": "usd", "recurring": {"interval": "month"}}
    )
    trial = sdk.v1.subscriptions.create(
        {
            "customer": customer.id,
            "items": [{"price": monthly.id}],
            "default_payment_method": card.id,
            "trial_period_days": 14,
            "expand": ["latest_invoice", "default_payment_method"],
        }
    )
    invoice = sdk.v1.invoices.create({"customer": customer.id, "default_payment_method": card.id})
    item = sdk.v1.invoice_items.create(
        {"customer": customer.id, "invoice": invoice.id, "pricing": {"price": price.id}}
    )
    invoice = sdk.v1.invoices.finalize_invoice(invoice.id)
    invoice = sdk.v1.invoices.pay(
        invoice.id, {"expand": ["customer", "payments.data.payment.payment_intent"]}
    )
    sofia = fixed_id("sub", "sofia_unlimited")
    objects = {
        "customer": customer,
        "customer, includable fields": sdk.v1.customers.retrieve(
            customer.id, {"expand": ["subscriptions", "sources", "tax_ids", "tax", "invoice_credit_balance"]}
        ),
        "payment method": card,
        "payment intent": paid,
        "payment intent, held": held,
        "payment intent, declined": sdk.v1.payment_intents.retrieve(
            fixed_id("pi", "sofia_unlimited:4"), {"expand": ["latest_charge"]}
        ),
        "charge, with refunds": sdk.v1.charges.retrieve(paid.latest_charge.id, {"expand": ["refunds"]}),
        "refund": refund,
        "product": product,
        "price": price,
        "subscription, trialing": trial,
        "subscription, past due": sdk.v1.subscriptions.retrieve(sofia, {"expand": ["latest_invoice"]}),
        "invoice": invoice,
        "invoice item": item,
        "invoice lines": sdk.v1.invoices.line_items.list(invoice.id),
        "account": sdk.v1.accounts.retrieve_current(),
        "balance": sdk.v1.balance.retrieve(),
        "customer search": sdk.v1.customers.search({"query": 'name~"Ada"'}),
        "payment intent search": sdk.v1.payment_intents.search({"query": f'customer:"{customer.id}"'}),
        "invoices": sdk.v1.invoices.list(
            {"limit": 5, "expand": ["data.parent.subscription_details.subscription"]}
        ),
        "invoice items": sdk.v1.invoice_items.list({"limit": 5}),
        "charges": sdk.v1.charges.list({"limit": 5}),
        "refunds": sdk.v1.refunds.list({"limit": 5}),
        "subscriptions": sdk.v1.subscriptions.list({"limit": 5, "status": "all"}),
        "prices": sdk.v1.prices.list({"limit": 5}),
        "products": sdk.v1.products.list({"limit": 5}),
    }
    assert objects["payment intent, declined"].last_payment_error.decline_code == "expired_card"
    assert objects["subscription, trialing"].status == "trialing" and invoice.status == "paid"
    gaps = {what: unread(sdk_object) for what, sdk_object in objects.items()}
    assert {what: found for what, found in gaps.items() if found} == {}


def test_stripes_test_ids_decline_with_and_without_the_brand(server: str) -> None:
    sdk = client(server, "test-ids")
    customer = sdk.v1.customers.create({"email": "ids@example.com"})
    for test_id, code, decline in [
        ("pm_card_visa_chargeDeclined", "card_declined", "generic_decline"),
        ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
        ("pm_card_visa_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
        ("pm_card_visa_chargeDeclinedExpiredCard", "expired_card", "expired_card"),
        ("pm_card_visa_chargeDeclinedIncorrectCvc", "incorrect_cvc", "incorrect_cvc"),
        ("pm_card_visa_chargeDeclinedLostCard", "card_declined", "lost_card"),
        ("pm_card_visa_chargeDeclinedStolenCard", "card_declined", "stolen_card"),
        ("pm_card_visa_chargeDeclinedProcessingError", "processing_error", "processing_error"),
    ]:
        with pytest.raises(stripe.CardError) as declined:
            sdk.v1.payment_methods.attach(test_id, {"customer": customer.id})
        assert (declined.value.code, declined.value.error.decline_code) == (code, decline), test_id
    token = {"type": "card", "card": {"token": "tok_visa_chargeDeclinedInsufficientFunds"}}
    with pytest.raises(stripe.CardError):
        sdk.v1.customers.create({"payment_method": sdk.v1.payment_methods.create(token).id})
    fails_later = sdk.v1.payment_methods.attach("pm_card_visa_chargeCustomerFail", {"customer": customer.id})
    with pytest.raises(stripe.CardError):
        sdk.v1.payment_intents.create(
            {
                "amount": 900,
                "currency": "usd",
                "customer": customer.id,
                "payment_method": fails_later.id,
                "confirm": True,
            }
        )
    assert (
        sdk.v1.payment_methods.attach("pm_card_discover", {"customer": customer.id}).card.brand == "discover"
    )


def test_the_common_parameters_are_taken_and_stored(server: str) -> None:
    sdk = client(server, "parameters")
    address = {
        "line1": "1 Pike St",
        "city": "Seattle",
        "state": "WA",
        "postal_code": "98101",
        "country": "US",
    }
    customer = sdk.v1.customers.create(
        {
            "name": "Ada Moreau",
            "address": address,
            "shipping": {"name": "Ada", "address": address, "phone": "+1 206 555 0100"},
            "preferred_locales": ["fr-CA", "en"],
            "tax_exempt": "reverse",
            "payment_method": "pm_card_visa",
        }
    )
    assert customer.address.city == "Seattle" and customer.address.line2 is None
    assert customer.shipping.name == "Ada" and customer.shipping.address.state == "WA"
    assert customer.preferred_locales == ["fr-CA", "en"] and customer.tax_exempt == "reverse"
    cleared = sdk.v1.customers.update(customer.id, {"address": "", "tax_exempt": "none"})
    assert cleared.address is None and cleared.tax_exempt == "none" and cleared.shipping.name == "Ada"

    fresh = sdk.v1.customers.list({"created": {"gte": customer.created}, "limit": 100}).data
    assert [c.id for c in fresh] == [customer.id]
    assert sdk.v1.customers.list({"created": {"lt": customer.created}, "limit": 1}).data[0].id != customer.id

    card = sdk.v1.payment_methods.list({"customer": customer.id}).data[0]
    intent = sdk.v1.payment_intents.create(
        {
            "amount": 2200,
            "currency": "usd",
            "customer": customer.id,
            "payment_method": card.id,
            "setup_future_usage": "off_session",
            "statement_descriptor_suffix": "DROP IN",
            "receipt_email": "ada@example.com",
        }
    )
    assert intent.setup_future_usage == "off_session" and intent.statement_descriptor_suffix == "DROP IN"
    intent = sdk.v1.payment_intents.confirm(intent.id, {"expand": ["latest_charge"]})
    charge = intent.latest_charge
    assert charge.statement_descriptor_suffix == "DROP IN" and charge.receipt_email == "ada@example.com"
    assert charge.calculated_statement_descriptor.endswith("* DROP IN")
    with pytest.raises(stripe.InvalidRequestError) as long_suffix:
        sdk.v1.payment_intents.create(
            {"amount": 900, "currency": "usd", "statement_descriptor_suffix": "X" * 23}
        )
    assert long_suffix.value.param == "statement_descriptor_suffix"

    product = sdk.v1.products.create({"name": "Mat rental"})
    price = sdk.v1.prices.create(
        {
            "product": product.id,
            "unit_amount": 1500,
            "currency": "usd",
            "recurring": {"interval": "month"},
            "lookup_key": "mat_monthly",
        }
    )
    found = sdk.v1.prices.list({"lookup_keys": ["mat_monthly", "basic"]}).data
    assert {p.lookup_key for p in found} == {"mat_monthly", "basic"}
    trial = sdk.v1.subscriptions.create(
        {
            "customer": customer.id,
            "items": [{"price": price.id}],
            "default_payment_method": card.id,
            "trial_period_days": 7,
            "expand": ["latest_invoice"],
        }
    )
    assert trial.status == "trialing" and trial.trial_end - trial.trial_start == 7 * 86400
    assert trial["items"].data[0].current_period_end == trial.trial_end == trial.billing_cycle_anchor
    assert trial.latest_invoice.amount_due == 0 and trial.latest_invoice.status == "paid"

    second = sdk.v1.payment_methods.attach("pm_card_mastercard", {"customer": customer.id})
    invoice = sdk.v1.invoices.create({"customer": customer.id, "default_payment_method": second.id})
    sdk.v1.invoice_items.create(
        {"customer": customer.id, "invoice": invoice.id, "amount": 3000, "currency": "usd"}
    )
    sdk.v1.invoices.finalize_invoice(invoice.id)
    paid = sdk.v1.invoices.pay(invoice.id, {"expand": ["payments.data.payment.payment_intent"]})
    assert paid.default_payment_method == second.id and paid.status == "paid"
    assert paid.payments.data[0].payment.payment_intent.payment_method == second.id


def test_search_takes_stripes_query_language_and_pages(server: str) -> None:
    sdk = client(server, "search")
    made = [
        sdk.v1.customers.create(
            {
                "name": f"Searcher {n}",
                "email": f"s{n}@search.example",
                "metadata": {"tier": "gold" if n % 2 else "base"},
            }
        ).id
        for n in range(5)
    ]
    gold = sdk.v1.customers.search({"query": "name~\"searcher\" AND metadata['tier']:'gold'"})
    assert isinstance(gold, SearchResultObject) and [c.id for c in gold.data] == [made[3], made[1]]
    page = sdk.v1.customers.search({"query": 'email~"search.example"', "limit": 2})
    assert page.has_more is True and page.next_page
    assert [c.id for c in page.auto_paging_iter()] == made[::-1]
    either = sdk.v1.customers.search({"query": 'email:"S0@SEARCH.EXAMPLE" OR email:"s4@search.example"'})
    assert {c.id for c in either.data} == {made[0], made[4]}
    dana = fixed_id("cus", "dana")
    large = sdk.v1.payment_intents.search(
        {"query": f'customer:"{dana}" AND amount>=18000 AND status:"succeeded"', "expand": ["total_count"]}
    )
    assert [i.amount for i in large.data] == [18000, 18000] and large.total_count == 2
    others = sdk.v1.payment_intents.search({"query": f'-customer:"{dana}" AND amount>17999', "limit": 100})
    assert others.data and all(i.customer != dana and i.amount >= 18000 for i in others.data)
    for bad in ('nmae:"x"', 'name:"a" AND email:"b" OR phone:"c"', 'name~"ab"'):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            sdk.v1.customers.search({"query": bad})
        assert refused.value.param == "query", bad
