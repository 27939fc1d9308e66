"""The `optimize` command, one module per group of commands; `cli.py` assembles them into one app.

Each command parses its input, calls the library and renders the result with `views`; heavy imports
(litellm, dspy) happen inside the commands that call a model, so `optimize --help` starts at once.
"""

from ._shared import fail

__all__ = ["fail"]
