"""The CI regression gate: the harness in the working tree against the same folder at a base ref.

Both sides play the same tasks on the same seeds with the same model, so every difference is the
harness's; the suite is the working tree's for both, because the test must not move with the thing
tested. A change that also touches the suite could relax the very tasks its harness now fails, so
then both sides are graded with the base's suite as well and the worse verdict stands, unless the
suite change is accepted explicitly. `stats.gate` decides non-inferiority. A base that has already
been measured can be given as a baseline file instead of a ref, so CI need not replay it on every
pull request.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atoll.evals import (
    BatchError,
    BatchProgress,
    BatchResult,
    ExecutorSpec,
    GraderError,
    ReferenceFailed,
    RunStore,
    StoreError,
    Suite,
    SuiteError,
    evaluate_batch,
    load_suite,
    passes,
    suite_for,
)
from atoll.harnesses import Harness, HarnessError, load_harness
from atoll.harnesses.models import Model, ModelError, ResponseCache, check_model, get_model, resolve_model
from atoll.worlds import WorldError
from atoll.worlds.base.stats import TIE_TOLERANCE, GateRule, GateVerdict, PairedScores, Tolerance, gate

from . import git
from ._gate_result import (
    Baseline,
    GateError,
    GateReport,
    GateSide,
    SuiteChange,
    SuiteRun,
    TaskRow,
    load_baseline,
)

DEFAULT_BRANCHES = ("main", "master", "origin/main", "origin/master")

GateProgress = Callable[[str, BatchProgress], None]
"""Called with the side ("base", "candidate" or "both", with " (base's suite)" when graded with the base's
suite) and the batch's progress."""


class GateConfig(BaseModel):
    """What `optimize gate` compares and how strictly."""

    model_config = ConfigDict(extra="forbid")

    harness: Path = Field(description="The harness folder; its working-tree files are the candidate.")
    base: str | None = Field(
        None, description="Git ref of the base; default the merge base of HEAD with the default branch."
    )
    baseline: Path | None = Field(None, description="A stored result to compare with instead of a ref.")
    suite: Path | None = Field(None, description="The eval suite; default: `evals.suite_for(harness)`.")
    model: str | None = Field(
        None, description="The agent's model; default $ATOLL_MODEL, else the harness's."
    )
    split: Literal["train", "val", "test"] = "val"
    k: int | None = Field(None, ge=1, description="Seeds per task; default each task's own seeds.")
    tolerance: Tolerance = Field(
        0.05,
        description="How far the mean score may fall: fail if the 95% lower bound of the mean change is "
        "below -tolerance. A negative value is read as its size (the gate's old spelling, -0.05).",
    )
    alpha: float = Field(0.05, gt=0.0, lt=1.0, description="Sign test for losses: fail at p <= alpha.")
    max_error_rate: float = Field(0.2, ge=0.0, le=1.0, description="Above this on either side: exit 3.")
    concurrency: int = Field(8, ge=1)
    reuse: bool = Field(
        True, description="Reuse episodes already stored for the same harness, model and task."
    )
    executor: ExecutorSpec = Field(
        "local", description="Where episodes run: local, ray or ray://HOST:PORT (docs/scale.md)."
    )
    accept_suite_changes: bool = Field(
        False,
        description="Let the working tree's suite alone decide when it differs from the base's; "
        "by default both sides are graded with the base's suite too and the worse verdict stands.",
    )

    @model_validator(mode="after")
    def _one_base(self) -> GateConfig:
        if self.base is not None and self.baseline is not None:
            raise ValueError("give a base ref or a baseline file, not both")
        return self

    def rule(self, pass_threshold: float) -> GateRule:
        return GateRule(
            tolerance=self.tolerance,
            alpha=self.alpha,
            max_error_rate=self.max_error_rate,
            pass_threshold=pass_threshold,
        )


# -- the base -------------------------------------------------------------------------------------


def default_branch(path: Path) -> str | None:
    """The branch pull requests merge into: the PR's target on GitHub Actions, else origin's HEAD,
    else main or master."""
    root = git.repo_root(path)
    candidates = []
    if os.environ.get("GITHUB_BASE_REF"):
        candidates.append(f"origin/{os.environ['GITHUB_BASE_REF']}")
    with suppress(git.GitError):
        candidates.append(
            git.run("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", cwd=root).strip()
        )
    for name in (*candidates, *DEFAULT_BRANCHES):
        try:
            git.resolve_ref(path, name)
        except git.GitError:
            continue
        return name
    return None


