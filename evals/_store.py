"""The runs store: one SQLite file (sqlite-utils, WAL) holding every run and every episode.

Reports, `optimize show`, the CI gate and the optimizer read it; a batch writes each episode in
its own transaction as soon as it is graded, so a run killed at any point leaves a store the next
command can read, and resuming the run skips the (task, seed) pairs already stored. A run records the
process running it, so one killed without a word (kill -9) reads as `interrupted` once that process is
gone. Several processes may write the file at once: every write transaction takes the lock first.

Every episode is stored with its reuse key (see `evals._batch.reuse_keys`): a later batch that would
play the same episode again copies it from here instead (`reusable`), and the copy names its source
in `reused_from`.

Tables: `runs`, `harness_snapshots` (the files of every harness version evaluated, by content
hash), `episodes`, `prompts` (the system messages episodes were sent, once per `Episode.prompt_hash`),
`store_meta`. Other parts of Atoll add their own tables with `ensure_table` (the optimizer's
`optimizations` and `proposals`); the model layer's response cache may share the file
(`response_cache()`), in its own `model_calls` table. A store from before a table or column existed
gains it when opened, and its older episodes read back without what it holds (no prompt hash: the
prompt was not recorded).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import sqlite_utils
from pydantic import BaseModel, Field, TypeAdapter

from atoll.harnesses import Episode, Event, PromptPart
from atoll.harnesses.models import ModelUsage, ResponseCache
from atoll.worlds import AtollError, CallRecord
from atoll.worlds.base import live_status, now_text, process_owner

from .graders._verdict import Grade
from .metrics import EpisodeOutcome, Metrics

_SNAPSHOT_FILES = TypeAdapter(dict[str, str])

RUNS_DB_ENV = "ATOLL_RUNS_DB"
DEFAULT_RUNS_DB = Path("runs") / "atoll.sqlite"
STORE_VERSION = 1
RESERVED_TABLES = ("runs", "harness_snapshots", "episodes", "prompts", "store_meta", "model_calls")

RunStatus = Literal["running", "finished", "interrupted", "failed"]
_EVENTS = TypeAdapter(list[Event])
_CALLS = TypeAdapter(list[CallRecord])
_PROMPTS = TypeAdapter(list[PromptPart])


class StoreError(AtollError):
    """The runs store cannot do what was asked (an unknown run, a newer store format)."""


class RunRecord(BaseModel):
    """One row of `runs`."""

    id: str
    kind: str = "eval"
    harness: str
    harness_hash: str
    model: str
    suite: str | None = None
    split: str | None = None
    k: int | None = None
    started_at: str
    finished_at: str | None = None
    status: RunStatus = "running"
    config: dict[str, Any] = Field(default_factory=dict)
    metrics: Metrics | None = None


class EpisodeResult(BaseModel):
    """An episode of a task at one seed, with its grade: what a batch produces and the store keeps."""

    task_id: str
    seed: int
    sample: int
    episode: Episode
    grade: Grade
    reused_from: str | None = None  # the run that played it, when copied from there instead of run again

    @property
    def errored(self) -> bool:
        return self.episode.errored

    @property
    def score(self) -> float:
        return 0.0 if self.errored else self.grade.score

    @property
    def passed(self) -> bool:
        return not self.errored and self.grade.passed

    def outcome(self) -> EpisodeOutcome:
        """What metrics read: score (0 when errored), tokens, cost and latency."""
        return EpisodeOutcome(
            task_id=self.task_id,
            seed=self.seed,
            score=self.score,
            errored=self.errored,
            usage=self.episode.usage,
            latency_s=self.episode.duration_s,
            reused=self.reused_from is not None,
        )


class EpisodeLine(BaseModel):
    """One episode as a listing shows it: its figures and verdict, without transcript, diff or grade."""

    task_id: str
    seed: int
    sample: int
    score: float | None
    passed: bool
    errored: bool
    stop_reason: str | None
    error: str | None
    tokens: int | None
    cost: float | None
    latency: float | None
    model_calls: int | None
    reused_from: str | None = Field(None, description="The run that played it, when copied from there.")


class RunsUsage(BaseModel):
    """What the episodes of a group of runs cost together."""

    episodes: int
    usage: ModelUsage


def default_path() -> Path:
    """`$ATOLL_RUNS_DB`, else `runs/atoll.sqlite` under the working directory."""
    return Path(os.environ.get(RUNS_DB_ENV) or DEFAULT_RUNS_DB)


class RunStore:
    """The runs database. Safe to share between threads; every write is one transaction.

    Args:
        path: the SQLite file; default `$ATOLL_RUNS_DB`, else `runs/atoll.sqlite`. Created on first use.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        self.db = sqlite_utils.Database(connection)
        self._lock = threading.RLock()
        self._readers = threading.local()  # each thread's read connection (see `read`)
        self._reader_connections: list[sqlite3.Connection] = []
        self.db.enable_wal()
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self._create()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for connection in self._reader_connections:
            connection.close()
        self.db.close()

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """The rows of one query, read on this thread's own connection, never the writer's.

        A read on the shared connection from one thread while another thread starts a write on it can hold
        a snapshot the write cannot upgrade past once a third process has written: SQLite then answers
        "database is locked" at once, without waiting. A connection per reading thread (WAL: readers never
        block the writer) takes neither the store's lock nor the write lock."""
        connection = getattr(self._readers, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA query_only = ON")
            self._readers.connection = connection
            self._reader_connections.append(connection)
        return connection.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """One write transaction (nested blocks are savepoints), serialised across threads and processes.

        `BEGIN IMMEDIATE` takes the write lock first, waiting out the busy timeout for another process's
        write; a deferred `BEGIN` that reads and then writes fails at once with "database is locked".
        """
        with self._lock:
            if self.db.conn.in_transaction:
                with self.db.atomic():
                    yield self.db
                return
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self.db.conn.execute("COMMIT")
            except BaseException:
                self.db.rollback()
                raise

    # -- schema ---------------------------------------------------------------------------------

    def _create(self) -> None:
        with self.transaction():
            self.db["store_meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
            stored = self.db.execute("SELECT value FROM store_meta WHERE key = 'version'").fetchone()
            if stored is not None and int(stored[0]) > STORE_VERSION:
                raise StoreError(
                    f"{self.path}: written by a newer Atoll (store version {stored[0]} > {STORE_VERSION}); "
                    "upgrade Atoll or point ATOLL_RUNS_DB at another file"
                )
            self.db["store_meta"].insert({"key": "version", "value": str(STORE_VERSION)}, replace=True)
            self.db["runs"].create(
                {
                    "id": str,
                    "kind": str,
                    "harness": str,
                    "harness_hash": str,
                    "model": str,
                    "suite": str,
                    "split": str,
                    "k": int,
                    "started_at": str,
                    "finished_at": str,
                    "status": str,
                    "config": str,
                    "metrics": str,
                    "owner": str,  # the process running it (see `_owner`): a dead one means interrupted
                },
                pk="id",
                not_null=["kind", "harness", "harness_hash", "model", "started_at", "status"],
                if_not_exists=True,
            )
            if "owner" not in self.db["runs"].columns_dict:  # a store from before owners were kept
                self.db["runs"].add_column("owner", str)
            self.db["harness_snapshots"].create(
                {"hash": str, "name": str, "files": str, "created_at": str}, pk="hash", if_not_exists=True
            )
            self.db["episodes"].create(
                {
                    "run_id": str,
                    "task_id": str,
                    "seed": int,
                    "sample": int,
                    "harness_hash": str,
                    "model": str,
                    "world": str,
                    "fixture": str,
                    "stop_reason": str,
                    "error": str,
                    "errored": int,
                    "score": float,
                    "passed": int,
                    "prompt_tokens": int,
                    "completion_tokens": int,
                    "tokens": int,
                    "cost": float,
                    "latency": float,
                    "model_calls": int,
                    "episode": str,  # the Episode as JSON, less the parts kept in their own columns or tables
                    "events": str,
                    "calls": str,
                    "diff": str,
                    "grade": str,
                    "created_at": str,
                    "reuse_key": str,  # a hash of what decided the episode (see `reusable`)
                    "reused_from": str,  # set when copied from an earlier run's episode
                    "prompt_hash": str,  # the system messages sent, kept in `prompts`
                },
                pk=("run_id", "task_id", "seed"),
                foreign_keys=[("run_id", "runs", "id")],
                if_not_exists=True,
            )
            # A store from before episodes were reused, or their prompts kept.
            for column in ("reuse_key", "reused_from", "prompt_hash"):
                if column not in self.db["episodes"].columns_dict:
                    self.db["episodes"].add_column(column, str)
            self.db["prompts"].create(
                {"hash": str, "parts": str, "created_at": str}, pk="hash", if_not_exists=True
            )
            self.db["runs"].create_index(["started_at"], if_not_exists=True)
            self.db["episodes"].create_index(["run_id", "passed"], if_not_exists=True)
            self.db["episodes"].create_index(["reuse_key"], if_not_exists=True)

    def ensure_table(
        self,
        name: str,
        columns: Mapping[str, type],
        *,
        pk: str | tuple[str, ...],
        foreign_keys: Iterable[tuple[str, str, str]] = (),
    ) -> sqlite_utils.db.Table:
        """Create a table for another part of Atoll (the optimizer's optimizations and proposals), or add the
        columns it lacks; returns the sqlite-utils Table. Store JSON in `str` columns."""
        if name in RESERVED_TABLES:
            raise StoreError(f"table {name!r} belongs to the runs store itself; choose another name")
        with self.transaction():
            table = self.db[name]
            if not table.exists():
                table.create(dict(columns), pk=pk, foreign_keys=list(foreign_keys))
            else:
                for column, kind in columns.items():
                    if column not in table.columns_dict:
                        table.add_column(column, kind)
        return self.db[name]

    def response_cache(self) -> ResponseCache:
        """The model layer's response cache, kept in this same file (its own `model_calls` table)."""
        return ResponseCache(self.path)

    # -- runs -----------------------------------------------------------------------------------

    def start_run(self, run: RunRecord) -> RunRecord:
        with self.transaction():
            self.db["runs"].insert({**_run_row(run), "owner": process_owner()})
        return run

    def mark_running(self, run_id: str) -> None:
        """A resumed run: running again, in this process."""
        with self.transaction():
            self.db["runs"].update(
                run_id, {"status": "running", "finished_at": None, "owner": process_owner()}
            )

    def finish_run(self, run_id: str, status: RunStatus, metrics: Metrics | None = None) -> None:
        values: dict[str, Any] = {"status": status, "finished_at": now_text()}
        if metrics is not None:
            values["metrics"] = metrics.model_dump_json()
        with self.transaction():
            self.db["runs"].update(run_id, values)

    def has_run(self, run_id: str) -> bool:
        with self._lock:
            return self.db.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is not None

    def run(self, ref: str) -> RunRecord:
        """A run by id, by a unique end or start of its id, or `latest`."""
        return _run_record(self._run_row(self.resolve(ref)))

    def resolve(self, ref: str) -> str:
        """The full id of the run `ref` names (see `run`); StoreError when none or several match."""
        with self._lock:
            if ref in ("latest", "last"):
                row = self.db.execute(
                    "SELECT id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    raise StoreError(f"{self.path}: no runs yet; run `optimize eval` first")
                return row[0]
            exact = self.db.execute("SELECT id FROM runs WHERE id = ?", [ref]).fetchone()
            if exact is not None:
                return exact[0]
            found = [
                row[0]
                for row in self.db.execute(
                    "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\' ORDER BY started_at",
                    [_like(ref) + "%", "%" + _like(ref)],
                )
            ]
        if not found:
            raise StoreError(f"{self.path}: no run {ref!r}; `optimize runs` lists them")
        if len(found) > 1:
            raise StoreError(f"run {ref!r} is ambiguous: {', '.join(found[:5])}; give more of the id")
        return found[0]

    def latest_unfinished(self, kind: str) -> str:
        """The id of the newest run of `kind` that `--resume latest` means: not finished and not running
        in a live process; StoreError when there is none."""
        with self._lock:
            rows = list(
                self.db["runs"].rows_where(
                    "kind = ? AND status != 'finished'", [kind], order_by="started_at DESC, rowid DESC"
                )
            )
        found = next((row["id"] for row in rows if _run_record(row).status != "running"), None)
        if found is None:
            raise StoreError(f"{self.path}: no unfinished {kind} run to resume; `optimize runs` lists them")
        return found

    def _run_row(self, run_id: str) -> dict[str, Any]:
        with self._lock:
            rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        if not rows:
            raise StoreError(f"{self.path}: no run {run_id!r}; `optimize runs` lists them")
        return rows[0]

    def runs(self, *, limit: int | None = 20, kind: str | None = None) -> list[RunRecord]:
        """The latest runs first."""
        where, params = ("kind = ?", [kind]) if kind else (None, [])
        with self._lock:
            rows = list(
                self.db["runs"].rows_where(where, params, order_by="started_at DESC, rowid DESC", limit=limit)
            )
        return [_run_record(row) for row in rows]

    def run_kinds(self) -> list[str]:
        """The kinds of run stored (`eval`, `gate`, ...), sorted."""
        return [row[0] for row in self.read("SELECT DISTINCT kind FROM runs ORDER BY kind")]

    def has_table(self, name: str) -> bool:
        """Whether the store has the table `name` (another part's, made once that part first wrote)."""
        return bool(self.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]))

    # -- harness snapshots ----------------------------------------------------------------------

    def save_harness(self, content_hash: str, name: str, files: Mapping[str, str]) -> None:
        """Keep the harness's files under their content hash (once), so any run can be reproduced."""
        with self.transaction():
            self.db["harness_snapshots"].insert(
                {
                    "hash": content_hash,
                    "name": name,
                    "files": json.dumps(dict(files)),
                    "created_at": now_text(),
                },
                ignore=True,
            )

    def harness_files(self, content_hash: str) -> dict[str, str]:
        """The files of a snapshot; StoreError naming it when it is missing or its stored text is not an
        object of file texts (edited in the store: invalid JSON, a list, nesting past any harness's)."""
        rows = self.read("SELECT files FROM harness_snapshots WHERE hash = ?", [content_hash])
        if not rows:
            raise StoreError(f"{self.path}: no harness snapshot {content_hash[:12]}")
        try:
            return _SNAPSHOT_FILES.validate_json(rows[0]["files"] or b"")
        except ValueError as error:  # pydantic's parser bounds the depth: a deep snapshot is a ValueError
            problem = str(error).splitlines()[0]
            raise StoreError(
                f"{self.path}: harness snapshot {content_hash[:12]} is broken ({problem})"
            ) from None

    # -- episodes -------------------------------------------------------------------------------

    def add_episode(self, run_id: str, result: EpisodeResult, *, reuse_key: str | None = None) -> None:
        """Store one graded episode in its own transaction (replacing a row for the same task and seed);
        `reuse_key` lets later batches find it (see `reusable`)."""
        episode = result.episode
        usage = episode.usage
        row = {
            "run_id": run_id,
            "task_id": result.task_id,
            "seed": result.seed,
            "sample": result.sample,
            "harness_hash": episode.harness_hash,
            "model": episode.model,
            "world": episode.world,
            "fixture": episode.fixture,
            "stop_reason": episode.stop_reason,
            "error": episode.error,
            "errored": int(result.errored),
            "score": result.score,
            "passed": int(result.passed),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "tokens": usage.total_tokens,
            "cost": usage.cost_usd,
            "latency": episode.duration_s,
            "model_calls": usage.model_calls,
            "episode": episode.model_dump_json(exclude={"events", "calls", "diff", "prompts"}),
            "events": _EVENTS.dump_json(episode.events, exclude_defaults=True).decode(),
            "calls": _CALLS.dump_json(episode.calls).decode(),
            "diff": episode.diff.model_dump_json(),
            "grade": result.grade.model_dump_json(),
            "created_at": now_text(),
            "reuse_key": reuse_key,
            "reused_from": result.reused_from,
            "prompt_hash": episode.prompt_hash,
        }
        # A plain statement on the connection: sqlite-utils' insert() inspects the table on every
        # call, which costs more than the write itself at hundreds of episodes a second.
        sql = f"INSERT OR REPLACE INTO episodes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        with self.transaction() as db:
            db.conn.execute(sql, tuple(row.values()))
            if episode.prompts and episode.prompt_hash:
                db.conn.execute(
                    "INSERT OR IGNORE INTO prompts (hash, parts, created_at) VALUES (?, ?, ?)",
                    (episode.prompt_hash, _PROMPTS.dump_json(episode.prompts).decode(), now_text()),
                )

    def _prompts(self, rows: Iterable[dict[str, Any]]) -> dict[str, list[PromptPart]]:
        """The stored system messages of these episode rows, by hash, each text read once."""
        wanted = list({row["prompt_hash"] for row in rows if row.get("prompt_hash")})
        found: dict[str, list[PromptPart]] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps the parameters of one statement
            chunk = wanted[start : start + 500]
            with self._lock:
                stored = self.db.execute(
                    f"SELECT hash, parts FROM prompts WHERE hash IN ({', '.join('?' * len(chunk))})", chunk
                ).fetchall()
            found.update((key, _PROMPTS.validate_json(parts)) for key, parts in stored)
        return found

    def forget_outages(self, run_id: str) -> int:
        """Delete a run's episodes that ended on a model outage, so resuming runs them again."""
        with self.transaction() as db:
            return db.execute(
                "DELETE FROM episodes WHERE run_id = ? AND stop_reason = 'model_error'", [run_id]
            ).rowcount

    def reusable(self, keys: Iterable[str]) -> dict[str, EpisodeResult]:
        """Finished episodes stored under these reuse keys, by key, each with `reused_from` naming the run
        that played it. Errored episodes are never offered: an outage or a world bug says nothing about the
        harness, and running them again may succeed."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, EpisodeResult] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps the parameters of one statement
            chunk = wanted[start : start + 500]
            first = (  # the earliest row of each key: copies of it come later, and only one is read
                "rowid IN (SELECT min(rowid) FROM episodes "
                f"WHERE reuse_key IN ({', '.join('?' * len(chunk))}) AND errored = 0 GROUP BY reuse_key)"
            )
            with self._lock:
                rows = list(self.db["episodes"].rows_where(first, chunk))
            prompts = self._prompts(rows)
            for row in rows:
                source = row["reused_from"] or row["run_id"]
                found[row["reuse_key"]] = _episode_result({**row, "reused_from": source}, prompts)
        return found

    def episode_keys(self, run_id: str) -> set[tuple[str, int]]:
        """The (task, seed) pairs of a run already stored: what a resumed run skips."""
        with self._lock:
            rows = self.db.execute("SELECT task_id, seed FROM episodes WHERE run_id = ?", [run_id]).fetchall()
        return {(task_id, seed) for task_id, seed in rows}

    def episodes(
        self, run_id: str, *, task_id: str | None = None, seed: int | None = None
    ) -> list[EpisodeResult]:
        """A run's episodes, whole (transcript, diff, grade), in task and seed order."""
        where, params = "run_id = ?", [run_id]
        if task_id is not None:
            where, params = where + " AND task_id = ?", [*params, task_id]
        if seed is not None:
            where, params = where + " AND seed = ?", [*params, seed]
        with self._lock:
            rows = list(self.db["episodes"].rows_where(where, params, order_by="task_id, seed"))
        prompts = self._prompts(rows)
        return [_episode_result(row, prompts) for row in rows]

    def episode_lines(self, run_id: str) -> list[EpisodeLine]:
        """A run's episodes as a listing shows them (no transcript read), in task and seed order; read on this
        thread's own connection (`read`)."""
        rows = self.read(
            f"SELECT {', '.join(EpisodeLine.model_fields)} FROM episodes WHERE run_id = ? ORDER BY task_id, seed",
            [run_id],
        )
        return [EpisodeLine.model_validate(dict(row)) for row in rows]

    def usage_of(self, run_prefix: str) -> RunsUsage:
        """The episodes, model calls, tokens and cost of every run whose id starts with `run_prefix` (an
        optimization's evaluations are `OPT-...` runs)."""
        ((episodes, calls, prompt, completion, cost),) = self.read(
            "SELECT COUNT(*), COALESCE(SUM(model_calls), 0), COALESCE(SUM(prompt_tokens), 0), "
            "COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost), 0) "
            "FROM episodes WHERE substr(run_id, 1, ?) = ?",
            [len(run_prefix), run_prefix],
        )
        usage = ModelUsage(
            model_calls=calls, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost
        )
        return RunsUsage(episodes=episodes, usage=usage)

    def outcomes(self, run_id: str) -> list[EpisodeOutcome]:
        """What metrics need of a run's episodes, read without parsing transcripts."""
        with self._lock:
            rows = self.db.execute(
                "SELECT task_id, seed, score, errored, model_calls, prompt_tokens, completion_tokens, cost, "
                "latency, reused_from FROM episodes WHERE run_id = ? ORDER BY task_id, seed",
                [run_id],
            ).fetchall()
        return [
            EpisodeOutcome(
                task_id=task_id,
                seed=seed,
                score=0.0 if errored else score,
                errored=bool(errored),
                usage=ModelUsage(
                    model_calls=calls or 0, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost
                ),
                latency_s=latency,
                reused=reused_from is not None,
            )
            for task_id, seed, score, errored, calls, prompt, completion, cost, latency, reused_from in rows
        ]


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _run_row(run: RunRecord) -> dict[str, Any]:
    row = run.model_dump(exclude={"config", "metrics"})
    row["config"] = json.dumps(run.config)
    row["metrics"] = run.metrics.model_dump_json() if run.metrics is not None else None
    return row


def _run_record(row: dict[str, Any]) -> RunRecord:
    values = dict(row)
    values["config"] = json.loads(row["config"] or "{}")
    values["metrics"] = json.loads(row["metrics"]) if row["metrics"] else None
    values["status"] = live_status(row)
    return RunRecord.model_validate(values)


def _episode_result(row: dict[str, Any], prompts: Mapping[str, list[PromptPart]]) -> EpisodeResult:
    """An episodes row read back whole; `prompts` (by hash) gives its system messages, kept apart."""
    body = json.loads(row["episode"])
    body["prompts"] = prompts.get(row.get("prompt_hash") or "", [])
    body["events"] = json.loads(row["events"])
    body["calls"] = json.loads(row["calls"])
    body["diff"] = json.loads(row["diff"])
    return EpisodeResult(
        task_id=row["task_id"],
        seed=row["seed"],
        sample=row["sample"],
        episode=Episode.model_validate(body),
        grade=Grade.model_validate_json(row["grade"]),
        reused_from=row.get("reused_from"),
    )
