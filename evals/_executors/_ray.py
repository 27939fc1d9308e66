"""Episodes on a Ray cluster: a pool of worker processes (actors) that each play many episodes at once.

What travels (docs/scale.md): once per batch, the harness's files and the models, as an object in Ray's
object store; once per worker and fixture, the fixture's bytes (its own object, kept by content hash);
per episode, the task as JSON and the seed. Each episode comes back as JSON to the driver, which alone
grades it and writes the runs store, so a killed worker or driver loses only the episodes in flight.

Models travel as recipes when they are litellm models (name, options; the worker builds its own client,
and a `local/...` model loads once per worker process) and as themselves otherwise, cloudpickled: a
ScriptedModel must then answer from a function (`fn=`), since a list of replies would be split between
the workers' copies. Their answers go through one shared response cache, an actor beside the driver's
cache file (see `_CacheServer`), so a batch replays the same on any executor.

Concurrency: the driver keeps at most `concurrency` episodes in flight across the cluster (a provider's
limit holds however many workers there are) and at most `in_flight(model, concurrency)` on one worker
(the local model: one per process). Ray is imported only here (and in `_ray_head.py`, the process that holds
a local cluster this driver starts), and only once a batch runs on it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import os
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from atoll.harnesses import Episode, Harness
from atoll.harnesses.models import (
    LiteLLMModel,
    Model,
    ModelParams,
    ModelRequest,
    ModelResponse,
    ResponseCache,
    ScriptedModel,
)
from atoll.worlds import RUN_FAILED, Clock, FixtureData, Instance

from .._suite import Task
from ._base import BatchSetup, ExecutorError, OnPlayed, in_flight, play_episode

# Batches a worker keeps ready (harness built, models made): the optimizer alternates a few harnesses.
_KEPT_BATCHES = 4
# A worker process that dies (killed, out of memory) is started again this many times, and the episodes
# it was playing are played again on it: they are deterministic, so nothing changes but the time.
_RESTARTS = 3


class WorkerLost(ExecutorError):
    """A Ray worker died more often than it is restarted: the batch stops; `--resume` plays what is missing."""

    exit_code = RUN_FAILED


class ModelRecipe(BaseModel):
    """How a worker builds its own client for a litellm model; `cache` names the driver's cache file
    whose answers it shares (None: the driver's model had no cache)."""

    name: str
    retries: int
    backoff_s: float
    litellm_kwargs: dict[str, Any]
    cache: str | None


@dataclass(frozen=True)
class _Batch:
    """One batch as the object store holds it (see the module docstring for what travels)."""

    harness_files: dict[str, str]
    harness_source: str
    fixtures: dict[str, tuple[str, list[Any]]]  # name -> (content sha256, [ObjectRef of its FixtureData])
    model: str | Model  # a ModelRecipe as JSON, or the Model itself
    user_model: str | Model | None
    caches: dict[str, Any]  # cache path -> the _CacheServer actor that serves it


class RayExecutor:
    """Plays episodes on a Ray cluster; the worker pool starts on the first batch and serves every later one.

    Args:
        address: `ray://HOST:PORT` of a cluster's client server; None joins the cluster $RAY_ADDRESS names,
            else the one `ray start` runs on this machine, else starts one here. Ignored when this process
            is already connected (`ray.init` called before).
        workers: worker processes (one CPU each); default one per CPU the cluster has when the pool starts.
        runtime_env: Ray's runtime environment for the workers (code, env vars), when this call connects.
    """

    def __init__(
        self, address: str | None = None, *, workers: int | None = None, runtime_env: dict | None = None
    ) -> None:
        if importlib.util.find_spec("ray") is None:
            raise ExecutorError("the Ray executor needs Ray: pip install 'atoll[ray]' (docs/scale.md)")
        if workers is not None and workers < 1:
            raise ExecutorError(f"a Ray executor needs at least one worker, got {workers}")
        self.name = address or "ray"
        self.address = address
        self.workers = workers
        self.runtime_env = runtime_env
        self._pool: list[Any] = []
        self._caches: dict[str, Any] = {}
        self._fixtures: dict[str, list[Any]] = {}  # content sha256 -> [ObjectRef]

    def __repr__(self) -> str:
        return f"RayExecutor({self.name!r}, {len(self._pool)} workers)"

    async def play(
        self, setup: BatchSetup, episodes: Sequence[tuple[Task, int]], on_played: OnPlayed
    ) -> None:
        if not episodes:
            return
        import ray

        batch = ray.put(self._batch(setup, {task.fixture for task, _ in episodes}))
        per_worker = in_flight(setup.model, setup.concurrency)
        load = dict.fromkeys(range(len(self._pool)), 0)
        todo = list(reversed(episodes))
        order = itertools.count()
        running: dict[asyncio.Future[str], tuple[int, int, Any, Task, int]] = {}
        try:
            while todo or running:
                while todo and len(running) < setup.concurrency:
                    worker = min(load, key=load.__getitem__)  # the least busy, the first on ties
                    if load[worker] >= per_worker:
                        break
                    task, seed = todo.pop()
                    ref = self._pool[worker].play.remote([batch], task.model_dump_json(), seed)
                    running[asyncio.wrap_future(ref.future())] = (next(order), worker, ref, task, seed)
                    load[worker] += 1
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f][0]):  # dispatch order: deterministic
                    _, worker, _, task, seed = running.pop(future)
                    load[worker] -= 1
                    on_played(task, seed, Episode.model_validate_json(_result(future)))
        except WorkerLost:
            self.close()  # a dead worker stays dead: the next batch (a resume) starts a fresh pool
            raise
        finally:
            for _, _, ref, _, _ in running.values():
                ray.cancel(ref)

    def close(self) -> None:
        """Stop the worker processes and cache servers; the next batch starts a new pool."""
        import ray

        if ray.is_initialized():
            for actor in [*self._pool, *self._caches.values()]:
                ray.kill(actor)
        self._pool, self._caches, self._fixtures = [], {}, {}

    # -- the driver's side ----------------------------------------------------------------------

    def _connect(self) -> None:
        import ray

        if not ray.is_initialized():
            self._pool, self._caches, self._fixtures = [], {}, {}  # a previous connection's, gone with it
            ray.init(
                address=_local_cluster() if _starts_one(self.address) else self.address,
                runtime_env=self.runtime_env,
            )
        if not self._pool:
            count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            worker = ray.remote(_EpisodeWorker).options(
                num_cpus=1, max_restarts=_RESTARTS, max_task_retries=_RESTARTS
            )
            self._pool = [worker.remote() for _ in range(count)]

    def _batch(self, setup: BatchSetup, fixtures: set[str]) -> _Batch:
        """The batch as it travels, the pool started first; a model that cannot travel is refused before."""
        import ray

        model = self._travelling(setup.model)
        user_model = self._travelling(setup.user_model) if setup.user_model is not None else None
        self._connect()
        refs = {}
        for name in sorted(fixtures):
            data = setup.world.load_fixture(name)
            if data.sha256 not in self._fixtures:
                self._fixtures[data.sha256] = [ray.put(data)]
            refs[name] = (data.sha256, self._fixtures[data.sha256])
        models = [setup.model, setup.user_model]
        return _Batch(
            harness_files=setup.harness.files(),
            harness_source=setup.harness.source,
            fixtures=refs,
            model=model,
            user_model=user_model,
            caches={path: self._cache_server(path) for path in _cache_paths(models)},
        )

    def _travelling(self, model: Model) -> str | Model:
        """A litellm model as a recipe (the worker builds its own client); any other model as itself."""
        if type(model) is LiteLLMModel:
            return ModelRecipe(
                name=model.name,
                retries=model.retries,
                backoff_s=model.backoff_s,
                litellm_kwargs=model.litellm_kwargs,
                cache=str(model.cache.path) if model.cache is not None else None,
            ).model_dump_json()
        # A list of replies would be consumed separately by each worker's copy: only a function is the same.
        if isinstance(model, ScriptedModel) and model._fn is None:
            raise ExecutorError(
                f"model {model.name!r}: a ScriptedModel runs on Ray workers only as a function of the "
                "request, ScriptedModel(fn=...), not a list of replies"
            )
        return model

    def _cache_server(self, path: str) -> Any:
        """The actor serving the cache file `path`: on the driver's node, so it is the driver's own file;
        from a `ray://` client, which has no node, on the head node, over that node's default cache."""
        import ray
        from ray.util.client import ray as client
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if path not in self._caches:
            # Its state is the file, so a restart loses nothing; it takes no CPU from the workers.
            server = ray.remote(_CacheServer)
            if client.is_connected():
                head = {"node:__internal_head__": 0.001}
                actor = server.options(num_cpus=0, max_restarts=-1, resources=head).remote(None)
            else:
                here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
                actor = server.options(num_cpus=0, max_restarts=-1, scheduling_strategy=here).remote(path)
            self._caches[path] = actor
        return self._caches[path]


