import subprocess
import sys

import pytest

from atoll.harnesses.models import LOCAL_DEFAULT_MODEL, MissingCredentials, check_credentials, resolve_model


def test_the_model_option_wins_over_the_environment_and_the_harness(monkeypatch):
    monkeypatch.setenv("ATOLL_MODEL", "openai/gpt-4o-mini")

    assert resolve_model("anthropic/claude-3-5-haiku-latest", LOCAL_DEFAULT_MODEL) == (
        "anthropic/claude-3-5-haiku-latest"
    )


def test_atoll_model_wins_over_the_harness_default(monkeypatch):
    monkeypatch.setenv("ATOLL_MODEL", "openai/gpt-4o-mini")

    assert resolve_model(None, LOCAL_DEFAULT_MODEL) == "openai/gpt-4o-mini"


def test_without_option_or_environment_the_harness_default_is_used(monkeypatch):
    monkeypatch.delenv("ATOLL_MODEL", raising=False)

    assert resolve_model(None, LOCAL_DEFAULT_MODEL) == LOCAL_DEFAULT_MODEL


def test_a_missing_api_key_is_named_in_one_line_with_the_local_way_out(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(MissingCredentials) as caught:
        check_credentials("openai/gpt-4o-mini")

    message = str(caught.value)
    assert "OPENAI_API_KEY" in message
    assert f"--model {LOCAL_DEFAULT_MODEL}" in message
    assert "\n" not in message


def test_a_model_whose_key_is_set_passes(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")

    check_credentials("anthropic/claude-3-5-haiku-latest")


def test_gemini_asks_for_either_of_its_keys(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    with pytest.raises(
        MissingCredentials, match=r"GOOGLE_API_KEY or GEMINI_API_KEY|GEMINI_API_KEY or GOOGLE"
    ):
        check_credentials("gemini/gemini-2.0-flash")


def test_a_local_server_without_a_configured_address_needs_no_credentials(monkeypatch):
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)

    check_credentials("ollama_chat/llama3.2")


def test_local_and_scripted_models_need_nothing_and_do_not_import_litellm():
    code = (
        "import sys, atoll.harnesses.models as m\n"
        "m.check_credentials('local/gemma-3-270m'); m.check_credentials('scripted')\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
