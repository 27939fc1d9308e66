"""Fixtures for the server tests: the shop world and OpenEnv's clients (real servers: tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))

from shop_world import shop as _shop

WORLDS_DIR = Path(__file__).parents[1] / "worlds"


@pytest.fixture(scope="session")
def shop():
    """The two-table shop world of the engine tests (fixture `tiny`)."""
    return _shop


@pytest.fixture(scope="session")
def openenv():
    """OpenEnv's (GenericEnvClient, MCPToolClient), or a skip that says how to install them."""
    return openenv_clients()


def openenv_clients():
    """OpenEnv's GenericEnvClient and MCPToolClient, or a skip saying how to install them.

    openenv 0.10's package `__init__` imports its server half, which imports fastmcp at module
    level; fastmcp pins mcp<2, which clashes with the mcp 2.x this project serves with. The client
    half never calls fastmcp, so when fastmcp is absent a placeholder module lets the real client
    code import (the placeholder is never used).
    """
    if importlib.util.find_spec("openenv") is None:
        pytest.skip("openenv is not installed: pip install --no-deps openenv==0.10.0 (and websockets)")
    if importlib.util.find_spec("fastmcp") is None and "fastmcp" not in sys.modules:
        package, client, client_module = (
            types.ModuleType(n) for n in ("fastmcp", "fastmcp.client", "fastmcp.client.client")
        )
        package.Client = client_module.CallToolResult = object
        sys.modules.update(
            {"fastmcp": package, "fastmcp.client": client, "fastmcp.client.client": client_module}
        )
    from openenv.core.generic_client import GenericEnvClient
    from openenv.core.mcp_client import MCPToolClient

    return GenericEnvClient, MCPToolClient
