"""The clinic world's tools, one module per resource; importing this package registers them."""

from . import appointments, billing, clients

__all__ = ["appointments", "billing", "clients"]
