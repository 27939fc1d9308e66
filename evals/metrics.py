"""Eval metrics over a batch of episodes: what `optimize eval` prints and the runs store keeps.

Every task weighs the same whatever its number of seeds, so a task run five times does not count five
times as much as one run once; this is also how the optimizer's acceptance rule averages.

pass^k (tau-bench) is the chance that k independent tries at a task *all* succeed: the measure of
reliability that a mean hides. Per task with n tries and c successes its unbiased estimate is
C(c, k) / C(n, k); the metric averages that over tasks. pass^1 is the mean pass rate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, computed_field, model_validator

from atoll.harnesses.models import ModelUsage
from atoll.worlds.base.stats import passes


class EpisodeOutcome(BaseModel):
    """One episode's result, as much of it as metrics and the acceptance rules read."""

    task_id: str
    seed: int
    score: float = Field(ge=0.0, le=1.0, description="The grade in [0, 1]; 0 when the episode errored.")
    errored: bool = Field(False, description="The episode did not finish (model, harness or world error).")
    usage: ModelUsage = Field(default_factory=ModelUsage)
    latency_s: float = Field(0.0, ge=0.0, description="Wall-clock seconds for the whole episode.")
    reused: bool = Field(False, description="Copied from an earlier run instead of run again.")

    @model_validator(mode="after")
    def _errored_scores_zero(self) -> EpisodeOutcome:
        # An error is a failure of the side that made it; a partial grade would hide it.
        if self.errored and self.score != 0.0:
            raise ValueError(
                f"EpisodeOutcome(task_id={self.task_id!r}, seed={self.seed}): errored episodes score 0, "
                f"got score={self.score}; set score=0.0"
            )
        return self


class TaskMetrics(BaseModel):
    """One task's tries, summed over its seeds."""

    episodes: int
    passes: int
    errors: int
    mean_score: float
    pass_rate: float


class Metrics(BaseModel):
    """The figures for one batch of episodes; each task weighs the same."""

    episodes: int
    tasks: int
    errors: int
    reused: int = Field(0, description="Episodes copied from earlier runs instead of run again.")
    pass_threshold: float
    mean_score: float = Field(description="Mean over tasks of each task's mean score.")
    pass_k: dict[int, float] = Field(description="pass^k by k (tau-bench's unbiased estimator).")
    per_task: dict[str, TaskMetrics]
    usage: ModelUsage = Field(default_factory=ModelUsage)
    latency_median_s: float
    latency_p95_s: float

    @model_validator(mode="before")
    @classmethod
    def _stored_before_usage(cls, data: Any) -> Any:
        """Metrics stored before `usage` had its three figures at the top level."""
        if isinstance(data, dict) and "usage" not in data and "prompt_tokens" in data:
            old = ("prompt_tokens", "completion_tokens", "cost_usd")
            data = {
                **{k: v for k, v in data.items() if k not in old},
                "usage": {k: data.get(k, 0) for k in old},
            }
        return data

    @computed_field
    @property
    def pass_1(self) -> float:
        """The mean pass rate over tasks (pass^1)."""
        return self.pass_k[1]


def pass_hat_k(trials: Iterable[tuple[int, int]], k: int) -> float:
    """pass^k averaged over tasks, from each task's (tries n, successes c): mean of C(c, k) / C(n, k).

    Raises ValueError when a task has fewer than k tries, where the estimate does not exist.
    """
    if k < 1:
        raise ValueError(f"pass^k needs k >= 1, got k={k}")
    ratios = []
    for n, c in trials:
        if not 0 <= c <= n:
            raise ValueError(f"pass^k needs 0 <= successes <= tries, got tries={n}, successes={c}")
        if n < k:
            raise ValueError(f"pass^{k} needs at least {k} tries per task, one task has {n}: run more seeds")
        ratios.append(math.comb(c, k) / math.comb(n, k))
    if not ratios:
        raise ValueError("pass^k needs at least one task")
    return sum(ratios) / len(ratios)


def compute_metrics(
    episodes: Iterable[EpisodeOutcome], *, ks: Iterable[int] | None = None, pass_threshold: float = 1.0
) -> Metrics:
    """Summarise a batch of episodes.

    Args:
        episodes: one outcome per (task, seed); a repeated pair is an error, since pass^k assumes
            independent tries.
        ks: the k values for pass^k; by default 1 up to the fewest seeds any task has.
        pass_threshold: the score at or above which an episode passes (see `passes`).
    """
    episodes = list(episodes)
    if not episodes:
        raise ValueError("compute_metrics got no episodes: run the eval first")
    by_task: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    seen: set[tuple[str, int]] = set()
    for episode in episodes:
        key = (episode.task_id, episode.seed)
        if key in seen:
            raise ValueError(
                f"episode task_id={episode.task_id!r} seed={episode.seed} appears twice: "
                "give each try of a task its own seed"
            )
        seen.add(key)
        by_task[episode.task_id].append(episode)

    per_task = {}
    for task_id, runs in by_task.items():
        passed = sum(passes(run.score, pass_threshold) for run in runs)
        per_task[task_id] = TaskMetrics(
            episodes=len(runs),
            passes=passed,
            errors=sum(run.errored for run in runs),
            mean_score=sum(run.score for run in runs) / len(runs),
            pass_rate=passed / len(runs),
        )

    fewest_task, fewest = min(((name, task.episodes) for name, task in per_task.items()), key=lambda t: t[1])
    ks = sorted(set(ks or range(1, fewest + 1)) | {1})
    if ks[-1] > fewest:
        raise ValueError(
            f"pass^{ks[-1]} needs at least {ks[-1]} seeds per task, task {fewest_task!r} has {fewest}: "
            "run more seeds or ask for a smaller k"
        )
    trials = [(task.episodes, task.passes) for task in per_task.values()]
    latencies = np.array([episode.latency_s for episode in episodes])
    return Metrics(
        episodes=len(episodes),
        tasks=len(per_task),
        errors=sum(episode.errored for episode in episodes),
        reused=sum(episode.reused for episode in episodes),
        pass_threshold=pass_threshold,
        mean_score=sum(task.mean_score for task in per_task.values()) / len(per_task),
        pass_k={k: pass_hat_k(trials, k) for k in ks},
        per_task=per_task,
        usage=sum((episode.usage for episode in episodes), ModelUsage()),
        latency_median_s=float(np.median(latencies)),
        latency_p95_s=float(np.percentile(latencies, 95)),
    )
