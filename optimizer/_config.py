"""The optimizer's inputs, progress events and result, as pydantic models.

`OptimizeConfig` is the one definition of every optimizer setting: `optimize run` builds it from its
options (`from_options`), a service job's and a recipe's settings reuse its fields (`config_field`), and
tests/test_settings.py fails when a command line default differs from the default here. The CLI renders
the `OptimizerStatus` snapshots the loop streams; a product embedding Atoll does the same from Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from atoll.evals import ExecutorSpec
from atoll.harnesses.models import ModelUsage
from atoll.worlds import RUN_FAILED, AtollError
from atoll.worlds.base.stats import AcceptanceRule, Decision

from ._objective import Objective, ObjectiveRule
from ._proposal import Attempt

Strategy = Literal["greedy", "pareto"]
ProposerKind = Literal["reflect", "rewrite", "off"]

RULE_OPTIONS = {"min_effect": "rule", "min_reduction": "objective_rule", "tolerance": "objective_rule"}
"""The rules' settings a command line gives flat (`--min-effect`), and the rule each belongs to."""


class OptimizeConfig(BaseModel):
    """Everything that shapes an optimization run; stored with the run so `--resume` repeats it."""

    harness: Path = Field(description="The harness folder to improve (it must be clean in git to commit).")
    suite: Path | None = Field(None, description="The eval suite; default: `evals.suite_for(harness)`.")
    model: str | None = Field(
        None, description="The agent's model; default $ATOLL_MODEL, else the harness's."
    )
    proposer: ProposerKind = Field(
        "reflect",
        description="The model-driven proposer beside the LLM-free operators: reflect (one small edit from "
        "one failing train episode, a form a 1.5B model fills), rewrite (whole files, for a capable model) "
        "or off.",
    )
    proposer_model: str | None = Field(None, description="The proposer's model; default the agent's own.")
    strategy: Strategy = "greedy"
    operators: list[str] | None = Field(None, description="LLM-free operators to use; default all.")
    k: int = Field(1, ge=1, description="Seeds per val task, the batch each variant is decided on.")
    confirm_k: int = Field(
        3,
        ge=0,
        description="A variant about to be kept that fails a val task the incumbent passed on every seed, "
        "with fewer seeds than the always-passed veto needs, is decided again with both sides run on this "
        "many seeds of those tasks; 0 turns it off.",
    )
    val_looks: int = Field(
        4,
        ge=1,
        description="A candidate is confirmed on val in this many looks (the tasks in a seeded order), and "
        "stopped at a look once it is behind or cannot be accepted whatever the rest shows (quality runs).",
    )
    screen_size: int = Field(
        3, ge=1, description="Train tasks in the screen's first round; each next round doubles it."
    )
    train_sample: int | None = Field(
        16, ge=1, description="Train tasks the proposers learn from (a seeded sample); None: all."
    )
    max_proposals: int = Field(12, ge=0)
    patience: int | None = Field(None, ge=1, description="Stop after this many rejections in a row.")
    max_episodes: int | None = Field(None, ge=1)
    max_model_calls: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    max_minutes: float | None = Field(
        90.0,
        gt=0,
        description="Wall-time budget in minutes: scoring the start counts; the start and the closing test "
        "scoring always run.",
    )
    concurrency: int = Field(4, ge=1)
    branch: str | None = Field(
        None, description="Commit accepted variants here instead of the current branch."
    )
    commit: bool = Field(True, description="Commit accepted variants to git (off: only write the files).")
    seed: int = 0
    rule: AcceptanceRule = Field(default_factory=AcceptanceRule)
    objective: Objective = Field(
        "quality",
        description="What to improve: quality (the mean score), or cost, latency or tokens per episode "
        "with quality held (non-inferior by `objective_rule`).",
    )
    objective_rule: ObjectiveRule = Field(
        default_factory=ObjectiveRule, description="When a cheaper candidate is kept (objective != quality)."
    )
    models: list[str] | None = Field(
        None, description="Models the optimizer may give each agent (any litellm names); None: keep them."
    )
    score_test: bool = Field(
        True, description="Score the test split once the search ends, start and final, for the report."
    )
    reuse: bool = Field(
        True, description="Copy episodes already stored for the same harness, model, task and seed (evals)."
    )
    executor: ExecutorSpec = Field(
        "local", description="Where episodes run: local, ray or ray://HOST:PORT (docs/scale.md)."
    )

    @field_validator("models", mode="before")
    @classmethod
    def _comma_separated(cls, models: Any) -> Any:
        """`local/gemma-3-270m, local/smollm2-135m` as a list, as `--models` and a recipe may give it."""
        if isinstance(models, str):
            return [name.strip() for name in models.split(",") if name.strip()] or None
        return models

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OptimizeConfig:
        """The config from options spelt flat, as `optimize run` takes them: the config's own fields, and
        beside them the rules' `min_effect` (of `rule`), `min_reduction` and `tolerance` (of
        `objective_rule`)."""
        values = dict(options)
        for option, rule in RULE_OPTIONS.items():
            if option in values:
                values[rule] = {**dict(values.get(rule) or {}), option: values.pop(option)}
        return cls.model_validate(values)


def config_field(name: str, *constraints: FieldInfo, **changes: Any) -> Any:
    """The `OptimizeConfig` field `name` (type bounds, default, description) for another model's field of
    the same setting, with `constraints` added (`Field(le=...)`) and `changes` made (`default=...`): a
    job's and a recipe's settings reuse the optimizer's, so each has one definition."""
    return FieldInfo.merge_field_infos(OptimizeConfig.model_fields[name], *constraints, **changes)


