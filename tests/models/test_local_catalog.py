"""The embedded models' descriptions, their assembly and the `local/…` provider, with no model loaded."""

import dataclasses
import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest

from atoll.harnesses.models import ModelParams, ModelRequestError, _local, get_model, local_protocol
from atoll.harnesses.models._catalog import CATALOG, LocalModel, WeightPart, local_model
from atoll.harnesses.models._engine import EngineSetup
from atoll.harnesses.models._litellm import load
from atoll.harnesses.models._snapshots import Snapshot, Snapshots

ROOT = Path(__file__).resolve().parents[2]
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("get_order", "track_shipment")
]
ASK = [
    {"role": "system", "content": "You are the support desk."},
    {"role": "user", "content": "Where is my parcel? ORD-1042."},
]


# -- the descriptions -------------------------------------------------------------------------


def test_both_embedded_models_are_described_and_each_protocol_fits_its_tool_call_format():
    assert set(CATALOG) >= {"gemma-3-270m", "qwen2.5-coder-0.5b"}
    for model in CATALOG.values():
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256), model.name
        assert model.size > 0 and model.parts and model.source
        assert model.file.endswith(".gguf")
        # A model that cannot write tool calls must be driven by the text protocol, and vice versa.
        assert (model.protocol == "native") == (model.tool_calls != "none"), model.name
        assert model.tool_calls == "none" or model.prompt == "chat", model.name


def test_the_protocol_comes_from_the_description_for_local_models_only():
    assert local_protocol("local/qwen2.5-coder-0.5b") == "native"
    assert local_protocol("local/gemma-3-270m") == "text"
    assert local_protocol("local/llama-9000") is None
    assert local_protocol("openai/gpt-4o-mini") is None


def test_a_description_is_found_with_or_without_the_prefix_and_an_unknown_name_lists_the_known():
    assert local_model("local/qwen2.5-coder-0.5b") is local_model("qwen2.5-coder-0.5b")
    with pytest.raises(ModelRequestError, match="local/gemma-3-270m, local/qwen2.5-coder-0.5b"):
        local_model("llama-9000")


def test_every_requirement_of_a_description_is_pinned_in_the_local_extra_and_every_pin_is_used():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    pinned = {line for line in extra if "==" in line}
    required = {req for model in CATALOG.values() for req in model.requirements}

    assert required == pinned
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", req) for req in required)


def test_the_models_page_names_every_model_its_sha256_and_its_packages():
    page = (ROOT / "docs" / "models.md").read_text()

    for model in CATALOG.values():
        assert f"local/{model.name}" in page
        assert model.sha256 in page
        for requirement in model.requirements:
            assert requirement.split("==")[0] in page


