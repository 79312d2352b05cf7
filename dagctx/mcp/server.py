"""The MCP server side: serve a `Session` over stdio with the SDK's low-level `Server`.

A client of ``dagctx mcp [PATH]`` gets:

- **tools**: the seven context tools (the todo list in ``session.context``; files and
  knowledge read through a layer over it, see `bind_context_tools`) and the ten graph
  tools (``set_focus`` among them), bound to the session. Each MCP input schema is the tool's own
  `Tool.parameters`, from the same generator as the OpenAI schema, and arguments are
  validated by `Tool.execute`; a model's mistake comes back as the tool's message.
- **resources**: ``dagctx://projection``, the budgeted prompt (reading it runs one tick:
  finished shell results and file changes are applied and the turn advances), and
  ``dagctx://explain``, the token table of the current projection (no tick).

The session is not thread-safe and its verbs block (a tick, the projection of a large
graph, ``run_shell``'s short wait), so each request runs in a worker thread, one request
at a time; the event loop stays free to read and answer meanwhile.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import Callable
from functools import partial
from importlib import metadata
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from dagctx.context import Context, ContextState
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.session import Session
from dagctx.tokens import DEFAULT_ENCODING
from dagctx.tools import Tool, get_context_tools, get_graph_tools, get_planning_tools
from dagctx.tools.files import WORKING_DIR_KEY
from dagctx.tools.knowledge import KNOWLEDGE_STORE_KEY, WORKSPACE_KEY

__all__ = [
    "EXPLAIN_URI",
    "PROJECTION_URI",
    "SessionServer",
    "bind_context_tools",
    "reading_context",
    "run_stdio",
    "serve_stdio",
]

PROJECTION_URI = "dagctx://projection"
EXPLAIN_URI = "dagctx://explain"
SERVER_NAME = "dagctx"
TASK_ID = "dagctx-mcp"
"""Task id of the server's reading `Context` and `Workspace`."""

logger = logging.getLogger(__name__)
T = TypeVar("T")


def reading_context(session: Session) -> Context:
    """The `Context` that ``read_file`` and the knowledge tools act on.

    Its state is a layer over ``session.context.state``: it reads everything the session's
    context holds and adds, where the chain has none, ``working_dir`` (the session root),
    an in-memory `Workspace` and its `KnowledgeStore`. Those objects stay out of the
    session's own state, which is saved as JSON with the session.
    """
    layer = ContextState(parent=session.context.state)
    store = layer.get(KNOWLEDGE_STORE_KEY)
    if store is None:
        store = KnowledgeStore()
        layer.set(KNOWLEDGE_STORE_KEY, store)
    if WORKSPACE_KEY not in layer:
        layer.set(WORKSPACE_KEY, Workspace(TASK_ID, knowledge_store=store))
    if WORKING_DIR_KEY not in layer:
        layer.set(WORKING_DIR_KEY, str(session.root))
    return Context(TASK_ID, state=layer)


def bind_context_tools(session: Session) -> list[Tool[Any]]:
    """The seven context tools, in the seed's order, bound for serving `session`.

    The planning tools act on ``session.context``, so the todo list lives (and is saved)
    with the session; ``read_file`` and the knowledge tools act on `reading_context`.
    """
    planning, reading = session.context, reading_context(session)
    planning_names = {tool.name for tool in get_planning_tools()}
    return [
        tool.bind(planning if tool.name in planning_names else reading)
        for tool in get_context_tools()
    ]


