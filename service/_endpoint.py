"""The harness endpoint: which harness version answers a request, the answer, and its record.

Every request asks the store whether anything was committed since it last read the harness's release
head (SQLite's `data_version`), and reads the head again when so, so `optimize release` in another
process switches what is served without a restart; a request keeps the harness it started with to the
end. A harness with no release yet is served from its folder as loaded at start-up,
and its records say `release: None`. Loaded releases are kept by content hash, so a rollback to
content served before costs no reload.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from atoll.harnesses import (
    ConversationError,
    Harness,
    HarnessError,
    StepAnswer,
    UnusableAnswer,
    load_harness,
    next_message,
)
from atoll.harnesses.models import Model, ModelError, ModelRequestError, get_model, resolve_model

from ._records import NewRecord, Record, RecordError, RecordStore
from ._releases import Release, ReleaseChain, ReleaseError
from ._wire import ChatRequest, RequestError, completion

_log = logging.getLogger(__name__)

KEPT_RELEASES = 4  # loaded release versions kept in memory; a rollback to an older one reloads it
MAX_FALLBACK = 16  # releases under a refused head tried, newest first, for one that can be served
RECORD_HEADER = "x-atoll-record-id"


@dataclass(frozen=True)
class _Call:
    """What a served call's record is made of, besides its outcome."""

    request: ChatRequest
    name: str
    agent: str
    harness: Harness
    release: Release | None
    session: str | None
    began: float


def _failure(error: Exception) -> dict[str, Any]:
    """Status and code of a call that failed after it was accepted: the client's request (400) or the
    model or Atoll (5xx)."""
    if isinstance(error, ModelRequestError):
        return {"status": 400, "code": "model_request_error"}
    if isinstance(error, ModelError):
        return {"status": 502, "code": "model_error"}
    if isinstance(error, UnusableAnswer):
        return {"status": 502, "code": "unusable_answer"}
    return {"status": 400, "code": "prompt_render_failed"}  # a template failing on the client's context


@dataclass(frozen=True)
class Served:
    """One answered request: the response body, the record written for it and the release it came from."""

    body: dict[str, Any]
    record: Record
    release: Release | None


