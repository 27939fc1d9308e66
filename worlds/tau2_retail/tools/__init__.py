"""The retail tools, as τ²-bench's: same names, parameters, descriptions, answers and error texts.

Tool descriptions are τ²-bench's (Copyright (c) 2025 Sierra Research, MIT License), word for word,
so an agent sees the schemas it would see in τ².
"""

from ...tau2 import generic_tools
from ..world import world
from . import orders, products, users

generic_tools(world)

__all__ = ["orders", "products", "users"]
