"""Recipes and jobs end to end: traffic through the endpoint, negative feedback with corrections, the recipe
starting an evolve job that drafts tasks, optimizes, gates and releases, and the endpoint serving the new
release; then the failures around it (a failing job, a second job, cancel, a restart, a held release).

The harness is a note-taking desk on the helpdesk world in a throwaway git repo, driven by a scripted agent
that adds the order note only when its prompt says ALWAYS ADD A NOTE: the `helpful_note` operator writes
that line, so an optimizer given it has one real win to find.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    Operator,
    OptimizerEvent,
    Proposal,
    ProposalContext,
    _registry,
    optimize,
)
from atoll.service import (
    Job,
    JobConflict,
    JobOptions,
    JobPlan,
    Jobs,
    RecipeError,
    RecordStore,
    ReleaseChain,
    ServiceState,
    create_service_app,
    load_recipe,
    release_harness,
)
from atoll.service.recipes import EvolveOnFeedback, Manual, Scheduled
from atoll.worlds.base import now_text
from atoll.worlds.serve._sessions import SessionManager

sys.path.insert(0, str(Path(__file__).parents[1] / "optimizer"))

from notes_desk import MAGIC, PROMPT, Helpful, agent, git, make_workspace

ROOT = Path(__file__).resolve().parents[2]
NAME = "notes_desk"
CORRECTION = 'Add the note, then say "the note is on the order"'
HARNESS = {
    "harness.yaml": f"name: {NAME}\nworld: helpdesk\nmodel: scripted\nentry: desk\nsuite: ../s\n"
    "agents:\n  desk:\n    prompt: prompts/desk.md.j2\n",
    "tools.yaml": "desk: [add_order_note]\n",
    PROMPT: "You keep notes on orders.\n",
}


class HelpfulNote(Helpful):
    """notes_desk's Helpful, under the name the recipes in these tests list."""

    name = "helpful_note"


class Stalls(Operator):
    """Never comes back: a job that is still running when the test acts on it."""

    name = "stalls"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        await asyncio.sleep(60)
        return None


class Breaks(Operator):
    """A bug in a proposer: the job fails, the service must not."""

    name = "breaks"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        raise RuntimeError("the operator has a bug")