class HarnessEndpoint:
    """Answers chat requests for the harnesses it serves, each from its released head.

    Args:
        harnesses: harness folders; each is served under its harness.yaml `name`, its sub-agents as
            `<name>/<agent>`.
        records: where every call is recorded (with the redaction and retention it was given).
        releases: the release chains the served head is read from.
        model: a Model (the scripted model in tests) or model name for every harness; default each
            agent's own model, else $ATOLL_MODEL, else the harness's.
        max_in_flight: requests answered at once; one more is refused with 429.
    """

    def __init__(
        self,
        harnesses: Iterable[Path | str],
        *,
        records: RecordStore,
        releases: ReleaseChain,
        model: Model | str | None = None,
        max_in_flight: int = 64,
    ) -> None:
        self.working: dict[str, Harness] = {}
        for path in harnesses:
            harness = load_harness(path)
            if harness.name in self.working:
                raise ValueError(f"two served harnesses are named {harness.name!r}; serve one of them")
            self.working[harness.name] = harness
        self.records, self.releases = records, releases
        self.model = model
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self._loaded: dict[str, Harness] = {}
        self._models: dict[str, Model] = {}
        # Per harness, the head refused (number, content hash) and the release served in its place.
        self._refused: dict[str, tuple[tuple[int, str], tuple[Harness, Release]]] = {}
        # Per thread (each reads through a connection of its own, whose data_version only it can compare):
        # harness -> (the connection's data_version when its head was read, the head).
        self._heads = threading.local()

    def served_models(self) -> list[str]:
        """What `model` may name: each harness, then each agent of the version served now."""
        names = []
        for name in self.working:
            harness, _ = self.current(name)
            names += [name, *(f"{name}/{agent}" for agent in harness.agents)]
        return names

    def current(self, name: str) -> tuple[Harness, Release | None]:
        """The harness version served now: the release head, else the folder loaded at start-up.

        A head that cannot be served (a broken row, files missing from the store or no longer matching its
        content hash, files this Atoll cannot load) is refused, logged once, and the newest release before
        it that can be served is served instead, until a good release is published or rolled back to."""
        try:
            head = self._head(name)
        except ReleaseError as error:  # the head's row itself is broken
            return self._fallback(name, (self.releases.numbers(name)[0], ""), str(error))
        if head is None:
            return self.working[name], None
        refused = (head.number, head.content_hash)
        kept = self._refused.get(name)
        if kept is not None and kept[0] == refused:
            return kept[1]
        try:
            return self._load(name, head), head
        except ReleaseError as error:
            return self._fallback(name, refused, str(error))

    def _head(self, name: str) -> Release | None:
        """The release head of `name`, read again only when a commit (by any connection or process) came
        since this thread last read it: SQLite's `data_version` on this thread's connection says so, where
        the read itself, after every batch of records stored, cost about 0.1 ms of the endpoint's core."""
        (version,) = self.releases.store.read("PRAGMA data_version")[0]
        heads: dict[str, tuple[int, Release | None]] = vars(self._heads)  # this thread's own
        kept = heads.get(name)
        if kept is not None and kept[0] == version:
            return kept[1]
        # A commit between the two reads only makes the next request read the head again.
        head = self.releases.head(name)
        heads[name] = (version, head)
        return head

    def _load(self, name: str, release: Release) -> Harness:
        """A release's harness, loaded once per content hash (its files checked against the hash)."""
        harness = self._loaded.get(release.content_hash)
        if harness is None:
            files = self.releases.files(release)
            try:
                harness = Harness.from_files(
                    files, source=f"{name} release {release.number}", world=self.working[name].world
                )
            except (HarnessError, RecursionError) as error:  # an older Atoll's, another world's, or edited
                problem = str(error) if isinstance(error, HarnessError) else "its files nest past any parser"
                raise ReleaseError(
                    f"release {release.number} of {name} cannot be loaded: {problem}"
                ) from None
            self._loaded[release.content_hash] = harness
            while len(self._loaded) > KEPT_RELEASES:  # the oldest loaded goes first
                del self._loaded[next(iter(self._loaded))]
        return harness

    def _fallback(self, name: str, refused: tuple[int, str], problem: str) -> tuple[Harness, Release]:
        """What is served in place of the refused head (number, content hash): the newest release under it
        that can be served, found once and logged; a 500 naming the problem when none can."""
        kept = self._refused.get(name)
        if kept is not None and kept[0] == refused:
            return kept[1]
        for number in self.releases.numbers(name, below=refused[0])[:MAX_FALLBACK]:
            try:
                release = self.releases.get(name, number)
                served = (self._load(name, release), release)
            except ReleaseError:
                continue
            self._refused[name] = (refused, served)
            _log.error(
                "%s: release %d is not served (%s); serving release %d", name, refused[0], problem, number
            )
            return served
        raise RequestError(
            f"{name} cannot be served: {problem}; and no earlier release can be either",
            status=500,
            code="bad_release",
        )

    def _target(self, served_name: str) -> tuple[str, Harness, Release | None, str]:
        """The harness, the version served now and the agent a `model` names (its agents are the
        served version's: a release may add or drop one)."""
        name, _, agent = served_name.partition("/")
        if name in self.working:
            harness, release = self.current(name)
            if not agent or agent in harness.agents:
                return name, harness, release, agent or harness.entry
        raise RequestError(
            f"model {served_name!r} is not served here; served: {', '.join(self.served_models())}",
            status=404,
            code="model_not_found",
        )

    def _model_name(self, harness: Harness, agent: str) -> Model | str:
        """The Model given to the endpoint, else the name of the agent's model (built by `_model_for`)."""
        if self.model is not None and not isinstance(self.model, str):
            return self.model
        return self.model or harness.agent(agent).model or resolve_model(None, harness.config.model)

    def _model_for(self, name: Model | str) -> Model:
        """The model a name builds, once; a ModelError (a 502: the served harness's fault, not the client's)
        when it cannot be built."""
        if not isinstance(name, str):
            return name
        if name not in self._models:
            try:
                self._models[name] = get_model(name)
            except (ModelError, ValueError) as error:
                raise ModelError(f"the served model {name!r} cannot be built: {error}") from None
        return self._models[name]

    async def complete(self, request: ChatRequest, *, session: str | None = None) -> Served:
        """Answer `request` from the served head and record the call (failed calls too)."""
        if self.in_flight >= self.max_in_flight:
            raise RequestError(
                f"{self.in_flight} requests are being answered, the most this server takes at once; retry",
                status=429,
                code="too_many_requests",
                headers={"retry-after": "1"},
            )
        context = request.context()
        began = time.perf_counter()
        # The version is held to the end of the request, whatever is released meanwhile.
        name, harness, release, agent = self._target(request.model)
        call = _Call(request, name, agent, harness, release, session, began)
        model: Model | str = self._model_name(harness, agent)
        self.in_flight += 1
        try:
            model = self._model_for(model)
            answer = await next_message(
                harness,
                agent,
                model,
                request.messages,
                context=context,
                params=request.sampling(),
                now=datetime.now(UTC).replace(second=0, microsecond=0),
            )
        except ConversationError as error:
            raise RequestError(str(error)) from None
        except (HarnessError, ModelError) as error:  # a model that cannot be built, too: recorded, a 5xx
            record = await self._record(call, model if isinstance(model, str) else model.name, error=error)
            raise RequestError(
                str(error),
                **_failure(error),
                headers={RECORD_HEADER: record.id, "x-atoll-session": record.session},
            ) from None
        finally:
            self.in_flight -= 1
        body = completion(f"chatcmpl-{random.getrandbits(96):024x}", request.model, answer, harness.hash[:16])
        record = await self._record(call, answer.model, answer=answer, body=body)
        return Served(body=body, record=record, release=release)

    async def _record(
        self,
        call: _Call,
        model: str,
        *,
        answer: StepAnswer | None = None,
        body: dict[str, Any] | None = None,
        error: Exception | None = None,
    ) -> Record:
        usage = answer.usage if answer else None
        record = NewRecord(
            harness=call.name,
            agent=call.agent,
            release=call.release.number if call.release else None,
            release_hash=call.harness.hash,
            model=model,
            request=call.request.model_dump(exclude_none=True),
            response=body,
            prompt_hash=answer.prompt_hash if answer else "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cost_usd=usage.cost_usd if usage else 0.0,
            latency_ms=(time.perf_counter() - call.began) * 1000,
            error=str(error) if error else None,
            session=call.session,
        )
        try:  # journaled, not stored: the answer does not wait for the store (service/_pending.py)
            if self.records.backlogged:
                await asyncio.to_thread(self.records.wait_for_room)
            return self.records.submit(record)
        except RecordError as error:  # a redaction hook that fails: nothing is written, nor served
            raise RequestError(
                f"the call could not be recorded: {error}", status=500, code="record_failed"
            ) from None