def resolve_base(path: Path, ref: str | None) -> tuple[str, str]:
    """(label, commit) of the base: `ref`, or the merge base of HEAD with the default branch."""
    try:
        git.repo_root(path)
    except git.NotARepository:
        raise GateError(
            f"{path} is not in a git repository, so there is no base ref to compare against; pass "
            "--baseline FILE (a result saved with `optimize gate --save-baseline` in the repository) "
            "or run inside the repository"
        ) from None
    if ref is not None:
        try:
            return ref, git.resolve_ref(path, ref)
        except git.GitError:
            raise GateError(
                f"--base {ref!r} is not a commit of the repository holding {path}; "
                "fetch it (in CI: a deeper checkout) or give another ref"
            ) from None
    branch = default_branch(path)
    if branch is None:
        raise GateError(
            f"{path}: no default branch found (tried origin/HEAD, {', '.join(DEFAULT_BRANCHES)}); "
            "pass --base REF"
        )
    try:
        sha = git.run("merge-base", "HEAD", branch, cwd=git.repo_root(path)).strip()
    except git.GitError:
        raise GateError(
            f"HEAD and {branch} have no common commit in this clone; fetch the history "
            "(in GitHub Actions: actions/checkout with fetch-depth: 0) or pass --base REF"
        ) from None
    return f"merge base with {branch}", sha


def changed_files(folder: Path, base: Path | None) -> list[str]:
    """The files of `folder` that differ from those of `base` (None: absent), each as `name (how)`."""
    now, then = _folder_bytes(folder), _folder_bytes(base)
    return [
        f"{name} ({'added' if name not in then else 'removed' if name not in now else 'modified'})"
        for name in sorted(now.keys() | then.keys())
        if now.get(name) != then.get(name)
    ]


def _folder_bytes(folder: Path | None) -> dict[str, bytes]:
    if folder is None:
        return {}
    files = (file for file in folder.rglob("*") if file.is_file())
    return {
        name: file.read_bytes()
        for file in files
        if not git.is_hidden(name := file.relative_to(folder).as_posix())
    }


def _harness_at(path: Path, label: str, sha: str) -> Harness:
    files = git.harness_files_at(path, sha)
    if not files:
        raise GateError(
            f"{path} does not exist at {label} ({sha[:10]}): nothing to compare with; "
            "pass --base with a ref where it exists, or --baseline FILE"
        )
    try:
        return Harness.from_files(files, source=f"{path}@{sha[:10]}")
    except HarnessError as error:
        raise GateError(f"the base harness ({label}) does not load:\n{error}") from None


def _checked_suite(path: Path, harness: Harness, config: GateConfig) -> Suite:
    """The suite at `path`, refused when it tests another world or has no task in the gate's split."""
    suite = load_suite(path)
    if suite.world.name != harness.world.name:
        raise GateError(
            f"harness {harness.name!r} drives world {harness.world.name!r} but suite "
            f"{suite.name!r} tests {suite.world.name!r}; pass --suite"
        )
    if not suite.select(split=config.split):
        raise GateError(f"suite {suite.name!r} has no {config.split} tasks; choose another --split")
    return suite


# -- the run --------------------------------------------------------------------------------------

_SETUP_ERRORS = (HarnessError, SuiteError, BatchError, git.GitError, WorldError, ModelError, StoreError)


@contextmanager
def _setup_errors() -> Iterator[None]:
    """Anything wrong before the first episode is the configuration's fault: exit 2, one clear message."""
    try:
        yield
    except _SETUP_ERRORS as error:
        raise GateError(str(error)) from None


async def run_gate(
    config: GateConfig,
    *,
    model: Model | None = None,
    store: RunStore | None = None,
    on_progress: GateProgress | None = None,
) -> GateReport:
    """Evaluate the working tree's harness and its base on the same tasks and seeds; judge the change.

    Args:
        config: what to compare (see GateConfig).
        model: a Model object for both sides (a ScriptedModel in tests) instead of resolving names;
            named models reuse the response cache, so a replayed base costs nothing.
        store: the runs store both evaluations are written to; default runs/atoll.sqlite.
        on_progress: called with the side (see GateProgress) and its BatchProgress during the batches.

    Raises GateError (with its `exit_code`) when it cannot judge; a verdict of "error" is returned.
    """
    own_store = store is None
    with _setup_errors():
        store = store or RunStore()
    try:
        return await _Gate(config, store, model, on_progress).run()
    finally:
        if own_store:
            store.close()