# -- assembly ---------------------------------------------------------------------------------


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Two installed 'packages' holding the pieces of a tiny model file, and its description."""
    chunks = [b"GGUF" + bytes(range(256)) * 50, b"the rest of the weights"]
    for i, chunk in enumerate(chunks, 1):
        data = tmp_path / "site" / f"atoll_fake_part{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("raise RuntimeError('a part package is never imported')\n")
        (data / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(chunks)
    model = LocalModel(
        name="fake-1b",
        file="fake-1b.gguf",
        source="made up by the test",
        requirements=("atoll-fake-part1==1.0", "atoll-fake-part2==1.0"),
        parts=tuple(WeightPart(f"atoll_fake_part{i}", f"data/part{i:02d}.bin") for i in (1, 2)),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        prompt="chat",
        tool_calls="hermes",
        protocol="native",
    )
    monkeypatch.setitem(CATALOG, model.name, model)
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    return model, whole


def test_the_parts_are_assembled_in_order_into_the_cache_once(fake_parts, tmp_path, monkeypatch):
    _, whole = fake_parts

    path = _local.gguf_path("fake-1b")

    assert path == tmp_path / "cache" / "models" / "fake-1b.gguf"
    assert path.read_bytes() == whole
    assert [p.name for p in path.parent.iterdir()] == ["fake-1b.gguf"]  # no partial file left behind
    monkeypatch.setattr(_local, "assemble", lambda *_: pytest.fail("assembled twice"))
    assert _local.gguf_path("fake-1b") == path


def test_a_file_of_the_wrong_size_in_the_cache_is_assembled_again(fake_parts):
    _, whole = fake_parts
    path = _local.gguf_path("fake-1b")
    path.write_bytes(whole[:100])

    assert _local.gguf_path("fake-1b").read_bytes() == whole


def test_parts_that_hash_wrong_are_refused_with_both_hashes_and_leave_no_file(
    fake_parts, tmp_path, monkeypatch
):
    model, _ = fake_parts
    wrong = dataclasses.replace(model, sha256="0" * 64)
    monkeypatch.setitem(CATALOG, model.name, wrong)

    with pytest.raises(ModelRequestError, match="sha256") as refused:
        _local.gguf_path("fake-1b")

    assert "0" * 64 in str(refused.value) and model.sha256 in str(refused.value)
    assert "atoll-fake-part1==1.0 atoll-fake-part2==1.0" in str(refused.value)
    assert not list((tmp_path / "cache" / "models").iterdir())


def test_a_missing_part_package_names_the_pinned_requirements(fake_parts, monkeypatch):
    model, _ = fake_parts
    missing = dataclasses.replace(model, parts=(WeightPart("atoll_no_such_part", "x.bin"),))
    monkeypatch.setitem(CATALOG, model.name, missing)

    with pytest.raises(ModelRequestError, match=r"pip install -e '\.\[local\]'.*atoll_no_such_part"):
        _local.gguf_path("fake-1b")


# -- the provider, with the engine stubbed --------------------------------------------------


@pytest.fixture
def engine(monkeypatch):
    """Stands in for llama.cpp: answers with the text the test sets, records what it was asked."""
    load()

    class Engine:
        def __init__(self):
            self.text = ""
            self.requests = []

        def __call__(self, name, messages, **kwargs):
            self.requests.append((name, messages, kwargs))
            return _local.LocalCompletion(
                text=self.text, finish_reason="stop", prompt_tokens=50, completion_tokens=9
            )

    stub = Engine()
    monkeypatch.setattr(_local, "generate", stub)
    monkeypatch.setattr(_local, "check_available", lambda name: None)
    return stub


async def test_a_native_local_model_answers_with_tool_calls_read_from_its_text(engine):
    engine.text = (
        '<tool_call>\n{"name": "track_shipment", "arguments": {"order_id": "ORD-1042"}}\n</tool_call>'
    )

    response = await get_model("local/qwen2.5-coder-0.5b").complete(ASK, tools=TOOLS)

    assert response.content is None
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_2_0", "track_shipment", {"order_id": "ORD-1042"})
    ]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.cost_usd) == (50, 9, 0.0)
    name, messages, kwargs = engine.requests[0]
    assert (name, messages, kwargs["tools"]) == ("qwen2.5-coder-0.5b", ASK, TOOLS)


async def test_a_native_local_model_offered_tools_stops_at_the_end_of_its_first_call(engine):
    engine.text = (
        '<tool_call>\n{"name": "track_shipment", "arguments": {"order_id": "ORD-1042"}}\n'  # stopped
    )

    response = await get_model("local/qwen2.5-coder-0.5b").complete(ASK, tools=TOOLS)
    await get_model("local/qwen2.5-coder-0.5b").complete(ASK)

    assert [c.name for c in response.tool_calls] == ["track_shipment"]
    with_tools, without = (kwargs["stop"] for _, _, kwargs in engine.requests)
    assert with_tools == ["</tool_call>"] and without is None  # no tools, no call to end


async def test_a_required_call_opens_the_embedded_model_s_answer_with_its_call_prefix(engine):
    engine.text = '<tool_call>\n{"name": "track_shipment", "arguments": {"order_id": "ORD-1042"}}\n'
    forced = ModelParams(tool_choice="required")

    response = await get_model("local/qwen2.5-coder-0.5b").complete(ASK, tools=TOOLS, params=forced)
    await get_model("local/qwen2.5-coder-0.5b").complete(ASK, tools=TOOLS)

    assert [c.name for c in response.tool_calls] == ["track_shipment"]
    forced_kwargs, free_kwargs = (kwargs for _, _, kwargs in engine.requests)
    assert forced_kwargs["opening"] == '<tool_call>\n{"name": "' and free_kwargs["opening"] == ""


async def test_a_native_local_model_s_plain_answer_is_its_reply(engine):
    engine.text = "Your parcel is out for delivery."

    response = await get_model("local/qwen2.5-coder-0.5b").complete(ASK, tools=TOOLS)

    assert (response.content, response.tool_calls, response.finish_reason) == (
        "Your parcel is out for delivery.",
        [],
        "stop",
    )


async def test_without_tools_a_native_local_model_s_text_is_never_read_as_a_call(engine):
    engine.text = '{"name": "get_order", "arguments": {}}'

    response = await get_model("local/qwen2.5-coder-0.5b").complete(ASK)

    assert response.content == engine.text and response.tool_calls == []


async def test_a_text_protocol_model_refuses_tools_and_says_to_use_the_text_protocol(engine):
    with pytest.raises(ModelRequestError, match="text protocol"):
        await get_model("local/gemma-3-270m").complete(ASK, tools=TOOLS)
    assert engine.requests == []


# -- the engine's reuse of evaluated segments, on a stand-in for llama.cpp --------------------


class Ids(list):
    """A list with numpy's `tolist`, also on its slices."""

    def __getitem__(self, index):
        found = super().__getitem__(index)
        return Ids(found) if isinstance(index, slice) else found

    def tolist(self):
        return list(self)


