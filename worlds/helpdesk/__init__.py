"""The helpdesk world: the support desk of an online shop.

Importing the package registers its tools and fixtures on `world`.
"""

from . import fixtures, tools
from .world import world

__all__ = ["fixtures", "tools", "world"]
