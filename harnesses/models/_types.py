"""The shapes every model call speaks, whatever answers it (litellm, the local model, a script)."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from atoll.worlds import RUN_FAILED, USAGE_ERROR, AtollError

# The embedded default: the smallest embedded model that acts (calls tools on its own chat template), so a
# harness change can move it; docs/models.md gives the figures behind the choice.
LOCAL_DEFAULT_MODEL = "local/qwen2.5-coder-1.5b"


class ModelParams(BaseModel):
    """Sampling parameters of one call; all but `timeout_s` are part of the response cache key."""

    temperature: float = 0.0
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = Field(default=None, description="None: derived from the sample index.")
    timeout_s: float = Field(default=120.0, description="Per attempt; retries get a fresh timeout.")
    tool_choice: Literal["required"] | None = Field(
        default=None,
        description="`required`: the answer must be a tool call (the provider's tool_choice; an embedded "
        "model's turn is opened with its call prefix). None: the model chooses.",
    )


class ToolCall(BaseModel):
    """One native tool call; `arguments` is the raw JSON text the model wrote, parsed by the caller."""

    id: str
    name: str
    arguments: str


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ModelResponse(BaseModel):
    """A model's answer with its accounting; `cached` says it was replayed (then `latency_s` is 0)."""

    model: str
    content: str | None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    sample: int = 0


class ModelUsage(BaseModel):
    """What model calls cost, summed: the one record of spend, from an episode to a proposer to a run.
    (`Usage` is one answer's token count, as providers report it; this adds answers up.)"""

    model_calls: int = 0
    cached_calls: int = 0  # replayed from the response cache: counted, but they cost no time or money
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, response: ModelResponse) -> None:
        """Count one answer."""
        self.model_calls += 1
        self.cached_calls += int(response.cached)
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        self.cost_usd += response.cost_usd

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(**{field: getattr(self, field) + getattr(other, field) for field in _USAGE_FIELDS})

    def __sub__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(**{field: getattr(self, field) - getattr(other, field) for field in _USAGE_FIELDS})


_USAGE_FIELDS = tuple(ModelUsage.model_fields)


class ModelRequest(BaseModel):
    """Everything that decides an answer: what the cache keys on and what a scripted model is shown."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    params: ModelParams = Field(default_factory=ModelParams)
    sample: int = 0

    @property
    def seed(self) -> int:
        """The sampling seed: the explicit one, else the sample index, so samples differ but replay."""
        return self.params.seed if self.params.seed is not None else self.sample


@runtime_checkable
class Model(Protocol):
    """Anything the agent, the proposer or the simulated user can ask for a completion."""

    name: str

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        params: ModelParams | None = None,
        sample: int = 0,
    ) -> ModelResponse: ...


class ModelError(AtollError):
    """A model call failed; the subclass says whether waiting or fixing the request helps."""

    exit_code = RUN_FAILED


class ModelUnavailable(ModelError):
    """The provider stayed rate-limited, down or too slow through every retry."""


class ModelRequestError(ModelError):
    """The provider refused the request itself (bad request, auth, unknown model): retrying won't help."""

    exit_code = USAGE_ERROR


class NetworkModelsDisabled(ModelRequestError):
    """A network model was called while ATOLL_NO_NETWORK_MODELS=1 (the test suite's guard)."""


class MissingCredentials(ModelError):
    """The chosen model needs an API key (or other setting) that the environment lacks."""

    exit_code = USAGE_ERROR
