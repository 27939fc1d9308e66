"""Atoll as a service: the released harness behind an OpenAI-compatible endpoint, live records and
feedback, and the release chain that decides what is served."""

from ._app import RECORD_HEADER, RELEASE_HEADER, create_service_app, run_service
from ._console_api import console_router
from ._endpoint import HarnessEndpoint, Served
from ._feedback_api import records_router
from ._job_models import (
    Job,
    JobConflict,
    JobError,
    JobOptions,
    JobPlan,
    JobRequest,
    UnknownHarness,
    UnknownJob,
)
from ._jobs import Jobs
from ._jobs_api import jobs_router
from ._publish import ReleaseRefused, release_harness, release_tag, rollback_harness, tagged
from ._recipe_loop import (
    LoadedRecipe,
    Recipe,
    RecipeError,
    RecipeLoop,
    RecipeSettings,
    ServiceState,
    load_recipe,
)
from ._records import (
    Feedback,
    FeedbackIn,
    FeedbackLimit,
    NewRecord,
    Record,
    RecordError,
    RecordPolicy,
    RecordStore,
    UnknownRecord,
    load_record_policy,
    parse_since,
    redact_text,
)
from ._releases import Release, ReleaseChain, ReleaseError, StaleRelease
from ._tasks import DraftReport, DraftSkip, correction_phrases, draft_tasks

__all__ = [
    "RECORD_HEADER",
    "RELEASE_HEADER",
    "DraftReport",
    "DraftSkip",
    "Feedback",
    "FeedbackIn",
    "FeedbackLimit",
    "HarnessEndpoint",
    "Job",
    "JobConflict",
    "JobError",
    "JobOptions",
    "JobPlan",
    "JobRequest",
    "Jobs",
    "LoadedRecipe",
    "NewRecord",
    "Recipe",
    "RecipeError",
    "RecipeLoop",
    "RecipeSettings",
    "Record",
    "RecordError",
    "RecordPolicy",
    "RecordStore",
    "Release",
    "ReleaseChain",
    "ReleaseError",
    "ReleaseRefused",
    "Served",
    "ServiceState",
    "StaleRelease",
    "UnknownHarness",
    "UnknownJob",
    "UnknownRecord",
    "console_router",
    "correction_phrases",
    "create_service_app",
    "draft_tasks",
    "jobs_router",
    "load_recipe",
    "load_record_policy",
    "parse_since",
    "records_router",
    "redact_text",
    "release_harness",
    "release_tag",
    "rollback_harness",
    "run_service",
    "tagged",
]
