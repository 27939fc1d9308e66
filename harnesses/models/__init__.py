"""Atoll's model layer: every model call (agent, proposer, simulated user) goes through here.

The public API is exactly what `__all__` lists. litellm is imported only when a model is
first called, so importing this package is cheap.
"""

from ._cache import ResponseCache
from ._catalog import local_protocol
from ._client import NO_NETWORK_ENV, LiteLLMModel, get_model
from ._engine import EngineUnusable
from ._resolve import MODEL_ENV, check_credentials, check_model, resolve_model
from ._scripted import ScriptedModel, ScriptExhausted
from ._types import (
    LOCAL_DEFAULT_MODEL,
    MissingCredentials,
    Model,
    ModelError,
    ModelParams,
    ModelRequest,
    ModelRequestError,
    ModelResponse,
    ModelUnavailable,
    ModelUsage,
    NetworkModelsDisabled,
    ToolCall,
    Usage,
)

__all__ = [
    "LOCAL_DEFAULT_MODEL",
    "MODEL_ENV",
    "NO_NETWORK_ENV",
    "EngineUnusable",
    "LiteLLMModel",
    "MissingCredentials",
    "Model",
    "ModelError",
    "ModelParams",
    "ModelRequest",
    "ModelRequestError",
    "ModelResponse",
    "ModelUnavailable",
    "ModelUsage",
    "NetworkModelsDisabled",
    "ResponseCache",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "check_credentials",
    "check_model",
    "get_model",
    "local_protocol",
    "resolve_model",
]
