"""The service console: its JSON routes over httpx, and its pages in headless Chromium.

One store is seeded for the module as a user would fill it: a scripted optimization of the notes desk
(tests/optimizer/notes_desk.py: the agent adds order notes only when its prompt says so, and one
proposer writes that line), an eval run before and after that line, two releases, and records with
feedback. The pages must show what the store holds: an episode's transcript, world diff and verdicts
side by side, the optimization's trajectory and proposals, the release chain (and a rollback click
making a new release), and the records with their feedback.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

sys.path.insert(0, str(Path(__file__).parents[1] / "optimizer"))

from notes_desk import HARNESS_YAML, MAGIC, PROMPT, Helpful, agent, make_workspace

from atoll.evals import RunStore, evaluate_batch
from atoll.harnesses import load_harness
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import OptimizeConfig, OptimizerEvent, OptimizerStatus, optimize
from atoll.service import (
    FeedbackIn,
    Job,
    NewRecord,
    RecordStore,
    ReleaseChain,
    UnknownJob,
    console_router,
    create_service_app,
    jobs_router,
)

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONSOLE = Path(__file__).parents[2] / "service" / "console"
UNSAFE_TEXT = "<b id='injected'>bold</b>"  # a user's message that must show as text, never as markup
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium) so the console pages are untested",
)


@dataclass
class Seeded:
    """What the module's store holds, and the console serving it."""

    store: RunStore
    url: str
    optimization: str
    failing_run: str
    passing_run: str
    record: str


def files(root: Path) -> dict[str, str]:
    return {name: (root / "h" / name).read_text() for name in ("harness.yaml", "tools.yaml", PROMPT)}


def renamed(harness_files: dict[str, str], name: str) -> dict[str, str]:
    """The same files as another harness, so a test can have a release chain of its own."""
    return {**harness_files, "harness.yaml": HARNESS_YAML.replace("name: notes_desk", f"name: {name}")}


def two_releases(chain: ReleaseChain, name: str, first: dict[str, str], second: dict[str, str]) -> None:
    chain.publish(name, renamed(first, name), commit=None, evidence={"gate": None}, expected_head=None)
    chain.publish(name, renamed(second, name), commit=None, evidence={"gate": "pass"}, expected_head=1)


def record(records: RecordStore, text: str, reply: str, *, release: int, session: str) -> str:
    return records.add(
        NewRecord(
            harness="notes_desk",
            agent="desk",
            release=release,
            release_hash="0" * 64,
            model="scripted",
            request={"messages": [{"role": "user", "content": text}]},
            response={"choices": [{"message": {"role": "assistant", "content": reply}}]},
            prompt_hash="0" * 64,
            prompt_tokens=120,
            completion_tokens=12,
            latency_ms=840.0,
            session=session,
        )
    ).id


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, serve) -> Iterator[Seeded]:
    root = make_workspace(
        tmp_path_factory.mktemp("console"),
        prompt="You keep notes on orders.\n",
        val=[1, 2, 3, 4, 5, 6],
        tasks=7,
    )
    store = RunStore(root / "runs.sqlite")
    before = load_harness(root / "h")
    start_files = files(root)
    config = OptimizeConfig(harness=root / "h", suite=root / "s", max_proposals=1, max_minutes=None)
    optimization = asyncio.run(
        optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=[Helpful()])
    ).run_id
    failing, passing = (
        asyncio.run(
            evaluate_batch(harness, root / "s", model=ScriptedModel(fn=agent), split="val", store=store)
        ).run_id
        for harness in (before, load_harness(root / "h"))
    )
    chain = ReleaseChain(store)
    chain.publish(
        "notes_desk",
        start_files,
        commit=None,
        evidence={"gate": None, "summary": "first"},
        expected_head=None,
    )
    chain.publish(
        "notes_desk",
        files(root),
        commit=None,
        evidence={
            "gate": "pass",
            "summary": "better on 6 of 6 tasks",
            "base_run": failing,
            "candidate_run": passing,
            "base_mean": 0.0,
            "candidate_mean": 1.0,
            "lower_bound": 1.0,
            "wins": 6,
            "losses": 0,
            "tasks": 6,
        },
        expected_head=1,
    )
    records = RecordStore(store)
    noted = record(
        records, f"Add a note to ORD-1001 {UNSAFE_TEXT}", "Sorry, I can't do that.", release=2, session="s-1"
    )
    records.add_feedback(
        FeedbackIn(
            record_ids=[noted],
            passed=False,
            comment="it refused",
            correction='Say "noted"',
            source="support-ui",
        )
    )
    record(records, "Hello there", "Hello! How can I help?", release=2, session="s-2")

    app = create_service_app(worlds=["helpdesk"], store=store, token=TOKEN)
    with serve(app) as url:
        yield Seeded(store, url, optimization, failing, passing, noted)
    store.close()


