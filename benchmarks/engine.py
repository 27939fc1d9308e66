"""Prompt and generation tokens per second of each embedded model, per llama.cpp build, side by side.

The build a user gets is the installed one (`pip install -e '.[local]'` compiles llama.cpp with
`-march=native`; the engine check drops its AMX buffers where the OS refuses them). It is compared
with a portable AVX2-only build, compiled once into `$ATOLL_CACHE_DIR/bench-engines/avx2` (about ten
minutes on two cores) unless `--avx2 DIR` names a folder a wheel was installed into with
`pip install --target`. Each measurement is a child process that loads one model in one build, reads a
fixed prompt of --prompt-tokens tokens in one batch and generates --gen-tokens tokens greedily; builds
and models are interleaved, --repeats times, and the medians are printed. Nothing else should use the
cores while it runs.

Run: python benchmarks/engine.py [--models local/gemma-3-270m ...] [--repeats 3] [--avx2 DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from atoll.harnesses.models._catalog import CATALOG
from atoll.harnesses.models._engine import engine_setup
from atoll.harnesses.models._local import check_available, gguf_path
from atoll.worlds import cache_dir

ROOT = Path(__file__).resolve().parents[1]
AVX2_FLAGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

# The child: one model, one build; prints {"prompt_tps", "gen_tps", "system_info"}.
CHILD = r"""
import json, sys, time
import llama_cpp
from atoll.harnesses.models._engine import extra_buffers
path, prompt_tokens, gen_tokens, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
with extra_buffers(llama_cpp, extra):
    llama = llama_cpp.Llama(model_path=path, n_ctx=prompt_tokens + gen_tokens + 16, n_threads=2,
                            n_batch=prompt_tokens, verbose=False)
text = b"The customer asks where order ORD-1042 is, and the agent looks it up before replying. " * 64
prompt = llama.tokenize(text, add_bos=True)[:prompt_tokens]
began = time.perf_counter()
llama.eval(prompt)
read = time.perf_counter() - began
began = time.perf_counter()
for _ in range(gen_tokens):
    token = llama.sample(temp=0.0)
    llama.eval([token])
wrote = time.perf_counter() - began
llama.close()
print(json.dumps({"prompt_tps": len(prompt) / read, "gen_tps": gen_tokens / wrote,
                  "system_info": llama_cpp.llama_print_system_info().decode()}))
"""


def avx2_build(folder: Path | None) -> Path:
    """A folder holding llama-cpp-python built for AVX2 only, compiled here the first time."""
    if folder is not None:
        return folder
    folder = cache_dir() / "bench-engines" / "avx2"
    if (folder / "llama_cpp").is_dir():
        return folder
    version = _installed_version()
    print(
        f"compiling llama-cpp-python=={version} for AVX2 into {folder} (about ten minutes) ...",
        file=sys.stderr,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-cache-dir",
            "--target",
            str(folder),
            f"llama-cpp-python=={version}",
        ],
        check=True,
        env={**os.environ, "CMAKE_ARGS": AVX2_FLAGS},
    )
    return folder


def measure(model: Path, build: Path | None, extra: bool, prompt_tokens: int, gen_tokens: int) -> dict:
    env = {
        **os.environ,
        "OMP_WAIT_POLICY": "PASSIVE",
        "PYTHONPATH": os.pathsep.join([str(build)] * (build is not None) + [str(ROOT)]),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), str(prompt_tokens), str(gen_tokens), "1" if extra else "0"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the measurement died ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _installed_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("llama-cpp-python")


def _features(system_info: str) -> str:
    on = [part.split("=")[0].strip() for part in system_info.split("|") if part.strip().endswith("= 1")]
    return " ".join(name.split(":")[-1].strip() for name in on if name.split(":")[-1].strip() != "REPACK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=[f"local/{name}" for name in CATALOG])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=32)
    parser.add_argument(
        "--avx2", type=Path, default=None, help="a folder llama-cpp-python (AVX2) is installed in"
    )
    args = parser.parse_args()

    models = {}
    for name in args.models:
        try:
            check_available(name.removeprefix("local/"))
        except Exception as error:  # a model whose package is missing is skipped, saying so
            print(f"skipping {name}: {error}", file=sys.stderr)
            continue
        models[name] = gguf_path(name.removeprefix("local/"))
    builds: dict[str, Path | None] = {"installed": None, "avx2": avx2_build(args.avx2)}
    extras = {name: engine_setup(path).extra_buffers for name, path in models.items()}
    samples: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.repeats):
        for name, path in models.items():
            for build, folder in builds.items():
                result = measure(path, folder, extras[name], args.prompt_tokens, args.gen_tokens)
                samples.setdefault((name, build), []).append(result)

    console = Console()
    for build, folder in builds.items():
        info = next(s[0]["system_info"] for (_, b), s in samples.items() if b == build)
        console.print(f"{build}: {folder or 'this virtualenv'} — {_features(info)}")
    table = Table(
        title=f"tokens per second, median of {args.repeats} (prompt {args.prompt_tokens}, generated "
        f"{args.gen_tokens}, 2 threads)",
        title_justify="left",
    )
    for column in (
        "model",
        "prompt tok/s installed",
        "prompt tok/s avx2",
        "gen tok/s installed",
        "gen tok/s avx2",
    ):
        table.add_column(column, justify="left" if column == "model" else "right", no_wrap=column == "model")
    for name in models:

        def median(build: str, key: str, name: str = name) -> str:
            return f"{statistics.median(s[key] for s in samples[(name, build)]):.1f}"

        table.add_row(
            name,
            median("installed", "prompt_tps"),
            median("avx2", "prompt_tps"),
            median("installed", "gen_tps"),
            median("avx2", "gen_tps"),
        )
    console.print(table)


if __name__ == "__main__":
    main()
