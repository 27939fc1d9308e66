"""The service console: a small static page at `/console/` and the JSON routes it reads.

People browse what Atoll stored (runs with each episode's transcript, world diff and verdicts;
optimizations with their trajectory and proposals), what is served (each harness's release chain, with
what its releases served and the feedback they got) and the records, and roll a release back, without a
terminal. The page is plain HTML and JavaScript served from this package: no build step, nothing fetched
from elsewhere, so it works on a machine with no network and under the app's guard (a token on every
request, same origin only). Records are read from the existing `/v1/records` routes and jobs from the
jobs API when the app has one.

Every route reads SQLite, which blocks: they are plain `def` routes, run in worker threads, and the one
async route (rollback, which reads its own body) hands the chain's transaction to a thread.
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from atoll.evals import MAX_SEED, RunRecord, RunStore, StoreError
from atoll.optimizer import ReportError, list_optimizations, load_run_report, proposal_patches

from ._records import RecordStore, ReleaseTraffic
from ._releases import MAX_NUMBER, ReleaseChain, ReleaseError, StaleRelease
from ._wire import error_body, query_params

CONSOLE = Path(__file__).parent / "console"
MAX_LIST = 1000
NO_CACHE = {"cache-control": "no-cache"}


class ListQuery(BaseModel):
    """The query of `GET /api/optimizations`."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(100, ge=1, le=MAX_LIST)


class RunsQuery(ListQuery):
    """The query of `GET /api/runs`."""

    kind: str | None = Field(None, description="Only runs of this kind (`eval`, `gate`, ...).")


class RollbackIn(BaseModel):
    """The body of `POST /api/releases/{harness}/rollback`: `ReleaseChain.rollback`'s arguments."""

    model_config = ConfigDict(extra="forbid")

    to: int = Field(ge=1, le=MAX_NUMBER, description="The release whose files to serve again.")
    expected_head: int = Field(
        ge=1,
        le=MAX_NUMBER,
        description="The head the page showed: a head moved since then refuses the rollback.",
    )
    note: str = Field("", max_length=2000)


class RunSummary(BaseModel):
    """One line of the runs list: what the run was and its headline figures."""

    id: str
    kind: str
    harness: str
    model: str
    suite: str | None
    split: str | None
    status: str
    started_at: str
    finished_at: str | None
    episodes: int | None
    mean_score: float | None
    pass_1: float | None
    tokens: int | None
    cost_usd: float | None

    @classmethod
    def of(cls, run: RunRecord) -> RunSummary:
        metrics = run.metrics
        return cls(
            **run.model_dump(include={"id", "kind", "harness", "model", "suite", "split", "status"}),
            started_at=run.started_at,
            finished_at=run.finished_at,
            episodes=metrics.episodes if metrics else None,
            mean_score=metrics.mean_score if metrics else None,
            pass_1=metrics.pass_1 if metrics else None,
            tokens=metrics.usage.total_tokens if metrics else None,
            cost_usd=metrics.usage.cost_usd if metrics else None,
        )


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse(error_body(message, code, status), status_code=status)


def _invalid(error: ValidationError, where: str) -> JSONResponse:
    message = "; ".join(
        f"{'.'.join(map(str, item['loc'])) or where}: {item['msg']}" for item in error.errors()
    )
    return _error(400, message, "invalid_request")


