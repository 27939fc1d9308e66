"""The recipe loop: a recipe file loaded and checked, and asked about each served harness on a timer.

A recipe file is YAML naming a recipe class (`module:Class`) and its settings:

    recipe: atoll.service.recipes:EvolveOnFeedback
    harnesses: [support_agent]   # optional; default every harness the service serves
    settings:
      min_negative: 5
      operators: [add_rule, add_demo]
      max_proposals: 4
      release: hold

A recipe class is a pydantic model (its fields are the settings, so a wrong one is refused at start-up,
naming the file and the field) with the two methods of the `Recipe` protocol: `should_run(state)`, asked
about each served harness with no running job every `check_every` seconds, and `plan(state)`, the job to
start when it says yes. Atoll's own are in `service.recipes`; a class of your own is named the same way and
imported from the recipe file's folder (or anywhere on the path), as a world's world.py is: it is your code.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import importlib.util
import logging
import sys
from datetime import UTC, datetime
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from atoll.worlds import AtollError

from ._job_models import Job, JobConflict, JobOptions, JobPlan
from ._jobs import Jobs
from ._releases import ReleaseChain

log = logging.getLogger(__name__)


class RecipeError(AtollError):
    """A recipe file cannot be used: not YAML, an unknown class, a wrong setting (named with the file)."""


class ServiceState(BaseModel):
    """What a recipe decides on for one served harness, read afresh at every check."""

    harness: str = Field(description="The harness.yaml name.")
    path: Path = Field(description="The folder the service serves it from, where its jobs work.")
    head_release: int | None = Field(description="The release served now; None before the first.")
    new_negative_feedback: int = Field(
        description="Records with negative feedback posted since the last evolve job was started (all, before it)."
    )
    new_records: int = Field(description="Records served since the last job started (all, before the first).")
    last_job: Job | None = Field(description="The newest job of this harness, whatever its kind or status.")
    started_at: datetime = Field(description="When the service started (UTC).")
    now: datetime = Field(description="The moment of the check (UTC).")


@runtime_checkable
class Recipe(Protocol):
    """Decides when a served harness gets a job, and which."""

    def should_run(self, state: ServiceState) -> bool:
        """Whether to start a job for `state.harness` now (asked only while it has none running)."""
        ...

    def plan(self, state: ServiceState) -> JobPlan:
        """The job to start: its kind and options."""
        ...


class RecipeSettings(JobOptions):
    """A base for recipe classes whose settings are a job's options plus their own trigger fields."""

    def options(self) -> JobOptions:
        """The job options among the settings."""
        return JobOptions.model_validate(self.model_dump(include=set(JobOptions.model_fields)))


class RecipeFile(BaseModel):
    """The top level of a recipe file."""

    model_config = ConfigDict(extra="forbid")

    recipe: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="`module:Class`.")
    harnesses: list[str] | None = Field(None, description="The served harnesses it drives; default all.")
    settings: dict[str, Any] = Field(default_factory=dict, description="The class's fields.")


class LoadedRecipe(BaseModel):
    """A recipe file, checked: the recipe object and what it drives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    name: str = Field(description="`module:Class`, as the file names it.")
    recipe: Recipe
    harnesses: list[str] | None


def _problems(error: ValidationError, prefix: str) -> str:
    """Every problem of `error`, each as `where.the.field: what`, `where` under `prefix`."""
    return "; ".join(
        f"{'.'.join(filter(None, [prefix, *map(str, item['loc'])])) or 'the file'}: "
        + ("unknown key" if item["type"] == "extra_forbidden" else item["msg"].removeprefix("Value error, "))
        for item in error.errors()
    )


def load_recipe(path: Path | str) -> LoadedRecipe:
    """Read and check a recipe file: its class imported and its settings validated. RecipeError names the
    file and the field otherwise."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RecipeError(f"{path}: cannot read the recipe file ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise RecipeError(f"{path}: not UTF-8 text (byte {error.start}); save the recipe as UTF-8") from None
    except yaml.YAMLError as error:
        raise RecipeError(f"{path}: not YAML: {error}") from None
    try:
        spec = RecipeFile.model_validate(data if data is not None else {})
    except ValidationError as error:
        raise RecipeError(f"{path}: {_problems(error, '')} (keys: recipe, harnesses, settings)") from None
    cls = _import(path, spec.recipe)
    try:
        recipe = cls.model_validate(spec.settings, context={"base": path.parent.resolve()})
    except ValidationError as error:
        known = ", ".join(cls.model_fields)
        raise RecipeError(
            f"{path}: {_problems(error, 'settings')} (settings of {spec.recipe}: {known})"
        ) from None
    return LoadedRecipe(path=path, name=spec.recipe, recipe=recipe, harnesses=spec.harnesses)