class _Gate:
    def __init__(
        self, config: GateConfig, store: RunStore, model: Model | None, on_progress: GateProgress | None
    ) -> None:
        self.config, self.store, self.model, self.on_progress = config, store, model, on_progress
        self.notes: list[str] = []
        self.models: dict[str, Model] = {}

    async def run(self) -> GateReport:
        config = self.config
        with tempfile.TemporaryDirectory(prefix="atoll-gate-") as scratch:
            with _setup_errors():
                candidate = load_harness(config.harness)
                sha, base_harness, base_suite = None, None, None
                if config.baseline is None:
                    base_label, sha = resolve_base(config.harness, config.base)
                    base_harness = _harness_at(config.harness, base_label, sha)
                    if config.suite is None and base_harness.config.suite != candidate.config.suite:
                        raise GateError(
                            f"{config.harness}/harness.yaml: the change moves the suite (suite: "
                            f"{base_harness.config.suite!r} -> {candidate.config.suite!r}); pass --suite to choose one"
                        )
                suite = _checked_suite(config.suite or suite_for(candidate), candidate, config)
                seeds = {task.id: suite.seeds(task, k=config.k) for task in suite.select(split=config.split)}
                base: Harness | GateSide
                if base_harness is None:
                    base_label = str(config.baseline)
                    baseline = load_baseline(config.baseline)
                    change = self._check_baseline(baseline, suite, seeds)
                    base = baseline.side.model_copy(update={"label": f"baseline {base_label}"})
                else:
                    base = base_harness
                    change, base_suite = self._base_suite(suite, candidate, base_label, sha, Path(scratch))
                for harness in (candidate, base):
                    if isinstance(harness, Harness):
                        self._model_for(harness)

            if isinstance(base, Harness) and base.hash == candidate.hash:
                self.notes.append("the base and the working tree hold the same harness files: evaluated once")
            judged = await self._judge(suite, candidate, base, base_label, sha, "")
            if change is not None and base_suite is not None:
                change.under_base_suite = await self._judge(
                    base_suite, candidate, base, base_label, sha, " (base's suite)"
                )
        if judged.base.model != judged.candidate.model:
            self.notes.append(
                f"the sides ran on different models: base {judged.base.model}, "
                f"candidate {judged.candidate.model}"
            )
        return GateReport(
            harness=candidate.name,
            harness_path=str(config.harness),
            suite=judged.suite,
            suite_fingerprint=judged.suite_fingerprint,
            split=config.split,
            base=judged.base,
            candidate=judged.candidate,
            tasks=judged.tasks,
            gate=judged.gate,
            notes=self.notes,
            suite_change=change,
        )

    async def _judge(
        self,
        suite: Suite,
        candidate: Harness,
        base: Harness | GateSide,
        label: str,
        sha: str | None,
        tag: str,
    ) -> SuiteRun:
        """Both sides graded with `suite`, paired; a harness unchanged since the base is evaluated once."""
        if isinstance(base, Harness) and base.hash == candidate.hash:
            result = await self._evaluate(candidate, suite, "both" + tag)
            base_side, tip = _side(result, label, sha), _side(result, "working tree", None)
        else:
            if isinstance(base, Harness):
                base_side = _side(await self._evaluate(base, suite, "base" + tag), label, sha)
            else:
                base_side = base
            tip = _side(await self._evaluate(candidate, suite, "candidate" + tag), "working tree", None)
        verdict = gate(
            PairedScores(incumbent=base_side.scores, candidate=tip.scores),
            self.config.rule(suite.pass_threshold),
        )
        return SuiteRun(
            suite=suite.name,
            suite_fingerprint=suite.fingerprint,
            base=base_side,
            candidate=tip,
            tasks=_rows(verdict, suite.pass_threshold),
            gate=verdict,
        )

    def _base_suite(
        self, suite: Suite, candidate: Harness, label: str, sha: str, scratch: Path
    ) -> tuple[SuiteChange | None, Suite | None]:
        """How the suite differs from the base's, and the base's suite to grade both sides with too
        (None when the suite is unchanged or its change accepted)."""
        try:
            copy = git.export_folder(suite.path, sha, scratch)
        except git.GitError as error:
            raise GateError(
                f"{suite.path}: cannot read the suite as it was at {label}, to check whether the change "
                f"touched it ({error}); keep the suite in the harness's repository"
            ) from None
        files = changed_files(suite.path, copy)
        if not files:
            return None, None
        change = SuiteChange(files=files, accepted=self.config.accept_suite_changes)
        if change.accepted:
            return change, None
        accept = "or pass --accept-suite-changes to let the working tree's suite alone decide"
        if copy is None:
            raise GateError(
                f"the suite {suite.path} does not exist at {label}: no base suite to grade the change with; "
                f"pass --base with a ref where it exists, {accept}"
            )
        try:
            return change, _checked_suite(copy, candidate, self.config)
        except (SuiteError, GateError) as error:
            shown = str(error).replace(str(copy), f"{suite.path}@{sha[:10]}")
            raise GateError(
                f"the base's suite ({label}) cannot grade the change: {shown}; {accept}"
            ) from None

    def _model_for(self, harness: Harness) -> Model:
        if self.model is not None:
            return self.model
        name = resolve_model(self.config.model, harness.config.model)
        if name not in self.models:
            check_model(name)
            self.models[name] = get_model(name, cache=ResponseCache.default())
        return self.models[name]

    def _check_baseline(
        self, baseline: Baseline, suite: Suite, seeds: dict[str, list[int]]
    ) -> SuiteChange | None:
        """Refuse a baseline measured on other tasks or seeds, or (unless accepted) with other suite files:
        its scores cannot be graded again with this suite."""
        path = self.config.baseline
        if baseline.split != self.config.split:
            raise GateError(
                f"{path}: recorded on the {baseline.split} split, the gate runs {self.config.split}; "
                f"pass --split {baseline.split} or save a new baseline"
            )
        if {t: sorted(v) for t, v in baseline.side.seeds.items()} != {t: sorted(v) for t, v in seeds.items()}:
            missing = sorted(baseline.side.seeds.keys() ^ seeds.keys())
            detail = (
                f"tasks in one but not the other: {', '.join(missing[:6])}" if missing else "seeds differ"
            )
            raise GateError(
                f"{path}: its tasks and seeds differ from the suite's {self.config.split} split "
                f"({detail}); match -k to it or save a new baseline with --save-baseline"
            )
        if baseline.suite_fingerprint == suite.fingerprint:
            return None
        if not self.config.accept_suite_changes:
            raise GateError(
                f"{path}: recorded with other suite files than {suite.name!r} has now, so its scores cannot "
                "judge this suite's; gate against --base REF (both suites then grade both sides), save a new "
                "baseline, or pass --accept-suite-changes"
            )
        return SuiteChange(files=[], accepted=True)

    async def _evaluate(self, harness: Harness, suite: Suite, side: str) -> BatchResult:
        on_progress = self.on_progress
        try:
            return await evaluate_batch(
                harness,
                suite,
                model=self._model_for(harness),
                split=self.config.split,
                k=self.config.k,
                concurrency=self.config.concurrency,
                store=self.store,
                kind="gate",
                reuse=self.config.reuse,
                executor=self.config.executor,
                on_progress=(lambda progress: on_progress(side, progress)) if on_progress else None,
            )
        except (GraderError, ReferenceFailed) as error:
            raise GateError(f"the {side} evaluation failed: {error}", exit_code=3) from None
        except _SETUP_ERRORS as error:
            raise GateError(f"the {side} evaluation could not run: {error}") from None


