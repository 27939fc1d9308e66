"""The clinic world: the front desk of a veterinary clinic.

Importing the package registers its tools and fixtures on `world`.
"""

from . import fixtures, tools
from .world import world

__all__ = ["fixtures", "tools", "world"]
