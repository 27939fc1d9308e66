"""Executors: where a batch's episodes are played. In this process by default; on a Ray cluster with
the `ray` extra (docs/scale.md). The batch runner names one with `executor=` (an Executor, or a spec
string as `--executor` takes it) and keeps planning, grading and storing to itself."""

from __future__ import annotations

from ._base import (
    EXECUTOR_HELP,
    BatchSetup,
    Executor,
    ExecutorChoice,
    ExecutorError,
    ExecutorSpec,
    LocalExecutor,
    OnPlayed,
    in_flight,
    parse_executor,
    play_episode,
)
from ._ray import ModelRecipe, RayExecutor, WorkerLost

_ray_executors: dict[str, RayExecutor] = {}
"""One RayExecutor per spec in a process, so the optimizer's many batches share one pool of workers."""


def executor_for(executor: Executor | str | None) -> Executor:
    """The executor to use: one given as it is, else the one a spec names (None: `local`).

    Raises ExecutorError for a spec that names none (see `parse_executor`) or Ray without its extra.
    """
    if executor is not None and not isinstance(executor, str):
        return executor
    try:
        choice = parse_executor(executor or "local")
    except ValueError as error:
        raise ExecutorError(str(error)) from None
    if choice.kind == "local":
        return LocalExecutor()
    key = executor or ""
    if key not in _ray_executors:
        _ray_executors[key] = RayExecutor(choice.address, workers=choice.workers)
    return _ray_executors[key]


__all__ = [
    "EXECUTOR_HELP",
    "BatchSetup",
    "Executor",
    "ExecutorChoice",
    "ExecutorError",
    "ExecutorSpec",
    "LocalExecutor",
    "ModelRecipe",
    "OnPlayed",
    "RayExecutor",
    "WorkerLost",
    "executor_for",
    "in_flight",
    "parse_executor",
    "play_episode",
]