class OptimizerStatus(BaseModel):
    """A snapshot of the run, sent with every event: what the live view shows."""

    run_id: str
    phase: Literal["start", "search", "test", "done"] = Field(
        "start", description="Scoring the start, searching (proposals), scoring test, or done."
    )
    stage: str = "starting"
    message: str = ""
    eta_s: float | None = Field(None, description="About how long until the run ends, by its budget.")
    best: str | None = Field(None, description="The best candidate so far, in words, with its figures.")
    iteration: int = 0
    max_proposals: int = 0
    incumbent_hash: str = ""
    incumbent_score: float | None = None
    start_score: float | None = None
    operator: str | None = None
    rationale: str | None = None
    batch_done: int = 0
    batch_total: int = 0
    accepted: int = 0
    rejected: int = 0
    episodes: int = 0
    usage: ModelUsage = Field(default_factory=ModelUsage)  # the agent's episodes and the proposers' calls
    elapsed_s: float = 0.0


class OptimizerEvent(BaseModel):
    """Something happened: `kind` says what, `status` is the run's state right after it."""

    kind: Literal[
        "start", "evaluate", "progress", "proposal", "screen", "decision", "commit", "paused", "finish"
    ]
    status: OptimizerStatus
    decision: Decision | None = None


class StepRecord(BaseModel):
    """One proposal's fate: the one record the run's result, its report and its summary all list.
    A decided proposal carries its gate figures (p_value set); a screened-out one, its screen means."""

    iteration: int
    operator: str
    rationale: str
    verdict: str  # accept, reject, void, screened_out, invalid, duplicate, none
    incumbent_score: float | None = None
    candidate_score: float | None = None
    p_value: float | None = None
    lower_bound: float | None = None
    wins: int | None = None  # val tasks the candidate did better / worse / the same on (decided ones)
    losses: int | None = None
    ties: int | None = None
    objective: str | None = Field(None, description="cost, latency or tokens: what the run lowered.")
    incumbent_spend: float | None = Field(None, description="The objective per episode, incumbent.")
    candidate_spend: float | None = Field(None, description="The objective per episode, candidate.")
    reduction_lower_bound: float | None = Field(None, description="Of the objective's relative reduction.")
    commit: str | None = None
    reasons: list[str] = Field(default_factory=list)

    @property
    def record(self) -> str:
        """`3 better / 1 worse / 2 tied`, or "" for a proposal that never reached the gate."""
        if self.wins is None:
            return ""
        return f"{self.wins} better / {self.losses} worse / {self.ties} tied"


class FrontierPoint(BaseModel):
    """One evaluated harness on the val split: its quality and, when the run lowers one, its objective."""

    label: str = Field(description="`start`, or `proposal N (operator)`.")
    quality: float
    spend: float | None = Field(None, description="The objective per episode; None in a quality run.")
    accepted: bool
    commit: str | None = None


class OptimizeResult(BaseModel):
    """What a finished (or paused) run found."""

    run_id: str
    status: Literal["finished", "paused", "interrupted"]
    stop_reason: str
    start_hash: str
    final_hash: str
    val_start: float | None
    val_final: float | None
    test_start: float | None = None
    test_final: float | None = None
    objective: Objective = "quality"
    val_spend_start: float | None = Field(None, description="The objective per episode (not quality).")
    val_spend_final: float | None = None
    test_spend_start: float | None = None
    test_spend_final: float | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    attempts: list[Attempt] = Field(
        default_factory=list, description="Every ask of a model-driven proposer and what came of it."
    )
    final_patch: str = ""
    phase_minutes: dict[str, float] = Field(
        default_factory=dict, description="Wall minutes of each phase: start, search and test."
    )
    episodes: int = 0
    usage: ModelUsage = Field(default_factory=ModelUsage)
    elapsed_s: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _stored_before_usage(cls, data: Any) -> Any:
        """Results stored before `usage` had calls, tokens and cost at the top level (tokens unsplit)."""
        if isinstance(data, dict) and "usage" not in data and "model_calls" in data:
            usage = {
                "model_calls": data["model_calls"],
                "prompt_tokens": data.get("tokens", 0),  # the split was not stored; the total is kept
                "cost_usd": data.get("cost_usd", 0.0),
            }
            data = {k: v for k, v in data.items() if k not in ("model_calls", "tokens", "cost_usd")}
            data["usage"] = usage
        return data

    @property
    def accepted(self) -> list[StepRecord]:
        return [step for step in self.steps if step.verdict == "accept"]

    def frontier(self) -> list[FrontierPoint]:
        """The start and every candidate the gate judged that no other beats on both quality and the
        objective (higher quality, lower spend), best quality first: the choices a product can offer."""
        points = (
            []
            if self.val_start is None
            else [
                FrontierPoint(
                    label="start", quality=self.val_start, spend=self.val_spend_start, accepted=True
                )
            ]
        )
        points += [
            FrontierPoint(
                label=f"proposal {step.iteration + 1} ({step.operator})",
                quality=step.candidate_score,
                spend=step.candidate_spend,
                accepted=step.verdict == "accept",
                commit=step.commit,
            )
            for step in self.steps
            if step.p_value is not None and step.candidate_score is not None
        ]
        return sorted(
            (p for p in points if not any(_dominates(other, p) for other in points)),
            key=lambda p: (-p.quality, p.spend or 0.0),
        )


class OptimizerError(AtollError):
    """The run cannot start or go on as configured (dirty harness, no git, bad options)."""


class OptimizerPaused(AtollError):
    """The model stopped answering; the run is stored and resumes with `--resume RUN`."""

    exit_code = RUN_FAILED


def _dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    """a is at least as good as b on quality and spend, and better on one (a missing spend ties)."""
    spend_a, spend_b = a.spend or 0.0, b.spend or 0.0
    return a.quality >= b.quality and spend_a <= spend_b and (a.quality > b.quality or spend_a < spend_b)
