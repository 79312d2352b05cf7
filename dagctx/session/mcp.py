"""Session verbs for MCP servers: connect, call, refresh, disconnect.

:class:`MCPVerbs` is mixed into :class:`~dagctx.session.Session`. Each server has a name
in the session, an :class:`~dagctx.nodes.mcp.MCPServerNode` in the graph, and, while
connected, an :class:`~dagctx.mcp.client.MCPConnection` on the session's background loop.
The async verbs can be awaited from any event loop: the MCP work runs on the background
loop and the node changes are made by the awaiting caller. What the server does on its
own (a changed tool list, dying) is queued and applied at the next tick. Every async verb
has a blocking twin with a ``_sync`` suffix for plain synchronous code (the session's
twin rule, see :mod:`dagctx.session`).

The servers and their connections are the session's
:class:`~dagctx.session.parts.mcp.MCPClients` part, ``self._mcp``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dagctx._validate import is_number
from dagctx.errors import (
    ArgumentError,
    MCPClientError,
    MCPStateError,
    MCPToolNotFoundError,
    PathError,
)
from dagctx.mcp import DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import NodeState
from dagctx.nodes.mcp import MCPServerNode
from dagctx.session.core import SessionCore

if TYPE_CHECKING:
    from pathlib import Path

    from dagctx.graph import NodeRef
    from dagctx.mcp.client import CallResult

_TITLE_ARGS = 60


class MCPVerbs(SessionCore):
    """MCP client verbs of :class:`~dagctx.session.Session`."""

    # -- registry ---------------------------------------------------------------------

    def mcp_server(self, name: str) -> MCPServerNode:
        """The node of the MCP server called ``name``. Raises MCPServerNotFoundError if
        unknown."""
        return self._mcp.entry(name).node

    def mcp_servers(self) -> list[MCPServerNode]:
        """The nodes of every MCP server of the session, in connection order."""
        return [entry.node for entry in self._mcp.all()]

    def _mcp_node_named(self, name: str) -> MCPServerNode | None:
        """The graph's server node called ``name`` (one connected before, or one loaded
        from a saved session), so that connecting again reuses it."""
        for node in self.graph:
            if isinstance(node, MCPServerNode) and node.name == name:
                return node
        return None

    # -- connect ----------------------------------------------------------------------

    async def mcp_connect(
        self,
        name: str,
        command: Sequence[str] | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_CONNECT_TIMEOUT,
        state: NodeState | str | None = None,
        priority: int | None = None,
        parent: NodeRef | None = None,
    ) -> MCPServerNode:
        """Connect to an MCP server and show it as an :class:`MCPServerNode` whose children
        are its tools; return the node.

        Give ``command`` (argv of a stdio server, started in ``cwd``, default the session
        root, with ``env`` added to a minimal inherited environment) or ``url`` (a
        streamable HTTP endpoint). A server that fails to start or to answer within
        ``timeout`` seconds does not raise: the node shows status ``error``, the reason
        and the server's stderr tail. Connecting again a server whose node is in the
        graph (status ``error`` or ``disconnected``, or loaded from a saved session)
        reuses that node; ``state``, ``priority`` and ``parent`` then apply to new
        nodes only.

        Raises:
            ArgumentError: a bad name, target, environment or timeout; PathError: ``cwd``
                is not a directory; MCPStateError: a server of that name is connected
                already (nothing changes).
            NodeNotFoundError: ``parent`` is not in the graph.
        """
        from dagctx.mcp.client import MCPConnection  # the SDK loads here

        self._check_open()
        argv, env_map, workdir = _check_connect(self.root, name, command, url, env, cwd, timeout)
        entry = self._mcp.get(name)
        if entry is not None and entry.connection is not None:
            raise MCPStateError(
                f"MCP server {name!r} is connected already; disconnect it first "
                f"(`await session.mcp_disconnect({name!r})`)",
                server=name,
                status=entry.node.status,
            )
        if parent is not None:
            self.graph.get(parent)
        env_keys = sorted(env_map)
        node = self._mcp_node_named(name)
        if node is not None:
            node.retarget(command=argv, url=url, env_keys=env_keys, cwd=workdir)
            node.set_status("connecting")
        else:
            node = MCPServerNode(
                name, command=argv, url=url, env_keys=env_keys, cwd=workdir,
                state=state, priority=priority,
            )  # fmt: skip
            self.add(node, parent=parent)
        entry = self._mcp.adopt(name, node)
        connection = MCPConnection(
            name, command=argv, url=url, env=env_map, cwd=workdir, connect_timeout=timeout
        )
        self._mcp.attach(name, entry, connection)
        try:
            tools = await self._mcp.on_loop(connection.start())
        except MCPClientError as exc:
            entry.connection = None
            node.set_status("error", error=str(exc), stderr_tail=exc.stderr_tail)
            node.sync_tools([])
            return node
        except BaseException:
            entry.connection = None
            node.set_status("disconnected", error="connecting was cancelled")
            raise
        node.set_status("connected", info=connection.info)
        node.sync_tools(tools)
        return node

    def mcp_connect_sync(self, name: str, command: Sequence[str] | None = None,
                         **options: Any) -> MCPServerNode:  # fmt: skip
        """Blocking twin of :meth:`mcp_connect` (not from inside the session's loop)."""
        return self.background.run(self.mcp_connect(name, command, **options))

    # -- call -------------------------------------------------------------------------

    async def mcp_call(
        self,
        server: str,
        tool: str,
        /,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        **args: Any,
    ) -> CallResult:
        """Call ``tool`` of ``server`` with ``arguments`` and keyword ``args`` (merged; use
        ``arguments`` for a parameter called ``arguments`` or ``timeout``). The result is
        recorded as an :class:`ArtifactNode` (a new root; kind ``output``, or ``error``
        when the tool reported an error) and returned with it as ``result.artifact``.

        Raises:
            MCPServerNotFoundError: unknown server; MCPStateError: server not
                connected; MCPToolNotFoundError: unknown tool; ArgumentError: bad
                arguments (nothing changes).
            MCPClientError: the call timed out or failed at the protocol level.
        """
        self._check_open()
        entry = self._mcp.entry(server)
        connection = entry.connection
        if connection is None or entry.node.status != "connected":
            raise MCPStateError(
                f"MCP server {server!r} is not connected (status: {entry.node.status})",
                server=server,
                status=entry.node.status,
            )
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ArgumentError(
                f"arguments must be a mapping, got {arguments!r}", name="arguments", value=arguments
            )
        merged = {**(arguments or {}), **args}
        names = [spec.name for spec in connection.tools]
        if tool not in names:
            raise MCPToolNotFoundError(
                f"MCP server {server!r} has no tool {tool!r}; its tools: {', '.join(names)}",
                server=server,
                tool=tool,
            )
        _check_timeout(timeout)
        result = await self._mcp.on_loop(connection.call(tool, merged, timeout))
        artifact = ArtifactNode(
            result.text,
            kind="error" if result.is_error else "output",
            language=_language(result),
            title=_call_title(server, tool, merged),
        )
        self.add(artifact)
        return replace(result, artifact=artifact)

    def mcp_call_sync(
        self, server: str, tool: str, /, arguments: Mapping[str, Any] | None = None, **args: Any
    ) -> CallResult:
        """Blocking twin of :meth:`mcp_call`."""
        return self.background.run(self.mcp_call(server, tool, arguments, **args))

    # -- tool list --------------------------------------------------------------------

    async def mcp_refresh(self, name: str) -> list[str]:
        """Fetch the server's tool list now and update the tool children; return one
        description per added, updated or removed tool.

        Raises:
            MCPServerNotFoundError / MCPStateError: unknown or unconnected server;
            MCPClientError: the listing failed.
        """
        self._check_open()
        entry = self._mcp.entry(name)
        connection = entry.connection
        if connection is None:
            raise MCPStateError(
                f"MCP server {name!r} is not connected (status: {entry.node.status})",
                server=name,
                status=entry.node.status,
            )
        seq, tools = await self._mcp.on_loop(connection.list_tools())
        return self._mcp.apply_tools(name, connection, seq, tools)

    def mcp_refresh_sync(self, name: str) -> list[str]:
        """Blocking twin of :meth:`mcp_refresh`."""
        return self.background.run(self.mcp_refresh(name))

    # -- disconnect -------------------------------------------------------------------

    async def mcp_disconnect(self, name: str) -> MCPServerNode:
        """Close the session with the server, stop it, and remove its tool children; the
        node stays, in status ``disconnected``. Idempotent; return the node.

        Raises:
            MCPServerNotFoundError: no server of that name.
        """
        self._check_open()
        entry = self._mcp.entry(name)
        connection, entry.connection = entry.connection, None
        if connection is not None:
            await self._mcp.on_loop(connection.close())
        entry.node.set_status("disconnected")
        entry.node.sync_tools([])
        return entry.node

    def mcp_disconnect_sync(self, name: str) -> MCPServerNode:
        """Blocking twin of :meth:`mcp_disconnect`."""
        return self.background.run(self.mcp_disconnect(name))


def _check_connect(
    root: Path,
    name: object,
    command: object,
    url: object,
    env: object,
    cwd: str | os.PathLike[str] | None,
    timeout: object,
) -> tuple[list[str] | None, dict[str, str], str | None]:
    """Validate mcp_connect's arguments; return (argv, env, working directory)."""
    if not isinstance(name, str) or not name.strip():
        raise ArgumentError(
            f"an MCP server needs a non-empty name, got {name!r}", name="name", value=name
        )
    if (command is None) == (url is None):
        raise ArgumentError(
            "give either command=[...] (stdio) or url=... (streamable HTTP)",
            name="command",
            value=command,
        )
    argv: list[str] | None = None
    if command is not None:
        if isinstance(command, str | bytes) or not isinstance(command, Sequence):
            raise ArgumentError(
                f"command must be a list of strings (argv), got {command!r}",
                name="command",
                value=command,
            )
        argv = list(command)
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise ArgumentError(
                f"command must be a non-empty list of strings, got {command!r}",
                name="command",
                value=command,
            )
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        raise ArgumentError(
            f"url must be an http:// or https:// URL, got {url!r}", name="url", value=url
        )
    if env is None:
        env = {}
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise ArgumentError(f"env must map strings to strings, got {env!r}", name="env", value=env)
    _check_timeout(timeout)
    workdir: str | None = None
    if argv is not None:
        workdir = str(root) if cwd is None else os.fspath(cwd)
        if not os.path.isdir(workdir):
            raise PathError(f"cwd {workdir!r} is not a directory", path=workdir)
    elif cwd is not None:
        raise ArgumentError(
            "cwd only applies to a stdio server (command=[...])", name="cwd", value=cwd
        )
    return argv, dict(env), workdir


def _check_timeout(timeout: object) -> None:
    if not is_number(timeout) or not timeout > 0:
        raise ArgumentError(
            f"timeout must be a positive number of seconds, got {timeout!r}",
            name="timeout",
            value=timeout,
        )


def _call_title(server: str, tool: str, arguments: Mapping[str, Any]) -> str:
    shown = json.dumps(arguments, sort_keys=True, default=str)
    if len(shown) > _TITLE_ARGS:
        shown = shown[: _TITLE_ARGS - 1] + "…"
    return f"{server}.{tool} {shown}"


def _language(result: CallResult) -> str | None:
    """``json`` when the artifact text is the structured content rendered as JSON."""
    return "json" if not result.raw.content and result.structured is not None else None