_local_head: subprocess.Popen | None = None
"""The process holding the local cluster this driver started (see `_local_cluster`); the other end of its
stdin is this process's, so the cluster lives exactly as long as this process does."""


def _starts_one(address: str | None) -> bool:
    """Whether `ray.init(address)` would start a cluster here: no address given, none in $RAY_ADDRESS, none
    that `ray start` left on this machine (Ray's own lookup, a private function). Only on
    POSIX: on Windows Ray ties the whole cluster to the driver with a job object already."""
    from ray._private.services import canonicalize_bootstrap_address

    return address is None and os.name == "posix" and canonicalize_bootstrap_address(None) is None


def _local_cluster() -> str:
    """Start a local cluster that dies with this process, even SIGKILLed (`_ray_head.py` says why and how),
    and return its address; a previous one, disconnected from by `ray.shutdown()`, is stopped first."""
    global _local_head
    if _local_head is not None and _local_head.stdin is not None:
        _local_head.stdin.close()  # EOF: it stops its cluster
    _same_authentication()
    _local_head = head = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_ray_head.py"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,  # its process group is the cluster's alone; no terminal signal reaches it
    )
    address = head.stdout.readline().decode().strip() if head.stdout is not None else ""
    if not address:
        raise ExecutorError(
            f"the local Ray cluster did not start (exit code {head.wait()}); Ray says why above"
        )
    return address