@pytest.fixture(autouse=True)
def operators(monkeypatch: pytest.MonkeyPatch) -> None:
    for factory in (HelpfulNote, Stalls, Breaks):
        monkeypatch.setitem(_registry._registered, factory.name, factory)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repo with the harness in h/ and its suite in s/: six val tasks, two train tasks."""
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    return make_workspace(
        tmp_path / "repo",
        prompt=HARNESS[PROMPT],
        val=[1, 2, 3, 4, 5, 6],
        tasks=8,
        harness_yaml=HARNESS["harness.yaml"],
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def first_release(repo: Path, store: RunStore) -> None:
    asyncio.run(release_harness(repo / "h", store=store, model=ScriptedModel(fn=agent)))


def recipe_file(folder: Path, recipe: str, **settings: Any) -> Path:
    path = folder / "recipe.yaml"
    path.write_text(json.dumps({"recipe": recipe, "settings": settings}))  # JSON is YAML
    return path


def service(repo: Path, store: RunStore, **options: Any):
    return create_service_app(
        [repo / "h"], worlds=["helpdesk"], store=store, model=ScriptedModel(fn=agent), **options
    )


def ask(url: str, order: int) -> Any:
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0).chat.completions
    message = f"Please add a note to order ORD-{order} that I called."
    return chat.with_raw_response.create(model=NAME, messages=[{"role": "user", "content": message}])


def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def ended(url: str, job_id: str) -> dict[str, Any]:
    """The job once it is no longer running."""

    def done() -> dict[str, Any] | None:
        job = httpx.get(f"{url}/jobs/{job_id}").json()
        return job if job["status"] != "running" else None

    return wait_for(done)


def events(url: str, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The job's server-sent events, read to the end of the stream."""
    text = httpx.get(f"{url}/jobs/{job_id}/events", timeout=10).text
    found = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_negative_feedback_starts_a_job_whose_release_the_endpoint_then_serves(
    repo: Path, store: RunStore, serve, tmp_path: Path
) -> None:
    first_release(repo, store)
    recipe = recipe_file(
        tmp_path,
        "atoll.service.recipes:EvolveOnFeedback",
        min_negative=3,
        operators=["helpful_note"],
        max_proposals=1,
    )
    with serve(service(repo, store, recipe=recipe, check_every=0.05)) as url:
        records = []
        for order in (1009, 1010, 1011):
            answer = ask(url, order)
            assert answer.headers["x-atoll-release"] == "1"
            assert answer.parse().choices[0].message.content == "Sorry, I can't do that."
            records.append(answer.headers["x-atoll-record-id"])
        feedback = {"passed": False, "correction": CORRECTION, "source": "support-team"}
        assert httpx.post(f"{url}/feedback", json={**feedback, "record_ids": records[:2]}).status_code == 200
        time.sleep(0.3)
        assert httpx.get(f"{url}/jobs").json()["data"] == []  # two of the three it waits for

        httpx.post(f"{url}/feedback", json={**feedback, "record_ids": records[2:]})
        (job,) = wait_for(lambda: httpx.get(f"{url}/jobs").json()["data"])
        job = ended(url, job["id"])

        assert (job["status"], job["kind"], job["stage"]) == ("finished", "evolve", "done"), job
        assert job["source"] == "recipe atoll.service.recipes:EvolveOnFeedback"
        drafts = job["result"]["drafts"]
        assert sorted(drafts["tasks"]) == sorted(f"draft-{record}" for record in records)
        assert "the note is on the order" in Path(drafts["path"]).read_text()
        assert git(repo, "log", "-1", "--format=%s", drafts["commit"]).startswith("atoll: 3 draft task(s)")
        optimization = job["result"]["optimization"]
        assert optimization["val_start"] < optimization["val_final"] == 1.0
        assert [step["operator"] for step in optimization["accepted"]] == ["helpful_note"]
        release = job["result"]["release"]
        assert (release["number"], release["evidence"]["gate"]) == (2, "pass")
        assert release["commit"] == git(repo, "rev-parse", "HEAD") == optimization["accepted"][0]["commit"]
        assert job["outcome"].startswith("release 2 published")
        assert git(repo, "status", "--porcelain") == ""  # the drafts and the variant are both committed

        answer = ask(url, 1012)
        assert answer.headers["x-atoll-release"] == "2"
        (call,) = answer.parse().choices[0].message.tool_calls
        assert call.function.name == "add_order_note"
        record = httpx.get(f"{url}/v1/records/{answer.headers['x-atoll-record-id']}").json()
        assert record["release"] == 2

        seen = events(url, job["id"])  # a late subscriber gets the history, then the stream ends
        kinds = [kind for kind, _ in seen]
        for kind in ("start", "proposal", "decision", "commit", "finish", "gate"):
            assert kind in kinds
        assert seen[-1] == ("job", job)
        time.sleep(0.3)
        assert len(httpx.get(f"{url}/jobs").json()["data"]) == 1  # no new negative feedback: no new job


def test_a_failing_job_is_recorded_and_the_service_keeps_serving(repo: Path, store: RunStore, serve) -> None:
    (repo / "h" / "scratch.md").write_text("not committed\n")
    with serve(service(repo, store)) as url:
        started = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "optimize"})
        assert started.status_code == 202
        dirty = ended(url, started.json()["id"])
        assert dirty["status"] == "failed"
        assert "must be a clean git checkout" in dirty["error"] and "scratch.md" in dirty["error"]

        (repo / "h" / "scratch.md").unlink()
        options = {"operators": ["breaks"], "max_proposals": 1, "max_minutes": 5}
        started = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "optimize", "options": options})
        broken = ended(url, started.json()["id"])
        assert (broken["status"], broken["stage"]) == ("failed", "optimize")
        assert broken["error"] == "RuntimeError: the operator has a bug"

        assert ask(url, 1009).parse().choices[0].message.content == "Sorry, I can't do that."
        assert httpx.get(f"{url}/health").json() == {"status": "healthy"}  # the worlds' app is still there