@pytest.fixture(scope="module")
def client(seeded: Seeded) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=seeded.url, headers=AUTH, timeout=10) as opened:
        yield opened


# -- the JSON routes ----------------------------------------------------------------------------------


def test_the_page_its_script_and_style_are_served_by_atoll(client: httpx.Client) -> None:
    page = client.get("/console/")
    assert page.status_code == 200 and "Atoll service console" in page.text
    assert 'src="http' not in page.text and 'href="http' not in page.text  # nothing fetched from elsewhere
    assert client.get("/console/app.js").status_code == 200
    assert client.get("/console/style.css").headers["content-type"].startswith("text/css")


def test_runs_list_newest_first_with_their_kinds(client: httpx.Client, seeded: Seeded) -> None:
    body = client.get("/api/runs", params={"kind": "eval"}).json()
    ids = [run["id"] for run in body["data"]]
    assert ids[:2] == [seeded.passing_run, seeded.failing_run] and "eval" in body["kinds"]
    newest = body["data"][0]
    assert (newest["episodes"], newest["mean_score"], newest["harness"]) == (6, 1.0, "notes_desk")
    assert client.get("/api/runs", params={"limit": 0}).status_code == 400


def test_a_run_lists_its_episodes_and_one_episode_comes_whole(client: httpx.Client, seeded: Seeded) -> None:
    run = client.get(f"/api/runs/{seeded.failing_run}").json()
    assert [(e["task_id"], e["seed"], e["passed"]) for e in run["episodes"]] == [
        (f"note-{i}", 0, False) for i in range(1, 7)
    ]

    episode = client.get(f"/api/runs/{seeded.passing_run}/episodes/note-1/0").json()
    kinds = [event["kind"] for event in episode["episode"]["events"]]
    assert kinds == ["user", "tool_call", "tool_result", "assistant"]
    assert episode["episode"]["diff"]["tables"]["order_notes"]["inserted"][0]["order_id"] == "ORD-1001"
    assert episode["passed"] and all(check["passed"] for check in episode["grade"]["checks"])
    assert episode["episode"]["prompts"][0]["text"].count(MAGIC) == 1


def test_unknown_runs_and_episodes_are_404s_that_say_so(client: httpx.Client, seeded: Seeded) -> None:
    unknown = client.get("/api/runs/no-such-run")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_run"
    missing = client.get(f"/api/runs/{seeded.passing_run}/episodes/note-9/0")
    assert missing.status_code == 404 and "note-9" in missing.json()["error"]["message"]


def test_an_optimization_has_its_trajectory_proposals_patches_and_harness_diff(
    client: httpx.Client, seeded: Seeded
) -> None:
    listed = client.get("/api/optimizations").json()["data"]
    assert [row["id"] for row in listed] == [seeded.optimization] and "owner" not in listed[0]

    report = client.get(f"/api/optimizations/{seeded.optimization}").json()
    assert [point["label"] for point in report["trajectory"]] == ["start", "#1 helpful"]
    assert report["trajectory"][-1]["score"] == 1.0
    (proposal,) = report["proposals"]
    assert (proposal["operator"], proposal["verdict"], report["accepted"]) == ("helpful", "accept", 1)
    assert f"+{MAGIC}" in proposal["patch"]
    (change,) = report["changes"]
    assert change["path"] == PROMPT and f"\n+{MAGIC}\n" in change["diff"]
    assert client.get("/api/optimizations/nothing-like-it").status_code == 404


