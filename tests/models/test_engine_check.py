"""The engine check: an engine that dies of an illegal instruction is a one-line error, never a signal."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from atoll.harnesses.models import EngineUnusable
from atoll.harnesses.models._engine import ProbeResult, engine_setup, rebuild_command, run_probe

SYSTEM_INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 |"
KILLED = ProbeResult(returncode=-signal.SIGILL, stdout=SYSTEM_INFO + "\n")
WORKS = ProbeResult(returncode=0, stdout=SYSTEM_INFO + "\n")


class Probes:
    """A scripted probe: answers per `extra_buffers`, and counts the child processes it stood for."""

    def __init__(self, full: ProbeResult, reduced: ProbeResult | None = None) -> None:
        self.answers = {True: full, False: reduced}
        self.calls: list[bool] = []

    def __call__(self, path: Path, extra_buffers: bool) -> ProbeResult:
        self.calls.append(extra_buffers)
        answer = self.answers[extra_buffers]
        assert answer is not None, "the probe ran a configuration it should not have"
        return answer


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def test_an_engine_that_runs_is_probed_once_and_then_remembered(gguf):
    probes = Probes(WORKS)

    first = engine_setup(gguf, probe=probes)
    again = engine_setup(gguf, probe=probes)

    assert first.extra_buffers and first.note is None
    assert again == first
    assert probes.calls == [True]  # the verdict was read back, not probed again


def test_an_engine_whose_amx_buffers_trap_runs_without_them_and_says_so(gguf):
    probes = Probes(KILLED, WORKS)

    setup = engine_setup(gguf, probe=probes)

    assert probes.calls == [True, False]
    assert setup.extra_buffers is False
    assert "illegal instruction" in setup.note


def test_an_engine_that_cannot_run_at_all_is_one_line_naming_the_problem_and_the_rebuild(gguf):
    with pytest.raises(EngineUnusable) as caught:
        engine_setup(gguf, probe=Probes(KILLED, KILLED))

    message = str(caught.value)
    assert "\n" not in message
    assert "illegal instruction" in message
    assert "AVX512 AMX_INT8" in message  # what the build was compiled for, from the probe's first line
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in message
    assert "pip install --force-reinstall --no-deps --no-cache-dir" in message
    assert caught.value.exit_code == 2


def test_a_verdict_of_failure_is_not_remembered(gguf):
    with pytest.raises(EngineUnusable):
        engine_setup(gguf, probe=Probes(KILLED, KILLED))

    assert engine_setup(gguf, probe=Probes(WORKS)).extra_buffers  # after a rebuild, it is probed afresh


def test_a_probe_that_fails_otherwise_names_its_last_words(gguf):
    broken = ProbeResult(returncode=1, stderr="Traceback ...\nValueError: Failed to load model from file\n")

    with pytest.raises(EngineUnusable) as caught:
        engine_setup(gguf, probe=Probes(broken))

    assert str(caught.value).endswith(
        "could not load the model and read a few tokens: ValueError: Failed to load model from file"
    )
    assert "rebuild" not in str(caught.value)  # not the CPU's fault: a rebuild would not help


def test_a_child_killed_by_sigill_is_seen_as_an_illegal_instruction(gguf):
    suicide = [
        sys.executable,
        "-c",
        "import os, signal; print('CPU : AVX = 1 |', flush=True); os.kill(os.getpid(), signal.SIGILL)",
    ]

    result = run_probe(gguf, True, command=suicide)

    assert result.illegal_instruction
    assert result.system_info == "CPU : AVX = 1 |"


def test_the_rebuild_command_asks_only_for_what_the_cpu_enables_and_never_amx(monkeypatch):
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    avx2_only = rebuild_command({"avx", "avx2", "fma", "f16c", "bmi2", "avx512_vnni", "amx_tile", "amx_int8"})
    full = rebuild_command(
        {
            "avx",
            "avx2",
            "fma",
            "f16c",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512dq",
            "avx512cd",
            "avx512_vnni",
        }
    )

    assert "-DGGML_AVX2=ON" in avx2_only
    assert "-DGGML_AVX512=OFF" in avx2_only and "-DGGML_AVX512_VNNI=OFF" in avx2_only  # no AVX-512 base
    assert "-DGGML_AVX512=ON" in full and "-DGGML_AVX512_VNNI=ON" in full and "-DGGML_AVX512_BF16=OFF" in full
    assert "AMX" not in avx2_only + full


def test_the_cli_stops_with_exit_2_and_one_line_before_the_first_episode(tmp_path, monkeypatch):
    """`optimize try` on the embedded model, with an engine that cannot run here (a child that dies of
    SIGILL stands for it): one line on stderr, exit 2, no traceback, and no episode played."""
    script = tmp_path / "engine_dies.py"
    script.write_text(
        "import os, signal, sys\n"
        "from atoll.harnesses.models import _engine, _local\n"
        "_local.check_available = lambda name: None\n"
        f"_local.gguf_path = lambda name: __import__('pathlib').Path({str(tmp_path / 'm.gguf')!r})\n"
        "dies = [sys.executable, '-c', 'import os, signal; os.kill(os.getpid(), signal.SIGILL)']\n"
        "_engine.run_probe.__kwdefaults__['command'] = dies\n"
        "from atoll.cli import app\n"
        "app(['try', 'harnesses/support_agent', '-m', 'Where is ORD-1042?', '--model', 'local/gemma-3-270m'])\n"
    )
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=root
    )

    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "illegal instruction" in lines[0] and "rebuild it for this machine" in lines[0]
    assert "Traceback" not in done.stderr
