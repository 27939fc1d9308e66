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
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from atoll.evals import BatchProgress, RunStore, suite_for
from atoll.harnesses import load_harness
from atoll.harnesses.models import Model
from atoll.optimizer import (
    GateConfig,
    GateProgress,
    OptimizeResult,
    OptimizerEvent,
    git,
    optimize,
)
from atoll.worlds import AtollError
from atoll.worlds.base import new_run_id, now_text, process_owner

from ._job_log import JobLog
from ._job_models import (
    FIRST_STAGE,
    Job,
    JobConflict,
    JobError,
    JobKind,
    JobPlan,
    JobStage,
    JobStatus,
    UnknownHarness,
)
from ._job_table import JobTable
from ._publish import (
    ReleaseRefused,
    gate_candidate,
    gate_evidence,
    read_candidate,
    release_harness,
    tag_release,
)
from ._records import RecordStore
from ._releases import ReleaseChain, ReleaseError, StaleRelease
from ._tasks import draft_tasks

log = logging.getLogger(__name__)

KEPT_LOGS = 50  # finished jobs whose event log stays in memory
CANCEL_WAIT_S = 30.0
MAX_SKIPS = 50  # records a job lists as not drafted, with why
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
        self.table = JobTable(store)
        self._logs: dict[str, JobLog] = {}

    # -- reading ------------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        return self.table.get(job_id)

    def list(self, *, harness: str | None = None, limit: int | None = 50) -> list[Job]:
        """Jobs, newest first."""
        return self.table.list(harness=harness, limit=limit)

    def running(self, harness: str) -> Job | None:
        """The job running for `harness` now (here, or in another process that is alive or cannot be told).
        Not a row left `running` by this process with no task running it (one whose end could not be saved)."""
        here = process_owner()
        return next(
            (
                job
                for job in self.table.running(harness)
                if job.status == "running"  # not those read as interrupted
                and (job.owner != here or _runs_here(job.id))
            ),
            None,
        )

    def last(self, harness: str, kind: JobKind | None = None) -> Job | None:
        """The newest job of `harness` (of `kind`, when given)."""
        return self.table.last(harness, kind)

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
            job.feedback_mark = self.records.negative_feedback(harness).newest
        with self.store.transaction():  # BEGIN IMMEDIATE: two services on one store cannot both start
            running = self.running(harness)
            if running is not None:
                raise JobConflict(
                    f"job {running.id} ({running.kind}) is running for {harness}: one job per harness at a time; "
                    f"wait for it or POST /jobs/{running.id}/cancel"
                )
            self.table.insert(job)
        self._launch(job, resuming=False)
        return job

    async def resume_interrupted(self) -> list[Job]:
        """Resume, from its stage, each served harness's newest job left `running` by a process that is gone
        or `interrupted` by a service that stopped; an older one of the same harness is cancelled, saying so."""
        resumed: list[Job] = []
        for job in self.table.unfinished():
            if job.status != "interrupted" or job.harness not in self.harnesses or job.id in self._logs:
                continue
            running = self.running(job.harness)  # a newer one resumed here, or one alive elsewhere
            if running is not None:
                self._end(job, "cancelled", outcome=f"not resumed: job {running.id} of this harness runs")
                continue
            if not self.table.claim(job, str(self.harnesses[job.harness])):
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
        history = JobLog(asyncio.get_running_loop())
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

    async def _run(self, job: Job, live: JobLog, *, resuming: bool) -> None:
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

    async def _optimize(self, job: Job, path: Path, live: JobLog) -> None:
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

    async def _release(self, job: Job, path: Path, live: JobLog) -> None:
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
            self.table.save_status(job)
        except Exception:  # the store itself fails: `running()` here ignores the row, as its task is gone
            log.exception("job %s: its status could not be saved either", job.id)
        live = self._logs.get(job.id)
        if live is not None:
            with suppress(Exception):
                live.add("job", job.model_dump(mode="json"))

    def _save(self, job: Job) -> None:
        self.table.save(job)
        live = self._logs.get(job.id)
        if live is not None:
            live.add("job", job.model_dump(mode="json"))


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