class FakeLlama:
    """What `_prime` and `_load` use of a Llama: a token context with evaluation, reset and close."""

    def __init__(self, model_path="", n_ctx=64, n_threads=1, verbose=False):
        self.model_path = model_path
        self.metadata = {"tokenizer.chat_template": "{{ messages[0].content }}"}
        self.input_ids = Ids([0] * n_ctx)
        self.n_tokens = 0
        self.evals = []
        self.closed = False
        self._ctx = self

    def kv_cache_seq_rm(self, seq, start, end):
        return True

    def kv_cache_clear(self):
        self.n_tokens = 0

    def eval(self, tokens):
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.evals.append(list(tokens))

    def reset(self):
        self.n_tokens = 0

    def tokenize(self, text, add_bos=False, special=False):
        return [len(text)]

    def close(self):
        self.closed = True


def primed():
    return _local._Loaded(model=CATALOG["qwen2.5-coder-0.5b"], llama=FakeLlama())


@pytest.fixture(autouse=True)
def fake_states(monkeypatch):
    """llama.cpp's state copies on the stand-in: a state is the tokens it holds; restores are counted."""
    restored = []
    monkeypatch.setattr(_local, "_save_kv", lambda llama: bytes(llama.input_ids[: llama.n_tokens]))
    monkeypatch.setattr(_local, "_load_kv", lambda llama, data: restored.append(list(data)))
    return restored


def test_a_conversation_interrupted_by_another_agent_is_restored_not_read_again(fake_states):
    loaded = primed()
    triage, refunds = [[1, 2, 3], [4]], [[7, 7, 7, 7], [8]]
    _local._prime(loaded, triage)
    loaded.llama.eval([5, 6])  # its answer
    _local._prime(loaded, refunds)  # the hand-off: another head

    _local._prime(loaded, [*triage, [5, 6, 9]])  # back to the caller, with the sub-agent's answer

    assert fake_states == [[1, 2, 3, 4]]  # the caller's state came back, cut where its segments end
    assert loaded.llama.evals == [[1, 2, 3], [4], [5, 6], [7, 7, 7, 7], [8], [5, 6, 9]]
    assert loaded.llama.input_ids[:7] == [1, 2, 3, 4, 5, 6, 9] and loaded.bounds == [3, 4, 7]


