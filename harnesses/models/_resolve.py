"""Which model a command runs on, and whether it can: checked before any episode starts."""

from __future__ import annotations

import os

from . import _litellm
from ._types import LOCAL_DEFAULT_MODEL, MissingCredentials

MODEL_ENV = "ATOLL_MODEL"
# Defaults that litellm reports as missing although the provider works without them
# (ollama listens on localhost unless told otherwise).
_OPTIONAL_SETTINGS_SUFFIXES = ("_API_BASE", "_BASE_URL")


def resolve_model(cli_model: str | None, harness_default: str) -> str:
    """The `--model` option, else `$ATOLL_MODEL`, else the harness's default model."""
    return cli_model or os.environ.get(MODEL_ENV) or harness_default


def check_credentials(model: str) -> None:
    """Raise MissingCredentials, in one line saying what to set, if `model` lacks its API key.

    The embedded and scripted models need nothing and are checked without importing litellm.
    """
    if model.startswith("local/") or model == "scripted":
        return
    litellm = _litellm.load()
    try:
        missing = litellm.validate_environment(model).get("missing_keys", [])
    except Exception:
        return  # a provider litellm cannot check: the first call will say what is wrong
    missing = [name for name in missing if not name.endswith(_OPTIONAL_SETTINGS_SUFFIXES)]
    if missing:
        names = " or ".join(missing) if _alternatives(missing) else " and ".join(missing)
        raise MissingCredentials(
            f"{model} needs {names} in the environment (export {missing[0]}=...), "
            f"or run on the embedded model instead with --model {LOCAL_DEFAULT_MODEL}"
        )


def check_model(model: str) -> None:
    """Raise, in one line saying what to do, if `model` cannot answer here: a provider's API key is
    missing, or an embedded model's packages are, or its engine cannot run on this CPU (the first
    check of an embedded model loads it in a child process, a few seconds once per machine)."""
    check_credentials(model)
    if model.startswith("local/"):
        from . import _local

        _local.check_engine(model.removeprefix("local/"))


def _alternatives(missing: list[str]) -> bool:
    """litellm lists both GOOGLE_API_KEY and GEMINI_API_KEY for gemini; either one is enough."""
    return set(missing) == {"GOOGLE_API_KEY", "GEMINI_API_KEY"}