def test_a_job_with_an_infinite_budget_is_refused_and_a_broken_row_never_breaks_the_listing(
    repo: Path, store: RunStore, serve
) -> None:
    body = b'{"harness": "%s", "kind": "optimize", "options": {"max_minutes": 5, "max_cost_usd": 1e400}}'
    with serve(service(repo, store)) as url:
        refused = httpx.post(
            f"{url}/jobs", content=body % NAME.encode(), headers={"content-type": "application/json"}
        )
        assert refused.status_code == 400 and "max_cost_usd" in refused.json()["error"]["message"]
        assert httpx.get(f"{url}/jobs").json()["data"] == [], "nothing was created"
        options = {"operators": ["breaks"], "max_proposals": 1, "max_minutes": 5}
        started = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "optimize", "options": options})
        job_id = started.json()["id"]
        ended(url, job_id)
        store.db.execute(
            "UPDATE jobs SET options = replace(options, '\"max_minutes\": 5', '\"max_minutes\": Infinity')"
        )
        store.db.execute(
            "INSERT INTO jobs (id, harness, kind, options, status) VALUES ('job-bad', ?, 'optimize', '[', 'failed')",
            [NAME],
        )
        listing = httpx.get(f"{url}/jobs")
        assert listing.status_code == 200 and listing.json()["data"] == []
        one = httpx.get(f"{url}/jobs/{job_id}")
        assert one.status_code == 500 and one.json()["error"]["code"] == "broken_job"


def test_one_job_per_harness_cancel_and_a_stopping_service_interrupts(
    repo: Path, store: RunStore, serve
) -> None:
    stalling = {"harness": NAME, "kind": "optimize", "options": {"operators": ["stalls"], "max_minutes": 5}}
    with serve(service(repo, store)) as url:
        first = httpx.post(f"{url}/jobs", json=stalling).json()
        wait_for(lambda: httpx.get(f"{url}/jobs/{first['id']}").json()["optimization_id"])
        second = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "gate"})
        assert second.status_code == 409
        assert f"job {first['id']} (optimize) is running for {NAME}" in second.json()["error"]["message"]

        followed: list[tuple[str, dict[str, Any]]] = []
        follower = threading.Thread(target=lambda: followed.extend(events(url, first["id"])))
        follower.start()  # a live subscriber: it reads until the job ends
        cancelled = httpx.post(f"{url}/jobs/{first['id']}/cancel", timeout=30).json()
        follower.join(timeout=10)
        assert followed[0][0] == "job" and "start" in [kind for kind, _ in followed]
        assert followed[-1] == ("job", cancelled)
        assert (cancelled["status"], cancelled["outcome"]) == ("cancelled", "cancelled at optimize")
        assert httpx.post(f"{url}/jobs/{first['id']}/cancel").status_code == 409
        assert httpx.get(f"{url}/jobs/nope").status_code == 404
        assert httpx.post(f"{url}/jobs", json={"harness": "other", "kind": "gate"}).status_code == 404
        assert httpx.post(f"{url}/jobs", json={"harness": NAME}).status_code == 400  # no kind, no recipe

        left = httpx.post(f"{url}/jobs", json=stalling).json()
        wait_for(lambda: httpx.get(f"{url}/jobs/{left['id']}").json()["optimization_id"])
    stopped = store.db["jobs"].get(left["id"])
    assert (stopped["status"], stopped["outcome"]) == (
        "interrupted",
        "interrupted at optimize: the service stopped",
    )
    for job_id in (first["id"], left["id"]):  # the optimizer's own record of each run: resumable
        run = store.db["optimizations"].get(store.db["jobs"].get(job_id)["optimization_id"])
        assert run["status"] == "interrupted"


class Stop(BaseException):
    """Kills an optimization mid-run, as a dead process would leave it."""


