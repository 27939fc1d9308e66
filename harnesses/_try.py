"""One episode from a harness folder and a message: what `optimize try` runs, so the CLI stays thin."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ._episode import Episode
from ._harness import load_harness
from ._runtime import run_episode
from ._user import ScriptedUser, UserSide
from .models import Model, ResponseCache, check_model, get_model, resolve_model


async def try_episode(
    harness_path: Path | str,
    *,
    fixture: str | None = None,
    message: str,
    replies: Iterable[str] = (),
    model_name: str | None = None,
    seed: int = 0,
    clock: str = "fixed",
    cache: bool = True,
    task_id: str | None = None,
    task_context: Mapping[str, Any] | None = None,
    user: Callable[[Model], UserSide] | None = None,
) -> Episode:
    """Load the harness, pick the model (`model_name`, else $ATOLL_MODEL, else the harness's default) and
    run one episode on a fresh instance of `fixture` (default: the world's default fixture).

    `seed` seeds the instance and is the sample index of every model call, as in an eval. For an eval
    task, `task_id` and `task_context` are passed on, and `user` builds its user side from the model. Raises
    HarnessError (bad harness), UnknownFixture and MissingCredentials before any model call; model
    and world trouble during the episode come back inside the Episode (`stop_reason`, `error`).
    """
    harness = load_harness(harness_path)
    name = resolve_model(model_name, harness.config.model)
    check_model(name)
    model = get_model(name, cache=ResponseCache.default() if cache else None)
    side = user(model) if user is not None else ScriptedUser(message, replies)
    chosen = fixture or harness.world.default_fixture
    with harness.world.instance(chosen, seed=seed, clock=clock) as instance:
        return await run_episode(
            harness, instance, model, side, sample=seed, task_id=task_id, task_context=task_context
        )