class SessionServer:
    """The tools and resources of one served session, independent of the transport.

    Args:
        session: the session the tools (see `bind_context_tools`) and resources act on.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        tools = bind_context_tools(session)
        tools += [tool.bind(session) for tool in get_graph_tools()]
        self.tools: dict[str, Tool[Any]] = {tool.name: tool for tool in tools}
        self._lock = anyio.Lock()

    # -- what the server offers -------------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        """Every tool as an MCP tool definition (schemas are copies of `Tool.parameters`)."""
        return [
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=copy.deepcopy(tool.parameters),
            )
            for tool in self.tools.values()
        ]

    @staticmethod
    def list_resources() -> list[types.Resource]:
        """The projection and explain resources."""
        return [
            types.Resource(
                uri=PROJECTION_URI,
                name="projection",
                title="Budgeted context",
                description="The session's prompt within its token budget; reading it runs"
                " one tick (applies finished commands and file changes).",
                mime_type="text/markdown",
            ),
            types.Resource(
                uri=EXPLAIN_URI,
                name="explain",
                title="Where the tokens went",
                description="Per node: requested and rendered state, tokens, and why a node"
                " was degraded or left out.",
                mime_type="text/plain",
            ),
        ]

    # -- answering requests -----------------------------------------------------------

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run a tool; its text (result or message for the model) is the content.

        An unexpected failure inside a tool is logged and returned with ``is_error``.

        Raises:
            MCPError: no tool has that name (an MCP ``INVALID_PARAMS`` error).
        """
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}; tools: {known}")
        try:
            text = await self._exclusive(partial(_execute, tool, dict(arguments or {})))
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return types.CallToolResult(
                content=[types.TextContent(text=f"{name} failed unexpectedly: {exc!r}")],
                is_error=True,
            )
        return types.CallToolResult(content=[types.TextContent(text=text)])

    async def read_resource(self, uri: str) -> str:
        """The text of a resource (see the module docstring).

        Raises:
            MCPError: unknown URI (an MCP ``INVALID_PARAMS`` error).
        """
        reader: Callable[[], str]
        if uri == PROJECTION_URI:
            reader = self._projection_text
        elif uri == EXPLAIN_URI:
            reader = self._explain_text
        else:
            known = f"{PROJECTION_URI}, {EXPLAIN_URI}"
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; resources: {known}")
        return await self._exclusive(reader)

    def _projection_text(self) -> str:
        return self.session.tick().projection.text

    def _explain_text(self) -> str:
        return self.session.project().explain()

    async def _exclusive(self, work: Callable[[], T]) -> T:
        """Run blocking `work` in a worker thread, never two at a time."""
        async with self._lock:
            return await anyio.to_thread.run_sync(work)

    # -- the SDK server ---------------------------------------------------------------

    def build(self) -> Server[Any]:
        """A low-level MCP `Server` answering tools and resources requests."""

        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.list_tools())

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await self.call_tool(params.name, params.arguments)

        async def on_list_resources(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=self.list_resources())

        async def on_read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            uri = str(params.uri)
            text = await self.read_resource(uri)
            mime = next(r.mime_type for r in self.list_resources() if r.uri == uri)
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
            )

        return Server(
            SERVER_NAME,
            version=_version(),
            instructions=(
                f"dagctx keeps this agent's context for {self.session.root} as a DAG of nodes"
                f" and renders it within {self.session.budget} tokens. Read"
                f" {PROJECTION_URI} for the current prompt; steer it with open_file,"
                " set_focus, set_node_state, hide_node, run_shell, checkpoint/restore and"
                " set_budget."
            ),
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_list_resources=on_list_resources,
            on_read_resource=on_read_resource,
        )


def _execute(tool: Tool[Any], arguments: dict[str, Any]) -> str:
    """Run a tool to completion on a private event loop (called in a worker thread)."""
    return asyncio.run(tool.execute(**arguments))


def _version() -> str:
    try:
        return metadata.version("dagctx")
    except metadata.PackageNotFoundError:
        return "0"


async def serve_stdio(session: Session) -> None:
    """Serve `session` over this process's stdin/stdout until the client disconnects."""
    server = SessionServer(session).build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(
    path: str | os.PathLike[str] = ".",
    *,
    budget: int = 8000,
    encoding: str = DEFAULT_ENCODING,
    include_secrets: bool = False,
) -> None:
    """Open a session on `path` and serve it over stdio until the client disconnects; the
    session (and every command it still runs) is closed afterwards. ``include_secrets``
    as for :class:`~dagctx.session.Session`.

    Raises:
        BudgetError, EncodingError, PathError: bad budget, encoding or path (raised
            before anything is served).
    """
    with Session(
        path, budget=budget, encoding=encoding, include_secrets=include_secrets
    ) as session:
        anyio.run(serve_stdio, session)
