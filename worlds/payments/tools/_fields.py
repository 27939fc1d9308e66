"""The fields of each object that this world does not model, with what Stripe answers for them here.

Stripe always returns every field of an object (null when it does not apply), and the `stripe` SDK
pinned in pyproject's dev extra reads them as attributes, so an absent one is an `AttributeError` in the
application. Each serializer builds the fields the world models and `shaped` adds these beneath them:
null, an empty list, or the value a test-mode account without tax, Connect, discounts or hosted pages
has. tests/worlds/test_payments_stripe_sdk.py checks every object against the SDK's own classes, so a
field a later API version adds fails there by name.
"""

from __future__ import annotations

from typing import Any


def _nulls(*names: str) -> dict[str, Any]:
    return dict.fromkeys(names)


ACCOUNT: dict[str, Any] = {
    **_nulls("capabilities", "company", "controller", "future_requirements", "groups", "individual"),
    **_nulls("requirements", "tos_acceptance"),
    "external_accounts": None,
    "metadata": {},
}
BUSINESS_PROFILE: dict[str, Any] = _nulls(
    "annual_revenue",
    "estimated_worker_count",
    "mcc",
    "minority_owned_business_designation",
    "monthly_estimated_revenue",
    "product_description",
    "specified_commercial_transactions_act_url",
    "support_address",
    "support_phone",
    "support_url",
)
ACCOUNT_SETTINGS: dict[str, Any] = _nulls(
    "bacs_debit_payments",
    "branding",
    "card_issuing",
    "card_payments",
    "invoices",
    "payments",
    "payouts",
    "paypay_payments",
    "sepa_debit_payments",
    "treasury",
)
BALANCE: dict[str, Any] = _nulls(
    "connect_reserved", "instant_available", "issuing", "refund_and_dispute_prefunding"
)
SOURCE_TYPES: dict[str, Any] = _nulls("bank_account", "fpx")

CUSTOMER: dict[str, Any] = {
    **_nulls("business_name", "customer_account", "default_source", "discount", "individual_name"),
    **_nulls("invoice_prefix", "next_invoice_sequence"),
    # Stripe leaves these out unless `expand[]` asks for them; here they are null unless it does.
    **_nulls("cash_balance", "invoice_credit_balance", "sources", "subscriptions", "tax", "tax_ids"),
}

BILLING_DETAILS: dict[str, Any] = _nulls("address", "email", "name", "phone", "tax_id")
PAYMENT_METHOD: dict[str, Any] = {
    **_nulls("customer_account", "radar_options"),
    "allow_redisplay": "unspecified",
}
CARD: dict[str, Any] = {
    **_nulls("description", "generated_from", "iin", "issuer", "regulated_status", "wallet"),
    "three_d_secure_usage": {"supported": True},
}

PAYMENT_INTENT: dict[str, Any] = {
    **_nulls("allowed_payment_method_types", "application", "application_fee_amount"),
    **_nulls("automatic_payment_methods", "customer_account", "excluded_payment_method_types", "hooks"),
    **_nulls("managed_payments", "next_action", "on_behalf_of", "payment_details"),
    **_nulls("payment_method_configuration_details", "payment_record", "presentment_details"),
    **_nulls("processing", "review", "shipping", "source", "statement_descriptor", "transfer_data"),
    **_nulls("transfer_group"),
    **_nulls("amount_details", "payment_method_options"),
}

PAYMENT_ERROR: dict[str, Any] = _nulls(
    "advice_code",
    "charge",
    "code",
    "decline_code",
    "doc_url",
    "message",
    "network_advice_code",
    "network_decline_code",
    "param",
    "payment_intent",
    "payment_method",
    "payment_method_type",
    "request_log_url",
    "setup_intent",
    "source",
)

CHARGE: dict[str, Any] = {
    **_nulls("application", "application_fee", "application_fee_amount", "authorization_code"),
    **_nulls("failure_balance_transaction", "level3", "on_behalf_of", "presentment_details"),
    **_nulls("receipt_number", "review", "shipping", "source", "source_transfer"),
    **_nulls("statement_descriptor", "transfer", "transfer_data", "transfer_group"),
    "fraud_details": {"stripe_report": None, "user_report": None},
    "radar_options": None,
    # Stripe leaves `refunds` out unless `expand[]=refunds` asks for it.
    "refunds": None,
}
OUTCOME: dict[str, Any] = {
    **_nulls("advice_code", "network_advice_code", "network_decline_code", "rule"),
    "risk_score": 32,
}
CHARGE_CARD: dict[str, Any] = {
    **_nulls("authorization_code", "capture_before", "description", "iin", "issuer", "mandate", "moto"),
    **_nulls("network_token", "network_transaction_id", "regulated_status", "setup_credential_usage"),
    **_nulls("stored_credential_usage", "three_d_secure", "transaction_link_id", "wallet"),
    **_nulls("extended_authorization", "incremental_authorization", "multicapture", "overcapture"),
    "installments": None,
}

