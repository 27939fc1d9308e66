import multiprocessing
from concurrent.futures import ThreadPoolExecutor

from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses.models import ModelParams, ModelRequest, ModelResponse, ResponseCache, Usage


def _request(text="hello", sample=0, **params):
    return ModelRequest(
        messages=[{"role": "user", "content": text}], params=ModelParams(**params), sample=sample
    )


def _response(text="hi"):
    return ModelResponse(
        model="openai/gpt-4o-mini",
        content=text,
        finish_reason="stop",
        usage=Usage(prompt_tokens=7, completion_tokens=2),
        cost_usd=0.001,
        latency_s=1.5,
    )


def test_a_stored_answer_comes_back_marked_cached_with_its_cost(tmp_path):
    cache = ResponseCache(tmp_path / "calls.sqlite")
    key = ResponseCache.key("openai/gpt-4o-mini", _request())

    cache.put(key, "openai/gpt-4o-mini", _request(), _response())
    hit = cache.get(key)

    assert hit is not None
    assert hit.content == "hi"
    assert hit.cached is True
    assert hit.latency_s == 0.0
    assert hit.cost_usd == 0.001
    assert hit.usage.prompt_tokens == 7


def test_an_unknown_key_is_a_miss(tmp_path):
    assert ResponseCache(tmp_path / "calls.sqlite").get("0" * 64) is None


def test_the_first_answer_stored_under_a_key_wins(tmp_path):
    cache = ResponseCache(tmp_path / "calls.sqlite")
    key = ResponseCache.key("m", _request())

    cache.put(key, "m", _request(), _response("first"))
    cache.put(key, "m", _request(), _response("second"))

    assert cache.get(key).content == "first"
    assert len(cache) == 1


def test_the_cache_survives_reopening(tmp_path):
    key = ResponseCache.key("m", _request())
    ResponseCache(tmp_path / "calls.sqlite").put(key, "m", _request(), _response())

    assert ResponseCache(tmp_path / "calls.sqlite").get(key).content == "hi"


def test_the_default_cache_lives_under_atoll_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path))

    assert ResponseCache.default().path == tmp_path / "model_calls.sqlite"


@given(text=st.text(max_size=50), sample=st.integers(0, 1000), temperature=st.floats(0, 2))
def test_keys_differ_by_sample_and_ignore_the_timeout(text, sample, temperature):
    key = ResponseCache.key("m", _request(text, sample, temperature=temperature))

    assert key == ResponseCache.key("m", _request(text, sample, temperature=temperature, timeout_s=5))
    assert key != ResponseCache.key("m", _request(text, sample + 1, temperature=temperature))
    assert key != ResponseCache.key("other", _request(text, sample, temperature=temperature))


def test_keys_depend_on_tools_and_options_but_never_on_the_api_key():
    plain = _request()
    with_tools = plain.model_copy(update={"tools": [{"type": "function", "function": {"name": "f"}}]})

    assert ResponseCache.key("m", plain) != ResponseCache.key("m", with_tools)
    assert ResponseCache.key("m", plain, {"api_base": "http://a"}) != ResponseCache.key("m", plain)
    assert ResponseCache.key("m", plain, {"api_key": "sk-1"}) == ResponseCache.key(
        "m", plain, {"api_key": "sk-2"}
    )


def test_many_threads_share_one_cache(tmp_path):
    cache = ResponseCache(tmp_path / "calls.sqlite")

    def write_and_read(i):
        key = ResponseCache.key("m", _request(sample=i))
        cache.put(key, "m", _request(sample=i), _response(f"answer {i}"))
        return cache.get(key).content

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(write_and_read, range(64)))

    assert answers == [f"answer {i}" for i in range(64)]
    assert len(cache) == 64


def _write_from_another_process(path, start):
    cache = ResponseCache(path)
    for i in range(start, start + 25):
        cache.put(
            ResponseCache.key("m", _request(sample=i)), "m", _request(sample=i), _response(f"answer {i}")
        )


def test_several_processes_write_one_cache(tmp_path):
    path = tmp_path / "calls.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_from_another_process, args=(path, s)) for s in (0, 25, 50)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    assert [w.exitcode for w in workers] == [0, 0, 0]
    cache = ResponseCache(path)
    assert len(cache) == 75
    assert cache.get(ResponseCache.key("m", _request(sample=60))).content == "answer 60"


def test_a_request_without_tool_choice_keeps_the_key_it_had_before_the_setting_existed():
    import hashlib
    import json

    request = _request()
    before = {
        "model": "m",
        "messages": request.messages,
        "tools": request.tools,
        "params": request.params.model_dump(exclude={"timeout_s", "tool_choice"}),
        "sample": request.sample,
    }
    canonical = json.dumps(before, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    assert ResponseCache.key("m", request) == hashlib.sha256(canonical.encode()).hexdigest()
    forced = request.model_copy(
        update={"params": request.params.model_copy(update={"tool_choice": "required"})}
    )
    assert ResponseCache.key("m", forced) != ResponseCache.key("m", request)