def console_router(store: RunStore, releases: ReleaseChain, records: RecordStore) -> APIRouter:
    """The console page (`/console/`) and its JSON routes (`/api/...`) over these stores; auth is the app's.

    Args:
        store: the runs store: runs, episodes and optimizations are read from it.
        releases: the release chains shown, and rolled back by `POST /api/releases/{harness}/rollback`.
        records: the records whose counts and feedback each release is shown with.
    """
    router = APIRouter()

    @router.get("/console/")
    def page() -> FileResponse:
        return FileResponse(CONSOLE / "index.html", headers=NO_CACHE)

    @router.get("/console/app.js")
    def script() -> FileResponse:
        return FileResponse(CONSOLE / "app.js", headers=NO_CACHE)

    @router.get("/console/style.css")
    def style() -> FileResponse:
        return FileResponse(CONSOLE / "style.css", headers=NO_CACHE)

    # -- runs and optimizations -------------------------------------------------------------------------

    @router.get("/api/runs", response_model=None)
    def list_runs(request: Request) -> dict[str, Any] | JSONResponse:
        """The latest runs first, with the kinds there are (the page's filter)."""
        try:
            query = RunsQuery.model_validate(query_params(request))
        except ValidationError as error:
            return _invalid(error, "query")
        runs = store.runs(limit=query.limit, kind=query.kind)
        return {"data": [RunSummary.of(run).model_dump() for run in runs], "kinds": store.run_kinds()}

    @router.get("/api/runs/{ref}", response_model=None)
    def get_run(ref: str) -> dict[str, Any] | JSONResponse:
        """A run (by id, a unique part of one, or `latest`) and a line per episode, transcripts unread."""
        try:
            run = store.run(ref)
        except StoreError as error:
            return _error(404, str(error), "unknown_run")
        episodes = [line.model_dump() for line in store.episode_lines(run.id)]
        return {"run": run.model_dump(mode="json"), "episodes": episodes}

    @router.get("/api/runs/{ref}/episodes/{task_id}/{seed}", response_model=None)
    def get_episode(ref: str, task_id: str, seed: int) -> dict[str, Any] | JSONResponse:
        """One episode whole: transcript, world calls and diff, the system messages sent, and its grade."""
        try:
            run_id = store.resolve(ref)
        except StoreError as error:
            return _error(404, str(error), "unknown_run")
        found = store.episodes(run_id, task_id=task_id, seed=seed) if 0 <= seed <= MAX_SEED else []
        if not found:
            return _error(
                404, f"run {run_id} has no episode of task {task_id!r} at seed {seed}", "unknown_episode"
            )
        result = found[0]
        return {
            "run_id": run_id,
            **result.model_dump(mode="json"),
            "passed": result.passed,
            "score": result.score,
            "patterns": {name: count for name, count in result.episode.patterns.items() if count},
        }

    @router.get("/api/optimizations", response_model=None)
    def optimizations(request: Request) -> dict[str, Any] | JSONResponse:
        """The latest optimization runs first."""
        try:
            query = ListQuery.model_validate(query_params(request))
        except ValidationError as error:
            return _invalid(error, "query")
        return {"data": [run.model_dump() for run in list_optimizations(store, limit=query.limit)]}

    @router.get("/api/optimizations/{ref}", response_model=None)
    def get_optimization(ref: str) -> dict[str, Any] | JSONResponse:
        """What `optimize report` shows, with each proposal's patch and the harness diff, start to final."""
        try:
            report = load_run_report(store, ref)
        except ReportError as error:
            return _error(404, str(error), "unknown_optimization")
        patches = proposal_patches(store, report.id)
        proposals = [
            {
                **step.model_dump(mode="json"),
                "record": step.record,
                "patch": patches.get(step.iteration) or "",
            }
            for step in report.proposals
        ]
        return {
            **report.model_dump(mode="json", exclude={"files_start", "files_final", "proposals"}),
            "accepted": report.accepted,
            "proposals": proposals,
            "changes": _file_changes(report.files_start, report.files_final),
        }

    # -- releases -------------------------------------------------------------------------------------

    @router.get("/api/releases")
    def list_releases() -> dict[str, Any]:
        """Every harness with a release chain, with its head (what is served) and its length."""
        return {
            "data": [
                {"harness": harness, "releases": count, **_head(releases, harness)}
                for harness, count in releases.lengths().items()
            ]
        }

    @router.get("/api/releases/{harness}", response_model=None)
    def get_releases(harness: str) -> dict[str, Any] | JSONResponse:
        """A harness's chain, oldest first, each release with what it served (calls and feedback)."""
        try:
            chain = releases.list(harness)
        except ReleaseError as error:  # a row broken in the store: named, so it can be repaired
            return _error(500, str(error), "broken_release")
        if not chain:
            return _error(
                404, f"{harness} has no releases; `optimize release` publishes one", "unknown_harness"
            )
        traffic = records.traffic(harness)
        return {
            "harness": harness,
            "head": chain[-1].number,
            "releases": [
                {
                    **release.model_dump(mode="json"),
                    "served": traffic.get(release.number, ReleaseTraffic()).model_dump(),
                }
                for release in chain
            ],
        }

    @router.post("/api/releases/{harness}/rollback", status_code=201, response_model=None)
    async def rollback(harness: str, request: Request) -> dict[str, Any] | JSONResponse:
        """Serve an older release's files again, as a new release, if the head is still the one shown."""
        try:  # pydantic's own JSON parser: deep nesting is an invalid body, not a RecursionError
            asked = RollbackIn.model_validate_json(await request.body())
        except ValidationError as error:
            return _invalid(error, "body")
        if await asyncio.to_thread(releases.head, harness) is None:
            return _error(
                404, f"{harness} has no releases; `optimize release` publishes one", "harness_not_found"
            )
        try:
            made = await asyncio.to_thread(
                releases.rollback, harness, asked.to, expected_head=asked.expected_head, note=asked.note
            )
        except StaleRelease as error:
            return _error(409, str(error), "stale_release")
        except ReleaseError as error:
            return _error(400, str(error), "release_refused")
        return made.model_dump(mode="json")

    return router


def _head(releases: ReleaseChain, harness: str) -> dict[str, Any]:
    """A chain's head for the listing; a head broken in the store is named (`problem`), never a 500 that
    would hide every other harness's chain."""
    try:
        head = releases.head(harness)
    except ReleaseError as error:
        return {"head": None, "problem": str(error)}
    return {"head": head.model_dump(mode="json") if head else None}


def _file_changes(before: dict[str, str], after: dict[str, str]) -> list[dict[str, str]]:
    """Each added, removed or changed harness file with its unified diff: the page colours the lines."""
    changes = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        status = "added" if old is None else "removed" if new is None else "changed"
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"start/{path}",
            tofile=f"final/{path}",
        )
        changes.append({"path": path, "status": status, "diff": "".join(_ended(line) for line in lines)})
    return changes


def _ended(line: str) -> str:
    """A diff line ending in a newline, as the last line of a file without one does not."""
    return line if line.endswith("\n") else line + "\n"
