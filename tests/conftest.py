"""Suite-wide guards: a private cache directory, no real model calls, reproducible property tests."""

import os
import sys
from datetime import timedelta

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run and machine, so a red CI run reproduces
# locally; the deadline leaves room for a loaded two-core runner.
settings.register_profile("atoll", derandomize=True, database=None, deadline=timedelta(seconds=2))
settings.load_profile("atoll")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ATOLL_CACHE_DIR"] = str(tmp_path_factory.mktemp("atoll-cache"))
    os.environ["ATOLL_NO_NETWORK_MODELS"] = "1"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches prices at import


@pytest.fixture
def forget_new_modules():
    """Unimport every module a test imported (a world package from its tmp folder), so the next test's
    package of the same name is imported afresh from its own folder."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]