def _import(path: Path, name: str) -> type[BaseModel]:
    """The recipe class `module:Class`, imported with the recipe file's folder on the path."""
    module_name, _, class_name = name.partition(":")
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.append(folder)
    if _binds(module_name, class_name) is False:  # refused before the module's code runs
        raise RecipeError(
            f"{path}: recipe {name!r}: {module_name} has no pydantic model class {class_name!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the user's module: whatever it raises, say which recipe
        raise RecipeError(
            f"{path}: recipe {name!r}: cannot import {module_name}: {type(error).__name__}: {error}"
        ) from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise RecipeError(
            f"{path}: recipe {name!r}: {module_name} has no pydantic model class {class_name!r}"
        )
    if not all(callable(getattr(cls, method, None)) for method in ("should_run", "plan")):
        raise RecipeError(f"{path}: recipe {name!r} needs the methods should_run(state) and plan(state)")
    return cls


def _binds(module_name: str, name: str) -> bool | None:
    """Whether the module's source binds `name` at its top level (a class, an assignment, an import, under
    `if` or `try` too), read without running the module; None when that cannot be told (no source, a `*`
    import, a module `__getattr__`): importing decides."""
    try:
        spec = _spec_unimported(module_name)
        source = spec.loader.get_source(module_name) if spec and spec.loader else None  # type: ignore[attr-defined]
        tree = ast.parse(source) if source is not None else None
    except (ImportError, ValueError, AttributeError, SyntaxError):
        return None
    if tree is None:
        return None
    bound: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)  # its body is another scope
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            bound.update(alias.asname or alias.name.partition(".")[0] for alias in node.names)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return None if "__getattr__" in bound else name in bound


def _spec_unimported(module_name: str) -> ModuleSpec | None:
    """The module's spec, found without running any code: `importlib.util.find_spec("pkg.sub")` imports
    `pkg` first (its `__init__.py` runs), so each parent is found by its own spec, its search locations
    passed down, unless it was imported already. None when some part cannot be found so."""
    parent: ModuleSpec | None = None
    spec: ModuleSpec | None = None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__spec__", None) is not None:
            spec = loaded.__spec__
        elif parent is None:
            spec = importlib.util.find_spec(name)  # a top-level name: nothing to import first
        else:
            locations = parent.submodule_search_locations
            spec = PathFinder.find_spec(name, list(locations)) if locations is not None else None
        if spec is None:
            return None
        parent = spec
    return spec


class RecipeLoop:
    """Asks the recipe about every harness it drives, every `check_every` seconds, and starts what it plans.

    Args:
        recipe: the loaded recipe file.
        jobs: the service's jobs (their store, records and release chains give the state).
        releases: the release chains the head is read from.
        check_every: seconds between two checks.
    """

    def __init__(
        self, recipe: LoadedRecipe, jobs: Jobs, releases: ReleaseChain, *, check_every: float
    ) -> None:
        unknown = sorted(set(recipe.harnesses or []) - set(jobs.harnesses))
        if unknown:
            raise RecipeError(
                f"{recipe.path}: harnesses: {', '.join(unknown)} not served here (served: {', '.join(jobs.harnesses)})"
            )
        if not jobs.harnesses:
            raise RecipeError(f"{recipe.path}: a recipe drives served harnesses; serve one with --harness")
        self.recipe, self.jobs, self.releases = recipe, jobs, releases
        self.check_every = check_every
        self.started_at = datetime.now(UTC)
        self.harnesses = recipe.harnesses or list(jobs.harnesses)

    @property
    def source(self) -> str:
        return f"recipe {self.recipe.name}"

    def state(self, harness: str) -> ServiceState:
        records = self.jobs.records
        head = self.releases.head(harness)
        last = self.jobs.last(harness)
        evolved = self.jobs.last(harness, "evolve")
        # after the newest feedback the last evolve job saw (or, if it saw none, after it started)
        mark = (evolved.feedback_mark or evolved.created_at) if evolved else None
        since = last.created_at if last else None
        return ServiceState(
            harness=harness,
            path=self.jobs.harnesses[harness],
            head_release=head.number if head else None,
            new_negative_feedback=records.negative_feedback(harness, after=mark).records,
            new_records=records.count(harness, since=since),
            last_job=last,
            started_at=self.started_at,
            now=datetime.now(UTC),
        )

    def plan(self, harness: str) -> JobPlan:
        """The recipe's plan for `harness` now (what `POST /jobs` without a kind starts)."""
        return self.recipe.recipe.plan(self.state(harness))

    async def check(self) -> list[Job]:
        """One round: ask about each harness with no running job; start the planned jobs; return them. A recipe
        that raises is logged and asked again next round: the service goes on serving."""
        started = []
        for harness in self.harnesses:
            try:
                if self.jobs.running(harness) is not None:
                    continue
                state = self.state(harness)
                if not self.recipe.recipe.should_run(state):
                    continue
                plan = self.recipe.recipe.plan(state)
                started.append(await self.jobs.start(plan, harness, source=self.source))
            except JobConflict:  # a job started meanwhile (by POST /jobs): next round
                continue
            except Exception:  # the recipe is the user's code; a failed round is retried next time
                log.exception("recipe %s failed on %s", self.recipe.name, harness)
        return started

    async def run(self) -> None:
        """Check forever, `check_every` seconds apart (cancel the task to stop)."""
        while True:
            await self.check()
            await asyncio.sleep(self.check_every)
