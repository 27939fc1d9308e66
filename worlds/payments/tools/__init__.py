"""The payments world's operations and tools, one module per resource; importing this package registers them."""

from . import account, billing, catalog, customers, payment_methods, payments, refunds, subscriptions

__all__ = [
    "account",
    "billing",
    "catalog",
    "customers",
    "payment_methods",
    "payments",
    "refunds",
    "subscriptions",
]
