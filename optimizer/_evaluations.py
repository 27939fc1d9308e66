"""A run's evaluations: each harness played once per (role, key), under a run id a resumed run finds.

The loop asks for the val batch a variant is decided on, the train batch proposers read and the
screen's and confirmation's batches; this keeps them, stores their episodes under
`{run}-{role}{key}-{hash}`, pauses the run when the model stopped answering, and says about how long
a batch like one already played would take (what the time budget plans with).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.evals import BatchProgress, BatchResult, RunStore, Suite, evaluate_batch, in_flight
from atoll.evals.metrics import compute_metrics
from atoll.harnesses import Harness
from atoll.harnesses.models import Model
from atoll.worlds.base.stats import look_sizes

from ._config import OptimizeConfig, OptimizerPaused


class Evaluations:
    """The evaluations of run `run_id`, on `suite` with `model`.

    Args:
        on_start: told the stage ("train: 1a2b3c4d") when an evaluation starts playing.
        on_progress: each batch's progress, as `evaluate_batch` reports it.
    """

    def __init__(
        self,
        run_id: str,
        config: OptimizeConfig,
        suite: Suite,
        model: Model,
        store: RunStore,
        harness_path: Path,
        *,
        on_start: Callable[[str], None],
        on_progress: Callable[[BatchProgress], None],
    ) -> None:
        self.run_id, self.config, self.suite, self.model, self.store = run_id, config, suite, model, store
        self.harness_path = harness_path
        self.on_start, self.on_progress = on_start, on_progress
        self.played: dict[str, BatchResult] = {}
        self.train_seconds = 0.0  # spent on train batches, one-off per harness: not a proposal's cost
        train = [task.id for task in suite.select(split="train")]
        if config.train_sample is not None and config.train_sample < len(train):
            train = sorted(random.Random(f"{config.seed}:train").sample(train, config.train_sample))
        self.train_tasks = train

    async def evaluate(self, harness: Harness, role: str, *, key: str = "", **selection: Any) -> BatchResult:
        """Evaluate `harness` once per (role, key): the run id makes a resumed run find its episodes."""
        run_id = f"{self.run_id}-{role}{key}-{harness.hash[:12]}"
        if run_id in self.played:
            return self.played[run_id]
        self.on_start(f"{role}: {harness.hash[:8]}")
        self.store.forget_outages(run_id)  # a resumed run asks the model again where it was down
        result = await evaluate_batch(
            harness,
            self.suite,
            model=self.model,
            concurrency=self.config.concurrency,
            store=self.store,
            run_id=run_id,
            kind=f"optimize-{role}",
            on_progress=self.on_progress,
            reuse=self.config.reuse,
            executor=self.config.executor,
            **selection,
        )
        outages = sum(r.episode.stop_reason == "model_error" for r in result.results)
        if result.results and outages / len(result.results) > self.config.rule.max_error_rate:
            reason = next(r.episode.error for r in result.results if r.episode.stop_reason == "model_error")
            raise OptimizerPaused(
                f"the model stopped answering ({outages} of {len(result.results)} episodes of the {role} "
                f"evaluation failed: {reason}); the run is saved, resume it with "
                f"`optimize run {self.harness_path} --resume {self.run_id}`"
            )
        self.played[run_id] = result
        return result

    async def val_in_looks(
        self,
        harness: Harness,
        order: list[str],
        looks: int,
        stop: Callable[[BatchResult, list[str]], str | None],
    ) -> tuple[BatchResult, str | None]:
        """The harness on the val tasks in `order`, played in `looks` growing steps (see `look_sizes`); after
        each step but the last, `stop(played so far, tasks left)` may end it early with its reason. One look
        is the whole val batch as `val` plays it."""
        if looks <= 1:
            return await self.val(harness), None
        sizes = look_sizes(len(order), looks)
        batches: list[BatchResult] = []
        for look, size in enumerate(sizes, start=1):
            done = sum(len(batch.results) for batch in batches) // self.config.k
            tasks = order[done:size]
            self.on_start(
                f"val look {look} of {len(sizes)}, {size} of {len(order)} tasks: {harness.hash[:8]}"
            )
            key = f"{look}of{len(sizes)}"
            batches.append(await self.evaluate(harness, "gate", key=key, tasks=tasks, k=self.config.k))
            played = joined(batches, self.suite.pass_threshold)
            reason = stop(played, order[size:]) if size < len(order) else None
            if reason:
                return played, reason
        return joined(batches, self.suite.pass_threshold), None

    async def val(self, harness: Harness) -> BatchResult:
        """The val batch a variant is decided on (stored as the `gate` role, which older runs resume by)."""
        return await self.evaluate(harness, "gate", split="val", k=self.config.k)

    async def train(self, harness: Harness) -> BatchResult:
        """The harness on the train sample, one seed each: where proposers find failures to fix."""
        return await self._on_train(harness, "train", self.train_tasks)

    async def rest_of_train(self, harness: Harness) -> BatchResult | None:
        """The harness on the train tasks outside the sample, one seed each (None when the sample is all of
        train): more examples of what it gets right, for a repair to take demos from."""
        rest = [task.id for task in self.suite.select(split="train") if task.id not in self.train_tasks]
        return await self._on_train(harness, "examples", rest) if rest else None

    async def _on_train(self, harness: Harness, role: str, tasks: list[str]) -> BatchResult:
        """`harness` on train `tasks`, one seed each, its time counted in `train_seconds`."""
        began = time.monotonic()
        result = await self.evaluate(harness, role, tasks=tasks, k=1)
        self.train_seconds += time.monotonic() - began
        return result

    def seconds(self, sample: BatchResult, episodes: int) -> float:
        """About how long `episodes` episodes like `sample`'s take in a batch: from their recorded durations,
        so an evaluation reused from the store, which took no time now, still says what one costs."""
        if not sample.results or not episodes:
            return 0.0
        mean = sum(r.episode.duration_s for r in sample.results) / len(sample.results)
        return episodes * mean / min(in_flight(self.model, self.config.concurrency), episodes)


def joined(batches: list[BatchResult], pass_threshold: float) -> BatchResult:
    """One batch of several played on disjoint tasks of the same harness: the looks of a val confirmation."""
    if len(batches) == 1:
        return batches[0]
    results = [result for batch in batches for result in batch.results]
    k = batches[0].k
    metrics = compute_metrics(
        [r.outcome() for r in results], ks=[1, k] if k else None, pass_threshold=pass_threshold
    )
    return dataclasses.replace(
        batches[-1],
        results=results,
        metrics=metrics,
        elapsed_s=sum(batch.elapsed_s for batch in batches),
        reused=sum(batch.reused for batch in batches),
    )
