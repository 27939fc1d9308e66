"""Whether the installed llama.cpp can run on this machine, and how: found out once, in a child process.

pip compiles llama-cpp-python with `-march=native`, which turns on every instruction set the CPU
lists. Some of those the operating system does not let a process use: on recent Xeons in a
sandbox, AMX tile state is listed in /proc/cpuinfo but using it is an illegal instruction, and
a wheel from pip's cache may have been compiled on another CPU altogether. Either way the first
matrix product kills the process with SIGILL and no message. So before the first model call,
a child process loads the model and evaluates a few tokens: if it dies of an illegal
instruction, it is tried again without llama.cpp's extra weight buffers (the repacked layouts,
AMX among them), which leaves the build's AVX-512 and AVX2 kernels running. What works is
remembered per engine build, model file and CPU, so the check costs a few seconds once. If
nothing works, `EngineUnusable` says so in one line with the command that rebuilds the engine
for this CPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from atoll.worlds import cache_dir

from ._types import ModelRequestError

PROBE_TIMEOUT_S = 300.0
_PROBE_VERSION = 1  # bump when what the probe exercises changes: old verdicts are then not trusted

# /proc/cpuinfo flags (the kernel lists only what it enables) and the ggml CMake option each allows.
# AMX is never named: a portable build must not depend on the tile state a sandbox may refuse.
_BUILD_OPTIONS = (
    ("avx", "GGML_AVX"),
    ("avx2", "GGML_AVX2"),
    ("fma", "GGML_FMA"),
    ("f16c", "GGML_F16C"),
    ("bmi2", "GGML_BMI2"),
    ("avx_vnni", "GGML_AVX_VNNI"),
    ("avx512f", "GGML_AVX512"),
    ("avx512vbmi", "GGML_AVX512_VBMI"),
    ("avx512_vnni", "GGML_AVX512_VNNI"),
    ("avx512_bf16", "GGML_AVX512_BF16"),
)
_AVX512_BASE = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}  # what GGML_AVX512 compiles for


class EngineUnusable(ModelRequestError):
    """The installed llama.cpp cannot run on this CPU: rebuilding it (the message says how) is the fix."""


class EngineSetup(BaseModel):
    """How the engine runs here, as the probe found it."""

    extra_buffers: bool  # llama.cpp's repacked weight buffers (AMX among them) are safe to use
    system_info: str  # llama.cpp's own list of the instruction sets it was built with
    note: str | None = None  # said once when the engine runs with less than it was built for


class ProbeResult(BaseModel):
    """What one child process did: exit status (negative: killed by that signal) and its output."""

    returncode: int | None  # None: it ran past the timeout
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def illegal_instruction(self) -> bool:
        return self.returncode in (-signal.SIGILL, 128 + signal.SIGILL)

    @property
    def system_info(self) -> str:
        """The first line the probe prints, before any matrix product: the build's instruction sets."""
        return self.stdout.splitlines()[0].strip() if self.stdout.strip() else ""


Probe = Callable[[Path, bool], ProbeResult]


def run_probe(model_path: Path, extra_buffers: bool, *, command: list[str] | None = None) -> ProbeResult:
    """Load `model_path` and evaluate a few tokens in a child process (`command` replaces it in tests)."""
    argv = command or [
        sys.executable,
        "-P",  # not the working directory first on sys.path: a project's own worlds/ folder would shadow ours
        "-m",
        "atoll.harnesses.models._engine_probe",
        str(model_path),
        "--extra-buffers" if extra_buffers else "--no-extra-buffers",
    ]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as expired:
        return ProbeResult(returncode=None, stdout=_text(expired.stdout), stderr=_text(expired.stderr))
    return ProbeResult(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)


def engine_setup(model_path: Path, *, probe: Probe = run_probe) -> EngineSetup:
    """How to run the installed engine with `model_path` here; raises EngineUnusable if it cannot run.

    Probed the first time for each engine build, model file and CPU, then read from the cache.
    """
    remembered = _verdict_path(model_path)
    with contextlib.suppress(OSError, ValidationError, ValueError):
        return EngineSetup.model_validate_json(remembered.read_text())
    full = probe(model_path, True)
    if full.ok:
        setup = EngineSetup(extra_buffers=True, system_info=full.system_info)
    elif full.illegal_instruction and (reduced := probe(model_path, False)).ok:
        setup = EngineSetup(
            extra_buffers=False,
            system_info=reduced.system_info,
            note="llama.cpp's extra weight buffers (AMX) stop with an illegal instruction here: running without them",
        )
    else:
        raise EngineUnusable(_unusable_message(full))
    remembered.parent.mkdir(parents=True, exist_ok=True)
    partial = remembered.with_name(f".{remembered.name}.{os.getpid()}")
    partial.write_text(setup.model_dump_json())
    os.replace(partial, remembered)
    return setup


