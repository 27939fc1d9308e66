"""The Ray executor: the same episodes, scores and optimizer decisions as in-process, a worker killed
mid-batch costing nothing finished, a driver interrupted mid-batch resuming, one shared response cache.

One local cluster for the whole module (two CPUs, two worker processes). The workers import the test
packages (minidesk, notes_desk) from PYTHONPATH, as a user's cluster imports their worlds (docs/scale.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra: pip install -e '.[ray]'")

from minidesk.agent import SUITE, harness, solve, solver  # noqa: E402
from minidesk.world import world  # noqa: E402

from atoll.evals import (  # noqa: E402
    BatchProgress,
    BatchResult,
    ExecutorError,
    RunStore,
    evaluate_batch,
    executor_for,
    load_suite,
    resume_batch,
)
from atoll.harnesses import Harness, HarnessError  # noqa: E402
from atoll.harnesses.models import LiteLLMModel, ModelRequest, ResponseCache, ScriptedModel  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "optimizer"))  # notes_desk, the optimizer tests' workspace
CLUSTER_ENV = "ATOLL_TEST_RAY_ADDRESS"


@pytest.fixture(scope="module")
def cluster():
    """`--executor ray` on a two-CPU cluster started in this process: the pool every test here shares."""
    path = os.pathsep.join([str(TESTS / "evals"), str(TESTS / "optimizer")])
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}}
    )
    executor = executor_for("ray")
    yield executor
    executor.close()
    ray.shutdown()


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


def solve_named(request: ModelRequest) -> dict | str:
    """`solve`, with call ids of the episode's own (a ScriptedModel numbers them by its calls so far, which
    depends on how episodes interleave, here as on Ray)."""
    reply = solve(request)
    if isinstance(reply, dict):
        for i, call in enumerate(reply["tool_calls"]):
            call["id"] = f"call_{request.sample}_{len(request.messages)}_{i}"
    return reply


def solver_named(latency_s: float = 0.0) -> ScriptedModel:
    return ScriptedModel(fn=solve_named, name="scripted-solver", latency_s=latency_s)


def comparable(result: BatchResult) -> dict[tuple[str, int], Any]:
    """Every episode with its grade, less what the clock decides (durations, latencies, timestamps)."""
    return {(r.task_id, r.seed): _timeless(r.model_dump(mode="json")) for r in result.results}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _timeless(v)
            for k, v in value.items()
            if k not in {"duration_s", "duration_ms", "at", "latency_s"}
        }
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


async def test_a_batch_on_ray_gives_the_same_episodes_and_scores_as_in_this_process(cluster, suite) -> None:
    local = await evaluate_batch(harness(), suite, model=solver_named(), seeds=[0, 1, 2])
    remote = await evaluate_batch(harness(), suite, model=solver_named(), seeds=[0, 1, 2], executor="ray")
    assert comparable(remote) == comparable(local)
    timeless = {"latency_median_s", "latency_p95_s"}
    assert remote.metrics.model_dump(exclude=timeless) == local.metrics.model_dump(exclude=timeless)
    assert remote.scores() == local.scores()
    assert len(remote.results) == 9


def dies_once(request: ModelRequest) -> dict | str:
    """`solve`, except that the worker process playing seed 5 of cancel-shipped is killed, once."""
    marker = Path(os.environ["ATOLL_CACHE_DIR"]) / "worker-killed"
    opening = next(m["content"] for m in request.messages if m["role"] == "user")
    if request.sample == 5 and "cancel" in opening.lower() and not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return solve_named(request)


async def test_a_worker_killed_mid_batch_loses_nothing_and_the_batch_completes(
    cluster, suite, tmp_path: Path
) -> None:
    local = await evaluate_batch(harness(), suite, model=solver_named(), seeds=list(range(8)))
    with RunStore(tmp_path / "runs.sqlite") as store:
        remote = await evaluate_batch(
            harness(),
            suite,
            model=ScriptedModel(fn=dies_once, name="scripted-solver"),
            seeds=list(range(8)),
            store=store,
            executor="ray",
        )
        assert (Path(os.environ["ATOLL_CACHE_DIR"]) / "worker-killed").exists(), "no worker was killed"
        assert comparable(remote) == comparable(local)
        assert len(store.episodes(remote.run_id)) == 24 and store.run(remote.run_id).status == "finished"


async def test_a_driver_interrupted_mid_batch_keeps_what_finished_and_resumes_on_ray(
    cluster, suite, tmp_path: Path
) -> None:
    path = tmp_path / "runs.sqlite"
    enough = asyncio.Event()

    def watch(progress: BatchProgress) -> None:
        if progress.done >= 4:
            enough.set()

    with RunStore(path) as store:
        batch = asyncio.create_task(
            evaluate_batch(
                harness(),
                suite,
                model=solver_named(latency_s=0.05),
                seeds=list(range(8)),
                concurrency=2,
                store=store,
                on_progress=watch,
                executor="ray",
            )
        )
        await asyncio.wait(
            [batch, asyncio.create_task(enough.wait())], timeout=30, return_when="FIRST_COMPLETED"
        )
        assert enough.is_set() and not batch.done(), "the batch should still be running after 4 episodes"
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch

    with RunStore(path) as reopened:
        (run,) = reopened.runs()
        kept = reopened.episodes(run.id)
        assert run.status == "interrupted" and 4 <= len(kept) < 24
        resumed = await resume_batch(run.id, store=reopened, model=solver_named(), executor="ray")
        local = await evaluate_batch(harness(), suite, model=solver_named(), seeds=list(range(8)))
        assert resumed.resumed == len(kept) and comparable(resumed) == comparable(local)
        assert reopened.run(run.id).status == "finished"


async def test_answers_made_on_workers_land_in_the_drivers_cache_and_replay_in_this_process(
    cluster, suite, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "calls.sqlite")
    model = LiteLLMModel("openai/gpt-4o-mini", cache=cache, litellm_kwargs={"mock_response": "Done."})
    # One episode at a time: all on the first worker, the only one that then pays for importing litellm.
    remote = await evaluate_batch(harness(), suite, model=model, concurrency=1, executor="ray")
    calls = remote.metrics.usage.model_calls
    assert len(cache) == calls and remote.metrics.usage.cached_calls == 0
    local = await evaluate_batch(harness(), suite, model=model)
    assert local.metrics.usage.cached_calls == local.metrics.usage.model_calls == calls
    again = await evaluate_batch(harness(), suite, model=model, concurrency=1, executor="ray")
    assert again.metrics.usage.cached_calls == calls and len(cache) == calls
    assert comparable(again) == comparable(local)


async def test_a_scripted_list_of_replies_is_refused_before_any_episode(cluster, suite) -> None:
    with pytest.raises(ExecutorError, match=r"only as a function of the request, ScriptedModel\(fn=...\)"):
        await evaluate_batch(harness(), suite, model=ScriptedModel(["Hi."] * 5), executor="ray")


async def test_a_world_the_workers_cannot_import_fails_the_batch_with_the_harness_error(
    cluster, suite
) -> None:
    files = {
        **harness().files(),
        "harness.yaml": harness().files()["harness.yaml"].replace("minidesk.world", "nowhere.world"),
    }
    elsewhere = Harness.from_files(files, world=world)  # found here only because it is handed over
    with pytest.raises(HarnessError, match="cannot load world 'nowhere.world'"):
        await evaluate_batch(elsewhere, suite, model=solver_named(), executor="ray")


def test_the_optimizer_decides_the_same_on_ray(cluster, tmp_path: Path) -> None:
    from notes_desk import DoesNothing, Helpful, agent, make_workspace

    from atoll.optimizer import OptimizeConfig, optimize

    def decide(executor: str) -> list[tuple[str, float | None, float | None, float | None]]:
        root = make_workspace(
            tmp_path / executor / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13))
        )
        config = OptimizeConfig(
            harness=root / "h",
            suite=root / "s",
            max_proposals=2,
            max_minutes=None,
            concurrency=4,
            executor=executor,
        )
        with RunStore(tmp_path / executor / "runs.sqlite") as store:
            result = asyncio.run(
                optimize(
                    config, store=store, model=ScriptedModel(fn=agent), proposers=[DoesNothing(), Helpful()]
                )
            )
        return [(s.verdict, s.incumbent_score, s.candidate_score, s.p_value) for s in result.steps]

    on_ray = decide("ray")
    assert on_ray == decide("local") and [verdict for verdict, *_ in on_ray] == ["screened_out", "accept"]


@pytest.mark.skipif(
    not os.environ.get(CLUSTER_ENV),
    reason=f"no separate Ray cluster: set {CLUSTER_ENV} to its address (.ci/run starts one with `ray start`)",
)
def test_a_batch_on_a_separate_cluster_gives_the_same_scores(suite) -> None:
    """In another process, as `optimize eval --executor ray://...` runs: this one is tied to its own cluster."""
    script = f"""
