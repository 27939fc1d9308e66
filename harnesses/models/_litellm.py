"""Importing litellm once, lazily, quietly and offline, with the `local/` provider registered.

litellm takes seconds to import, so only code that is about to call a model imports it,
through `load()`: `optimize --help` and the world commands never pay for it.
"""

from __future__ import annotations

import logging
import os
import warnings
from types import ModuleType

_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")


def load() -> ModuleType:
    """litellm, configured for Atoll (the first call costs seconds; later calls are free)."""
    # Without this, importing litellm fetches its price list over the network, with retries.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # litellm imports some of its types during calls, and pydantic warns about each. Set on every
    # load, not once: a test runner restores the warning filters after each test.
    warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
    if not any(entry.get("provider") == "local" for entry in litellm.custom_provider_map):
        from ._provider import LocalProvider

        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on every error
        for name in _LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": "local", "custom_handler": LocalProvider()},
        ]
    return litellm