def test_the_next_episode_restores_each_agents_head_from_its_snapshot(fake_states):
    loaded = primed()
    _local._prime(loaded, [[1, 2, 3], [4]])
    _local._prime(loaded, [[7, 7, 7, 7], [8]])
    _local._prime(loaded, [[1, 2, 3], [5]])  # episode 2, entry agent: its head, another opening

    _local._prime(loaded, [[7, 7, 7, 7], [6]])  # and its sub-agent

    assert loaded.llama.evals == [[1, 2, 3], [4], [7, 7, 7, 7], [8], [5], [6]]


def test_snapshots_keep_the_most_recently_used_within_their_budget():
    snapshots = Snapshots(budget=8)
    for first in (1, 2, 3):
        snapshots.put(Snapshot(tokens=(first, 0, 0, 0), bounds=(4,), data=bytes(4)))

    assert len(snapshots) == 2
    assert snapshots.best([4], [1, 0, 0, 0]) == (None, 0)  # the oldest went first
    found, held = snapshots.best([4, 6], [3, 0, 0, 0, 5, 5])
    assert held == 1 and found.tokens == (3, 0, 0, 0)
    assert snapshots.best([2, 4], [3, 0, 0, 0]) == (
        None,
        0,
    )  # the same tokens cut elsewhere: not the same state


def test_segments_already_evaluated_are_reused_and_only_the_new_ones_evaluated():
    loaded = primed()
    _local._prime(loaded, [[1, 2, 3], [4, 5]])
    loaded.llama.eval([6, 7])  # what create_completion adds: the last segment and the answer

    _local._prime(loaded, [[1, 2, 3], [4, 5], [6, 8]])

    assert loaded.llama.evals == [[1, 2, 3], [4, 5], [6, 7], [6, 8]]
    assert loaded.llama.n_tokens == 7 and loaded.bounds == [3, 5, 7]


def test_a_changed_segment_is_evaluated_again_from_the_last_one_that_matches():
    loaded = primed()
    _local._prime(loaded, [[1, 2, 3], [4, 5]])

    _local._prime(loaded, [[1, 2, 3], [9]])

    assert loaded.llama.evals == [[1, 2, 3], [4, 5], [9]]
    assert loaded.llama.input_ids[:4] == [1, 2, 3, 9]


def test_the_same_tokens_cut_differently_are_evaluated_afresh_so_answers_never_depend_on_the_cut():
    loaded = primed()
    _local._prime(loaded, [[1, 2, 3], [4, 5]])

    _local._prime(loaded, [[1, 2], [3, 4, 5]])

    assert loaded.llama.evals[2:] == [[1, 2], [3, 4, 5]]


def test_no_segments_to_prime_leaves_an_empty_context():
    loaded = primed()
    _local._prime(loaded, [[1, 2, 3]])

    _local._prime(loaded, [])

    assert loaded.llama.n_tokens == 0 and loaded.bounds == []


def test_one_model_is_held_at_a_time(monkeypatch, tmp_path):
    made = []

    def llama(**kwargs):
        made.append(FakeLlama(**kwargs))
        return made[-1]

    monkeypatch.setattr(_local, "_llama_cpp", lambda: type("llama_cpp", (), {"Llama": staticmethod(llama)}))
    monkeypatch.setattr(_local, "gguf_path", lambda name: tmp_path / f"{name}.gguf")
    monkeypatch.setattr(
        _local._engine, "engine_setup", lambda path: EngineSetup(extra_buffers=True, system_info="")
    )
    monkeypatch.setattr(_local, "_loaded", None)

    gemma = _local._load("gemma-3-270m")
    assert _local._load("gemma-3-270m") is gemma
    qwen = _local._load("qwen2.5-coder-0.5b")

    assert [m.closed for m in made] == [True, False]
    assert (gemma.template, qwen.template is not None) == (None, True)
    assert qwen.llama.model_path.endswith("qwen2.5-coder-0.5b.gguf")
    _local._close()
    assert made[1].closed and _local._loaded is None


def test_an_embedded_model_s_answers_are_cached_under_its_engine_revision():
    from atoll.harnesses.models._catalog import ENGINE_REVISION

    assert get_model("local/gemma-3-270m").cache_options() == {"engine": ENGINE_REVISION}
    assert get_model("openai/gpt-4o-mini").cache_options() == {}