def test_a_job_left_running_by_a_dead_process_is_resumed_at_start_up(
    repo: Path, store: RunStore, serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    reaping = threading.Event()  # the worlds app's own lifespan still runs, around the jobs'

    async def reap_forever(self) -> None:
        reaping.set()

    monkeypatch.setattr(SessionManager, "reap_forever", reap_forever)
    options = JobOptions(operators=["helpful_note"], max_proposals=1)

    def die(event: OptimizerEvent) -> None:
        if event.kind == "proposal":
            raise Stop

    config = options.optimize_config(repo / "h", None)
    with pytest.raises(Stop):
        asyncio.run(optimize(config, on_event=die, store=store, model=ScriptedModel(fn=agent)))
    (optimization_id,) = [row["id"] for row in store.db["optimizations"].rows]
    served = service(repo, store)  # creates the jobs table
    dead = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": "a process that is gone"})
    now = now_text()
    job = Job(
        id="job-dead",
        harness=NAME,
        path=str(repo / "h"),
        kind="optimize",
        options=options,
        source="http",
        status="running",
        stage="optimize",
        optimization_id=optimization_id,
        created_at=now,
        updated_at=now,
        owner=dead,
    )
    row = job.model_dump(mode="json")
    store.db["jobs"].insert({**row, "options": json.dumps(row["options"]), "result": "{}"})

    with serve(served) as url:
        resumed = ended(url, "job-dead")
        assert reaping.is_set()
        again = httpx.get(f"{url}/jobs/job-dead/events", headers={"last-event-id": "1"}).text
        assert again.count("event: job") >= 2  # resumed here: its log replays from the event after 1

    assert (resumed["status"], resumed["optimization_id"]) == ("finished", optimization_id), resumed
    assert resumed["outcome"].startswith("1 variant(s) accepted and committed")
    assert store.db["optimizations"].get(optimization_id)["status"] == "finished"
    assert f"Atoll-Run: {optimization_id}" in git(repo, "log", "-1", "--format=%B")
    assert ReleaseChain(store).head(NAME) is None  # an optimize job releases nothing


def test_a_held_release_is_published_only_when_approved(repo: Path, store: RunStore, serve) -> None:
    first_release(repo, store)
    (repo / "h" / PROMPT).write_text(HARNESS[PROMPT] + MAGIC + "\n")
    git(repo, "commit", "-qam", "the line")
    with serve(service(repo, store)) as url:
        assert httpx.post(f"{url}/jobs/whatever/approve").status_code == 404
        body = {"harness": NAME, "kind": "gate", "options": {"release": "hold", "max_minutes": 5}}
        held = ended(url, httpx.post(f"{url}/jobs", json=body).json()["id"])
        assert held["status"] == "held", held
        assert held["result"]["pending"]["expected_head"] == 1
        assert held["result"]["pending"]["evidence"]["gate"] == "pass"
        assert ask(url, 1009).headers["x-atoll-release"] == "1"  # nothing published yet

        approved = httpx.post(f"{url}/jobs/{held['id']}/approve").json()
        assert (approved["status"], approved["result"]["release"]["number"]) == ("finished", 2)
        assert approved["outcome"] == "release 2 published on approval"
        assert ask(url, 1009).headers["x-atoll-release"] == "2"
        assert git(repo, "rev-parse", f"atoll/release/{NAME}/2^{{commit}}") == git(repo, "rev-parse", "HEAD")
        again = httpx.post(f"{url}/jobs/{held['id']}/approve")
        assert again.status_code == 409 and "only a held job" in again.json()["error"]["message"]


def test_a_held_release_gated_against_a_head_that_moved_is_refused(
    repo: Path, store: RunStore, serve
) -> None:
    first_release(repo, store)
    (repo / "h" / PROMPT).write_text(HARNESS[PROMPT] + MAGIC + "\n")
    git(repo, "commit", "-qam", "the line")
    with serve(service(repo, store)) as url:
        body = {"harness": NAME, "kind": "gate", "options": {"release": "hold", "max_minutes": 5}}
        held = ended(url, httpx.post(f"{url}/jobs", json=body).json()["id"])
        ReleaseChain(store).publish(  # another publisher moves the head
            NAME, {**HARNESS, PROMPT: "moved\n"}, commit=None, evidence={}, expected_head=1
        )
        refused = httpx.post(f"{url}/jobs/{held['id']}/approve")
        assert refused.status_code == 409
        assert "gated against release 1: start a gate job" in refused.json()["error"]["message"]
        assert httpx.post(f"{url}/jobs/{held['id']}/cancel").json()["status"] == "cancelled"


def test_a_manual_recipe_plans_the_job_a_bare_request_starts(
    repo: Path, store: RunStore, serve, tmp_path
) -> None:
    recipe = recipe_file(tmp_path, "atoll.service.recipes:Manual", release="hold", max_proposals=0)
    with serve(service(repo, store, recipe=recipe, check_every=0.05)) as url:
        time.sleep(0.2)
        assert httpx.get(f"{url}/jobs").json()["data"] == []  # never on its own
        job = httpx.post(f"{url}/jobs", json={"harness": NAME}).json()
        assert (job["kind"], job["options"]["release"], job["source"]) == ("evolve", "hold", "http")
        job = ended(url, job["id"])
        assert job["status"] == "finished" and job["outcome"].startswith("nothing accepted"), job


def test_a_request_cannot_choose_the_suite_nor_an_unbounded_budget_nor_its_own_proposer_model(
    repo: Path, store: RunStore, serve, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"  # a suite whose graders.py would run in the server if it were used
    elsewhere.mkdir()
    marker = tmp_path / "ran"
    (elsewhere / "graders.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (elsewhere / "suite.yaml").write_text("name: evil\nworld: helpdesk\n")
    refused = {
        "suite": ({"suite": str(elsewhere), "max_minutes": 5}, "options: suite: a job started over HTTP"),
        "no time budget": ({"max_proposals": 1}, "options.max_minutes: Field required"),
        "unbounded time": ({"max_minutes": None}, "options.max_minutes:"),
        "too long": ({"max_minutes": 241}, "options.max_minutes: Input should be less than or equal to 240"),
        "too many proposals": ({"max_minutes": 5, "max_proposals": 1_000_000}, "options.max_proposals:"),
        "too many at once": ({"max_minutes": 5, "concurrency": 65}, "options.concurrency:"),
        "too many seeds": ({"max_minutes": 5, "gate_k": 1000}, "options.gate_k:"),
        "unknown key": ({"max_minutes": 5, "budget": 1}, "options.budget: unknown key"),
        "a proposer model": (
            {"max_minutes": 5, "proposer_model": "openai/gpt-big"},
            "may use only the recipe's proposer model (none here)",
        ),
    }
    with serve(service(repo, store)) as url:
        for what, (options, expected) in refused.items():
            answer = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "evolve", "options": options})
            assert answer.status_code == 400, (what, answer.text)
            assert expected in answer.json()["error"]["message"], (what, answer.text)
        assert httpx.get(f"{url}/jobs").json()["data"] == []
        bounded = {"max_minutes": 240, "max_proposals": 100, "concurrency": 64}
        job = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "gate", "options": bounded}).json()
        assert (job["options"]["max_minutes"], job["options"]["suite"]) == (240, None)
        assert ended(url, job["id"])["status"] == "finished"
    assert not marker.exists()

    # a recipe file is the operator's own: it keeps every option, and a request may use its proposer model
    recipe = recipe_file(
        tmp_path,
        "atoll.service.recipes:Manual",
        suite=str(repo / "s"),
        proposer_model="recipe-model",
        max_minutes=None,
    )
    with serve(service(repo, store, recipe=recipe, check_every=60)) as url:
        other = {"max_minutes": 5, "proposer_model": "another-model"}
        answer = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "gate", "options": other})
        assert answer.status_code == 400 and "recipe's proposer model ('recipe-model')" in answer.text
        same = {"max_minutes": 5, "proposer_model": "recipe-model", "release": "hold"}
        job = httpx.post(f"{url}/jobs", json={"harness": NAME, "options": same}).json()
        assert (job["kind"], job["options"]["proposer_model"]) == ("evolve", "recipe-model")
        assert (job["options"]["suite"], job["options"]["max_minutes"]) == (str(repo / "s"), 5)
        httpx.post(f"{url}/jobs/{job['id']}/cancel", timeout=30)
        planned = httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "gate"}).json()
        assert planned["options"]["max_minutes"] is None  # no options: the recipe's, unbounded as it says
        ended(url, planned["id"])


