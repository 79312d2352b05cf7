"""A session's MCP servers: each name's node and, while connected, its live connection.

:class:`MCPClients` keeps the servers in connection order. A connection
(:class:`~dagctx.mcp.client.MCPConnection`) lives on the
:class:`~.runner.BackgroundRunner`; what the server does on its own (a changed tool list,
going away) reaches the node through the :class:`~.intake.Intake`, applied at the next
tick, and is ignored if that connection was replaced meanwhile. :meth:`MCPClients.close`
stops every connected server.

The verbs (connect, call, refresh, disconnect) are in :mod:`dagctx.session.mcp`. Must not
import the rest of :mod:`dagctx.session` except its sibling parts; the MCP SDK is only
imported by :mod:`dagctx.mcp.client`, when a server is first connected.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from dagctx.errors import MCPServerNotFoundError
from dagctx.mcp import SHUTDOWN_TIMEOUT
from dagctx.nodes.mcp import MCPServerNode, ToolSpec
from dagctx.session.parts.intake import Intake
from dagctx.session.parts.runner import BackgroundRunner

if TYPE_CHECKING:
    from dagctx.mcp.client import MCPConnection

T = TypeVar("T")


@dataclass(slots=True)
class MCPServer:
    """A server known to the session: its node and, while connected, its connection."""

    node: MCPServerNode
    connection: MCPConnection | None = None
    applied_seq: int = 0


class MCPClients:
    """The MCP servers of one session, by name, in connection order."""

    def __init__(self, runner: BackgroundRunner, intake: Intake) -> None:
        self._runner = runner
        self._intake = intake
        self._servers: dict[str, MCPServer] = {}

    def get(self, name: str) -> MCPServer | None:
        """The server called ``name``, or None."""
        return self._servers.get(name)

    def entry(self, name: str) -> MCPServer:
        """The server called ``name``.

        Raises:
            MCPServerNotFoundError: no server of that name (the message lists the known
                ones).
        """
        entry = self._servers.get(name)
        if entry is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise MCPServerNotFoundError(
                f"no MCP server named {name!r}; known servers: {known}", name=name
            )
        return entry

    def all(self) -> list[MCPServer]:
        """Every server, in connection order."""
        return list(self._servers.values())

    def adopt(self, name: str, node: MCPServerNode) -> MCPServer:
        """The entry of ``name`` showing ``node`` (a new entry if it showed another)."""
        entry = self._servers.get(name)
        if entry is None or entry.node is not node:
            entry = self._servers[name] = MCPServer(node)
        return entry

    def attach(self, name: str, entry: MCPServer, connection: MCPConnection) -> None:
        """Make ``connection`` the live connection of ``entry``, whose tool-list changes
        and loss are queued to the intake."""
        connection.on_tools = partial(self._queue_tools, name, connection)
        connection.on_lost = partial(self._queue_lost, name, connection)
        entry.connection, entry.applied_seq = connection, 0

    async def on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and await it from the caller's loop."""
        if self._runner.in_loop_thread():
            return await coro
        return await asyncio.wrap_future(self._runner.submit(coro))

    def apply_tools(
        self, name: str, connection: MCPConnection, seq: int, tools: list[ToolSpec]
    ) -> list[str]:
        """Show the tool list number ``seq`` of ``connection``; return one description
        per changed tool. A list older than one applied already, or from a connection
        that was replaced, changes nothing."""
        entry = self._servers.get(name)
        if entry is None or entry.connection is not connection or seq <= entry.applied_seq:
            return []
        entry.applied_seq = seq
        return entry.node.sync_tools(tools)

    def _queue_tools(
        self, name: str, connection: MCPConnection, seq: int, tools: list[ToolSpec]
    ) -> None:
        # Called on the background loop after a tools/list_changed notification.
        def apply() -> None:
            self.apply_tools(name, connection, seq, tools)

        self._intake.put(apply)

    def _queue_lost(self, name: str, connection: MCPConnection, message: str,
                    stderr_tail: str) -> None:  # fmt: skip
        # Called on the background loop when the server went away on its own.
        def apply() -> None:
            entry = self._servers.get(name)
            if entry is None or entry.connection is not connection:
                return
            entry.connection = None
            entry.node.set_status("error", error=message, stderr_tail=stderr_tail)
            entry.node.sync_tools([])

        self._intake.put(apply)

    def close(self) -> None:
        """Stop every connected server (nodes are left as they are). Idempotent."""
        connections = []
        for entry in self._servers.values():
            if entry.connection is not None:
                connections.append(entry.connection)
                entry.connection = None
        if not connections or not self._runner.started or self._runner.in_loop_thread():
            return  # ending the loop cancels the connection tasks

        async def close_all() -> None:
            await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

        # Closing goes on whatever happens here: ending the loop cancels leftovers.
        with contextlib.suppress(Exception):
            self._runner.run(close_all(), timeout=SHUTDOWN_TIMEOUT + 5)
