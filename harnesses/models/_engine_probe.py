"""The engine check's child process: load a GGUF, evaluate a few tokens, exit 0 (see `_engine`).

Run as `python -m atoll.harnesses.models._engine_probe MODEL.gguf --extra-buffers|--no-extra-buffers`.
It prints llama.cpp's system info first, before any matrix product, so a parent whose child dies
of an illegal instruction still learns what the build was compiled for.
"""

from __future__ import annotations

import sys

from ._engine import extra_buffers


def main(argv: list[str]) -> int:
    path, mode = argv
    import llama_cpp

    print(llama_cpp.llama_print_system_info().decode(errors="replace").strip(), flush=True)
    with extra_buffers(llama_cpp, mode == "--extra-buffers"):
        llama = llama_cpp.Llama(model_path=path, n_ctx=128, n_threads=2, verbose=False)
    try:
        llama.eval(llama.tokenize(b"The engine check reads a few tokens.", add_bos=True))  # a batch product
        llama.eval([llama.token_eos()])  # and a single-token one, as generation does
    finally:
        llama.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
