"""Which worlds a server offers, loaded on first use so one broken world hides no other."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from atoll.worlds import UnknownWorld, World, get_world, list_worlds


class WorldCatalog:
    """The worlds a server offers: the named ones (names, module paths or World objects), or every world found from here."""

    def __init__(self, worlds: Iterable[str | World] | None = None) -> None:
        self._given: dict[str, str | World] = {}
        for world in worlds if worlds is not None else list_worlds():
            self._given[world.name if isinstance(world, World) else world] = world
        self._loaded: dict[str, World] = {}
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return list(self._given)

    def get(self, name: str) -> World:
        """The world called `name`; raises UnknownWorld naming the ones on offer."""
        if name not in self._given:
            raise UnknownWorld(
                f"this server has no world {name!r}; it offers: {', '.join(self._given) or 'none'}"
            )
        with self._lock:
            if name not in self._loaded:
                self._loaded[name] = get_world(self._given[name])
        return self._loaded[name]

    def describe(self) -> list[dict[str, Any]]:
        """What the console lists: each world's fixtures, tables and tools, or why it cannot load."""
        described = []
        for name in self._given:
            try:
                world = self.get(name)
            except Exception as error:  # a broken world is shown as broken, not hidden
                described.append({"name": name, "error": f"{type(error).__name__}: {error}"})
                continue
            described.append(
                {
                    "name": world.name,
                    "version": world.version,
                    "description": world.description,
                    "fixtures": [
                        {"name": f.name, "description": f.description, "epoch": str(f.epoch), "seed": f.seed}
                        for f in world.fixtures.values()
                    ],
                    "tables": list(world.tables),
                    "tools": [{"name": t.name, "writes": t.writes} for t in world.tools.values()],
                }
            )
        return described