def test_deeply_nested_json_is_a_400_not_a_500(repo: Path, store: RunStore, serve) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with serve(service(repo, store)) as url:
        for body in (deep, b'{"harness": ' + deep + b"}", b"\xff\xfe", b"not json"):
            answer = httpx.post(f"{url}/jobs", content=body, headers={"content-type": "application/json"})
            assert answer.status_code == 400, answer.text[:200]
            assert answer.json()["error"]["code"] == "invalid_request"
        answer = httpx.post(f"{url}/jobs", content=deep, headers={"content-type": "application/json"})
        assert "recursion limit exceeded" in answer.json()["error"]["message"]


def jobs_on(repo: Path, store: RunStore) -> Jobs:
    return Jobs(
        store, RecordStore(store), ReleaseChain(store), {NAME: repo / "h"}, model=ScriptedModel(fn=agent)
    )


def test_a_job_cancelled_before_its_first_step_is_cancelled_and_frees_the_harness(
    repo: Path, store: RunStore
) -> None:
    jobs = jobs_on(repo, store)

    async def scenario() -> None:
        job = await jobs.start(JobPlan(kind="gate"), NAME)
        cancelled = await jobs.cancel(job.id)  # its task has not run a line yet
        assert (cancelled.status, cancelled.outcome) == ("cancelled", "cancelled at release")
        assert store.db["jobs"].get(job.id)["status"] == "cancelled"
        assert jobs.running(NAME) is None
        with pytest.raises(JobConflict, match="is cancelled: only a running, held or interrupted job"):
            await jobs.cancel(job.id)
        followed = [event async for event in jobs.events(job.id)]  # its stream has ended
        assert followed[-1]["data"]["status"] == "cancelled"
        assert jobs.events_ended(job.id, followed[-1]["id"]) and not jobs.events_ended(job.id, 0)

        again = await jobs.start(JobPlan(kind="gate"), NAME)
        await asyncio.wait_for(jobs._logs[again.id].task, timeout=20)
        assert jobs.get(again.id).status == "finished"

        left = await jobs.start(JobPlan(kind="gate"), NAME)
        await jobs.close()  # the service stops before the job's first step: it resumes at the next start
        assert jobs.get(left.id).status == "interrupted" and jobs.running(NAME) is None

    asyncio.run(scenario())
    assert ReleaseChain(store).head(NAME).number == 1  # only the second job released