def _same_authentication() -> None:
    """Choose token authentication as `ray.init()` does for a cluster it starts (on, unless $RAY_AUTH_MODE
    says otherwise), here, where the head inherits the choice and this driver keeps it: Ray turns it on by
    itself only when it starts the cluster or finds it without an address, and this driver is given one."""
    try:  # Ray releases with token authentication (2.60 here); older ones have none to choose
        from ray._private.authentication.authentication_token_setup import enable_token_auth_by_default
    except ImportError:
        return
    enable_token_auth_by_default()


def _cache_paths(models: list[Model | None]) -> list[str]:
    return sorted(
        {str(Path(m.cache.path).resolve()) for m in models if type(m) is LiteLLMModel and m.cache is not None}
    )


def _result(future: asyncio.Future[str]) -> str:
    """The worker's answer; a remote exception is raised as itself (a HarnessError, a script's bug), so
    callers catch the same errors as with the local executor."""
    from ray.exceptions import RayActorError, RayTaskError

    try:
        return future.result()
    except RayTaskError as error:
        cause = error.cause
        raise (cause if isinstance(cause, BaseException) else error) from None
    except RayActorError as error:
        raise WorkerLost(
            f"a Ray worker died more often than it is restarted ({_RESTARTS} times): {error}"
        ) from None


# -- the workers' side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ready:
    """A batch as a worker plays it: the harness loaded, the models built."""

    harness: Harness
    fixtures: dict[str, tuple[str, list[Any]]]
    model: Model
    user_model: Model | None
    models: dict[str, Model] | None  # the sub-agents' own models, through the shared cache


