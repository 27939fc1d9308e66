"""Layers point down, through public names: read from the source with `ast`, no import run.

Atoll's packages stack in one order (`LAYERS`, bottom first): each may import those below it and none
above, and a package reaches another only through its public names (no `_module`, no `._name`), so a
package can reorganise its private modules without breaking the others. `worlds.base` is the bottom
layer inside `worlds`: it imports nothing else of Atoll. Every import of Atoll names its one root,
`atoll` (`from atoll.worlds import World`): a bare `import worlds` would load a second copy from a
checkout, or fail where Atoll is installed.

`python tests/test_layers.py` prints the figures: exported names per package, private reaches, the
package graph and the longest modules.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worlds", "harnesses", "evals", "optimizer", "service", "views", "commands")
LAYERS = tuple(
    f"atoll.{name}"
    for name in (
        "worlds.base",
        "worlds",
        "harnesses",
        "evals",
        "optimizer",
        "service",
        "views",
        "commands",
        "cli",
    )
)
"""Bottom first: a module may import its own layer and those before it."""


@dataclass(frozen=True)
class Reach:
    """One import (or attribute read) of `target` by the module `source`, at `line`."""

    source: str
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}"


def modules() -> Iterator[tuple[str, Path]]:
    """Every module of Atoll's packages and cli.py, with its dotted name under the root."""
    yield "atoll.cli", ROOT / "cli.py"
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(["atoll", *parts]), path


def layer(name: str) -> str:
    """The layer a dotted name belongs to ("" for anything outside Atoll)."""
    for candidate in sorted(LAYERS, key=len, reverse=True):
        if name == candidate or name.startswith(candidate + "."):
            return candidate
    return ""


def reaches(name: str, path: Path) -> Iterator[Reach]:
    """What the module imports (every name, lazy imports included) and the private attributes it reads
    off a name it imported from Atoll (`git._run`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Reach(name, node.lineno, alias.name)
                bound[alias.asname or alias.name.partition(".")[0]] = (
                    alias.name if alias.asname else alias.name.partition(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield Reach(name, node.lineno, f"{module}.{alias.name}")
                bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            yield Reach(name, node.lineno, f"{bound[node.value.id]}.{node.attr}")


def _private(target: str, own: str) -> bool:
    """Whether `target` names a private module or name of a package other than `own`."""
    root, _, rest = target.partition(".")
    top = rest.split(".")[0]
    if root != "atoll" or top not in (*PACKAGES, "cli") or top == own:
        return False
    return any(part.startswith("_") and not part.startswith("__") for part in rest.split(".")[1:])


def private_reaches() -> list[Reach]:
    return [
        reach
        for name, path in modules()
        for reach in reaches(name, path)
        if _private(reach.target, name.split(".")[1])
    ]


def rootless_imports() -> list[Reach]:
    """Imports of an Atoll package by its bare name (`from worlds import World`), not through `atoll`."""
    return [
        reach
        for name, path in modules()
        for reach in reaches(name, path)
        if reach.target.split(".")[0] in (*PACKAGES, "cli")
    ]


def layer_edges() -> dict[tuple[str, str], Reach]:
    """(importing layer, imported layer) -> the first import that makes the edge."""
    edges: dict[tuple[str, str], Reach] = {}
    for name, path in modules():
        for reach in reaches(name, path):
            source, target = layer(name), layer(reach.target)
            if target and target != source:
                edges.setdefault((source, target), reach)
    return edges


def package_cycles() -> list[list[str]]:
    """Every strongly connected set of two or more top-level packages (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for (source, target), _ in layer_edges().items():
        graph[source.split(".")[1]].add(target.split(".")[1])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in graph[node] - {node}:
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_imports_another_packages_private_modules_or_names():
    found = private_reaches()
    assert not found, "import these through the package's public names (its __all__):\n" + "\n".join(
        map(str, found)
    )


def test_every_import_of_atoll_names_the_atoll_root():
    found = rootless_imports()
    assert not found, "import these from `atoll.`:\n" + "\n".join(map(str, found))


def test_layers_only_point_down():
    upward = [
        f"{reach} ({source} imports {target}, which is above it)"
        for (source, target), reach in sorted(layer_edges().items())
        if LAYERS.index(target) > LAYERS.index(source)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycle_between_packages():
    assert package_cycles() == []


def test_the_walker_sees_a_private_reach_and_a_cycle(tmp_path: Path):
    """The checks above would pass on a walker that found nothing; this one proves it finds both kinds."""
    source = tmp_path / "mod.py"
    source.write_text(
        "from atoll.optimizer import git\nfrom atoll.evals._store import RunStore\nfrom evals import Task\n"
        "git._run('status')\n"
    )
    found = [reach.target for reach in reaches("atoll.service._jobs", source)]
    assert [target for target in found if _private(target, "service")] == [
        "atoll.evals._store.RunStore",
        "atoll.optimizer.git._run",
    ]
    assert [target for target in found if target.split(".")[0] in PACKAGES] == ["evals.Task"]
    assert layer("atoll.worlds.base.stats._paired") == "atoll.worlds.base"
    assert layer("atoll.worlds.helpdesk.world") == "atoll.worlds"


def figures() -> None:
    """Print what the closing note of a layering change reports."""
    for package in (*(f"atoll.{name}" for name in PACKAGES), "atoll.worlds.base", "atoll.worlds.base.stats"):
        exported = getattr(importlib.import_module(package), "__all__", [])
        print(f"exported {package}: {len(exported)}")
    found = private_reaches()
    print(f"private reaches: {len(found)} in {len({reach.source for reach in found})} modules")
    for reach in found:
        print(f"  {reach}")
    print(f"package cycles: {package_cycles()}")
    for (source, target), reach in sorted(layer_edges().items()):
        print(f"  {source} -> {target} (first: {reach})")
    sizes = sorted(
        ((len(path.read_text(encoding="utf-8").splitlines()), name) for name, path in modules()), reverse=True
    )
    print("longest modules:", ", ".join(f"{name} {lines}" for lines, name in sizes[:8]))


if __name__ == "__main__":
    figures()