@contextlib.contextmanager
def extra_buffers(llama_cpp: Any, enabled: bool) -> Iterator[None]:
    """While a `Llama` is constructed, load its weights with or without llama.cpp's extra buffer types.

    `Llama` takes no argument for it: it builds its model parameters from
    `llama_model_default_params()`, so that function's answer is adjusted for the duration.
    """
    if enabled:
        yield
        return
    module = llama_cpp.llama_cpp
    default = module.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        module.llama_model_default_params = default


def cpu_flags() -> set[str]:
    """The instruction-set flags the kernel lists for this CPU (empty where /proc/cpuinfo is absent)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.partition(":")[2].split())
    return set()


def rebuild_command(flags: set[str]) -> str:
    """The pip command that rebuilds llama-cpp-python for the instruction sets this CPU and OS enable."""
    options = ["-DGGML_NATIVE=OFF"]
    if platform.machine() in ("x86_64", "AMD64"):
        avx512 = flags >= _AVX512_BASE
        for flag, option in _BUILD_OPTIONS:
            enabled = flag in flags and (avx512 or not option.startswith("GGML_AVX512"))
            options.append(f"-D{option}={'ON' if enabled else 'OFF'}")
    requirement = f"llama-cpp-python=={_engine_version()}" if _engine_version() else "llama-cpp-python"
    return f'CMAKE_ARGS="{" ".join(options)}" pip install --force-reinstall --no-deps --no-cache-dir "{requirement}"'


def _unusable_message(result: ProbeResult) -> str:
    built = f" (built for: {_compact(result.system_info)})" if result.system_info else ""
    if result.illegal_instruction:
        problem = "stops with an illegal instruction: it was compiled for instructions this CPU or its OS does not run"
    elif result.returncode is None:
        problem = f"did not finish loading the model and reading a few tokens in {PROBE_TIMEOUT_S:g} s"
    elif result.returncode < 0:
        problem = f"crashed with {signal.Signals(-result.returncode).name}"
    else:  # an exception, not the CPU: rebuilding would not help
        last = next((line for line in reversed(result.stderr.splitlines()) if line.strip()), "no message")
        return (
            f"the embedded model's engine, llama.cpp in llama-cpp-python {_engine_version() or '(unknown version)'}, "
            f"could not load the model and read a few tokens: {last.strip()}"
        )
    return (
        f"the embedded model's engine, llama.cpp in llama-cpp-python {_engine_version() or '(unknown version)'}"
        f"{built}, {problem}; rebuild it for this machine: {rebuild_command(cpu_flags())}"
    )


def _compact(system_info: str) -> str:
    """llama.cpp's `CPU : SSE3 = 1 | AVX = 1 | … |` as `SSE3 AVX …` (the features that are on)."""
    on = [part.split("=")[0].strip() for part in system_info.split("|") if part.strip().endswith("= 1")]
    return " ".join(name.split(":")[-1].strip() for name in on) or system_info


def _verdict_path(model_path: Path) -> Path:
    """Where the probe's verdict for this engine build, model file and CPU is kept."""
    digest = hashlib.sha256(f"probe {_PROBE_VERSION}\n".encode())
    for path in _engine_files():
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    stat = model_path.stat()
    digest.update(f"{model_path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    digest.update(_cpu_identity().encode())
    return cache_dir() / "engine" / f"{digest.hexdigest()[:32]}.json"


def _engine_files() -> list[Path]:
    """llama-cpp-python's compiled libraries, found without importing it (a broken build must not run here)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    return sorted(
        path for path in root.rglob("*") if path.is_file() and (".so" in path.name or path.suffix == ".dylib")
    )


def _cpu_identity() -> str:
    names = ""
    with contextlib.suppress(OSError):
        names = next(
            (
                line
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    return f"{platform.machine()}\0{names}\0{' '.join(sorted(cpu_flags()))}"


def _engine_version() -> str | None:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""
