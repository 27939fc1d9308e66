"""What `optimize run` achieves: start -> final on val and test, for the default run and a recovery run.

Each scenario copies a harness and its suite into a throwaway git repository (commits never touch
this checkout), points the response cache and the runs store at empty temporary folders (a fresh
cache: every episode is really played; the model files are linked, not rebuilt), runs the optimizer
with its default options, and scores val and test pass^1 and mean score for the start and the final
harness (the run's own episodes are reused, so scoring them again costs nothing but the episodes the
run never played).

- default: the shipped harness as it is.
- recovery: a damaged copy of it, the damage fixed and seeded (every agent keeps one demo, a third of
  its tools are hidden, a paragraph of each prompt template is cut); the table reports which fraction
  of the test score lost to the damage the run wins back in the same budget.

Both run on helpdesk and on every other shipped suite that has a harness for it (`--world`), with the
levers the optimizer knows nothing world-specific about.

With `--objective tokens` (or cost, latency) the runs lower that objective with quality held, and the
table adds the objective per episode, start -> final, on val and test.

Every run has its model-driven proposer (`--proposer reflect`, the default, asking the agent's own model
unless `--proposer-model` names another; `--no-operators`: it alone proposes). A second table gives, per
run, the minutes of each phase, the proposals by operator with their fates, and the model-driven
proposer's record: how many asks, how many answers parsed into an edit (no answer, no parse and dropped
edits counted apart), how many of its proposals passed the screen, and the seconds an ask took.

`--cache DIR` keeps the answer cache in DIR instead of a fresh one per scenario: a second run that scores
the same start (the LLM proposer's run after the default one) then replays the start's episodes.
`--keep DIR` copies each run's store and harness repo to DIR/<world>-<scenario> when it ends, to read its
episodes and candidates afterwards (`optimize history`, `optimize show`, or plain SQL).

Run: python benchmarks/optimize.py [--world helpdesk] [--scenario default --scenario recovery]
     [--model local/gemma-3-270m] [--max-minutes 45] [--objective tokens] [--tolerance 0.05]
     [--models local/gemma-3-270m,local/smollm2-135m] [--operator choose_model]
     [--proposer reflect|rewrite|off] [--proposer-model MODEL] [--no-operators] [--cache DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from ruamel.yaml import YAML

from atoll.evals import BatchResult, RunStore, evaluate_batch
from atoll.harnesses import Harness, load_harness
from atoll.optimizer import OptimizeConfig, OptimizeResult, optimize, spend_per_episode
from atoll.worlds import cache_dir

ROOT = Path(__file__).resolve().parents[1]
# The shipped pairs of harness and suite; a world's benchmark needs both.
SHIPPED = {
    "helpdesk": ("harnesses/support_agent", "evals/helpdesk"),
    "clinic": ("harnesses/clinic_agent", "evals/clinic"),
}
DAMAGE_SEED = 7


@dataclass
class Scores:
    """pass^1, mean score and (for a run that lowers one) the objective per episode on one split."""

    pass1: float
    mean: float
    spend: float | None = None

    @classmethod
    def of(cls, result: BatchResult, objective: str = "quality") -> Scores:
        outcomes = [r.outcome() for r in result.results]
        spend = None if objective == "quality" else spend_per_episode(outcomes, objective)  # type: ignore[arg-type]
        return cls(pass1=result.metrics.pass_k.get(1, 0.0), mean=result.metrics.mean_score, spend=spend)


@dataclass
class Outcome:
    world: str
    scenario: str
    model: str
    objective: str
    val: tuple[Scores, Scores]
    test: tuple[Scores, Scores]
    result: OptimizeResult
    minutes: float
    recovered: float | None = None  # recovery only: share of the damage's test pass^1 loss won back
    recovered_mean: float | None = None  # the same for the test mean score, which moves in finer steps


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def workspace(root: Path, harness: Path, suite: Path) -> tuple[Path, Path]:
    """The harness and suite in a new git repository under `root`."""
    shutil.copytree(ROOT / harness, root / "harness")
    shutil.copytree(ROOT / suite, root / "suite", ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "bench@atoll.invalid")
    git(root, "config", "user.name", "Atoll benchmark")
    git(root, "add", ".")
    git(root, "commit", "-qm", "start")
    return root / "harness", root / "suite"


def damage(folder: Path, seed: int = DAMAGE_SEED) -> None:
    """A fixed, seeded damage any harness can take: one demo per agent, a third of each agent's tools
    hidden, one paragraph of each prompt template cut (one whose removal still renders)."""
    rng = random.Random(seed)
    yaml = YAML()  # round-trip, wide lines: the damage is the only diff
    yaml.width = 4096
    config = yaml.load((folder / "harness.yaml").read_text())
    shown: dict[str, set[str]] = {}  # tools the kept demos call: hiding one would break the harness
    for name, agent in config["agents"].items():
        demos = list(agent.get("demos") or [])
        if len(demos) > 1:
            agent["demos"] = [rng.choice(demos)]
        shown[name] = {
            step["call"]
            for demo in agent.get("demos") or []
            for step in yaml.load((folder / "demos" / f"{demo}.yaml").read_text())["steps"]
            if "call" in step
        }
    with (folder / "harness.yaml").open("w") as handle:
        yaml.dump(config, handle)
    tools = yaml.load((folder / "tools.yaml").read_text()) or {}
    for agent, entries in tools.items():
        names = [name for name in entries if name not in shown.get(agent, set())]
        for name in rng.sample(names, len(names) // 3):
            if isinstance(entries, list):
                entries.remove(name)
            else:
                del entries[name]
    with (folder / "tools.yaml").open("w") as handle:
        yaml.dump(tools, handle)
    for template in sorted((folder / "prompts").glob("*.j2")):
        text = template.read_text()
        paragraphs = re.split(r"\n\s*\n", text)
        cuttable = [i for i, p in enumerate(paragraphs) if "{%" not in p and "{{" not in p and p.strip()]
        if cuttable:
            del paragraphs[rng.choice(cuttable)]
            template.write_text("\n\n".join(paragraphs))
    load_harness(folder)  # the damage must leave a harness that loads


async def scores(
    harness: Harness, suite: Path, store: RunStore, model: str | None, objective: str = "quality"
) -> tuple[Scores, Scores]:
    val = await evaluate_batch(harness, suite, model=model, split="val", k=1, store=store, concurrency=4)
    test = await evaluate_batch(harness, suite, model=model, split="test", k=1, store=store, concurrency=4)
    return Scores.of(val, objective), Scores.of(test, objective)


async def scenario(
    world: str,
    name: str,
    model: str | None,
    max_minutes: float,
    console: Console,
    objective: str = "quality",
    options: dict[str, Any] | None = None,
    kept_cache: Path | None = None,
    keep: Path | None = None,
) -> Outcome:
    harness_dir, suite_dir = SHIPPED[world]
    with tempfile.TemporaryDirectory(prefix="atoll-bench-") as scratch:
        root = Path(scratch)
        cache = kept_cache or root / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        models = cache_dir() / "models"
        if models.exists() and not (cache / "models").exists():
            (cache / "models").symlink_to(models)  # weights are not what a fresh cache means
        os.environ["ATOLL_CACHE_DIR"] = str(cache)
        harness_path, suite_path = workspace(root / "repo", Path(harness_dir), Path(suite_dir))
        store = RunStore(root / "runs.sqlite")
        shipped_test = None
        if name == "recovery":
            shipped_test = (await scores(load_harness(harness_path), suite_path, store, model))[1]
            damage(harness_path)
            git(root / "repo", "commit", "-qam", "damage")
        start = load_harness(harness_path)
        began = time.monotonic()
        console.print(f"[bold]{world} · {name}[/]: optimizing {harness_dir} for {max_minutes:g} minutes ...")
        result = await optimize(
            OptimizeConfig(
                harness=harness_path,
                suite=suite_path,
                model=model,
                max_minutes=max_minutes,
                objective=objective,  # type: ignore[arg-type]
                **(options or {}),
            ),
            store=store,
        )
        minutes = (time.monotonic() - began) / 60
        final = load_harness(harness_path)
        val_start, test_start = await scores(start, suite_path, store, model, objective)
        val_final, test_final = await scores(final, suite_path, store, model, objective)
        store.close()
        if keep is not None:
            kept = keep / f"{world}-{name}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(root, kept, symlinks=True, ignore=shutil.ignore_patterns("cache"))
            console.print(f"kept the run's store and harness repo in {kept}")
        recovered = recovered_mean = None
        if shipped_test is not None:
            recovered = won_back(shipped_test.pass1, test_start.pass1, test_final.pass1)
            recovered_mean = won_back(shipped_test.mean, test_start.mean, test_final.mean)
        return Outcome(
            world=world,
            scenario=name,
            model=model or start.config.model,
            objective=objective,
            val=(val_start, val_final),
            test=(test_start, test_final),
            result=result,
            minutes=minutes,
            recovered=recovered,
            recovered_mean=recovered_mean,
        )


def decisions(outcome: Outcome) -> Table:
    """Every proposal of the run with its verdict and evidence: what each lever was judged on."""
    view = Table(title=f"{outcome.world} · {outcome.scenario}: proposals")
    for column in ("#", "operator", "rationale", "verdict", "quality", "objective", "why not"):
        view.add_column(column, overflow="fold")
    for step in outcome.result.steps:
        quality = (
            "-"
            if step.incumbent_score is None
            else f"{step.incumbent_score:.3f} -> {step.candidate_score:.3f}"
        )
        spend = "-"
        if step.incumbent_spend is not None and step.candidate_spend is not None:
            spend = f"{step.incumbent_spend:,.1f} -> {step.candidate_spend:,.1f}"
        view.add_row(
            str(step.iteration + 1),
            step.operator,
            step.rationale,
            step.verdict,
            quality,
            spend,
            "; ".join(step.reasons)[:300],
        )
    return view


def record(outcomes: list[Outcome]) -> Table:
    """Per run: minutes per phase, proposals by operator and fate, and the model-driven proposer's record."""
    view = Table(title="where each run's time went, and what its proposers did")
    for column in (
        "world",
        "run",
        "minutes: start / search / test",
        "proposals by operator",
        "model-driven asks",
    ):
        view.add_column(column, overflow="fold")
    for o in outcomes:
        phases = " / ".join(f"{o.result.phase_minutes.get(p, 0.0):.1f}" for p in ("start", "search", "test"))
        fates: dict[str, Counter[str]] = defaultdict(Counter)
        for step in o.result.steps:
            fates[step.operator][step.verdict] += 1
        by_operator = "; ".join(
            f"{operator} {sum(c.values())} ({', '.join(f'{n} {v}' for v, n in c.most_common())})"
            for operator, c in sorted(fates.items())
        )
        view.add_row(o.world, o.scenario, phases, by_operator or "-", asks(o.result))
    return view


