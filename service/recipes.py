"""Atoll's own recipes, named in a recipe file as `atoll.service.recipes:<Class>`.

Each one's settings are a job's options (`service.JobOptions`: objective, operators, proposer_model, the
budgets, release auto or hold, ...) plus its own trigger; each plans an `evolve` job: draft train tasks
from new negative feedback, optimize on the suite's train split with them, gate on val against the served
release, and release (or hold) what passes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from atoll.worlds import TIMESTAMP_FORMAT

from ._job_models import JobPlan
from ._recipe_loop import RecipeSettings, ServiceState

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _span(value: Any) -> Any:
    """`90s`, `30m`, `6h`, `1d`, `2w` as a timedelta; anything else as given (pydantic reads a number of
    seconds, or ISO 8601 such as `PT6H`)."""
    text = value.strip() if isinstance(value, str) else ""
    if text[-1:] in _UNITS:
        try:
            return timedelta(**{_UNITS[text[-1]]: float(text[:-1])})
        except ValueError:
            return value
        except OverflowError:  # `1e12d`, `1e400d`: past what a timedelta holds; a ValueError names the field
            raise ValueError(f"{text!r} is longer than {MAX_SPAN.days} days, the longest span") from None
    return value


MAX_SPAN = timedelta(days=3650)  # ten years: `now - since >= every` stays a date whatever `every` is
Span = Annotated[timedelta, BeforeValidator(_span)]


class EvolveOnFeedback(RecipeSettings):
    """Evolve once `min_negative` records have got negative feedback since the last evolve job: their
    corrections become the train tasks the optimizer learns from."""

    min_negative: int = Field(3, ge=1, description="New records with negative feedback that start a job.")

    def should_run(self, state: ServiceState) -> bool:
        return state.new_negative_feedback >= self.min_negative

    def plan(self, state: ServiceState) -> JobPlan:
        return JobPlan(kind="evolve", options=self.options())


class Scheduled(RecipeSettings):
    """Evolve every `every` (from the last job of the harness, else from the service's start), whatever
    the feedback: drafts are made from whatever new negative feedback there is."""

    every: Span = Field(
        gt=timedelta(0), le=MAX_SPAN, description="Time between two jobs: 30m, 6h, 1d, 2w (or seconds)."
    )

    def should_run(self, state: ServiceState) -> bool:
        last = state.last_job
        since = (
            datetime.strptime(last.created_at, TIMESTAMP_FORMAT).replace(tzinfo=UTC)
            if last is not None
            else state.started_at
        )
        return state.now - since >= self.every

    def plan(self, state: ServiceState) -> JobPlan:
        return JobPlan(kind="evolve", options=self.options())


class Manual(RecipeSettings):
    """Never on its own: `POST /jobs` with only the harness starts its plan, with these settings."""

    def should_run(self, state: ServiceState) -> bool:
        return False

    def plan(self, state: ServiceState) -> JobPlan:
        return JobPlan(kind="evolve", options=self.options())
