"""Jobs: the optimization and gate runs the service starts for a harness it serves, from a recipe or from
`POST /jobs`.

A job works in the harness folder the service serves, as `optimize run` does: the folder must be a clean
git checkout, the optimizer commits what it accepts there, and a release names one of those commits. It runs
as an asyncio task in the server's event loop (the optimizer and the model layer are async), one job per
harness at a time. Three kinds:

- `optimize`: run the optimizer on the folder; accepted variants are committed, nothing is released.
- `gate`: gate the folder's committed files against the served head, then release them (`release: auto`)
  or hold them for approval (`release: hold`: published by `approve`, by compare-and-swap on the head the
  gate judged).
- `evolve`: draft train tasks from the harness's records with negative feedback (`draft_tasks`, written
  into the suite and committed there, one commit touching only the drafts file), optimize on the suite's
  train split with them, then gate and release as `gate` does when a variant was accepted.

Every job is a row of the runs store's `jobs` table, written at each step (`stage`: draft, optimize,
release, done), so it outlives the process. The row records the process running it (`owner`), and the
optimization's id once the optimizer has one: a service that starts finds a job `running` under a process
that is gone (or `interrupted`, when a service stopped while it ran) and resumes it from its stage, the
optimization with `optimize(..., resume=id)`, as `optimize run --resume` does. A job that fails is kept
with its error; the service goes on serving. Each job keeps a bounded log of its events (the optimizer's,
the gate's progress, its own state) in memory, which `events` replays to a late subscriber before the live
ones.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from evals import BatchProgress, RunStore, suite_for
from harnesses import load_harness
from harnesses.models import Model
from optimizer import (
    GateConfig,
    GateProgress,
    Objective,
    OptimizeConfig,
    OptimizeResult,
    OptimizerEvent,
    git,
    operator_names,
    optimize,
)
from worlds import AtollError
from worlds.base import live_status, new_run_id, now_text, process_owner

from ._publish import (
    ReleaseRefused,
    gate_candidate,
    gate_evidence,
    read_candidate,
    release_harness,
    tag_release,
)
from ._records import FEEDBACK_TABLE, RECORDS_TABLE, RecordStore
from ._releases import ReleaseChain, ReleaseError, StaleRelease
from ._tasks import draft_tasks

log = logging.getLogger(__name__)

TABLE = "jobs"
EVENT_LOG = 2000  # events kept per job for late subscribers; older ones are dropped
KEPT_LOGS = 50  # finished jobs whose event log stays in memory
CANCEL_WAIT_S = 30.0
MAX_SKIPS = 50  # records a job lists as not drafted, with why
HTTP_MAX_MINUTES = 240.0  # the bounds of a job started over HTTP (`JobRequestOptions`)
HTTP_MAX_PROPOSALS = 100
HTTP_MAX_SEEDS = 20
HTTP_MAX_CONCURRENCY = 64

JobKind = Literal["optimize", "gate", "evolve"]
JobStatus = Literal["running", "held", "finished", "failed", "cancelled", "interrupted"]
JobStage = Literal["draft", "optimize", "release", "done"]
ReleasePolicy = Literal["auto", "hold"]
FIRST_STAGE: dict[str, JobStage] = {"evolve": "draft", "optimize": "optimize", "gate": "release"}


class JobError(AtollError):
    """A job cannot be started, found, cancelled or approved as asked; `status` is the HTTP status to answer."""

    status = 400
    code = "invalid_job"


class UnknownJob(JobError):
    """No job has this id in the runs store."""

    status = 404
    code = "job_not_found"


class UnknownHarness(JobError):
    """The harness named is not one the service serves."""

    status = 404
    code = "harness_not_found"


class JobConflict(JobError):
    """The harness already has a running job, or the job is not in a state that allows what was asked."""

    status = 409
    code = "job_conflict"


class _JobSettings(BaseModel):
    """The options a recipe file and a `POST /jobs` request share (`JobOptions`, `JobRequestOptions`)."""

    model_config = ConfigDict(extra="forbid")

    objective: Objective = Field(
        "quality", description="quality, or cost, latency or tokens per episode with quality held."
    )
    operators: list[str] | None = Field(None, description="Operators to use (`optimizer.operator_names()`).")
    proposer_model: str | None = Field(None, description="Enables the LLM proposer with this model.")
    max_proposals: int = Field(4, ge=0)
    max_minutes: float | None = Field(10.0, gt=0)
    max_episodes: int | None = Field(None, ge=1)
    max_model_calls: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    patience: int | None = Field(None, ge=1, description="Stop after this many rejections in a row.")
    k: int = Field(1, ge=1, description="Seeds per val task in the optimizer's gate set.")
    gate_k: int | None = Field(
        None, ge=1, description="Seeds per task in the release gate; default each task's."
    )
    concurrency: int = Field(4, ge=1)
    train_sample: int | None = Field(
        None,
        ge=1,
        description="Train tasks the proposers learn from; None: all, so every draft is among them.",
    )
    seed: int = 0
    release: ReleasePolicy = Field(
        "auto", description="auto: publish what passes the gate; hold: keep it pending until approved."
    )

    @field_validator("operators")
    @classmethod
    def _known_operators(cls, names: list[str] | None) -> list[str] | None:
        """Refused here, not when a job starts: a recipe with a misspelt operator fails at start-up."""
        known = operator_names()
        unknown = [name for name in names or [] if name not in known]
        if unknown:
            raise ValueError(f"unknown operator(s) {', '.join(unknown)}; operators: {', '.join(known)}")
        return names


class JobOptions(_JobSettings):
    """How a job runs: what the optimizer improves, within which budget, on which suite, and what happens to a
    version that passes the gate. A recipe's settings (the operator's own file); a `POST /jobs` request sets
    fewer of them, within bounds (`JobRequestOptions`)."""

    suite: Path | None = Field(
        None,
        description="The eval suite; default the harness's (`evals.suite_for`). Relative to the recipe file.",
    )

    @field_validator("suite")
    @classmethod
    def _from_the_file(cls, suite: Path | None, info: ValidationInfo) -> Path | None:
        """A relative suite is relative to the recipe file that names it (its folder is the context's base)."""
        base = (info.context or {}).get("base")
        return (
            Path(base) / suite
            if suite is not None and base is not None and not suite.is_absolute()
            else suite
        )

    def optimize_config(self, harness: Path, model: str | None) -> OptimizeConfig:
        """The optimizer's settings for a job on the folder `harness`."""
        return OptimizeConfig(
            harness=harness,
            suite=self.suite,
            model=model,
            proposer_model=self.proposer_model,
            operators=self.operators,
            objective=self.objective,
            max_proposals=self.max_proposals,
            max_minutes=self.max_minutes,
            max_episodes=self.max_episodes,
            max_model_calls=self.max_model_calls,
            max_cost_usd=self.max_cost_usd,
            patience=self.patience,
            k=self.k,
            concurrency=self.concurrency,
            train_sample=self.train_sample,
            seed=self.seed,
        )


class JobRequestOptions(_JobSettings):
    """The `options` of `POST /jobs`: a job's options as anyone who can reach the server may set them.

    A request runs code and spends model calls on the server's keys, so it gets less than a recipe file:
    no `suite` (its graders are imported and drafts committed there: the job uses the recipe's suite, else
    the served harness's), a time budget it must give and that is capped, capped proposals, seeds and
    concurrency, and no proposer model but the recipe's (`job_options` checks that).
    """

    max_proposals: int = Field(4, ge=0, le=HTTP_MAX_PROPOSALS)
    max_minutes: float = Field(
        gt=0, le=HTTP_MAX_MINUTES, description=f"Required; at most {HTTP_MAX_MINUTES:g}."
    )
    k: int = Field(1, ge=1, le=HTTP_MAX_SEEDS, description="Seeds per val task in the optimizer's gate set.")
    gate_k: int | None = Field(
        None, ge=1, le=HTTP_MAX_SEEDS, description="Seeds per task in the release gate; default each task's."
    )
    concurrency: int = Field(4, ge=1, le=HTTP_MAX_CONCURRENCY)

    @model_validator(mode="before")
    @classmethod
    def _no_suite(cls, data: Any) -> Any:
        if isinstance(data, dict) and "suite" in data:
            raise ValueError(
                "suite: a job started over HTTP uses the recipe's suite, else the served harness's own; "
                "name another in the recipe file"
            )
        return data

    def job_options(self, planned: JobOptions | None) -> JobOptions:
        """These options as a job's, beside `planned` (the recipe's options, if the harness has a recipe): its
        suite, and its proposer model as the only one a request may name (JobError otherwise)."""
        allowed = planned.proposer_model if planned is not None else None
        if self.proposer_model is not None and self.proposer_model != allowed:
            raise JobError(
                "options.proposer_model: a job started over HTTP may use only the recipe's proposer model ("
                + (repr(allowed) if allowed else "none here")
                + "), not another one on the server's keys; name it in the recipe file"
            )
        return JobOptions.model_validate(
            {**self.model_dump(), "suite": planned.suite if planned is not None else None}
        )


class JobPlan(BaseModel):
    """What a job does: its kind and options. A recipe's `plan` returns one."""

    model_config = ConfigDict(extra="forbid")

    kind: JobKind
    options: JobOptions = Field(default_factory=JobOptions)


class JobRequest(BaseModel):
    """The body of `POST /jobs`: without `kind`, the recipe's plan; without `options`, the recipe's (else the
    defaults); `options` are bounded (`JobRequestOptions`)."""

    model_config = ConfigDict(extra="forbid")

    harness: str = Field(description="The served harness's harness.yaml name.")
    kind: JobKind | None = None
    options: JobRequestOptions | None = None


class Job(BaseModel):
    """One job, as the runs store keeps it."""

    id: str
    harness: str
    path: str = Field(description="The harness folder it works in.")
    kind: JobKind
    options: JobOptions
    source: str = Field(description="`http`, or `recipe <module:Class>`.")
    status: JobStatus
    stage: JobStage = Field(description="Where it is, or where a resumed job picks up.")
    outcome: str = Field("", description="One line: what it did (released 3, held, refused by the gate ...).")
    optimization_id: str | None = Field(None, description="The optimizer run (`optimize show ID`).")
    feedback_mark: str | None = Field(
        None, description="An evolve job: when the newest negative feedback it was started on was posted."
    )
    result: dict[str, Any] = Field(
        default_factory=dict, description="drafts, optimization, gate, release, pending: what each step gave."
    )
    error: str | None = None
    created_at: str
    updated_at: str
    finished_at: str | None = None
    owner: str | None = Field(
        None, description="The process running it (host, pid), as the runs store records it."
    )


_COLUMNS: dict[str, type] = {
    "id": str,
    "harness": str,
    "path": str,
    "kind": str,
    "options": str,  # JSON
    "source": str,
    "status": str,
    "stage": str,
    "outcome": str,
    "optimization_id": str,
    "feedback_mark": str,
    "result": str,  # JSON
    "error": str,
    "created_at": str,
    "updated_at": str,
    "finished_at": str,
    "owner": str,
}


def negative_feedback(store: RunStore, harness: str, after: str | None = None) -> tuple[int, str | None]:
    """(how many records of `harness` got negative feedback, when the newest of it was posted), counting only
    feedback posted after `after` (the store's timestamps, to the second) when given."""
    (row,) = store.read(
        f"SELECT COUNT(DISTINCT f.record_id), MAX(f.updated_at) FROM {FEEDBACK_TABLE} f "
        f"JOIN {RECORDS_TABLE} r ON r.id = f.record_id "
        "WHERE r.harness = ? AND f.passed = 0 AND (? IS NULL OR f.updated_at > ?)",
        [harness, after, after],
    )
    return row[0], row[1]


class _Log:
    """A job's events in this process: a bounded history, and a wake-up for those following it live.
    Events may come from a worker thread (a progress callback), so they are appended under a lock and
    the followers are woken in the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: deque[dict[str, Any]] = deque(maxlen=EVENT_LOG)
        self.task: asyncio.Task[None] | None = None
        self.cancelling = False  # cancelled by request (status cancelled), not by a stopping service
        self.done = False
        self._seq = 0
        self._lock = threading.Lock()
        self._changed = asyncio.Event()

    def add(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            self.events.append({"id": self._seq, "event": event, "data": data})
        self.loop.call_soon_threadsafe(self._wake)

    @property
    def last(self) -> int:
        """The id of the newest event so far."""
        with self._lock:
            return self._seq

    def close(self) -> None:
        self.done = True
        self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[dict[str, Any]]:
        while True:
            changed = self._changed  # taken before reading, so an event added meanwhile still wakes us
            with self._lock:
                new = [event for event in self.events if event["id"] > after]
            for event in new:
                after = event["id"]
                yield event
            if self.done and not new:
                return
            if not new:
                await changed.wait()


_TASKS: dict[str, asyncio.Task[None]] = {}  # job id -> the task running it, for every `Jobs` of this process


def _runs_here(job_id: str) -> bool:
    """Whether a task of this process is running the job now."""
    task = _TASKS.get(job_id)
    return task is not None and not task.done() and not task.get_loop().is_closed()


class Jobs:
    """The jobs of the harnesses a service serves, kept in its runs store.

    Args:
        store: the runs store (the `jobs` table is created here).
        records: the records evolve jobs draft tasks from.
        releases: the release chains gate and evolve jobs publish to.
        harnesses: harness.yaml name -> the folder the service serves it from (a clean git checkout).
        model: a Model (the scripted model in tests) or model name for the agent, as the endpoint has it;
            default each harness's own.
    """

    def __init__(
        self,
        store: RunStore,
        records: RecordStore,
        releases: ReleaseChain,
        harnesses: Mapping[str, Path],
        *,
        model: Model | str | None = None,
    ) -> None:
        self.store, self.records, self.releases = store, records, releases
        self.harnesses = dict(harnesses)
        self.model_name = model if isinstance(model, str) else None
        self.model = None if isinstance(model, str) else model
        self._logs: dict[str, _Log] = {}
        store.ensure_table(TABLE, _COLUMNS, pk="id")
        with store.transaction() as db:
            db[TABLE].create_index(["harness", "created_at"], if_not_exists=True)
            db[TABLE].create_index(["status"], if_not_exists=True)

    # -- reading ------------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        rows = self._rows("id = ?", [job_id])
        if not rows:
            raise UnknownJob(f"no job {job_id!r}; GET /jobs lists them")
        return rows[0]

    def list(self, *, harness: str | None = None, limit: int | None = 50) -> list[Job]:
        """Jobs, newest first."""
        where, values = ("harness = ?", [harness]) if harness is not None else ("1", [])
        suffix = f" LIMIT {int(limit)}" if limit is not None else ""
        return self._rows(f"{where} ORDER BY created_at DESC, rowid DESC{suffix}", values)

    def running(self, harness: str) -> Job | None:
        """The job running for `harness` now (here, or in another process that is alive or cannot be told).
        Not a row left `running` by this process with no task running it (one whose end could not be saved)."""
        rows = self._rows("harness = ? AND status = 'running' ORDER BY created_at DESC", [harness])
        here = process_owner()
        return next(
            (
                job
                for job in rows
                if job.status == "running"  # not those read as interrupted
                and (job.owner != here or _runs_here(job.id))
            ),
            None,
        )

    def last(self, harness: str, kind: JobKind | None = None) -> Job | None:
        """The newest job of `harness` (of `kind`, when given)."""
        where, values = "harness = ?", [harness]
        if kind is not None:
            where, values = where + " AND kind = ?", [*values, kind]
        rows = self._rows(f"{where} ORDER BY created_at DESC, rowid DESC LIMIT 1", values)
        return rows[0] if rows else None

    def _rows(self, where: str, values: list[Any]) -> list[Job]:
        return [_job(dict(row)) for row in self.store.read(f"SELECT * FROM {TABLE} WHERE {where}", values)]

    # -- starting, resuming, stopping -----------------------------------------------------------------

    async def start(self, plan: JobPlan, harness: str, *, source: str = "http") -> Job:
        """Start a job on a served harness; JobConflict when that harness already has one running."""
        path = self._path(harness)
        now = now_text()
        job = Job(
            id=new_run_id("job"),
            harness=harness,
            path=str(path),
            kind=plan.kind,
            options=plan.options,
            source=source,
            status="running",
            stage=FIRST_STAGE[plan.kind],
            created_at=now,
            updated_at=now,
            owner=process_owner(),
        )
        if plan.kind == "evolve":
            job.feedback_mark = negative_feedback(self.store, harness)[1]
        with self.store.transaction() as db:  # BEGIN IMMEDIATE: two services on one store cannot both start
            running = self.running(harness)
            if running is not None:
                raise JobConflict(
                    f"job {running.id} ({running.kind}) is running for {harness}: one job per harness at a time; "
                    f"wait for it or POST /jobs/{running.id}/cancel"
                )
            db[TABLE].insert(_row(job))
        self._launch(job, resuming=False)
        return job

    async def resume_interrupted(self) -> list[Job]:
        """Resume, from its stage, each served harness's newest job left `running` by a process that is gone
        or `interrupted` by a service that stopped; an older one of the same harness is cancelled, saying so."""
        resumed: list[Job] = []
        for job in self._rows("status IN ('running', 'interrupted') ORDER BY created_at DESC", []):
            if job.status != "interrupted" or job.harness not in self.harnesses or job.id in self._logs:
                continue
            running = self.running(job.harness)  # a newer one resumed here, or one alive elsewhere
            if running is not None:
                self._end(job, "cancelled", outcome=f"not resumed: job {running.id} of this harness runs")
                continue
            if not self._claim(job, str(self.harnesses[job.harness])):
                continue  # another service starting at the same time claimed it first
            self._launch(job, resuming=True)
            resumed.append(job)
        return resumed

    async def cancel(self, job_id: str) -> Job:
        """Cancel a running job (the optimizer records its run as interrupted), or drop a held release or an
        interrupted job; JobConflict for a job that has ended or runs in another process."""
        job = self.get(job_id)
        live = self._logs.get(job_id)
        if live is not None and live.task is not None and not live.task.done():
            live.cancelling = True
            live.task.cancel()
            await asyncio.wait({live.task}, timeout=CANCEL_WAIT_S)
            job = self.get(job_id)
            if job.status != "running" or not live.task.done():
                return job
            # a task cancelled before its first step never ran `_run`, which writes the status: end it here
        if job.status == "running" and job.owner == process_owner() and not _runs_here(job_id):
            ended = self._end(job, "cancelled", outcome=f"cancelled at {job.stage}")
            if live is not None:
                live.close()
            return ended
        if job.status in ("held", "interrupted"):
            what = "the held release is dropped" if job.status == "held" else "it will not be resumed"
            return self._end(job, "cancelled", outcome=f"cancelled: {what}")
        if job.status == "running":
            raise JobConflict(f"job {job_id} runs in another process ({job.owner}); cancel it there")
        raise JobConflict(
            f"job {job_id} is {job.status}: only a running, held or interrupted job can be cancelled"
        )

    async def close(self) -> None:
        """Stop the jobs running here (a stopping service): each is left `interrupted`, to resume at the next start."""
        stopping = {
            job_id: (kept, kept.task)
            for job_id, kept in self._logs.items()
            if kept.task is not None and not kept.task.done()
        }
        for _, task in stopping.values():
            task.cancel()
        await asyncio.gather(*(task for _, task in stopping.values()), return_exceptions=True)
        for job_id, (kept, _) in stopping.items():  # a task cancelled before its first step wrote nothing
            job = self.get(job_id)
            if job.status == "running" and job.owner == process_owner():
                self._settle(job, "interrupted", outcome=f"interrupted at {job.stage}: the service stopped")
                kept.close()

    def _path(self, harness: str) -> Path:
        if harness not in self.harnesses:
            served = ", ".join(self.harnesses) or "none"
            raise UnknownHarness(f"harness {harness!r} is not served here (served: {served})")
        return self.harnesses[harness]

    def _launch(self, job: Job, *, resuming: bool) -> None:
        history = _Log(asyncio.get_running_loop())
        self._logs[job.id] = history
        for stale in [key for key, kept in self._logs.items() if kept.done][:-KEPT_LOGS]:
            del self._logs[stale]  # the oldest finished logs beyond KEPT_LOGS
        history.add("job", job.model_dump(mode="json"))
        task = asyncio.get_running_loop().create_task(self._run(job, history, resuming=resuming))
        history.task = _TASKS[job.id] = task
        task.add_done_callback(lambda done: _TASKS.pop(job.id) if _TASKS.get(job.id) is done else None)

    # -- events ---------------------------------------------------------------------------------------

    def events_ended(self, job_id: str, after: int) -> bool:
        """Whether `events(job_id, after=after)` has nothing to send, now or later: the job's stream has ended
        and a subscriber that saw event `after` saw it all."""
        live = self._logs.get(job_id)
        if live is None:
            return after >= 1
        return live.done and live.last <= after

    async def events(self, job_id: str, *, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The job's events after id `after`: the kept history, then live ones until it ends. A job that ran in
        another process (or before a restart) has no history here: its stored state is the one event."""
        job = self.get(job_id)
        live = self._logs.get(job_id)
        if live is None:
            if after < 1:
                yield {"id": 1, "event": "job", "data": job.model_dump(mode="json")}
            return
        async for event in live.follow(after):
            yield event

    # -- the run ----------------------------------------------------------------------------------------

    async def _run(self, job: Job, live: _Log, *, resuming: bool) -> None:
        path = Path(job.path)
        try:
            if not resuming:
                _check_checkout(path)
            if job.stage == "draft":
                await self._draft(job, path)
            if job.stage == "optimize":
                await self._optimize(job, path, live)
            if job.stage == "release":
                await self._release(job, path, live)
        except asyncio.CancelledError:
            if live.cancelling:
                self._settle(job, "cancelled", outcome=f"cancelled at {job.stage}")
            else:
                self._settle(job, "interrupted", outcome=f"interrupted at {job.stage}: the service stopped")
            raise
        except Exception as error:  # a job's failure is its own: recorded, and the service goes on
            message = str(error) if isinstance(error, AtollError) else f"{type(error).__name__}: {error}"
            if not isinstance(error, AtollError):
                log.exception("job %s failed", job.id)
            self._settle(job, "failed", outcome=f"failed at {job.stage}", error=message)
        else:
            self._settle(job, "held" if "pending" in job.result else "finished")
        finally:
            live.close()

    async def _draft(self, job: Job, path: Path) -> None:
        suite = job.options.suite or suite_for(load_harness(path))
        report = await asyncio.to_thread(
            draft_tasks, self.records, suite, harness=job.harness, only_negative=True
        )
        commit = None
        if report.path is not None:
            message = (
                f"atoll: {len(report.tasks)} draft task(s) from served records of {job.harness} ({job.id})"
            )
            commit = await asyncio.to_thread(_commit_file, report.path, message)
        # records drafted by earlier jobs are skipped every time: only the others are news
        skipped = [skip for skip in report.skipped if not skip.reason.startswith("already in the suite")]
        job.result["drafts"] = {
            "path": str(report.path) if report.path else None,
            "tasks": report.tasks,
            "skipped": [skip.model_dump() for skip in skipped[:MAX_SKIPS]],
            "commit": commit,
        }
        self._advance(job, "optimize")

    async def _optimize(self, job: Job, path: Path, live: _Log) -> None:
        def on_event(event: OptimizerEvent) -> None:
            if job.optimization_id is None:
                job.optimization_id = event.status.run_id
                self._save(job)  # before anything is committed, so a resumed job resumes this run
            live.add(event.kind, event.model_dump(mode="json", exclude_none=True))

        result = await optimize(
            job.options.optimize_config(path, self.model_name),
            on_event=on_event,
            resume=job.optimization_id,
            store=self.store,
            model=self.model,
        )
        job.optimization_id = result.run_id
        job.result["optimization"] = _summary(result)
        accepted = len(result.accepted)
        if job.kind == "optimize":
            job.outcome = (
                f"{accepted} variant(s) accepted and committed ({result.stop_reason}); nothing released"
            )
            self._advance(job, "done")
        elif result.final_hash == result.start_hash:
            job.outcome = f"nothing accepted ({result.stop_reason}); the served release stays"
            self._advance(job, "done")
        else:
            self._advance(job, "release")

    async def _release(self, job: Job, path: Path, live: _Log) -> None:
        def on_progress(side: str, progress: BatchProgress) -> None:
            live.add("gate", {"side": side, "done": progress.done, "total": progress.total})

        options = job.options
        try:
            if options.release == "hold":
                await self._hold(job, path, on_progress)
            else:
                release = await release_harness(
                    path,
                    store=self.store,
                    model=self.model,
                    model_name=self.model_name,
                    k=options.gate_k,
                    suite=options.suite,
                    concurrency=options.concurrency,
                    note=f"{job.kind} job {job.id} ({job.source})",
                    on_progress=on_progress,
                )
                job.result["release"] = release.model_dump(mode="json")
                job.outcome = f"release {release.number} published ({release.evidence['summary']})"
        except ReleaseRefused as refused:
            report = refused.report
            job.result["gate"] = {
                "verdict": report.verdict,
                "reasons": report.reasons,
                "summary": report.gate.summary(),
                "base_run": report.base.run_id,
                "candidate_run": report.candidate.run_id,
            }
            job.outcome = str(refused)
        except ReleaseError as error:  # nothing new to release, or the head moved during the gate
            job.outcome = str(error)
        self._advance(job, "done")

    async def _hold(self, job: Job, path: Path, on_progress: GateProgress) -> None:
        """Gate the folder's committed files against the head and keep them as the job's pending release."""
        candidate = read_candidate(path, None)
        head = self.releases.head(candidate.name)
        if head is not None and head.content_hash == candidate.hash:
            raise ReleaseError(
                f"release {head.number} of {candidate.name} already serves these files: nothing to hold"
            )
        if head is None:
            evidence: dict[str, Any] = {
                "gate": None,
                "summary": f"no gate: the first release of {candidate.name} has no head to gate against",
            }
        else:
            suite = job.options.suite
            settings = GateConfig(
                harness=path,
                model=self.model_name,
                k=job.options.gate_k,
                concurrency=job.options.concurrency,
                suite=suite.resolve() if suite else None,
            )
            report = await gate_candidate(
                candidate, head, self.releases, settings, self.model, self.store, on_progress
            )
            if report.verdict != "pass":
                raise ReleaseRefused(
                    f"nothing held: the gate's verdict against release {head.number} is {report.verdict} "
                    f"({'; '.join(report.reasons) or report.gate.summary()})",
                    report,
                )
            evidence = gate_evidence(report, head)
        self.store.save_harness(candidate.hash, candidate.name, candidate.files)
        job.result["pending"] = {
            "commit": candidate.commit,
            "content_hash": candidate.hash,
            "expected_head": head.number if head else None,
            "evidence": evidence,
        }
        job.outcome = f"held for approval (POST /jobs/{job.id}/approve): {evidence['summary']}"

    # -- approval -----------------------------------------------------------------------------------------

    def approve(self, job_id: str) -> Job:
        """Publish a held job's release on the head its gate judged (compare-and-swap); JobConflict when the
        job holds nothing, or when the head moved since (its gate judged a head no longer served)."""
        job = self.get(job_id)
        if job.status != "held":
            raise JobConflict(f"job {job_id} is {job.status}: only a held job has a release to approve")
        pending = job.result["pending"]
        try:
            release = self.releases.publish(
                job.harness,
                self.store.harness_files(pending["content_hash"]),
                commit=pending["commit"],
                evidence=pending["evidence"],
                expected_head=pending["expected_head"],
                note=f"{job.kind} job {job.id} ({job.source}), approved",
            )
        except StaleRelease as error:
            raise JobConflict(
                f"{error}; the held release was gated against release {pending['expected_head']}: start a gate job "
                "to gate it against the new head"
            ) from None
        job.result.pop("pending")
        job.result["release"] = release.model_dump(mode="json")
        outcome = f"release {release.number} published on approval"
        try:
            if release.commit is not None:
                tag_release(Path(job.path), release)
        except ReleaseError as error:  # published all the same; the message says how to tag by hand
            outcome += f" ({error})"
        return self._end(job, "finished", outcome=outcome)

    # -- the row ------------------------------------------------------------------------------------------

    def _advance(self, job: Job, stage: JobStage) -> None:
        job.stage = stage
        self._save(job)

    def _end(
        self, job: Job, status: JobStatus, *, outcome: str | None = None, error: str | None = None
    ) -> Job:
        job.status = status
        job.outcome = outcome if outcome is not None else job.outcome
        job.error = error
        job.finished_at = now_text() if status != "interrupted" else None
        self._save(job)
        return job

    def _settle(
        self, job: Job, status: JobStatus, *, outcome: str | None = None, error: str | None = None
    ) -> None:
        """End a job whose task is ending, so that its row never stays `running`: when saving it whole fails,
        its status is written alone (`failed`, saying why, for a job whose result is lost with the save)."""
        try:
            self._end(job, status, outcome=outcome, error=error)
            return
        except Exception as failure:
            log.exception("job %s: saving it as %s failed", job.id, status)
            reason = f"{type(failure).__name__}: {failure}"
        if status in ("finished", "held"):  # what it did (a release, a pending one) is not in the row
            status, outcome, error = "failed", f"{status}, but its result could not be saved", reason
        job.status, job.error = status, error
        job.outcome = outcome if outcome is not None else job.outcome
        job.finished_at = now_text() if status != "interrupted" else None
        job.updated_at = now_text()
        try:
            with self.store.transaction() as db:
                db.execute(
                    f"UPDATE {TABLE} SET status = ?, outcome = ?, error = ?, finished_at = ?, updated_at = ? "
                    "WHERE id = ?",
                    [job.status, job.outcome, job.error, job.finished_at, job.updated_at, job.id],
                )
        except Exception:  # the store itself fails: `running()` here ignores the row, as its task is gone
            log.exception("job %s: its status could not be saved either", job.id)
        live = self._logs.get(job.id)
        if live is not None:
            with suppress(Exception):
                live.add("job", job.model_dump(mode="json"))

    def _claim(self, job: Job, path: str) -> bool:
        """Take an interrupted job for this process by compare-and-swap: its row is read again inside the
        write transaction and taken only if it still reads interrupted. Of two services starting at once,
        one resumes it; the other finds it running."""
        owner, claimed_at = process_owner(), now_text()
        with self.store.transaction() as db:
            rows = db.execute(f"SELECT status, owner FROM {TABLE} WHERE id = ?", [job.id]).fetchall()
            if not rows or live_status({"status": rows[0][0], "owner": rows[0][1]}) != "interrupted":
                return False
            db.execute(
                f"UPDATE {TABLE} SET status = 'running', owner = ?, error = NULL, path = ?, updated_at = ? "
                "WHERE id = ?",
                [owner, path, claimed_at, job.id],
            )
        job.status, job.owner, job.error, job.path, job.updated_at = "running", owner, None, path, claimed_at
        return True

    def _save(self, job: Job) -> None:
        job.updated_at = now_text()
        with self.store.transaction() as db:
            db[TABLE].upsert(_row(job), pk="id")
        live = self._logs.get(job.id)
        if live is not None:
            live.add("job", job.model_dump(mode="json"))


def _row(job: Job) -> dict[str, Any]:
    row = job.model_dump(mode="json")
    row["options"] = json.dumps(row["options"], sort_keys=True)
    row["result"] = json.dumps(row["result"], sort_keys=True, default=str)
    return row


def _job(row: dict[str, Any]) -> Job:
    values = {**row, "status": live_status(row)}  # `running` under a process that is gone: interrupted
    values["options"] = json.loads(row["options"])
    values["result"] = json.loads(row["result"] or "{}")
    values["outcome"] = row["outcome"] or ""
    return Job.model_validate(values)


def _summary(result: OptimizeResult) -> dict[str, Any]:
    """What a job keeps of its optimization: the figures, not the patch (`optimize show RUN` has it all)."""
    return {
        "run_id": result.run_id,
        "status": result.status,
        "stop_reason": result.stop_reason,
        "start_hash": result.start_hash,
        "final_hash": result.final_hash,
        "val_start": result.val_start,
        "val_final": result.val_final,
        "test_start": result.test_start,
        "test_final": result.test_final,
        "accepted": [
            {
                "iteration": step.iteration,
                "operator": step.operator,
                "rationale": step.rationale,
                "commit": step.commit,
            }
            for step in result.accepted
        ],
        "proposals": len(result.steps),
        "episodes": result.episodes,
        "cost_usd": result.usage.cost_usd,
    }


def _check_checkout(path: Path) -> None:
    """Refuse a folder a job could not commit accepted variants in, or release a commit of."""
    try:
        dirty = git.dirty_files(path)
    except git.NotARepository:
        raise JobError(
            f"{path} is not in a git repository: a job commits what the optimizer accepts and releases a commit, "
            "so the harness folder the service serves must be a clean git checkout; `git init` and commit it"
        ) from None
    if dirty:
        raise JobError(
            f"{path} has uncommitted changes ({', '.join(dirty[:5])}): a job commits what the optimizer accepts "
            "in the harness folder the service serves, so it must be a clean git checkout; commit or stash them"
        )


def _commit_file(path: Path, message: str) -> str | None:
    """Commit one file in its repository (a commit touching nothing else); None outside git."""
    try:
        git.repo_root(path)
    except git.NotARepository:
        return None
    return git.commit_folder(path, message)
