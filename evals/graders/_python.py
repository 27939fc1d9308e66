"""Python graders: a suite's `graders.py` holds `@grader` functions for what YAML cannot say.

A grader is rebuilt from its (name, args) pair, as a task names it (`graders: [name]` or
`graders: [{name: ..., args: {...}}]`), so a stored grade says exactly what judged it. It takes
either `(task, episode)` or the pure `(fixture, diff, transcript)`, then any keyword arguments the
task gives, and returns a Check or a list of Checks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atoll.worlds import AtollError

from ._verdict import Check

if TYPE_CHECKING:
    from atoll.worlds import Diff, Instance

GraderForm = Literal["episode", "state"]
_FORMS: dict[GraderForm, tuple[str, ...]] = {
    "episode": ("task", "episode"),
    "state": ("fixture", "diff", "transcript"),
}


class GraderDefinitionError(AtollError):
    """A `@grader` function cannot be called the way graders are: fix its signature."""


class GraderError(AtollError):
    """A Python grader raised or returned something other than checks: a bug in graders.py, not the agent's."""


@dataclass(frozen=True)
class PythonGrader:
    """A function registered with `@grader`; calling it calls the function unchanged."""

    name: str
    function: Callable[..., Any]
    form: GraderForm
    options: tuple[str, ...]  # the keyword arguments a task may pass
    required: tuple[str, ...]  # those without a default

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def check_args(self, args: dict[str, Any]) -> str | None:
        """Why `args` cannot be passed to this grader, or None when they can."""
        unknown = sorted(set(args) - set(self.options))
        if unknown:
            takes = ", ".join(self.options) or "no arguments"
            return f"grader {self.name!r} has no argument {unknown[0]!r} (it takes: {takes})"
        missing = [name for name in self.required if name not in args]
        if missing:
            return f"grader {self.name!r} needs argument {missing[0]!r}: write {{name: {self.name}, args: {{{missing[0]}: ...}}}}"
        return None


def grader(function: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Register a Python grader (in a suite's graders.py).

    The function's first parameters are `(task, episode)` or `(fixture, diff, transcript)`; any
    further ones are keyword arguments that tasks set with `{name: ..., args: {...}}`.
    """

    def register(fn: Callable[..., Any]) -> PythonGrader:
        return _make(fn, name or fn.__name__)

    return register(function) if function is not None else register


def _make(fn: Callable[..., Any], name: str) -> PythonGrader:
    where = f"grader {name!r}"
    if inspect.iscoroutinefunction(fn):
        raise GraderDefinitionError(f"{where}: graders are plain functions; drop the `async`")
    parameters = list(inspect.signature(fn).parameters.values())
    names = tuple(p.name for p in parameters)
    form = next((form for form, leading in _FORMS.items() if names[: len(leading)] == leading), None)
    if form is None:
        raise GraderDefinitionError(
            f"{where}: a grader starts with (task, episode) or (fixture, diff, transcript); got ({', '.join(names)})"
        )
    rest = parameters[len(_FORMS[form]) :]
    positional_only = [p.name for p in rest if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if positional_only:
        raise GraderDefinitionError(
            f"{where}: argument {positional_only[0]!r} must be a plain keyword argument"
        )
    return PythonGrader(
        name=name,
        function=fn,
        form=form,
        options=tuple(p.name for p in rest),
        required=tuple(p.name for p in rest if p.default is p.empty),
    )


class GraderSpec(BaseModel):
    """A Python grader as a task names it: rebuildable from the suite's graders.py."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    def label(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


def load_graders(path: Path, shown: str | None = None) -> dict[str, PythonGrader]:
    """Import a suite's graders.py and collect its `@grader` functions by name.

    `shown` is the path as error messages write it.
    """
    shown = shown or str(path)
    module_name = f"_atoll_graders_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise GraderDefinitionError(f"{shown}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except GraderDefinitionError as error:
        sys.modules.pop(module_name, None)
        raise GraderDefinitionError(f"{shown}: {error}") from None
    except Exception as error:  # a syntax or import error in the suite's own code
        sys.modules.pop(module_name, None)
        line = f" line {error.lineno}" if isinstance(error, SyntaxError) else ""
        raise GraderDefinitionError(f"{shown}{line}: {type(error).__name__}: {error}") from None
    found: dict[str, PythonGrader] = {}
    for value in vars(module).values():
        if isinstance(value, PythonGrader):
            if value.name in found and found[value.name] is not value:
                raise GraderDefinitionError(f"{shown}: two graders are named {value.name!r}; rename one")
            found[value.name] = value
    return found


class FixtureView:
    """The fixture an episode started from, read-only (same seed and clock): what graders look up."""

    def __init__(self, instance: Instance) -> None:
        self._instance = instance
        self.name = instance.fixture.name
        self.world = instance.world.name
        self.seed = instance.seed
        self.epoch = instance.fixture.epoch

    def query(self, sql: str, params: tuple | dict = ()) -> list[dict[str, Any]]:
        return self._instance.query(sql, params)

    def one(self, sql: str, params: tuple | dict = ()) -> dict[str, Any] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None


def run_grader(
    grader_: PythonGrader,
    spec: GraderSpec,
    *,
    task: Any,
    episode: Any,
    fixture: Callable[[], FixtureView],
    diff: Diff,
) -> list[Check]:
    """Call one grader as its form asks and normalise what it returns to checks of kind `python`."""
    where = f"grader {spec.label()} on task {getattr(task, 'id', '?')!r} seed {getattr(episode, 'seed', '?')}"
    try:
        if grader_.form == "episode":
            result = grader_.function(task, episode, **spec.args)
        else:
            result = grader_.function(fixture(), diff, list(episode.events), **spec.args)
    except Exception as error:
        raise GraderError(f"{where} raised {type(error).__name__}: {error}") from error
    checks = [result] if isinstance(result, Check) else result
    if not isinstance(checks, list) or not all(isinstance(check, Check) for check in checks):
        raise GraderError(f"{where} returned {type(result).__name__}; return a Check or a list of Checks")
    return [check.model_copy(update={"kind": "python"}) for check in checks]
