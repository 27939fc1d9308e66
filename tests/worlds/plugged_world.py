"""A world an installed package would offer through the `atoll.worlds` entry point group."""

from atoll.worlds import World

world = World("plugged", schema="CREATE TABLE notes (id TEXT PRIMARY KEY);")
world.fixture("empty", epoch="2026-01-01 00:00:00")(lambda fx: None)