REFUND: dict[str, Any] = {
    **_nulls("customer_account", "description", "destination_details", "failure_balance_transaction"),
    **_nulls("failure_reason", "instructions_email", "next_action", "pending_reason"),
    **_nulls("presentment_details", "source_transfer_reversal", "transfer_reversal"),
}

PRODUCT: dict[str, Any] = _nulls("statement_descriptor", "tax_code", "tax_details", "unit_label")
PRICE: dict[str, Any] = {
    **_nulls("custom_unit_amount", "tiers_mode", "transform_quantity"),
    # Stripe leaves these out unless `expand[]` asks for them.
    **_nulls("currency_options", "tiers"),
}

SUBSCRIPTION: dict[str, Any] = {
    **_nulls("application", "application_fee_percent", "billing_cycle_anchor_config"),
    **_nulls("billing_thresholds", "customer_account", "default_source", "default_tax_rates"),
    **_nulls("description", "managed_payments", "next_pending_invoice_item_invoice", "on_behalf_of"),
    **_nulls("pause_collection", "pending_invoice_item_interval", "pending_setup_intent"),
    **_nulls("pending_update", "presentment_details", "schedule", "status_details", "test_clock"),
    **_nulls("transfer_data"),
    "automatic_tax": {"disabled_reason": None, "enabled": False, "liability": None},
    "billing_mode": {"flexible": None, "type": "classic", "updated_at": None},
    "billing_schedules": [],
    "discounts": [],
    "invoice_settings": {
        "account_tax_ids": None,
        "custom_fields": None,
        "description": None,
        "footer": None,
        "issuer": {"account": None, "type": "self"},
    },
    "payment_settings": {
        "payment_method_options": None,
        "payment_method_types": None,
        "save_default_payment_method": "off",
    },
    "trial_settings": {
        "end_behavior": {"billing_cycle_anchor": None, "missing_payment_method": "create_invoice"}
    },
}
SUBSCRIPTION_ITEM: dict[str, Any] = {
    **_nulls("billed_until", "billing_thresholds", "current_trial"),
    "discounts": [],
    "tax_rates": [],
}
PLAN: dict[str, Any] = _nulls("meter", "tiers", "tiers_mode", "transform_usage", "trial_period_days")

INVOICE: dict[str, Any] = {
    **_nulls("account_tax_ids", "application", "automatically_finalizes_at", "confirmation_secret"),
    **_nulls("custom_fields", "customer_account", "customer_address", "customer_phone"),
    **_nulls("customer_shipping", "default_source", "effective_at", "footer", "from_invoice"),
    # No hosted pages here: an invoice has no page to pay it on and no PDF.
    **_nulls("hosted_invoice_url", "invoice_pdf"),
    **_nulls("last_finalization_error", "latest_revision", "next_payment_attempt", "on_behalf_of"),
    **_nulls("receipt_number", "rendering", "shipping_cost", "shipping_details"),
    **_nulls("statement_descriptor", "status_details", "test_clock", "threshold_reason"),
    **_nulls("webhooks_delivered_at"),
    "amount_overpaid": 0,
    "amount_paid_off_stripe": 0,
    "amount_shipping": 0,
    "automatic_tax": {
        "disabled_reason": None,
        "enabled": False,
        "liability": None,
        "provider": None,
        "status": None,
    },
    "customer_tax_exempt": "none",
    "customer_tax_ids": [],
    "default_tax_rates": [],
    "discounts": [],
    "issuer": {"account": None, "type": "self"},
    "payment_settings": {
        "default_mandate": None,
        "payment_method_options": None,
        "payment_method_types": None,
    },
    "post_payment_credit_notes_amount": 0,
    "pre_payment_credit_notes_amount": 0,
    "total_discount_amounts": [],
    "total_pretax_credit_amounts": [],
    "total_taxes": [],
}
INVOICE_PAYMENT: dict[str, Any] = {"livemode": False}
INVOICE_ITEM: dict[str, Any] = {
    **_nulls("customer_account", "discounts", "invoicing_rules", "proration_details", "test_clock"),
    "frozen_fields": None,
    "tax_rates": [],
}
LINE_ITEM: dict[str, Any] = {
    "discount_amounts": [],
    "discountable": True,
    "discounts": [],
    "pretax_credit_amounts": [],
    "taxes": [],
}


def shaped(unmodelled: dict[str, Any], modelled: dict[str, Any]) -> dict[str, Any]:
    """An object as Stripe serializes it: `id` and `object` first, then every field in alphabetical order
    (in its nested hashes too), the world's value where it models the field, else `unmodelled`'s."""
    return _ordered({**unmodelled, **modelled})


def _ordered(value: dict[str, Any]) -> dict[str, Any]:
    head = {key: value[key] for key in ("id", "object") if key in value}
    rest = sorted((key, item) for key, item in value.items() if key not in head)
    return {**head, **{key: _ordered(item) if isinstance(item, dict) else item for key, item in rest}}