def test_a_release_chain_shows_each_release_with_what_it_served(client: httpx.Client) -> None:
    chains = {row["harness"]: row for row in client.get("/api/releases").json()["data"]}
    assert chains["notes_desk"]["releases"] == 2 and chains["notes_desk"]["head"]["number"] == 2

    chain = client.get("/api/releases/notes_desk").json()
    assert chain["head"] == 2 and [r["number"] for r in chain["releases"]] == [1, 2]
    assert chain["releases"][1]["evidence"]["gate"] == "pass"
    assert chain["releases"][0]["served"]["calls"] == 0
    served = chain["releases"][1]["served"]
    assert (served["calls"], served["with_feedback"], served["passed"], served["failed"]) == (2, 1, 0, 1)
    assert client.get("/api/releases/nobody").status_code == 404


def test_a_rollback_is_a_new_release_and_a_stale_head_is_refused(
    client: httpx.Client, seeded: Seeded
) -> None:
    chain = ReleaseChain(seeded.store)
    first, second = chain.list("notes_desk")
    two_releases(chain, "api_desk", chain.files(first), chain.files(second))

    made = client.post("/api/releases/api_desk/rollback", json={"to": 1, "expected_head": 2, "note": "oops"})
    assert made.status_code == 201
    assert (made.json()["number"], made.json()["kind"], made.json()["note"]) == (3, "rollback", "oops")
    assert chain.head("api_desk").content_hash == chain.get("api_desk", 1).content_hash

    stale = client.post("/api/releases/api_desk/rollback", json={"to": 2, "expected_head": 2})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_release"
    served = client.post("/api/releases/api_desk/rollback", json={"to": 1, "expected_head": 3})
    assert served.status_code == 400 and "already serves" in served.json()["error"]["message"]
    for body in ({"to": 1}, {"to": 0, "expected_head": 3}, {"to": 1, "expected_head": 3, "extra": 1}):
        assert client.post("/api/releases/api_desk/rollback", json=body).status_code == 400
    assert client.post("/api/releases/api_desk/rollback", content=b"not json").status_code == 400
    assert chain.head("api_desk").number == 3


def test_a_rollback_of_an_unknown_harness_is_a_404_and_a_deeply_nested_body_a_400(
    client: httpx.Client, seeded: Seeded
) -> None:
    chain = ReleaseChain(seeded.store)
    head = chain.head("notes_desk").number
    unknown = client.post("/api/releases/nobody/rollback", json={"to": 1, "expected_head": 1})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "harness_not_found"
    assert "nobody has no releases" in unknown.json()["error"]["message"]

    deep = b"[" * 200_000 + b"]" * 200_000
    for body in (deep, b'{"to": 1, "expected_head": 2, "note": ' + deep + b"}", b"\xff\xfe"):
        nested = client.post(
            "/api/releases/notes_desk/rollback", content=body, headers={"content-type": "application/json"}
        )
        assert nested.status_code == 400, nested.text[:200]
        assert nested.json()["error"]["code"] == "invalid_request"
    assert chain.head("notes_desk").number == head


def test_the_console_script_never_parses_data_as_html() -> None:
    script = (CONSOLE / "app.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", script)


