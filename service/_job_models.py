"""What a job is: its kinds, options, plan and stored row as pydantic models, and the errors the jobs API
answers with. A job's optimizer settings are the optimizer's own (`optimizer.config_field`), so a recipe,
`POST /jobs` and `optimize run` share their defaults and bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticUndefined

from atoll.optimizer import Objective, OptimizeConfig, config_field, operator_names
from atoll.worlds import AtollError

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


class BrokenJob(JobError):
    """A job's row that cannot be read back (edited in the store, or written by an older Atoll)."""

    status = 500
    code = "broken_job"


class UnknownHarness(JobError):
    """The harness named is not one the service serves."""

    status = 404
    code = "harness_not_found"


class JobConflict(JobError):
    """The harness already has a running job, or the job is not in a state that allows what was asked."""

    status = 409
    code = "job_conflict"


class _JobSettings(BaseModel):
    """The options a recipe file and a `POST /jobs` request share (`JobOptions`, `JobRequestOptions`): the
    optimizer's own settings (`config_field`: the same bounds, defaults and descriptions as `optimize run`'s),
    and the release gate's. Numbers are finite: `max_cost_usd: 1e400` (infinity) made a job whose JSON no
    response could carry."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    objective: Objective = config_field("objective")
    operators: list[str] | None = config_field("operators")
    proposer_model: str | None = config_field("proposer_model")
    max_proposals: int = config_field("max_proposals")
    max_minutes: float | None = config_field("max_minutes")
    max_episodes: int | None = config_field("max_episodes")
    max_model_calls: int | None = config_field("max_model_calls")
    max_cost_usd: float | None = config_field("max_cost_usd")
    patience: int | None = config_field("patience")
    k: int = config_field("k")
    gate_k: int | None = Field(
        None, ge=1, description="Seeds per task in the release gate; default each task's."
    )
    concurrency: int = config_field("concurrency")
    # The one setting whose default differs, on purpose: an evolve job's drafts are train tasks, and a
    # sample (the optimizer's 16) could leave them out; all train tasks are learnt from unless set.
    train_sample: int | None = config_field(
        "train_sample",
        default=None,
        description="Train tasks the proposers learn from; None: all, so every draft is among them.",
    )
    seed: int = config_field("seed")
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
        """The optimizer's settings for a job on the folder `harness`: every option that is one of them."""
        settings = self.model_dump(include=set(OptimizeConfig.model_fields))
        return OptimizeConfig.model_validate({**settings, "harness": harness, "model": model})


class JobRequestOptions(_JobSettings):
    """The `options` of `POST /jobs`: a job's options as anyone who can reach the server may set them.

    A request runs code and spends model calls on the server's keys, so it gets less than a recipe file:
    no `suite` (its graders are imported and drafts committed there: the job uses the recipe's suite, else
    the served harness's), a time budget it must give and that is capped, capped proposals, seeds and
    concurrency, and no proposer model but the recipe's (`job_options` checks that).
    """

    max_proposals: int = config_field("max_proposals", Field(le=HTTP_MAX_PROPOSALS))
    max_minutes: float = config_field(
        "max_minutes",
        Field(le=HTTP_MAX_MINUTES),
        default=PydanticUndefined,
        description=f"Required; at most {HTTP_MAX_MINUTES:g}.",
    )
    k: int = config_field("k", Field(le=HTTP_MAX_SEEDS))
    gate_k: int | None = Field(
        None, ge=1, le=HTTP_MAX_SEEDS, description="Seeds per task in the release gate; default each task's."
    )
    concurrency: int = config_field("concurrency", Field(le=HTTP_MAX_CONCURRENCY))

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