def asks(result: OptimizeResult) -> str:
    """How the model-driven proposer's asks went: parsed share, outcomes, screen passes, seconds an ask."""
    attempts = result.attempts
    if not attempts:
        return "-"
    outcomes = Counter(a.outcome for a in attempts)
    parsed = outcomes["proposed"] + outcomes["dropped"]
    tried = [s for s in result.steps if s.operator in {a.operator for a in attempts}]
    screened = [s for s in tried if s.verdict not in ("screened_out", "invalid", "duplicate", "none")]
    seconds = sorted(a.seconds for a in attempts)
    return (
        f"{len(attempts)} asks: {parsed} parsed ({parsed / len(attempts):.0%}; {outcomes['dropped']} dropped), "
        f"{outcomes['no_parse']} no parse, {outcomes['no_answer']} no answer; {len(screened)} of {len(tried)} "
        f"proposals passed the screen; median {seconds[len(seconds) // 2]:.0f} s an ask"
    )


def won_back(shipped: float, damaged: float, final: float) -> float | None:
    """The share of what the damage cost that the run won back; None when the damage cost nothing."""
    lost = shipped - damaged
    return (final - damaged) / lost if lost > 0 else None


def table(outcomes: list[Outcome]) -> Table:
    def moved(pair: tuple[Scores, Scores], field: str) -> str:
        before, after = getattr(pair[0], field), getattr(pair[1], field)
        return f"{before:.1%} -> {after:.1%} ({(after - before) * 100:+.1f})"

    def spend(pair: tuple[Scores, Scores]) -> str:
        before, after = pair[0].spend, pair[1].spend
        if before is None or after is None:
            return "-"
        cut = f" ({1 - after / before:+.0%} cut)" if before else ""
        return f"{before:,.4g} -> {after:,.4g}{cut}"

    view = Table(title="optimize run: start -> final (pass^1 and mean score, k=1; the objective per episode)")
    for column in (
        "objective",
        "world",
        "run",
        "model",
        "val pass^1",
        "val mean",
        "test pass^1",
        "test mean",
        "val objective",
        "test objective",
        "proposals",
        "accepted",
        "episodes",
        "minutes",
        "recovered (pass^1 / mean)",
    ):
        view.add_column(column)
    for o in outcomes:
        view.add_row(
            o.objective,
            o.world,
            o.scenario,
            o.model,
            moved(o.val, "pass1"),
            moved(o.val, "mean"),
            moved(o.test, "pass1"),
            moved(o.test, "mean"),
            spend(o.val),
            spend(o.test),
            f"{len(o.result.steps)} ({sum(step.verdict == 'none' for step in o.result.steps)} none)",
            str(len(o.result.accepted)),
            str(o.result.episodes),
            f"{o.minutes:.1f}",
            " / ".join("-" if share is None else f"{share:.0%}" for share in (o.recovered, o.recovered_mean)),
        )
    return view


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--world", action="append", choices=sorted(SHIPPED), help="default: every shipped one"
    )
    parser.add_argument("--scenario", action="append", choices=["default", "recovery"])
    parser.add_argument("--model", help="agent model; default each harness's own")
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=OptimizeConfig.model_fields["max_minutes"].default,
        help="the run's budget (default: optimize run's)",
    )
    parser.add_argument(
        "--objective",
        default="quality",
        choices=["quality", "cost", "latency", "tokens"],
        help="as `optimize run`",
    )
    parser.add_argument("--tolerance", type=float, help="as `optimize run` (with an --objective)")
    parser.add_argument("--models", help="as `optimize run`: models the run may give each agent")
    parser.add_argument("--operator", action="append", help="as `optimize run`: only these operators")
    parser.add_argument("--proposer", choices=["reflect", "rewrite", "off"], help="as `optimize run`")
    parser.add_argument("--proposer-model", help="as `optimize run`: the proposer's model")
    parser.add_argument("--no-operators", action="store_true", help="the LLM proposer alone proposes")
    parser.add_argument("--cache", type=Path, help="keep the answer cache here (default: a fresh one)")
    parser.add_argument("--keep", type=Path, help="copy each run's store and harness repo here when it ends")
    args = parser.parse_args()
    options: dict[str, Any] = {}
    if args.proposer:
        options["proposer"] = args.proposer
    if args.proposer_model:
        options["proposer_model"] = args.proposer_model
    if args.no_operators:
        options["operators"] = []
    if args.tolerance is not None:
        options["objective_rule"] = {"tolerance": args.tolerance}
    if args.operator:
        options["operators"] = args.operator
    if args.models:
        options["models"] = [name.strip() for name in args.models.split(",")]
    console = Console(stderr=True)
    worlds = [w for w in (args.world or sorted(SHIPPED)) if (ROOT / SHIPPED[w][0]).exists()]
    outcomes = [
        asyncio.run(
            scenario(
                world,
                name,
                args.model,
                args.max_minutes,
                console,
                args.objective,
                options,
                args.cache,
                args.keep,
            )
        )
        for world in worlds
        for name in (args.scenario or ["default", "recovery"])
    ]
    out = Console(width=200)
    out.print(table(outcomes))
    out.print(record(outcomes))
    for outcome in outcomes:
        out.print(decisions(outcome))


if __name__ == "__main__":
    main()