# -- the pages in Chromium ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(seeded: Seeded):
    """A Chromium page; the store is seeded first, as the seeding runs its own event loop and playwright's
    would be running by then."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        opened = browser.new_page()
        opened.set_default_timeout(10_000)
        yield opened
        browser.close()


@needs_chromium
def test_an_episode_shows_its_transcript_world_diff_and_verdicts_side_by_side(page, seeded: Seeded) -> None:
    page.goto(f"{seeded.url}/console/?token={TOKEN}#/runs")
    page.click(f"#runs tr[data-run='{seeded.passing_run}'] a")
    page.click("#episodes tr[data-episode='note-1/0'] a")
    page.wait_for_selector("#transcript .event.tool_call")

    transcript = page.inner_text("#transcript")
    assert "Please add a note to order ORD-1001 that I called." in transcript
    assert 'add_order_note({"order_id":"ORD-1001","note":"called"})' in transcript
    assert "Done, the note is on the order." in transcript
    page.wait_for_selector("#diff [data-diff-table=order_notes]")
    assert "ORD-1001" in page.inner_text("#diff") and "called" in page.inner_text("#diff")
    assert page.locator("#verdicts .check[data-passed=true]").count() == 2
    assert "✓ inserted order_notes" in page.inner_text("#verdicts")

    page.goto(f"{seeded.url}/console/?token={TOKEN}#/runs/{seeded.failing_run}/note-1/0")
    page.wait_for_selector("#verdicts .check[data-passed=false]")
    assert "Sorry, I can't do that." in page.inner_text("#transcript")
    assert page.inner_text("#diff").endswith("No changes.")
    assert "✗ inserted order_notes" in page.inner_text("#verdicts")


@needs_chromium
def test_an_optimization_shows_its_trajectory_proposals_and_harness_diff(page, seeded: Seeded) -> None:
    page.goto(f"{seeded.url}/console/?token={TOKEN}#/runs")
    page.click(f"#optimizations tr[data-optimization='{seeded.optimization}'] a")
    page.wait_for_selector("#proposals tr[data-proposal='1']")

    row = page.inner_text("#proposals tr[data-proposal='1']")
    assert "helpful" in row and "accept" in row and "Tell the agent to add notes." in row
    assert "#1 helpful" in page.inner_text("#trajectory") and page.locator("svg.chart circle").count() == 2
    assert (
        page.locator(f"pre.diff .add:text-is('+{MAGIC}')").count() == 2
    )  # the proposal's patch, the run's diff


@needs_chromium
def test_the_release_chain_shows_evidence_and_a_rollback_click_makes_a_new_release(
    page, seeded: Seeded
) -> None:
    chain = ReleaseChain(seeded.store)
    first, second = chain.list("notes_desk")
    two_releases(chain, "ui_desk", chain.files(first), chain.files(second))

    page.goto(f"{seeded.url}/console/?token={TOKEN}#/releases")
    page.click("#chains tr[data-harness=notes_desk] a")
    page.wait_for_selector("#chain tr[data-release='2']")
    head = page.inner_text("#chain tr[data-release='2']")
    assert "2 (served)" in head and "gate: pass" in head and "better on 6 of 6 tasks" in head
    assert "2 calls (0 failed); feedback on 1: 0 passed, 1 not" in head
    assert page.locator(f"#chain tr[data-release='2'] a[href='#/runs/{seeded.passing_run}']").count() == 1
    assert "no gate" in page.inner_text("#chain tr[data-release='1']")

    page.goto(f"{seeded.url}/console/?token={TOKEN}#/releases/ui_desk")
    page.click("button[data-rollback='1']")
    page.click("button[data-confirm='1']")
    page.wait_for_selector("#chain tr[data-release='3']")

    assert "now serves the files of release 1" in page.inner_text("#flash")
    assert "rollback" in page.inner_text("#chain tr[data-release='3']")
    assert "3 (served)" in page.inner_text("#chain tr[data-release='3']")
    made = chain.head("ui_desk")
    assert (made.number, made.kind, made.content_hash) == (
        3,
        "rollback",
        chain.get("ui_desk", 1).content_hash,
    )
    assert page.locator("button[data-rollback='1']").count() == 0  # release 1's files are served now


@needs_chromium
def test_the_records_page_lists_records_with_feedback_and_opens_one(page, seeded: Seeded) -> None:
    page.goto(f"{seeded.url}/console/?token={TOKEN}#/records")
    page.wait_for_selector(f"#records tr[data-record={seeded.record}]")
    assert page.locator("#records tr[data-record]").count() == 2
    listed = page.inner_text(f"#records tr[data-record={seeded.record}]")
    assert "✗ support-ui 0.00: it refused" in listed and "Sorry, I can't do that." in listed

    page.select_option("#records-feedback", "true")
    page.click("#records-show")
    page.wait_for_function("document.querySelectorAll('#records tr[data-record]').length === 1")
    page.click(f"#records tr[data-record={seeded.record}] a[href^='#/records/']")
    page.wait_for_selector("#feedback tr[data-source=support-ui]")

    assert f"Add a note to ORD-1001 {UNSAFE_TEXT}" in page.inner_text("#request")
    assert page.locator("#injected").count() == 0  # shown as text, not made an element
    assert "Sorry, I can't do that." in page.inner_text("#response")
    assert 'Say "noted"' in page.inner_text("#feedback tr[data-source=support-ui]")

    page.click("a[href='#/records?session=s-1']")
    page.wait_for_function("document.querySelectorAll('#records tr[data-record]').length === 1")
    assert page.input_value("#records-session") == "s-1"


@needs_chromium
def test_the_world_console_and_the_service_console_link_to_each_other(page, seeded: Seeded) -> None:
    page.goto(f"{seeded.url}/?token={TOKEN}")
    page.wait_for_selector("#service-console:visible")
    page.click("#service-console")
    page.wait_for_selector("#runs")
    assert page.url.startswith(f"{seeded.url}/console/?token={TOKEN}")
    page.click("#world-console")
    page.wait_for_selector("#world option[value=helpdesk]", state="attached")
    assert page.url == f"{seeded.url}/?token={TOKEN}"


# -- jobs: what the page does with the jobs API, and without one -----------------------------------


def job(job_id: str, status: str, **fields: Any) -> Job:
    stamp = "2026-03-02 09:00:00"
    return Job.model_validate(
        {"id": job_id, "harness": "notes_desk", "path": "h", "kind": "gate", "options": {}, "source": "http",
         "status": status, "stage": "release", "created_at": stamp, "updated_at": stamp, **fields}
    )  # fmt: skip


class StandInJobs:
    """What `jobs_router` calls of `service.Jobs`, without running anything: a job held for approval (its
    gated release pending), a finished optimize job whose event log the page replays, and a job another
    process runs (its stored state is its one event, as `Jobs.events` gives it)."""

    def __init__(self) -> None:
        pending = {"commit": "c" * 40, "content_hash": "d" * 64, "expected_head": 2}
        pending["evidence"] = {"gate": "pass", "summary": "held: better on 6 of 6 tasks"}
        self.jobs = {
            "job-held": job("job-held", "held", outcome="held for approval", result={"pending": pending}),
            "job-done": job("job-done", "finished", kind="optimize", stage="done", optimization_id="opt-1"),
            "job-elsewhere": job("job-elsewhere", "running", kind="optimize", stage="optimize"),
        }
        status = OptimizerStatus(
            run_id="opt-1", stage="screening", message="screening proposal 1", iteration=1, max_proposals=4
        )
        progress = OptimizerEvent(
            kind="progress", status=status.model_copy(update={"batch_done": 3, "batch_total": 4})
        )
        log = [
            (
                "job",
                {**self.jobs["job-done"].model_dump(mode="json"), "status": "running", "stage": "optimize"},
            ),
            ("progress", progress.model_dump(mode="json", exclude_none=True)),  # as the jobs log it
            ("gate", {"side": "candidate", "done": 4, "total": 4}),
            ("job", {**self.jobs["job-done"].model_dump(mode="json"), "outcome": "1 variant(s) accepted"}),
        ]
        self.logs = {
            "job-done": log,
            "job-elsewhere": [("job", self.jobs["job-elsewhere"].model_dump(mode="json"))],
        }

    def list(self, *, harness: str | None = None, limit: int | None = 50) -> list[Job]:
        return [found for found in self.jobs.values() if harness in (None, found.harness)][:limit]

    def get(self, job_id: str) -> Job:
        if job_id not in self.jobs:
            raise UnknownJob(f"no job {job_id}")
        return self.jobs[job_id]

    async def events(self, job_id: str, *, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        for number, (event, data) in enumerate(self.logs.get(job_id, []), 1):
            if number > after:
                yield {"id": number, "event": event, "data": data}

    def events_ended(self, job_id: str, after: int) -> bool:
        return after >= len(self.logs.get(job_id, []))  # every job here has ended, or runs elsewhere

    def approve(self, job_id: str) -> Job:
        approved = self.get(job_id).model_copy(
            update={"status": "finished", "outcome": "release 3 published"}
        )
        self.jobs[job_id] = approved
        return approved


def minimal_app(store: RunStore, *, with_jobs: bool) -> FastAPI:
    """The console's router alone (and the jobs API over stand-in jobs): no worlds, no endpoint."""
    app = FastAPI()
    app.include_router(console_router(store, ReleaseChain(store), RecordStore(store)))
    if with_jobs:
        app.include_router(jobs_router(StandInJobs()))
    return app


