"""Serving worlds to other programs: an MCP server, an OpenEnv-compatible server, a REST face (a world's
HTTP operations under /rest/, docs/rest.md) and a web console.

Every client gets a private instance (one per MCP session, one per OpenEnv WebSocket), the
number alive at once is bounded, and idle ones are closed. See docs/serving.md.
"""

from ._auth import Guard, check_bind, check_token, is_loopback
from ._catalog import WorldCatalog
from ._http import check_port, connection_limits, guarded_protocol
from ._mcp import create_mcp_http_app, create_mcp_server, run_mcp
from ._openenv import create_app, run_server
from ._rest import OpenRequest, RestInstances, rest_router
from ._sessions import (
    InstanceFull,
    NoInstance,
    ResetRequest,
    Session,
    SessionLimitReached,
    SessionManager,
    UnknownSession,
)

__all__ = [
    "Guard",
    "InstanceFull",
    "NoInstance",
    "OpenRequest",
    "ResetRequest",
    "RestInstances",
    "Session",
    "SessionLimitReached",
    "SessionManager",
    "UnknownSession",
    "WorldCatalog",
    "check_bind",
    "check_port",
    "check_token",
    "connection_limits",
    "create_app",
    "create_mcp_http_app",
    "create_mcp_server",
    "guarded_protocol",
    "is_loopback",
    "rest_router",
    "run_mcp",
    "run_server",
]
