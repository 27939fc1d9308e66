"""Suite-wide guards (a private cache directory, no real model calls, reproducible property tests) and
real servers on free loopback ports."""

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import uvicorn
from hypothesis import settings

# Property tests draw the same examples on every run and machine, so a red CI run reproduces
# locally; the deadline leaves room for a loaded two-core runner.
settings.register_profile("atoll", derandomize=True, database=None, deadline=timedelta(seconds=2))
settings.load_profile("atoll")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ATOLL_CACHE_DIR"] = str(tmp_path_factory.mktemp("atoll-cache"))
    os.environ["ATOLL_NO_NETWORK_MODELS"] = "1"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches prices at import


@pytest.fixture
def forget_new_modules():
    """Unimport every module a test imported (a world package from its tmp folder), so the next test's
    package of the same name is imported afresh from its own folder."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.fixture(scope="session")
def serve():
    """`with serve(app) as url:` runs an ASGI app on a free 127.0.0.1 port."""
    return running


@pytest.fixture(scope="session")
def mcp_session():
    """`mcp_session(post, url)` opens an MCP session over streamable HTTP at `url` (initialize, then
    initialized) with `post` (httpx.post or a client's); returns the headers its requests carry."""
    return open_mcp_session


MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def open_mcp_session(post, url: str) -> dict[str, str]:
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    opened = post(url, json=hello, headers=MCP_HEADERS)
    session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
    post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    return session


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running(app, **config) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 in a thread; yield its base URL; stop it afterwards."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