@needs_chromium
def test_without_a_jobs_api_the_jobs_page_says_jobs_are_not_enabled(page, seeded: Seeded, serve) -> None:
    with serve(minimal_app(seeded.store, with_jobs=False)) as url:
        page.goto(f"{url}/console/#/jobs")
        page.wait_for_selector("text=Jobs are not enabled on this server.")
        page.goto(f"{url}/console/#/releases/notes_desk")
        page.wait_for_selector("#chain")
        assert page.locator("#held").count() == 0


@needs_chromium
def test_a_held_job_shows_its_gate_evidence_and_an_approve_button(page, seeded: Seeded, serve) -> None:
    with serve(minimal_app(seeded.store, with_jobs=True)) as url:
        page.goto(f"{url}/console/#/releases/notes_desk")
        page.wait_for_selector("#held tr[data-job=job-held]")
        held = page.inner_text("#held tr[data-job=job-held]")
        assert "release 3, gated against release 2" in held and "held: better on 6 of 6 tasks" in held

        page.click("button[data-approve=job-held]")
        page.wait_for_selector("#flash")
        assert page.inner_text("#flash") == "Job job-held: release 3 published."
        assert page.locator("#held").count() == 0


@needs_chromium
def test_a_job_page_follows_its_events_live(page, seeded: Seeded, serve) -> None:
    with serve(minimal_app(seeded.store, with_jobs=True)) as url:
        page.goto(f"{url}/console/#/jobs")
        page.wait_for_selector("#jobs tr[data-job=job-done]")
        assert page.locator("#jobs a[href='#/optimizations/opt-1']").count() == 1

        page.click("#jobs tr[data-job=job-done] a[href='#/jobs/job-done']")
        page.wait_for_selector("#job-live:text('The job is finished.')")
        assert page.locator("#job-events li").count() == 4
        assert "screening proposal 1 · proposal 1/4 · 0 accepted, 0 rejected" in page.inner_text(
            "#job-events"
        )
        assert page.inner_text("#job-progress").strip() == "4/4 gate, candidate"
        assert page.inner_text("#job-outcome") == "1 variant(s) accepted"


@needs_chromium
def test_a_job_another_process_runs_is_shown_once_and_not_reconnected_to(page, seeded: Seeded, serve) -> None:
    asked: list[str] = []

    def count(request) -> None:
        if "/jobs/job-elsewhere/events" in request.url:
            asked.append(request.url)

    with serve(minimal_app(seeded.store, with_jobs=True)) as url:
        page.on("request", count)
        try:
            page.goto(f"{url}/console/#/jobs/job-elsewhere")
            page.wait_for_selector("#job-live:has-text('a job another process runs streams only its state')")
            assert page.inner_text("#job-status") == "running"
            assert page.locator("#job-events li").count() == 1
            page.wait_for_timeout(4000)  # longer than an EventSource waits to reconnect
        finally:
            page.remove_listener("request", count)
    assert len(asked) == 2  # the stream, and one reconnection the server answered 204