def test_a_job_whose_end_cannot_be_saved_is_not_left_running(
    repo: Path, store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = jobs_on(repo, store)
    save = Jobs._save

    def failing(self: Jobs, job: Job) -> None:
        if job.status != "running":
            raise sqlite3.OperationalError("disk I/O error")
        save(self, job)

    async def scenario() -> None:
        with monkeypatch.context() as patched:
            patched.setattr(Jobs, "_save", failing)
            job = await jobs.start(JobPlan(kind="gate"), NAME)
            await asyncio.wait_for(jobs._logs[job.id].task, timeout=20)
        row = store.db["jobs"].get(job.id)
        assert (row["status"], row["outcome"]) == (
            "failed",
            "finished, but its result could not be saved",
        )
        assert row["error"] == "OperationalError: disk I/O error" and row["finished_at"]
        assert jobs.running(NAME) is None

        # a row this process left running with no task behind it (the store failed even the status write)
        store.db.execute("UPDATE jobs SET status = 'running' WHERE id = ?", [job.id])
        store.db.conn.commit()
        assert jobs.running(NAME) is None
        assert (await jobs.cancel(job.id)).status == "cancelled"
        nothing_new = await jobs.start(JobPlan(kind="gate"), NAME)  # the head already serves these files
        await asyncio.wait_for(jobs._logs[nothing_new.id].task, timeout=20)
        assert jobs.get(nothing_new.id).status == "finished"

    asyncio.run(scenario())


def test_of_two_services_starting_at_once_only_one_resumes_an_interrupted_job(
    repo: Path, store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopping, first, second = jobs_on(repo, store), jobs_on(repo, store), jobs_on(repo, store)

    async def scenario() -> None:
        left = await stopping.start(JobPlan(kind="gate"), NAME)
        await stopping.close()  # a stopping service: the job waits to be resumed
        seen = second.get(left.id)  # what the second service read, before the first resumed it
        assert seen.status == "interrupted"
        (resumed,) = await first.resume_interrupted()
        monkeypatch.setattr(second.table, "unfinished", lambda: [seen])  # it decides on what it read
        monkeypatch.setattr(second, "running", lambda _: None)
        assert await second.resume_interrupted() == [], "claimed already: not resumed twice"
        await asyncio.wait_for(first._logs[resumed.id].task, timeout=20)
        assert first.get(left.id).status == "finished"

    asyncio.run(scenario())


def test_a_job_another_process_runs_streams_its_state_once_then_204(
    repo: Path, store: RunStore, serve
) -> None:
    served = service(repo, store)  # creates the jobs table
    now = now_text()
    elsewhere = json.dumps({"host": "another-host", "pid": 1, "token": None})  # alive, for all this one knows
    job = Job(
        id="job-elsewhere",
        harness=NAME,
        path=str(repo / "h"),
        kind="optimize",
        options=JobOptions(),
        source="http",
        status="running",
        stage="optimize",
        created_at=now,
        updated_at=now,
        owner=elsewhere,
    )
    row = job.model_dump(mode="json")
    store.db["jobs"].insert({**row, "options": json.dumps(row["options"]), "result": "{}"})
    with serve(served) as url:
        assert [(kind, data["status"]) for kind, data in events(url, job.id)] == [("job", "running")]
        again = httpx.get(f"{url}/jobs/{job.id}/events", headers={"last-event-id": "1"}, timeout=10)
        assert again.status_code == 204 and again.text == ""  # an EventSource stops reconnecting
        cancel = httpx.post(f"{url}/jobs/{job.id}/cancel")
        assert cancel.status_code == 409 and "runs in another process" in cancel.text
        assert httpx.post(f"{url}/jobs", json={"harness": NAME, "kind": "gate"}).status_code == 409


def state(**values: Any) -> ServiceState:
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    defaults = {
        "harness": NAME,
        "path": Path("h"),
        "head_release": 1,
        "new_negative_feedback": 0,
        "new_records": 0,
        "last_job": None,
        "started_at": now - timedelta(hours=1),
        "now": now,
    }
    return ServiceState.model_validate(defaults | values)


def test_the_shipped_recipes_decide_on_the_state() -> None:
    assert EvolveOnFeedback(min_negative=2).should_run(state(new_negative_feedback=2))
    assert not EvolveOnFeedback(min_negative=2).should_run(state(new_negative_feedback=1))
    assert Scheduled(every="30m").should_run(state())  # an hour since the service started
    assert not Scheduled(every="2h").should_run(state())
    last = Job(
        id="job-1",
        harness=NAME,
        path="h",
        kind="evolve",
        options=JobOptions(),
        source="http",
        status="finished",
        stage="done",
        created_at="2026-03-02 11:45:00",
        updated_at="2026-03-02 11:50:00",
    )
    assert not Scheduled(every="30m").should_run(state(last_job=last))
    assert Scheduled(every=600).should_run(state(last_job=last))
    assert not Manual().should_run(state(new_negative_feedback=100))
    plan = EvolveOnFeedback(operators=["add_rule"], release="hold").plan(state())
    assert (plan.kind, plan.options.operators, plan.options.release) == ("evolve", ["add_rule"], "hold")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "recipe: atoll.service.recipes:EvolveOnFeedback\nsettings: {min_negative: 0}\n",
            "settings.min_negative:",
        ),
        (
            "recipe: atoll.service.recipes:EvolveOnFeedback\nsettings: {min_negatve: 3}\n",
            "settings.min_negatve: unknown key",
        ),
        (
            "recipe: atoll.service.recipes:EvolveOnFeedback\nsettings: {operators: [add_rul]}\n",
            "settings.operators: unknown operator(s) add_rul",
        ),
        ("recipe: atoll.service.recipes:Scheduled\nsettings: {every: soon}\n", "settings.every:"),
        ("recipe: atoll.service.recipes:Scheduled\nsettings: {}\n", "settings.every: Field required"),
        ("recipe: atoll.service.recipes:Nope\n", "has no pydantic model class 'Nope'"),
        ("recipe: no_such_module_here:Recipe\n", "cannot import no_such_module_here"),
        ("recipe: not a class name\n", "recipe: String should match pattern"),
        ("settings: {}\n", "recipe: Field required"),
        ("recipe: atoll.service.recipes:Manual\nschedule: 1h\n", "schedule: unknown key"),
        ("recipe: !!python/object/apply:os.system [echo hi]\n", "not YAML"),
        (
            "recipe: atoll.service.recipes:Scheduled\nsettings: {every: 1e400d}\n",
            "settings.every: '1e400d' is longer",
        ),
        (
            "recipe: atoll.service.recipes:Scheduled\nsettings: {every: 1e12d}\n",
            "settings.every: '1e12d' is longer",
        ),
        ("recipe: atoll.service.recipes:Scheduled\nsettings: {every: 4000d}\n", "settings.every:"),
    ],
)
def test_a_recipe_file_error_names_the_file_and_the_field(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(RecipeError) as caught:
        load_recipe(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)


def test_a_recipe_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("recipe: atoll.service.recipes:Manual\n# café\n".encode("latin-1"))
    with pytest.raises(RecipeError, match=r"latin1\.yaml: not UTF-8 text"):
        load_recipe(path)


def test_a_recipe_naming_a_class_its_module_lacks_is_refused_before_the_module_runs(
    tmp_path: Path, forget_new_modules, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "loud_recipes.py").write_text("print('the module ran')\nclass Other:\n    pass\n")
    path = tmp_path / "loud.yaml"
    for name in ("loud_recipes:Nightly", "this:Zen"):
        path.write_text(f"recipe: {name}\n")
        with pytest.raises(RecipeError, match="has no pydantic model class"):
            load_recipe(path)
    assert capsys.readouterr().out == "", "neither module was run"


def test_a_recipe_in_a_package_naming_a_missing_class_runs_none_of_the_package(
    tmp_path: Path, forget_new_modules, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "loud_pkg" / "sub"
    package.mkdir(parents=True)
    (tmp_path / "loud_pkg" / "__init__.py").write_text("print('the package ran')\n")
    (package / "__init__.py").write_text("print('the subpackage ran')\n")
    (package / "recipes.py").write_text("print('the module ran')\nclass Other:\n    pass\n")
    path = tmp_path / "loud.yaml"
    for name in ("loud_pkg.sub:Missing", "loud_pkg.sub.recipes:Missing"):
        path.write_text(f"recipe: {name}\n")
        with pytest.raises(RecipeError, match="has no pydantic model class 'Missing'"):
            load_recipe(path)
    assert capsys.readouterr().out == "", "no __init__.py of the package was run"


def test_a_recipe_class_of_your_own_is_imported_from_beside_its_file(
    tmp_path: Path, forget_new_modules
) -> None:
    (tmp_path / "my_recipes.py").write_text(
        "from pydantic import BaseModel\nfrom service import JobPlan\n\n"
        "class Nightly(BaseModel):\n    hour: int = 2\n\n"
        "    def should_run(self, state):\n        return state.now.hour == self.hour\n\n"
        "    def plan(self, state):\n        return JobPlan(kind='gate')\n"
    )
    path = tmp_path / "nightly.yaml"
    path.write_text("recipe: my_recipes:Nightly\nsettings: {hour: 3}\n")
    loaded = load_recipe(path)
    assert loaded.recipe.should_run(state(now=datetime(2026, 3, 2, 3, 0, tzinfo=UTC)))
    assert loaded.recipe.plan(state()).kind == "gate"
    path.write_text("recipe: my_recipes:Nightly\nsettings: {hour: three}\n")
    with pytest.raises(RecipeError, match=r"nightly\.yaml: settings\.hour:"):
        load_recipe(path)


def test_the_shipped_example_recipes_load() -> None:
    examples = ROOT / "examples" / "recipes"
    loaded = {path.name: load_recipe(path) for path in sorted(examples.glob("*.yaml"))}
    assert set(loaded) == {"evolve_on_feedback.yaml", "manual.yaml", "scheduled.yaml"}
    assert isinstance(loaded["evolve_on_feedback.yaml"].recipe, EvolveOnFeedback)
    assert loaded["scheduled.yaml"].recipe.every == timedelta(hours=6)


def test_a_recipe_for_a_harness_not_served_is_refused_at_start_up(
    repo: Path, store: RunStore, tmp_path
) -> None:
    path = tmp_path / "elsewhere.yaml"
    path.write_text("recipe: atoll.service.recipes:Manual\nharnesses: [support_agent]\n")
    with pytest.raises(RecipeError, match=r"elsewhere\.yaml: harnesses: support_agent not served here"):
        service(repo, store, recipe=path)


def test_serve_refuses_a_recipe_without_a_harness_and_a_wrong_recipe_before_serving(tmp_path: Path) -> None:
    path = tmp_path / "evolve.yaml"
    path.write_text("recipe: atoll.service.recipes:EvolveOnFeedback\nsettings: {release: later}\n")
    alone = CliRunner().invoke(app, ["serve", "--recipe", str(path)])
    assert alone.exit_code == 2 and "name at least one --harness" in alone.output
    wrong = CliRunner().invoke(
        app, ["serve", "--harness", str(ROOT / "harnesses" / "support_agent"), "--recipe", str(path)]
    )
    assert wrong.exit_code == 2 and "settings.release:" in wrong.output and "serving" not in wrong.output