class _EpisodeWorker:
    """One worker process: plays episodes of any batch concurrently on its event loop (an async actor)."""

    def __init__(self) -> None:
        self._batches: OrderedDict[str, asyncio.Future[_Ready]] = OrderedDict()
        self._fixtures: dict[str, FixtureData] = {}  # by content sha256: fetched once per process

    async def play(self, batch: list[Any], task_json: str, seed: int) -> str:
        """Play one episode; `batch` wraps the batch's ObjectRef so Ray leaves fetching it to `_ready`."""
        ready = await self._ready(batch[0])
        task = Task.model_validate_json(task_json)
        sha, (ref,) = ready.fixtures[task.fixture]
        if sha not in self._fixtures:
            self._fixtures[sha] = await ref
        fixture = self._fixtures[sha]
        with Instance(ready.harness.world, fixture, seed=seed, clock=Clock.parse(task.clock)) as instance:
            episode = await play_episode(
                ready.harness, instance, task, seed, ready.model, ready.user_model, ready.models
            )
        return episode.model_dump_json()

    async def _ready(self, ref: Any) -> _Ready:
        key = ref.hex()
        if key not in self._batches:  # one load per batch, however many of its episodes arrive at once
            self._batches[key] = asyncio.ensure_future(self._load(ref))
            while len(self._batches) > _KEPT_BATCHES:
                self._batches.popitem(last=False)
        self._batches.move_to_end(key)
        return await self._batches[key]

    async def _load(self, ref: Any) -> _Ready:
        batch: _Batch = await ref
        # The world is found by the name harness.yaml gives, as on the driver: it must be importable here.
        harness = Harness.from_files(batch.harness_files, source=batch.harness_source)
        model = _built(batch.model, batch.caches)
        models = None
        if isinstance(batch.model, str):
            recipe = ModelRecipe.model_validate_json(batch.model)
            if recipe.cache is not None:  # as the runtime does locally: sub-agents share the agent's cache
                models = {
                    agent.model: _SharedCacheModel(LiteLLMModel(agent.model), batch.caches[recipe.cache])
                    for agent in harness.agents.values()
                    if agent.model is not None
                }
        user_model = _built(batch.user_model, batch.caches) if batch.user_model is not None else None
        return _Ready(harness, batch.fixtures, model, user_model, models)


def _built(model: str | Model, caches: dict[str, Any]) -> Model:
    if not isinstance(model, str):
        return model
    recipe = ModelRecipe.model_validate_json(model)
    client = LiteLLMModel(
        recipe.name, retries=recipe.retries, backoff_s=recipe.backoff_s, litellm_kwargs=recipe.litellm_kwargs
    )
    return client if recipe.cache is None else _SharedCacheModel(client, caches[recipe.cache])


class _SharedCacheModel:
    """A worker's litellm model whose answers are looked up in, and stored to, the shared cache: the same
    keys as `LiteLLMModel` with a local cache, awaited instead of blocking the worker's event loop."""

    def __init__(self, model: LiteLLMModel, server: Any) -> None:
        self.name = model.name
        self.model = model
        self.server = server

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        params: ModelParams | None = None,
        sample: int = 0,
    ) -> ModelResponse:
        request = ModelRequest(messages=messages, tools=tools, params=params or ModelParams(), sample=sample)
        key = ResponseCache.key(self.name, request, self.model.cache_options())
        hit = await self.server.get.remote(key)
        if hit is not None:
            return ModelResponse.model_validate_json(hit)
        response = await self.model.complete(messages, tools=tools, params=params, sample=sample)
        # Awaited: an episode the driver stores has every answer of it in the cache already.
        await self.server.put.remote(key, self.name, request.model_dump_json(), response.model_dump_json())
        return response


class _CacheServer:
    """The one response cache of a cluster's workers: a ResponseCache file served by one actor, so the first
    answer stored under a key is the one every worker, and every later run, replays."""

    def __init__(self, path: str | None) -> None:
        self.cache = ResponseCache(path) if path is not None else ResponseCache.default()

    def get(self, key: str) -> str | None:
        hit = self.cache.get(key)
        return hit.model_dump_json() if hit is not None else None

    def put(self, key: str, model: str, request: str, response: str) -> None:
        self.cache.put(
            key, model, ModelRequest.model_validate_json(request), ModelResponse.model_validate_json(response)
        )
