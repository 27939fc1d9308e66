"""Suite-wide guards: a private cache directory and no real model calls."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ATOLL_CACHE_DIR"] = str(tmp_path_factory.mktemp("atoll-cache"))
    os.environ["ATOLL_NO_NETWORK_MODELS"] = "1"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches prices at import