import json, sys
sys.path.insert(0, {str(TESTS / "evals")!r})
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world
from atoll.evals import RayExecutor, evaluate, load_suite
executor = RayExecutor({os.environ[CLUSTER_ENV]!r}, runtime_env={{"env_vars": {{"PYTHONPATH": {str(TESTS / "evals")!r}}}}})
result = evaluate(harness(), load_suite(SUITE, world=world), model=solver(), seeds=[0, 1, 2], executor=executor)
print(json.dumps(result.scores()))
"""
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        # The cluster's client proxy starts one server process per client, and on two busy cores that start
        # now and then dies before it serves (Ray's own "Starting Ray client server failed"): connect again.
        if "Starting Ray client server failed" not in done.stderr:
            break
    assert done.returncode == 0, done.stderr[-3000:] + _client_server_logs()
    local = asyncio.run(evaluate_batch(harness(), suite, model=solver(), seeds=[0, 1, 2]))
    assert json.loads(done.stdout.strip().splitlines()[-1]) == local.scores()


def _client_server_logs() -> str:
    """The tails of the client servers' error logs of the newest Ray session here: why one did not start."""
    logs = sorted(
        Path(tempfile.gettempdir(), "ray", "session_latest", "logs").glob("ray_client_server_*.err")
    )
    return "".join(f"\n--- {log.name}:\n{log.read_text(errors='replace')[-1500:]}" for log in logs[-3:])


