"""The operators a run can use, by name: Atoll's own, those registered with `register_operator`, and
those installed packages declare under the `atoll.operators` entry point, so a team's own operator
is one `--operator NAME` away without forking Atoll:

    # pyproject.toml of your package
    [project.entry-points."atoll.operators"]
    shorten_prompt = "my_package.operators:ShortenPrompt"

An entry point names a class (or any callable) that makes a Proposer; its name is the operator's.
A plug-in is imported only when a run names it: a default run uses Atoll's own operators.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points

from atoll.harnesses.models import ModelUsage

from ._config import OptimizerError
from ._operators import cost_operators, default_operators, model_operators
from ._proposal import Proposer

ENTRY_POINT_GROUP = "atoll.operators"
OperatorFactory = Callable[[], Proposer]

_registered: dict[str, OperatorFactory] = {}


def register_operator(name: str, factory: OperatorFactory) -> None:
    """Make `factory()` available as operator `name` in this process (a plug-in without packaging)."""
    if name in _builtin():
        raise OptimizerError(f"operator {name!r} is one of Atoll's own; choose another name")
    _registered[name] = factory


def operator_names() -> list[str]:
    """Every operator a run can name: Atoll's own first, then registered, then installed plug-ins
    (named from their entry points, not imported)."""
    return [*_builtin(), *_registered, *_plugins()]


def make_operators(
    names: list[str] | None = None, *, objective: str = "quality", models: bool = False
) -> list[Proposer]:
    """Fresh instances of the named operators, in that order; None: Atoll's own for the objective (those
    that raise quality, or those that cut cost, latency and tokens), with the model choice when the run
    may choose models (a plug-in runs only when named, so installing a package never changes a default
    run). A plug-in is imported only when named; an unknown name is refused with the list of known ones."""
    if names is None:
        defaults = default_operators() if objective == "quality" else cost_operators()
        defaults += model_operators() if models else []
        return [_made(operator.name, type(operator)) for operator in defaults]
    known = operator_names()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise OptimizerError(f"unknown operator(s) {', '.join(unknown)}; operators: {', '.join(known)}")
    factories = {**_builtin(), **_registered}
    return [_made(name, factories[name] if name in factories else _load(name)) for name in names]


@cache
def _builtin() -> dict[str, OperatorFactory]:
    every = [*default_operators(), *cost_operators(), *model_operators()]
    return {operator.name: type(operator) for operator in every}


def _plugins() -> list[str]:
    """The names installed packages declare, refusing one that clashes with another operator."""
    taken = {*_builtin(), *_registered}
    names = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in taken or point.name in names:
            raise OptimizerError(
                f"operator plug-in {point.name!r} ({point.value}) clashes with an operator of the same name"
            )
        names.append(point.name)
    return names


def _load(name: str) -> OperatorFactory:
    (point,) = entry_points(group=ENTRY_POINT_GROUP, name=name)
    try:
        return point.load()
    except Exception as error:  # a broken plug-in is named, whatever it raised on import
        raise OptimizerError(f"operator plug-in {name!r} ({point.value}) does not load: {error}") from None


def _made(name: str, factory: OperatorFactory) -> Proposer:
    try:
        proposer = factory()
    except Exception as error:  # the plug-in's own constructor: named, not a traceback
        raise OptimizerError(f"operator {name!r} could not be made: {error}") from None
    if getattr(proposer, "name", None) != name:
        raise OptimizerError(f"operator {name!r} made {proposer!r}, which is not a Proposer named {name!r}")
    check_proposer(proposer)
    return proposer


def check_proposer(proposer: object) -> None:
    """Refuse, before a run starts, an object the loop could not use as a Proposer."""
    if not isinstance(getattr(proposer, "name", None), str) or not callable(
        getattr(proposer, "propose", None)
    ):
        raise OptimizerError(
            f"{proposer!r} is not a Proposer: it needs a `name` and `async propose(context)`"
        )
    if not isinstance(getattr(proposer, "usage", None), ModelUsage):
        raise OptimizerError(
            f"proposer {proposer.name!r} declares no `usage` (a harnesses.models.ModelUsage); subclass "
            "optimizer.Operator for one that calls no model"
        )
