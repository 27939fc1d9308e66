"""A content-addressed store of model answers, so a rerun with the same seeds replays for free.

One SQLite file in WAL mode, shared by every thread and process of a run: each operation
opens its own short-lived connection, which is what makes it safe across threads and
forks, and costs well under a millisecond next to a model call.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from atoll.worlds import cache_dir

from ._types import ModelRequest, ModelResponse

_SCHEMA = """
CREATE TABLE IF NOT EXISTS model_calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""

# A writer in another process holds the lock for a few milliseconds at most; wait rather than fail.
_BUSY_TIMEOUT_S = 30.0


class ResponseCache:
    """Model answers keyed by sha256 of (model, messages, tools, params, sample).

    Args:
        path: the SQLite file; created with its folder on first use.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    @classmethod
    def default(cls) -> ResponseCache:
        """The cache a run uses unless told otherwise: `$ATOLL_CACHE_DIR/model_calls.sqlite`."""
        return cls(cache_dir() / "model_calls.sqlite")

    @staticmethod
    def key(model: str, request: ModelRequest, options: Mapping[str, Any] | None = None) -> str:
        """The cache key of a request to `model`.

        The timeout is left out: it changes when an answer comes, not which. `options` are extra
        litellm arguments that change the answer (a mock response, another api_base); api keys
        are never part of a key.
        """
        payload: dict[str, Any] = {
            "model": model,
            "messages": request.messages,
            "tools": request.tools,
            # tool_choice only when set: the keys of requests without it stay what they always were.
            "params": request.params.model_dump(
                exclude={"timeout_s"} if request.params.tool_choice else {"timeout_s", "tool_choice"}
            ),
            "sample": request.sample,
        }
        if options:
            payload["options"] = {k: repr(v) for k, v in options.items() if k != "api_key"}
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def get(self, key: str) -> ModelResponse | None:
        """The stored answer marked `cached` with no latency, or None."""
        with self._connect() as db:
            row = db.execute("SELECT response FROM model_calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        stored = ModelResponse.model_validate_json(row[0])
        return stored.model_copy(update={"cached": True, "latency_s": 0.0})

    def put(self, key: str, model: str, request: ModelRequest, response: ModelResponse) -> None:
        """Store an answer; the first answer stored under a key wins, so every replay agrees."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO model_calls (key, model, request, response, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    request.model_dump_json(),
                    response.model_dump_json(),
                    datetime.now(UTC).isoformat(timespec="seconds"),
                ),
            )

    def __len__(self) -> int:
        with self._connect() as db:
            return db.execute("SELECT count(*) FROM model_calls").fetchone()[0]

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()
