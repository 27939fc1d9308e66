"""What a candidate harness's first call reads on the embedded engine, after the incumbent's: its head
read whole, or only from the n_batch piece where it differs.

An optimization scores candidates that differ from the incumbent in one place: a rule at the end of a
prompt, a sentence in a tool's description, a demo. On the 1.5B model the shipped support agent's
triage head is about 3,000 tokens, some 40 s to read, while a screen round plays three train
episodes. The engine keeps an agent's head in pieces of n_batch tokens (`_local._pieces`), so a
candidate reads only from the piece where its prompt first differs; this prints, for one candidate of
each kind the proposers write, the tokens and seconds its first call reads after the incumbent's
head was read, with the head in pieces (this checkout) and read whole (as before), in one process.
Nothing else should use the cores while it runs.

Run: python benchmarks/candidates.py [--model local/qwen2.5-coder-1.5b] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Callable
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from atoll.harnesses import Harness, load_harness
from atoll.harnesses._protocols import UserTurn
from atoll.harnesses._turn import prepare_agent
from atoll.harnesses.models import Model, ModelParams, _costs, _local, get_model

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harnesses" / "support_agent"
REQUEST = "Hi, where is my order ORD-1042? It was due yesterday."

Edit = Callable[[dict[str, str]], None]


def _settings(files: dict[str, str], change: Callable[[dict], None]) -> None:
    config = yaml.safe_load(files["harness.yaml"])
    change(config["agents"][config["entry"]])
    files["harness.yaml"] = yaml.safe_dump(config, sort_keys=False)


def _tool_note(files: dict[str, str]) -> None:
    tools = yaml.safe_load(files["tools.yaml"])
    tools["triage"]["get_order"]["description"] += " Read its status and shipments before you reply."
    files["tools.yaml"] = yaml.safe_dump(tools, sort_keys=False)


# One candidate of each kind the proposers write, as a change to the shipped harness's files.
CANDIDATES: dict[str, Edit] = {
    "a rule (end of the prompt)": lambda f: _settings(
        f, lambda a: a.setdefault("rules", []).append("Look the order up before you reply.")
    ),
    "a tool's description": _tool_note,
    "demos reordered": lambda f: _settings(f, lambda a: a.update(demos=list(reversed(a["demos"])))),
    "tool_choice: first": lambda f: _settings(f, lambda a: a.update(tool_choice="first")),
}


def first_call(harness: Harness, model: Model) -> tuple[int, float]:
    """Tokens read and seconds reading of the entry agent's first call on `REQUEST`."""
    with harness.world.instance("small_shop", seed=0) as instance:
        now = instance.now().strftime("%Y-%m-%d %H:%M")
    agent = prepare_agent(
        harness,
        harness.entry,
        model,
        task={},
        now=now,
        opening=REQUEST,
        turn_limit=8,
    )
    messages = agent.protocol.messages(agent.system, [UserTurn(REQUEST)], agent.examples)
    params = ModelParams(temperature=0.0, max_tokens=1)
    with _costs.watching() as seen:
        asyncio.run(model.complete(messages, tools=agent.tools, params=params, sample=0))
    [cost] = seen
    return cost.read_tokens, cost.read_s


def measure(model_name: str, whole: bool) -> dict[str, tuple[int, float]]:
    """Each candidate's first call, read after the incumbent's head, on a freshly loaded engine."""
    pieces = _local._pieces
    if whole:
        _local._pieces = lambda segments, size: list(enumerate(segments))  # type: ignore[assignment]
    try:
        _local._close()
        model = get_model(model_name)
        shipped = load_harness(HARNESS)
        first_call(shipped, model)  # the incumbent's head, read once
        figures = {}
        for label, edit in CANDIDATES.items():
            files = shipped.files()
            edit(files)
            figures[label] = first_call(
                Harness.from_files(files, source=str(HARNESS), world=shipped.world), model
            )
            first_call(shipped, model)  # back to the incumbent, as a screen alternates
        return figures
    finally:
        _local._pieces = pieces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs: dict[bool, list[dict[str, tuple[int, float]]]] = {True: [], False: []}
    for _ in range(args.repeats):
        for whole in (True, False):
            runs[whole].append(measure(args.model, whole))
    table = Table(
        title=f"a candidate's first call after the incumbent's, {args.model}, median of {args.repeats}",
        title_justify="left",
    )
    for column in ("candidate", "tokens read: whole head", "in pieces", "seconds: whole head", "in pieces"):
        table.add_column(column, justify="left" if column == "candidate" else "right", no_wrap=True)
    for label in CANDIDATES:
        cells = []
        for part in (0, 1):
            for whole in (True, False):
                value = statistics.median(run[label][part] for run in runs[whole])
                cells.append(f"{value:.0f}" if part == 0 else f"{value:.1f}")
        table.add_row(label, *cells)
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
