"""Evals: suites of tasks graded by what the agent changed in the world, run in batches and stored.

The public API is exactly what `__all__` lists; see evals/README.md for the task format. Timestamps,
run ids and row owners are the bottom layer's (`worlds.base`), the paired statistics too
(`worlds.base.stats`).
"""

from atoll.worlds.base.stats import SplitPower

from ._batch import (
    BatchError,
    BatchProgress,
    BatchResult,
    OnProgress,
    evaluate,
    evaluate_batch,
    plan_batch,
    resume,
    resume_batch,
)
from ._executors import (
    BatchSetup,
    Executor,
    ExecutorError,
    ExecutorSpec,
    LocalExecutor,
    OnPlayed,
    RayExecutor,
    executor_for,
    in_flight,
    parse_executor,
    play_episode,
)
from ._graders import grade_episode, replay_reference
from ._locate import suite_for
from ._new import new_suite
from ._store import (
    DEFAULT_RUNS_DB,
    RUNS_DB_ENV,
    EpisodeLine,
    EpisodeResult,
    RunRecord,
    RunStore,
    RunsUsage,
    StoreError,
)
from ._suite import (
    MAX_SEED,
    SPLITS,
    Expect,
    Suite,
    SuiteConfig,
    SuiteError,
    Task,
    UserSpec,
    display_path,
    load_suite,
)
from ._suite_check import CheckTally, Probe, SeedResult, SuiteCheck, TaskCheck, check_suite
from ._users import STOP_TOKEN, SimulatedUser, user_for
from .graders._matchers import Matcher, values_equal
from .graders._python import FixtureView, GraderDefinitionError, GraderError, GraderSpec, PythonGrader, grader
from .graders._reference import ReferenceCall, ReferenceFailed
from .graders._reference import replay as replay_calls
from .graders._verdict import Check, Grade
from .metrics import EpisodeOutcome, Metrics, TaskMetrics, compute_metrics, pass_hat_k, passes

__all__ = [
    "DEFAULT_RUNS_DB",
    "MAX_SEED",
    "RUNS_DB_ENV",
    "SPLITS",
    "STOP_TOKEN",
    "BatchError",
    "BatchProgress",
    "BatchResult",
    "BatchSetup",
    "Check",
    "CheckTally",
    "EpisodeLine",
    "EpisodeOutcome",
    "EpisodeResult",
    "Executor",
    "ExecutorError",
    "ExecutorSpec",
    "Expect",
    "FixtureView",
    "Grade",
    "GraderDefinitionError",
    "GraderError",
    "GraderSpec",
    "LocalExecutor",
    "Matcher",
    "Metrics",
    "OnPlayed",
    "OnProgress",
    "Probe",
    "PythonGrader",
    "RayExecutor",
    "ReferenceCall",
    "ReferenceFailed",
    "RunRecord",
    "RunStore",
    "RunsUsage",
    "SeedResult",
    "SimulatedUser",
    "SplitPower",
    "StoreError",
    "Suite",
    "SuiteCheck",
    "SuiteConfig",
    "SuiteError",
    "Task",
    "TaskCheck",
    "TaskMetrics",
    "UserSpec",
    "check_suite",
    "compute_metrics",
    "display_path",
    "evaluate",
    "evaluate_batch",
    "executor_for",
    "grade_episode",
    "grader",
    "in_flight",
    "load_suite",
    "new_suite",
    "parse_executor",
    "pass_hat_k",
    "passes",
    "plan_batch",
    "play_episode",
    "replay_calls",
    "replay_reference",
    "resume",
    "resume_batch",
    "suite_for",
    "user_for",
    "values_equal",
]
