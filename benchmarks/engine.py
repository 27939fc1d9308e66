"""Prompt and generation tokens per second of each embedded model, 1 to 8 sequences in one batch.

Each measurement is a child process that loads one model on the installed llama.cpp build (two
threads, one context holding up to 8 sequences), then for each batch size n: n sequences read a
--prompt-tokens prompt each, all in one batch ("read"), and then write --gen-tokens tokens each,
greedily, one token of every sequence per batch ("write", summed over the sequences). The model is
measured --repeats times in fresh processes and the medians printed. Nothing else should use the
cores while it runs.

What it says about an engine for agents: reading is compute-bound and a batch does not make it
cheaper; writing one token costs about as much as reading several, and n sequences written together
cost less than n written one after another, by as much as the table shows.

Run: python benchmarks/engine.py [--models local/qwen2.5-coder-1.5b ...] [--repeats 3]
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

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 2, 4, 8)

# The child: one model; prints {"read": {n: tok/s}, "write": {n: tok/s}}.
CHILD = r"""
import json, sys, time
import numpy as np
import llama_cpp
from llama_cpp import _internals
from atoll.harnesses.models._engine import extra_buffers

path, prompt_tokens, gen_tokens, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
batches = [int(n) for n in sys.argv[5].split(",")]
most = max(batches)
with extra_buffers(llama_cpp, extra):
    model = _internals.LlamaModel(path_model=path, params=llama_cpp.llama_model_default_params(), verbose=False)
params = llama_cpp.llama_context_default_params()
params.n_ctx = most * (prompt_tokens + gen_tokens + 16)
params.n_batch = params.n_ubatch = most * prompt_tokens
params.n_seq_max, params.kv_unified = most, True
params.n_threads = params.n_threads_batch = 2
ctx = _internals.LlamaContext(model=model, params=params, verbose=False)
batch = _internals.LlamaBatch(n_tokens=most * prompt_tokens, embd=0, n_seq_max=most, verbose=False)
n_vocab = model.n_vocab()
text = b"The customer asks where order ORD-1042 is, and the agent looks it up before replying. " * 64
prompt = model.tokenize(text, add_bos=True, special=False)[:prompt_tokens]


def decode(rows):
    # rows: (token, position, sequence, wants logits)
    b = batch.batch
    b.n_tokens = len(rows)
    for i, (token, pos, seq, logits) in enumerate(rows):
        b.token[i], b.pos[i], b.seq_id[i][0], b.n_seq_id[i], b.logits[i] = token, pos, seq, 1, logits
    ctx.decode(batch)


read, write = {}, {}
for n in batches:
    ctx.kv_cache_clear()
    began = time.perf_counter()
    decode([(t, i, s, i == len(prompt) - 1) for s in range(n) for i, t in enumerate(prompt)])
    read[n] = n * len(prompt) / (time.perf_counter() - began)
    logits = np.ctypeslib.as_array(ctx.get_logits(), shape=(n, n_vocab))
    tokens = [int(np.argmax(row)) for row in logits]
    began = time.perf_counter()
    for step in range(gen_tokens):
        decode([(tokens[s], len(prompt) + step, s, True) for s in range(n)])
        logits = np.ctypeslib.as_array(ctx.get_logits(), shape=(n, n_vocab))
        tokens = [int(np.argmax(row)) for row in logits]
    write[n] = n * gen_tokens / (time.perf_counter() - began)
print(json.dumps({"read": read, "write": write}))
"""


def measure(model: Path, extra: bool, prompt_tokens: int, gen_tokens: int) -> dict:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(model),
            str(prompt_tokens),
            str(gen_tokens),
            "1" if extra else "0",
            ",".join(map(str, BATCHES)),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the measurement died ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="*",
        default=["local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-0.5b"],
        choices=[f"local/{name}" for name in CATALOG],
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=32)
    args = parser.parse_args()

    models = {}
    for name in args.models:
        try:
            check_available(name.removeprefix("local/"))
        except Exception as error:  # a model whose package is missing is skipped, saying so
            print(f"skipping {name}: {error}", file=sys.stderr)
            continue
        models[name] = gguf_path(name.removeprefix("local/"))
    samples: dict[str, list[dict]] = {name: [] for name in models}
    for _ in range(args.repeats):
        for name, path in models.items():
            samples[name].append(
                measure(path, engine_setup(path).extra_buffers, args.prompt_tokens, args.gen_tokens)
            )

    table = Table(
        title=f"tokens per second, median of {args.repeats} (each sequence reads {args.prompt_tokens} "
        f"tokens, then writes {args.gen_tokens}; 2 threads)",
        title_justify="left",
    )
    for column in ("model", "sequences", "read tok/s", "write tok/s", "write tok/s a sequence"):
        table.add_column(column, justify="left" if column == "model" else "right", no_wrap=True)
    for name, runs in samples.items():
        for n in BATCHES:
            read = statistics.median(run["read"][str(n)] for run in runs)
            write = statistics.median(run["write"][str(n)] for run in runs)
            table.add_row(name, str(n), f"{read:.0f}", f"{write:.1f}", f"{write / n:.1f}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
