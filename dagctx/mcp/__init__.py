"""MCP for dagctx: the client side (servers and their tools as nodes) lives here.

:mod:`dagctx.mcp.client` runs MCP client sessions on a session's background loop;
:mod:`dagctx.session.mcp` gives :class:`~dagctx.session.Session` its ``mcp_*`` verbs. The
node types are :class:`~dagctx.nodes.mcp.MCPServerNode` and
:class:`~dagctx.nodes.mcp.MCPToolNode`.

:mod:`dagctx.mcp.server` is the other side, ``dagctx mcp``: a session served over MCP
(it sits on top of everything: the session, the tools, the knowledge stores), with
:mod:`dagctx.mcp.arguments` (tool schemas and string arguments as clients handle them).
The client side must not import the session.

The MCP SDK takes about half a second to import, so nothing here imports it until an MCP
name is used: ``import dagctx`` stays fast for sessions that never speak MCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagctx.errors import MCPClientError

#: Seconds a server gets to start, shake hands and list its tools.
DEFAULT_CONNECT_TIMEOUT = 15.0
#: Seconds a tool call (or a tool listing) may take.
DEFAULT_CALL_TIMEOUT = 60.0
#: Upper bound on the SDK's stdio shutdown (stdin closed, SIGTERM, SIGKILL, reap).
SHUTDOWN_TIMEOUT = 10.0

if TYPE_CHECKING:
    from dagctx.mcp.client import CallResult, MCPConnection

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "SHUTDOWN_TIMEOUT",
    "CallResult",
    "MCPClientError",
    "MCPConnection",
]


def __getattr__(name: str) -> Any:
    if name in ("CallResult", "MCPConnection"):
        from dagctx.mcp import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
