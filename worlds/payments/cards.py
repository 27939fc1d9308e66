"""Stripe's test cards: numbers, tokens and `pm_card_…` ids that pay or decline as in Stripe's test mode.

A declining card either fails when it is attached to a customer (Stripe checks the card then) or, like
4000 0000 0000 0341, attaches and fails every charge, so an agent meets a card that looked fine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TestCard:
    """One test card: what the API shows of it, and how it behaves."""

    number: str
    brand: str
    funding: str = "credit"
    country: str = "US"
    decline_code: str | None = None  # None: it pays
    declines_on: str | None = None  # "attach" or "charge"

    @property
    def last4(self) -> str:
        return self.number[-4:]


CARDS: dict[str, TestCard] = {
    card.number: card
    for card in (
        TestCard("4242424242424242", "visa"),
        TestCard("4000056655665556", "visa", funding="debit"),
        TestCard("5555555555554444", "mastercard"),
        TestCard("378282246310005", "amex"),
        TestCard("4000000000000002", "visa", decline_code="generic_decline", declines_on="attach"),
        TestCard("4000000000009995", "visa", decline_code="insufficient_funds", declines_on="attach"),
        TestCard("4000000000009987", "visa", decline_code="lost_card", declines_on="attach"),
        TestCard("4000000000000069", "visa", decline_code="expired_card", declines_on="attach"),
        TestCard("4000000000000127", "visa", decline_code="incorrect_cvc", declines_on="attach"),
        TestCard("4000000000009979", "visa", decline_code="stolen_card", declines_on="attach"),
        TestCard("4000000000000119", "visa", decline_code="processing_error", declines_on="attach"),
        TestCard("4000000000000341", "visa", decline_code="generic_decline", declines_on="charge"),
        TestCard("5200828282828210", "mastercard", funding="debit"),
        TestCard("6011111111111117", "discover"),
    )
}

# Test tokens and PaymentMethod ids stand for a test card, as in Stripe's test mode.
ALIASES: dict[str, str] = {
    "tok_us": "4242424242424242",
    "tok_visa": "4242424242424242",
    "tok_visa_debit": "4000056655665556",
    "tok_mastercard": "5555555555554444",
    "tok_amex": "378282246310005",
    "tok_chargeDeclined": "4000000000000002",
    "tok_chargeDeclinedInsufficientFunds": "4000000000009995",
    "tok_chargeCustomerFail": "4000000000000341",
    "tok_mastercard_debit": "5200828282828210",
    "tok_discover": "6011111111111117",
    "pm_card_us": "4242424242424242",
    "pm_card_visa": "4242424242424242",
    "pm_card_visa_debit": "4000056655665556",
    "pm_card_mastercard": "5555555555554444",
    "pm_card_amex": "378282246310005",
    "pm_card_chargeDeclined": "4000000000000002",
    "pm_card_chargeDeclinedInsufficientFunds": "4000000000009995",
    "pm_card_chargeDeclinedLostCard": "4000000000009987",
    "pm_card_chargeDeclinedExpiredCard": "4000000000000069",
    "pm_card_chargeDeclinedIncorrectCvc": "4000000000000127",
    "pm_card_chargeCustomerFail": "4000000000000341",
    "pm_card_mastercard_debit": "5200828282828210",
    "pm_card_discover": "6011111111111117",
}
# The declines by name, as `tok_…` and `pm_card_…` ids; Stripe's test ids name each one twice, with the
# brand (`pm_card_visa_chargeDeclinedLostCard`, as its testing docs list them now) and without it.
_DECLINES = {
    "chargeDeclined": "4000000000000002",
    "chargeDeclinedInsufficientFunds": "4000000000009995",
    "chargeDeclinedLostCard": "4000000000009987",
    "chargeDeclinedStolenCard": "4000000000009979",
    "chargeDeclinedExpiredCard": "4000000000000069",
    "chargeDeclinedIncorrectCvc": "4000000000000127",
    "chargeDeclinedProcessingError": "4000000000000119",
    "chargeCustomerFail": "4000000000000341",
}
for _name, _number in _DECLINES.items():
    for _prefix in ("tok_", "tok_visa_", "pm_card_", "pm_card_visa_"):
        ALIASES.setdefault(_prefix + _name, _number)

# What a decline says: the error `code` (Stripe gives a few declines their own) and the message.
DECLINES: dict[str, tuple[str, str]] = {
    "generic_decline": ("card_declined", "Your card was declined."),
    "insufficient_funds": ("card_declined", "Your card has insufficient funds."),
    "lost_card": ("card_declined", "Your card was declined."),
    "expired_card": ("expired_card", "Your card has expired."),
    "incorrect_cvc": ("incorrect_cvc", "Your card's security code is incorrect."),
    "stolen_card": ("card_declined", "Your card was declined."),
    "processing_error": (
        "processing_error",
        "An error occurred while processing your card. Try again in a little bit.",
    ),
}
