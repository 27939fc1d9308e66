"""The operators a run can use, by name: Atoll's own, those registered with `register_operator`, and
those installed packages declare under the `atoll.operators` entry point, so a team's own operator
is one `--operator NAME` away without forking Atoll:

    # pyproject.toml of your package
    [project.entry-points."atoll.operators"]
    shorten_prompt = "my_package.operators:ShortenPrompt"

An entry point names a class (or any callable) that makes a Proposer; its name is the operator's.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from ._config import OptimizerError
from ._operators import default_operators
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
    """Every operator a run can name: Atoll's own first, then registered, then installed plug-ins."""
    return list(_factories())


def make_operators(names: list[str] | None = None) -> list[Proposer]:
    """Fresh instances of the named operators, in that order; None: all of them. An unknown name is
    refused with the list of known ones."""
    factories = _factories()
    if names is None:
        names = list(factories)
    unknown = [name for name in names if name not in factories]
    if unknown:
        raise OptimizerError(f"unknown operator(s) {', '.join(unknown)}; operators: {', '.join(factories)}")
    return [_made(name, factories[name]) for name in names]


def _builtin() -> dict[str, OperatorFactory]:
    return {operator.name: type(operator) for operator in default_operators()}


def _factories() -> dict[str, OperatorFactory]:
    factories = {**_builtin(), **_registered}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in factories:
            raise OptimizerError(
                f"operator plug-in {point.name!r} ({point.value}) clashes with an operator of the same name"
            )
        try:
            factories[point.name] = point.load()
        except Exception as error:  # a broken plug-in is named, whatever it raised on import
            raise OptimizerError(
                f"operator plug-in {point.name!r} ({point.value}) does not load: {error}"
            ) from None
    return factories


def _made(name: str, factory: OperatorFactory) -> Proposer:
    proposer = factory()
    if getattr(proposer, "name", None) != name or not callable(getattr(proposer, "propose", None)):
        raise OptimizerError(
            f"operator {name!r} made {proposer!r}, which is not a Proposer named {name!r} "
            "(it needs `name`, `usage` and `async propose(context)`)"
        )
    return proposer
