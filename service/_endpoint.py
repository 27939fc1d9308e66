"""The harness endpoint: which harness version answers a request, the answer, and its record.

Every request reads the harness's release head (one indexed SQLite read), so `optimize release` in
another process switches what is served without a restart; a request keeps the harness it started
with to the end. A harness with no release yet is served from its folder as loaded at start-up,
and its records say `release: None`. Loaded releases are kept by content hash, so a rollback to
content served before costs no reload.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harnesses import (
    ConversationError,
    Harness,
    HarnessError,
    StepAnswer,
    UnusableAnswer,
    load_harness,
    next_message,
)
from harnesses.models import Model, ModelError, ModelRequestError, get_model, resolve_model

from ._records import NewRecord, Record, RecordError, RecordStore
from ._releases import Release, ReleaseChain
from ._wire import ChatRequest, RequestError, completion


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

    def served_models(self) -> list[str]:
        """What `model` may name: each harness, then each of its agents."""
        names = []
        for name, harness in self.working.items():
            names += [name, *(f"{name}/{agent}" for agent in harness.agents)]
        return names

    def current(self, name: str) -> tuple[Harness, Release | None]:
        """The harness version served now: the release head, else the folder loaded at start-up."""
        working = self.working[name]
        head = self.releases.head(name)
        if head is None:
            return working, None
        harness = self._loaded.get(head.content_hash)
        if harness is None:
            files = self.releases.files(head)
            try:
                harness = Harness.from_files(
                    files, source=f"{name} release {head.number}", world=working.world
                )
            except HarnessError as error:  # released by an older Atoll, or for another world
                raise RequestError(
                    f"release {head.number} of {name} cannot be served: {error}",
                    status=500,
                    code="bad_release",
                ) from None
            self._loaded[head.content_hash] = harness
        return harness, head

    def _target(self, served_name: str) -> tuple[str, str | None]:
        name, _, agent = served_name.partition("/")
        if name not in self.working or (agent and agent not in self.working[name].agents):
            raise RequestError(
                f"model {served_name!r} is not served here; served: {', '.join(self.served_models())}",
                status=404,
                code="model_not_found",
            )
        return name, agent or None

    def _model_for(self, harness: Harness, agent: str) -> Model:
        if self.model is not None and not isinstance(self.model, str):
            return self.model
        name = self.model or harness.agent(agent).model or resolve_model(None, harness.config.model)
        if name not in self._models:
            self._models[name] = get_model(name)
        return self._models[name]

    async def complete(self, request: ChatRequest, *, session: str | None = None) -> Served:
        """Answer `request` from the served head and record the call (failed calls too)."""
        name, agent = self._target(request.model)
        if self.in_flight >= self.max_in_flight:
            raise RequestError(
                f"{self.in_flight} requests are being answered, the most this server takes at once; retry",
                status=429,
                code="too_many_requests",
            )
        context = request.context()
        began = time.perf_counter()
        harness, release = self.current(name)  # held to the end, whatever is released meanwhile
        agent = agent or harness.entry
        model = self._model_for(harness, agent)
        self.in_flight += 1
        try:
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
        except (UnusableAnswer, ModelError) as error:
            await self._record(
                request, name, agent, harness, release, model.name, session, began, error=error
            )
            status, code = (
                (400, "model_request_error") if isinstance(error, ModelRequestError) else (502, "model_error")
            )
            raise RequestError(str(error), status=status, code=code) from None
        finally:
            self.in_flight -= 1
        body = completion(f"chatcmpl-{secrets.token_hex(12)}", request.model, answer, harness.hash[:16])
        record = await self._record(
            request, name, agent, harness, release, answer.model, session, began, answer=answer, body=body
        )
        return Served(body=body, record=record, release=release)

    async def _record(
        self,
        request: ChatRequest,
        name: str,
        agent: str,
        harness: Harness,
        release: Release | None,
        model: str,
        session: str | None,
        began: float,
        *,
        answer: StepAnswer | None = None,
        body: dict[str, Any] | None = None,
        error: Exception | None = None,
    ) -> Record:
        usage = answer.usage if answer else None
        record = NewRecord(
            harness=name,
            agent=agent,
            release=release.number if release else None,
            release_hash=harness.hash,
            model=model,
            request=request.model_dump(exclude_none=True),
            response=body,
            prompt_hash=answer.prompt_hash if answer else "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cost_usd=usage.cost_usd if usage else 0.0,
            latency_ms=(time.perf_counter() - began) * 1000,
            error=str(error) if error else None,
            session=session,
        )
        try:
            return await asyncio.to_thread(self.records.add, record)
        except RecordError as error:  # a redaction hook that fails: nothing is written, nor served
            raise RequestError(
                f"the call could not be recorded: {error}", status=500, code="record_failed"
            ) from None
