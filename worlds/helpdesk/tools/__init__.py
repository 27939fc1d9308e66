"""The helpdesk world's tools, one module per resource; importing this package registers them."""

from . import customers, fulfilment, orders, products, refunds, tickets

__all__ = ["customers", "fulfilment", "orders", "products", "refunds", "tickets"]