def _side(result: BatchResult, label: str, commit: str | None) -> GateSide:
    return GateSide(
        label=label,
        harness=result.harness,
        harness_hash=result.harness_hash,
        commit=commit,
        model=result.model,
        run_id=result.run_id,
        scores=result.scores(),
        seeds={task: sorted(r.seed for r in runs) for task, runs in result.by_task().items()},
        episodes=len(result.results),
        errored=sum(r.errored for r in result.results),
        tokens=sum(r.episode.usage.total_tokens for r in result.results),
        cost_usd=sum(r.episode.usage.cost_usd for r in result.results),
    )


def _rows(verdict: GateVerdict, threshold: float) -> list[TaskRow]:
    scores, rows = verdict.scores, []
    for task, delta in verdict.comparison.deltas.items():
        base, tip = scores.incumbent[task], scores.candidate[task]
        rows.append(
            TaskRow(
                task=task,
                base_mean=sum(s or 0.0 for s in base) / len(base),
                candidate_mean=sum(s or 0.0 for s in tip) / len(tip),
                delta=delta,
                seeds=len(tip),
                base_passes=sum(s is not None and passes(s, threshold) for s in base),
                candidate_passes=sum(s is not None and passes(s, threshold) for s in tip),
                candidate_errors=sum(s is None for s in tip),
                status=_status(task, delta, verdict),
            )
        )
    return rows


def _status(task: str, delta: float, verdict: GateVerdict) -> Literal["regressed", "worse", "better", "same"]:
    if task in verdict.regressed_tasks:
        return "regressed"
    if abs(delta) <= TIE_TOLERANCE:
        return "same"
    return "better" if delta > 0 else "worse"