def _open_files(pid: str) -> list[str]:
    """The paths process `pid` has open; none for a process gone or not this user's."""
    paths = []
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return paths


def _cluster(ray_dir: str) -> dict[int, str]:
    """Every live process of the cluster whose Ray directory is `ray_dir`, by pid, with its name: each one
    (the driver, the GCS, the raylet, its agents and workers) keeps its log files open in its session there,
    however it was started and whatever it did to its command line or environment."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if any(path.startswith(ray_dir + "/") for path in _open_files(pid)):
            with contextlib.suppress(OSError):
                found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().strip()
    return found


def _line(process: subprocess.Popen, timeout_s: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            process.kill()
            raise AssertionError(f"the driver said nothing in {timeout_s} s")
    return process.stdout.readline().strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the cluster's processes in /proc")
def test_a_driver_killed_with_sigkill_leaves_no_process_of_the_cluster_it_started() -> None:
    """`--executor ray` with no cluster to join starts one; SIGKILL the driver mid-run and nothing of that
    cluster may outlive it (the raylet's agents used to stay a minute, about 190 MB)."""
    script = f"""
import sys, time
sys.path.insert(0, {str(TESTS / "evals")!r})
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world
from atoll.evals import RayExecutor, evaluate, load_suite
executor = RayExecutor(workers=1, runtime_env={{"env_vars": {{"PYTHONPATH": {str(TESTS / "evals")!r}}}}})
evaluate(harness(), load_suite(SUITE, world=world), model=solver(), seeds=[0], executor=executor)
print("played", flush=True)
time.sleep(600)
"""
    # A Ray directory of its own: it names this cluster's processes, and no cluster `ray start` left on
    # this machine is joined instead (short: Ray's socket paths must fit in 107 bytes).
    ray_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_TMPDIR": ray_dir}
    driver = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert _line(driver, timeout_s=180) == "played"
        names = set(_cluster(ray_dir).values())
        assert {"ray::DashboardAgent", "ray::RuntimeEnvAgent", "ray::_EpisodeWorker"} <= names, names
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 10
        while (left := _cluster(ray_dir)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not left, f"alive 10 s after the driver was killed: {sorted(left.values())}"
    finally:
        driver.kill()
        for pid in _cluster(ray_dir):  # what a failed run left, so that it costs no more than itself
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(ray_dir, ignore_errors=True)
