"""The payments world: a Stripe account that the official `stripe` SDK and agents drive alike.

Importing the package registers its operations, tools and fixtures on `world`. See docs/rest.md.
"""

from . import fixtures, tools
from .world import world

__all__ = ["fixtures", "tools", "world"]
