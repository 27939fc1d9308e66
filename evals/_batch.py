"""The batch runner: tasks × seeds in parallel, one fresh instance per episode, graded and stored.

An executor plays the episodes under a concurrency limit (`evals._executors`: asyncio tasks in this
process by default, or worker processes on a Ray cluster) and hands each back as it finishes; this
module alone grades and stores them, so every executor resumes, reuses and reports alike. A model that
stays unreachable ends its episode as errored (it scores 0 and counts as an error) and the batch goes
on; a bug of the suite (a failing reference solution, a crashing Python grader) or of the harness stops it.

Each graded episode is written to the runs store in its own transaction, so a run killed
midway keeps every finished episode, and running it again with the same `run_id` (or
`resume_batch`) plays only the missing (task, seed) pairs.

No episode is paid for twice: one the store already holds from any earlier run, under the same reuse
key (`reuse_keys`: everything that decides what happens in it), is copied into the new run and graded
again by the current suite instead of being played. The response cache would replay its model answers
too, but would still pay for the prompts, tool calls and the world; reuse skips all of it.

Progress is reported through `on_progress`, called after each episode: pass a rich progress bar
(`views.evals.progress_bar`) for people, nothing for the optimizer and the Python API.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import time
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from atoll import harnesses, worlds
from atoll.harnesses import Episode, Harness, load_harness
from atoll.harnesses.models import (
    Model,
    ModelUsage,
    ResponseCache,
    check_model,
    get_model,
    resolve_model,
)
from atoll.worlds import AtollError, World
from atoll.worlds.base import new_run_id, now_text

from ._executors import BatchSetup, Executor, executor_for
from ._graders import grade_episode
from ._store import EpisodeResult, RunRecord, RunStore
from ._suite import Suite, SuiteError, Task, display_path, load_suite
from .graders._reference import ReferenceFailed
from .metrics import Metrics, compute_metrics

ProgressKind = Literal["start", "episode", "finish"]
REUSE_VERSION = 1  # part of every reuse key: bump it when what a key covers changes


@dataclass
class BatchProgress:
    """Where a batch stands, sent to `on_progress` at the start, after every episode, and at the end."""

    kind: ProgressKind
    run_id: str
    total: int  # episodes in the run, including those stored before a resume
    done: int = 0  # finished, including those stored before a resume
    resumed: int = 0  # how many of `done` were already stored
    reused: int = 0  # how many of `done` are copies of earlier runs' episodes (see `reuse`)
    passed: int = 0
    errors: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)  # what the done episodes' model calls cost
    elapsed_s: float = 0.0
    last: EpisodeResult | None = None  # the episode just finished ("episode" events)

    def add(self, result: EpisodeResult) -> None:
        self.done += 1
        self.passed += int(result.passed)
        self.errors += int(result.errored)
        self.reused += int(result.reused_from is not None)
        self.usage += result.episode.usage


OnProgress = Callable[[BatchProgress], None]


@dataclass
class BatchResult:
    """Every episode of a batch with its grade, and the metrics over them."""

    run_id: str
    harness: str
    harness_hash: str
    model: str
    suite: str
    split: str | None
    k: int | None
    results: list[EpisodeResult]
    metrics: Metrics
    elapsed_s: float
    resumed: int = 0  # episodes this run had stored before it was resumed
    reused: int = 0  # episodes copied from earlier runs instead of run again
    config: dict[str, Any] = field(default_factory=dict)

    def by_task(self) -> dict[str, list[EpisodeResult]]:
        grouped: dict[str, list[EpisodeResult]] = defaultdict(list)
        for result in self.results:
            grouped[result.task_id].append(result)
        return dict(grouped)

    def scores(self) -> dict[str, list[float | None]]:
        """Per task, the scores in seed order, None for an errored episode: what `worlds.base.stats` compares."""
        return {
            task: [None if r.errored else r.score for r in sorted(results, key=lambda r: r.seed)]
            for task, results in self.by_task().items()
        }

    def failures(self) -> list[EpisodeResult]:
        """Episodes that did not pass (errored ones included), worst first: what a proposer reads."""
        return sorted((r for r in self.results if not r.passed), key=lambda r: (r.score, r.task_id, r.seed))


class BatchError(AtollError):
    """A batch cannot start or go on: the harness, the suite and the options disagree."""


def plan_batch(
    suite: Suite,
    *,
    split: str | None = None,
    tasks: Iterable[str] | None = None,
    seeds: list[int] | None = None,
    k: int | None = None,
) -> list[tuple[Task, int]]:
    """The (task, seed) pairs a batch runs, in suite order."""
    selected = suite.select(split=split, tasks=tasks)
    if not selected:
        what = f"split {split!r}" if split else "the selection"
        raise SuiteError(f"suite {suite.name!r}: {what} has no tasks")
    return [(task, seed) for task in selected for seed in suite.seeds(task, k=k, seeds=seeds)]


def reuse_keys(
    harness: Harness,
    suite: Suite,
    plan: Iterable[tuple[Task, int]],
    model: Model,
    user_model: Model | None = None,
) -> dict[tuple[str, int], str]:
    """The reuse key of each (task, seed): a hash of everything that decides what happens in the episode.

    That is the harness's files (its hash; the sampling parameters and protocol come from them and the
    model's name), the model and its answer-changing options, the world (fixture build key with its source
    files, documents, tool schemas), the code that plays episodes (`_runtime_fingerprint`), and the task's
    own inputs: id, fixture, clock, context and user side (with the user's model when simulated), and
    the seed. The suite's expectations, graders and other tasks are left out on purpose: they decide the
    grade, not the episode, and a reused episode is always graded again by the suite as it is now.
    """
    world = suite.world
    common = _digest(
        {
            "version": REUSE_VERSION,
            "runtime": _runtime_fingerprint(),
            "harness": harness.hash,
            "model": _model_identity(model),
            "world": _world_digest(world),
        }
    )
    fixtures: dict[str, str] = {}
    keys = {}
    for task, seed in plan:
        if task.fixture not in fixtures:
            fixtures[task.fixture] = world.fixture_key(world.fixtures[task.fixture])
        inputs = task.model_dump(mode="json", include={"id", "fixture", "clock", "context", "user"})
        user = _model_identity(user_model or model) if task.user.simulated else None
        keys[(task.id, seed)] = _digest(
            {"common": common, "fixture": fixtures[task.fixture], "task": inputs, "user": user, "seed": seed}
        )
    return keys


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


_WORLD_DIGESTS: weakref.WeakKeyDictionary[World, str] = weakref.WeakKeyDictionary()


def _world_digest(world: World) -> str:
    """What the agent is shown of the world (documents, tool schemas), hashed once per World: building the
    schemas takes longer than the rest of a batch's keys."""
    if world not in _WORLD_DIGESTS:
        tools = [tool.schema() for tool in world.tools.values()]
        _WORLD_DIGESTS[world] = _digest({"documents": world.documents, "tools": tools})
    return _WORLD_DIGESTS[world]


def _model_identity(model: Model) -> dict[str, Any]:
    """A model's name and the provider options that change its answers, as the response cache keys them
    (never an API key). A custom Model is known by its name alone: give different ones different names."""
    options = getattr(model, "litellm_kwargs", None) or {}
    return {"name": model.name, "options": {k: repr(v) for k, v in options.items() if k != "api_key"}}


@functools.cache
def _runtime_fingerprint() -> str:
    """A hash of the code that plays an episode (the agent runtime and model layer, the world engine,
    the simulated user): an upgrade of Atoll may change what the same inputs do, so it reuses nothing."""
    root = Path(harnesses.__file__).parents[1]  # the folder holding Atoll's packages
    sources = sorted(Path(harnesses.__file__).parent.rglob("*.py"))
    sources += sorted(Path(worlds.__file__).parent.glob("*.py"))
    sources.append(Path(__file__).with_name("_users.py"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def resolve_agent_model(model: Model | str | None, harness: Harness) -> Model:
    """A Model as given, or built from a name (else $ATOLL_MODEL, else the harness's default).

    Checks credentials first, so a missing API key fails before any episode starts.
    """
    if model is not None and not isinstance(model, str):
        return model
    name = resolve_model(model, harness.config.model)
    check_model(name)
    return get_model(name, cache=ResponseCache.default())


def resolve_user_model(model: Model | str | None) -> Model | None:
    """The model that plays simulated users: as given, built from a name (checked first, like the
    agent's), or None for the agent's own model."""
    if model is None or not isinstance(model, str):
        return model
    check_model(model)
    return get_model(model, cache=ResponseCache.default())


async def evaluate_batch(
    harness: Harness | str | Path,
    suite: Suite | str | Path,
    *,
    model: Model | str | None = None,
    user_model: Model | str | None = None,
    split: str | None = None,
    tasks: Iterable[str] | None = None,
    seeds: list[int] | None = None,
    k: int | None = None,
    concurrency: int = 8,
    store: RunStore | None = None,
    run_id: str | None = None,
    kind: str = "eval",
    on_progress: OnProgress | None = None,
    reuse: bool = True,
    executor: Executor | str | None = None,
) -> BatchResult:
    """Run and grade every (task, seed) of the selection; store each episode as it finishes.

    Args:
        harness: a Harness or its folder.
        suite: a Suite or its folder.
        model: the agent's model: a Model, a model name, or None for $ATOLL_MODEL / the harness default.
        user_model: plays simulated users (tasks with a persona): a Model or a model name; default: the
            agent's model.
        split, tasks: which tasks (default: all of them).
        seeds: run every task with these seeds instead of its own.
        k: run every task with exactly k seeds (see `Suite.seeds`); pass^k is reported.
        concurrency: episodes in flight at once, at most, wherever they run (see `in_flight` for what
            one process takes of it).
        store: where runs and episodes are written; None keeps everything in memory.
        run_id: an id for a new run, or the id of a stored run to resume (same harness, suite,
            model and selection): its stored episodes are kept and only the missing ones run.
        kind: the run's kind in the store (`eval`, `gate`, `optimize`, ...).
        on_progress: called with a BatchProgress at the start, after each episode and at the end.
        reuse: copy an episode the store holds from any earlier run under the same reuse key (see
            `reuse_keys`; errored ones excepted) into this run, graded again by the current suite,
            instead of running it. Off, every episode runs; either way this run's episodes are kept for
            later reuse.
        executor: where episodes are played: an Executor, or `local` (None), `ray`, `ray://HOST:PORT`
            (see `parse_executor`, docs/scale.md). The episodes and scores are the same on every one.
    """
    if concurrency < 1:
        raise BatchError(f"concurrency must be at least 1, got {concurrency}")
    executor = executor_for(executor)
    harness = harness if isinstance(harness, Harness) else load_harness(harness)
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    if harness.world.name != suite.world.name:
        raise BatchError(
            f"harness {harness.name!r} drives world {harness.world.name!r} but suite {suite.name!r} "
            f"tests world {suite.world.name!r}"
        )
    agent_model = resolve_agent_model(model, harness)
    user_model = resolve_user_model(user_model)
    plan = plan_batch(suite, split=split, tasks=tasks, seeds=seeds, k=k)
    _solve_references(suite, plan)

    config = {
        "suite_path": str(suite.path),
        "suite_fingerprint": suite.fingerprint,
        "world": suite.world.name,
        "harness_source": harness.source,
        "tasks": list(dict.fromkeys(task.id for task, _ in plan)),
        "seeds": {task.id: suite.seeds(task, k=k, seeds=seeds) for task, _ in plan},
        "split": split,
        "k": k,
        "seed_override": seeds,
        "concurrency": concurrency,
        "user_model": user_model.name if user_model is not None else None,
        "pass_threshold": suite.pass_threshold,
        "reuse": reuse,
    }
    run_id = run_id or new_run_id(kind)
    previous: list[EpisodeResult] = []
    if store is not None:
        previous = _open_run(store, run_id, kind, harness, agent_model, suite, split, k, config)

    stored = {(r.task_id, r.seed) for r in previous}
    todo = [(task, seed) for task, seed in plan if (task.id, seed) not in stored]
    keys = reuse_keys(harness, suite, todo, agent_model, user_model) if store is not None else {}
    progress = BatchProgress(kind="start", run_id=run_id, total=len(plan), resumed=len(previous))
    for result in previous:
        progress.add(result)
    started = time.perf_counter()
    results = list(previous)
    setup = BatchSetup(
        harness=harness, world=suite.world, model=agent_model, user_model=user_model, concurrency=concurrency
    )
    try:
        if reuse and store is not None:
            for result in _reuse(store, run_id, suite, todo, keys):
                results.append(result)
                progress.add(result)
            copied = {(r.task_id, r.seed) for r in results}
            todo = [(task, seed) for task, seed in todo if (task.id, seed) not in copied]
        _report(on_progress, progress)

        def played(task: Task, seed: int, episode: Episode) -> None:
            """Grade and store one episode as it finishes, before its slot goes to the next."""
            result = EpisodeResult(
                task_id=task.id,
                seed=seed,
                sample=seed,
                episode=episode,
                grade=grade_episode(suite, task, episode),
            )
            if store is not None:
                store.add_episode(run_id, result, reuse_key=keys[(task.id, seed)])
            results.append(result)
            progress.add(result)
            progress.kind, progress.last = "episode", result
            progress.elapsed_s = time.perf_counter() - started
            _report(on_progress, progress)

        await executor.play(setup, todo, played)
    except BaseException as error:
        if store is not None:
            interrupted = isinstance(error, asyncio.CancelledError | KeyboardInterrupt)
            store.finish_run(run_id, "interrupted" if interrupted else "failed")
        raise

    order = {task.id: i for i, task in enumerate(suite.tasks)}
    results.sort(key=lambda r: (order.get(r.task_id, len(order)), r.seed))
    metrics = compute_metrics(
        [r.outcome() for r in results], ks=[1, k] if k else None, pass_threshold=suite.pass_threshold
    )
    if store is not None:
        store.finish_run(run_id, "finished", metrics)
    elapsed = time.perf_counter() - started
    progress.kind, progress.last, progress.elapsed_s = "finish", None, elapsed
    _report(on_progress, progress)
    return BatchResult(
        run_id=run_id,
        harness=harness.name,
        harness_hash=harness.hash,
        model=agent_model.name,
        suite=suite.name,
        split=split,
        k=k,
        results=results,
        metrics=metrics,
        elapsed_s=elapsed,
        resumed=len(previous),
        reused=progress.reused,
        config=config,
    )


def _report(on_progress: OnProgress | None, progress: BatchProgress) -> None:
    if on_progress is not None:
        on_progress(dataclasses.replace(progress))  # a snapshot: the batch goes on counting


def _reuse(
    store: RunStore, run_id: str, suite: Suite, todo: list[tuple[Task, int]], keys: dict[tuple[str, int], str]
) -> list[EpisodeResult]:
    """The episodes of `todo` an earlier run played, graded again by `suite` and stored in this run."""
    found = store.reusable(keys[(task.id, seed)] for task, seed in todo)
    copies = []
    for task, seed in todo:
        earlier = found.get(keys[(task.id, seed)])
        if earlier is not None:
            grade = grade_episode(suite, task, earlier.episode)
            copies.append((earlier.model_copy(update={"grade": grade}), keys[(task.id, seed)]))
    with store.transaction():  # one write for them all: hundreds of copies take milliseconds
        for result, key in copies:
            store.add_episode(run_id, result, reuse_key=key)
    return [result for result, _ in copies]


def _solve_references(suite: Suite, plan: list[tuple[Task, int]]) -> None:
    """Replay each task's reference at its first seed now, so a broken task stops the batch before any
    model call; the other seeds are replayed when their episodes are graded."""
    problems, seen = [], set()
    for task, seed in plan:
        if task.id in seen:
            continue
        seen.add(task.id)
        if task.reference and (task.expect.matches_reference or task.expect.no_other_writes):
            try:
                suite.reference(task, seed)
            except ReferenceFailed as error:
                problems.append(f"{display_path(suite.file_of(task.id))}: task {task.id!r}: {error}")
    if problems:
        raise SuiteError(problems)


def _open_run(
    store: RunStore,
    run_id: str,
    kind: str,
    harness: Harness,
    model: Model,
    suite: Suite,
    split: str | None,
    k: int | None,
    config: dict[str, Any],
) -> list[EpisodeResult]:
    """Start the run in the store, or reopen it for a resume; returns the episodes already stored."""
    store.save_harness(harness.hash, harness.name, harness.files())
    if not store.has_run(run_id):
        store.start_run(
            RunRecord(
                id=run_id,
                kind=kind,
                harness=harness.name,
                harness_hash=harness.hash,
                model=model.name,
                suite=suite.name,
                split=split,
                k=k,
                started_at=now_text(),
                config=config,
            )
        )
        return []
    run = store.run(run_id)
    mismatches = []
    if run.harness_hash != harness.hash:
        mismatches.append(f"the harness changed (stored {run.harness_hash[:12]}, now {harness.hash[:12]})")
    if run.model != model.name:
        mismatches.append(f"the model differs (stored {run.model!r}, now {model.name!r})")
    if run.config.get("suite_fingerprint") != suite.fingerprint:
        mismatches.append(f"the suite's files changed since the run started ({display_path(suite.path)})")
    if run.config.get("seeds") != config["seeds"]:
        mismatches.append("the selection of tasks and seeds differs (split, tasks, seeds or k)")
    if mismatches:
        raise BatchError(f"cannot resume run {run_id}: {'; '.join(mismatches)}; start a new run instead")
    store.mark_running(run_id)
    return store.episodes(run_id)


async def resume_batch(
    run_ref: str,
    *,
    store: RunStore,
    model: Model | None = None,
    user_model: Model | str | None = None,
    concurrency: int | None = None,
    on_progress: OnProgress | None = None,
    executor: Executor | str | None = None,
) -> BatchResult:
    """Finish a stored run that was interrupted: same harness (from its snapshot), suite and selection.

    `model` and `user_model` default to the run's models by name; pass the Model itself for one that
    has no name the model layer can build (a ScriptedModel). The executor may differ from the run's
    first one.
    """
    run = store.run(run_ref)
    config = run.config
    harness = Harness.from_files(
        store.harness_files(run.harness_hash), source=config.get("harness_source", "")
    )
    return await evaluate_batch(
        harness,
        config["suite_path"],
        model=model if model is not None else run.model,
        user_model=user_model if user_model is not None else config.get("user_model"),
        split=config.get("split"),
        tasks=config.get("tasks"),
        seeds=config.get("seed_override"),
        k=config.get("k"),
        concurrency=concurrency or config.get("concurrency", 8),
        store=store,
        run_id=run.id,
        kind=run.kind,
        on_progress=on_progress,
        reuse=config.get("reuse", True),
        executor=executor,
    )


def evaluate(harness: Harness | str | Path, suite: Suite | str | Path, **options: Any) -> BatchResult:
    """`evaluate_batch` for synchronous callers (the CLI, scripts); same arguments."""
    return _run_sync(evaluate_batch(harness, suite, **options), "evaluate", "evaluate_batch")


def resume(run_ref: str, **options: Any) -> BatchResult:
    """`resume_batch` for synchronous callers; same arguments."""
    return _run_sync(resume_batch(run_ref, **options), "resume", "resume_batch")


def _run_sync(coroutine: Any, name: str, async_name: str) -> BatchResult:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise BatchError(f"{name}() was called inside a running event loop; use `await {async_name}(...)`")
