"""What the CI gate found, and the files it reads and writes: the `--json` report and baselines.

A report holds both sides' per-seed scores, so the verdict can be recomputed from it and its
measured side can serve as the base of a later gate (`--baseline`) without evaluating it again.
Both files carry a sha256 of their content, so scores edited by hand are refused rather than trusted.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, computed_field

from atoll.worlds import AtollError
from atoll.worlds.base.stats import GateVerdict

REPORT_FORMAT = "atoll-gate-report"
BASELINE_FORMAT = "atoll-baseline"
HASH_KEY = "sha256"
SEVERITY = ("pass", "regression", "error")


class GateError(AtollError):
    """The gate could not judge: misconfigured (exit code 2) or its evaluation broke (exit code 3)."""

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class GateSide(BaseModel):
    """One side's evaluation: enough to recompute the verdict, and to serve as a later baseline."""

    label: str = Field(description="What this side is: a ref, `working tree`, a baseline file.")
    harness: str
    harness_hash: str
    commit: str | None = None
    model: str
    run_id: str | None = Field(None, description="Its run in the runs store (`optimize show RUN`).")
    scores: dict[str, list[float | None]] = Field(description="Per task, scores by seed; None = errored.")
    seeds: dict[str, list[int]]
    episodes: int
    errored: int
    tokens: int = 0
    cost_usd: float = 0.0


class TaskRow(BaseModel):
    """One task, base against candidate."""

    task: str
    base_mean: float
    candidate_mean: float
    delta: float
    seeds: int
    base_passes: int
    candidate_passes: int
    candidate_errors: int
    status: Literal["regressed", "worse", "better", "same"]


class SuiteRun(BaseModel):
    """Both sides graded with one suite: the base's own, when the change touched the suite."""

    suite: str
    suite_fingerprint: str
    base: GateSide
    candidate: GateSide
    tasks: list[TaskRow]
    gate: GateVerdict


class SuiteChange(BaseModel):
    """The suite differs from the base's: a change could relax the very tasks its harness now fails."""

    files: list[str] = Field(
        description="Changed suite files, e.g. `tasks/a.yaml (modified)`; empty against a baseline file."
    )
    accepted: bool = Field(description="--accept-suite-changes: the working tree's suite alone decides.")
    under_base_suite: SuiteRun | None = Field(None, description="Both sides graded with the base's suite.")


class GateReport(BaseModel):
    """Everything the gate found: the verdict, both sides, one row per task. `--json` writes this.

    The flat fields are the grading with the working tree's suite; `suite_change` holds the grading
    with the base's suite when the change touched it, and the verdict is the worse of the two.
    """

    format: Literal["atoll-gate-report"] = REPORT_FORMAT
    version: Literal[1] = 1
    harness: str
    harness_path: str
    suite: str
    suite_fingerprint: str
    split: str
    base: GateSide
    candidate: GateSide
    tasks: list[TaskRow]
    gate: GateVerdict
    notes: list[str] = Field(default_factory=list)
    suite_change: SuiteChange | None = None

    @property
    def under_base_suite(self) -> SuiteRun | None:
        return self.suite_change.under_base_suite if self.suite_change else None

    @computed_field
    @property
    def verdict(self) -> Literal["pass", "regression", "error"]:
        other = self.under_base_suite
        verdicts = [self.gate.verdict, *([other.gate.verdict] if other else [])]
        return max(verdicts, key=SEVERITY.index)

    @property
    def reasons(self) -> list[str]:
        other = self.under_base_suite
        return self.gate.reasons + [
            f"under the base's suite: {reason}" for reason in (other.gate.reasons if other else [])
        ]

    @computed_field
    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression, 3 too many errored episodes to judge."""
        return {"pass": 0, "regression": 1, "error": 3}[self.verdict]


class Baseline(BaseModel):
    """A measured side kept in a file (`--save-baseline`), to gate later changes against it."""

    format: Literal["atoll-baseline"] = BASELINE_FORMAT
    version: Literal[1] = 1
    suite: str
    suite_fingerprint: str
    split: str
    side: GateSide


# -- files ------------------------------------------------------------------------------------------


def content_hash(data: dict[str, Any]) -> str:
    """sha256 of a file's JSON content less its own hash, canonical (sorted keys, no spaces): reformatting
    the file keeps it, editing a score does not."""
    content = {key: value for key, value in data.items() if key != HASH_KEY}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _write_hashed(model: BaseModel, path: Path | str) -> None:
    data = json.loads(model.model_dump_json())
    data[HASH_KEY] = content_hash(data)
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_json(report: GateReport, path: Path | str) -> None:
    _write_hashed(report, path)


def save_baseline(report: GateReport, path: Path | str) -> None:
    """Keep the candidate side (the working tree just measured) as the baseline of later gates.

    Refused when that side errored too often: a baseline of outages would pass any later change.
    """
    rate, limit = report.gate.comparison.candidate_error_rate, report.gate.rule.max_error_rate
    if rate > limit:
        raise GateError(
            f"not saving {path}: {rate:.0%} of the measured episodes errored (limit {limit:.0%}); "
            "fix the errors and rerun",
            exit_code=3,
        )
    baseline = Baseline(
        suite=report.suite,
        suite_fingerprint=report.suite_fingerprint,
        split=report.split,
        side=report.candidate,
    )
    _write_hashed(baseline, path)


def load_baseline(path: Path | str) -> Baseline:
    """Read a `--save-baseline` file, or a `--json` gate report (whose candidate side becomes the base)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise GateError(
            f"{path}: cannot read the baseline ({error.strerror}); "
            "write one with `optimize gate ... --save-baseline FILE`"
        ) from None
    except json.JSONDecodeError as error:
        raise GateError(f"{path}: not JSON (line {error.lineno}: {error.msg})") from None
    kind = data.get("format") if isinstance(data, dict) else None
    if kind not in (REPORT_FORMAT, BASELINE_FORMAT):
        raise GateError(
            f"{path}: field `format` is {kind!r}; expected {BASELINE_FORMAT!r} (--save-baseline) "
            f"or {REPORT_FORMAT!r} (--json)"
        )
    regenerate = "regenerate it with `optimize gate ... --save-baseline FILE`"
    if HASH_KEY not in data:
        raise GateError(f"{path}: no content hash (`{HASH_KEY}`): written by an older Atoll; {regenerate}")
    if data[HASH_KEY] != content_hash(data):
        raise GateError(
            f"{path}: its content does not match its `{HASH_KEY}`: edited after it was written; {regenerate}"
        )
    try:
        if kind == BASELINE_FORMAT:
            return Baseline.model_validate(data)
        report = GateReport.model_validate(data)
        return Baseline(
            suite=report.suite,
            suite_fingerprint=report.suite_fingerprint,
            split=report.split,
            side=report.candidate,
        )
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise GateError(f"{path}: field `{where}`: {first['msg']}; write the file again") from None
