"""One episode from a harness folder and a message: what `optimize try` runs, so the CLI stays thin."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ._episode import Episode
from ._harness import load_harness
from ._runtime import run_episode
from ._user import ScriptedUser
from .models import ResponseCache, check_credentials, get_model, resolve_model


async def try_episode(
    harness_path: Path | str,
    *,
    fixture: str,
    message: str,
    replies: Iterable[str] = (),
    model_name: str | None = None,
    seed: int = 0,
    clock: str = "fixed",
    cache: bool = True,
) -> Episode:
    """Load the harness, pick the model (`model_name`, else $ATOLL_MODEL, else the harness's default) and
    run one episode on a fresh instance of `fixture`.

    `seed` seeds the instance and is the sample index of every model call, as in an eval. Raises
    HarnessError (bad harness), UnknownFixture and MissingCredentials before any model call; model
    and world trouble during the episode come back inside the Episode (`stop_reason`, `error`).
    """
    harness = load_harness(harness_path)
    name = resolve_model(model_name, harness.config.model)
    check_credentials(name)
    model = get_model(name, cache=ResponseCache.default() if cache else None)
    with harness.world.instance(fixture, seed=seed, clock=clock) as instance:
        return await run_episode(harness, instance, model, ScriptedUser(message, replies), sample=seed)
