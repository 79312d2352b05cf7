"""The MCP server side: serve a `Session` over stdio with the SDK's low-level `Server`.

A client of ``dagctx mcp [PATH]`` gets:

- **tools**: ``get_context``, the budgeted prompt as a tool result (for the clients
  that do not read resources; its ``focus`` argument sets the focus first), the seven
  context tools (the todo list in ``session.context``; files and knowledge read through
  a layer over it, see `bind_context_tools`), ``add_knowledge`` (a note or a project
  file into that layer's workspace) and the eleven graph tools (``set_focus`` among them),
  bound to the session, each with a title and the MCP annotations saying what it does
  to the world (`TOOL_HINTS`). Each MCP input schema is the
  tool's own `Tool.parameters` as `dagctx.mcp.arguments.client_schema` publishes it (no
  null unions), arguments in string form are read by `~dagctx.mcp.arguments.coerce_arguments`
  and validated by `Tool.execute`. A call the tool did not carry out (a
  `~dagctx.tools.base.Refusal`: invalid arguments, a refused path, an unknown node, a
  command that timed out) comes back with ``isError: true`` and the tool's message.
- **resources**: ``dagctx://projection``, the budgeted prompt (reading it runs one tick:
  finished shell results and file changes are applied and the turn advances), and
  ``dagctx://explain``, where the tokens went in the projection a read would give now
  (no tick), as a text table and as JSON (`explain_data`). A client may subscribe to either
  (``resources/subscribe``): it gets ``notifications/resources/updated`` whenever the
  projection text changed after a tick of the file watcher or a tool call (not after
  its own read). No resource templates (``resources/templates/list`` answers an empty
  list, for the clients that ask).
- **changes since the client's last look**: the projection a client gets (the resource,
  ``get_context``) lists in its changes section what changed since the last projection
  a client got, not only since the last tick: the file watcher's ticks in between (each
  batch of file changes is one) are not the client's turns, so an edit, a file created
  or deleted, and on a resumed session what changed while nobody watched, are listed
  at the client's next read (`SessionServer.client_view`; at most `READER_TRACES`
  changes kept for it).
- **following the tree** (`SessionServer.follow`): with ``follow=True`` (what ``dagctx
  mcp`` does) the tree is scanned (or re-surveyed, for a resumed session) before the
  first request touches the session, and watched with watchfiles while the server runs:
  each batch of file changes is one tick. The repository's own docs (`DOC_FILES`: the
  README and the Markdown, reStructuredText and text files under ``docs/``) are added
  to the knowledge workspace after the scan, under their relative paths, and added
  again when they change, so the knowledge tools find them from the start. They are
  read as ``read_file`` reads, so secrets in them are redacted (once per change) unless
  the session includes secrets.

``dagctx mcp`` answers ``initialize`` before the session exists
(`serve_stdio_while_opening`): the session is opened (resumed or started) in a worker
thread while the server already answers, and each request waits until the session is open
and its first scan holds it. For that, this module imports the SDK and nothing heavy of
dagctx: the session, the tools and the knowledge stores are imported where they are used.

The session is not thread-safe and its verbs block (a tick, the projection of a large
graph, ``run_shell``'s short wait), so each request and each tick of the watcher runs in
a worker thread, one at a time; the event loop stays free to read and answer meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from dagctx.mcp.arguments import client_schema, coerce_arguments
from dagctx.tokens import DEFAULT_ENCODING

__all__ = [
    "EXPLAIN_URI",
    "PROJECTION_URI",
    "READ_LIMIT",
    "TOOL_HINTS",
    "SessionServer",
    "ToolHints",
    "bind_context_tools",
    "explain_data",
    "get_context",
    "reading_context",
    "run_stdio",
    "serve_stdio",
    "serve_stdio_while_opening",
]

if TYPE_CHECKING:
    from dagctx.context import Context
    from dagctx.projection import Projection
    from dagctx.session import Session, TickResult
    from dagctx.tools import Tool
    from dagctx.watch.steering import Steering
    from dagctx.watch.tracker import TreeTracker

PROJECTION_URI = "dagctx://projection"
EXPLAIN_URI = "dagctx://explain"
SERVER_NAME = "dagctx"
TASK_ID = "dagctx-mcp"
"""Task id of the server's reading `Context` and `Workspace`."""

READ_LIMIT = 50_000
"""The most characters one ``read_file`` call returns (about 12k tokens of code, under
25k of the densest text, a lockfile's hashes): a longer file comes back in parts."""

READER_TRACES = 2000
"""Changes kept for the client between two of its reads (more than any changes section
shows): a client that never reads does not make the session keep every change."""

DOC_FILES = (
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "docs/**/*.md",
    "docs/**/*.rst",
    "docs/**/*.txt",
)
"""The repository's docs ``dagctx mcp`` makes searchable (globs relative to the root)."""
_MAX_DOCS = 500
_DOC_SUFFIXES = frozenset({".md", ".rst", ".txt"})


class ToolHints(NamedTuple):
    """What a client may show and assume of a tool (MCP's ``title`` and annotations)."""

    title: str
    #: Changes nothing: not the session, not the disk.
    read_only: bool = False
    #: May replace or delete what was there (a checkpoint of that name, any file).
    destructive: bool = False
    #: Calling it again with the same arguments changes nothing more.
    idempotent: bool = False
    #: Reaches beyond the session and its tree (a command may do anything).
    open_world: bool = False


TOOL_HINTS: dict[str, ToolHints] = {
    "get_context": ToolHints("Get the budgeted context", idempotent=True),
    "add_todo": ToolHints("Add a todo"),
    "complete_todo": ToolHints("Complete a todo", idempotent=True),
    "get_todo": ToolHints("Show the todo list", read_only=True),
    "get_knowledge": ToolHints("Get a knowledge artifact", read_only=True),
    "grep_knowledge": ToolHints("Grep a knowledge artifact", read_only=True),
    "search_knowledge": ToolHints("Search knowledge", read_only=True),
    "read_file": ToolHints("Read a file", read_only=True),
    "add_knowledge": ToolHints("Add knowledge"),
    "list_nodes": ToolHints("List the context's nodes", read_only=True),
    "open_file": ToolHints("Open a file in the context", idempotent=True),
    "set_node_state": ToolHints("Set a node's detail", idempotent=True),
    "hide_node": ToolHints("Hide a node", idempotent=True),
    "run_shell": ToolHints("Run a command", destructive=True, open_world=True),
    "shell_output": ToolHints("Get a command's output", read_only=True),
    "checkpoint": ToolHints("Save a checkpoint", destructive=True, idempotent=True),
    "restore": ToolHints("Restore a checkpoint", destructive=True, idempotent=True),
    "set_budget": ToolHints("Set the token budget", idempotent=True),
    "set_focus": ToolHints("Set the focus", idempotent=True),
    "show_projection_stats": ToolHints("Show where the tokens go", read_only=True),
}
"""The title and annotations of each tool ``dagctx mcp`` serves. Tools that change only
what the projection shows (the focus, a node's state, the budget, the todo list) are
neither read-only nor destructive; ``checkpoint`` and ``restore`` replace what was there."""

_DISK_ONLY = frozenset({"read_file"})
"""Tools that read only the disk and the reading context's settings, fixed at start:
they run without holding the session."""

logger = logging.getLogger(__name__)
T = TypeVar("T")


def reading_context(session: Session) -> Context:
    """The `Context` that ``read_file`` and the knowledge tools act on.

    Its state is a layer over ``session.context.state``: it reads everything the session's
    context holds and adds, where the chain has none, ``working_dir`` (the session root),
    ``read_limit`` (`READ_LIMIT`), an in-memory `Workspace` and its `KnowledgeStore`, and
    ``include_secrets`` when the session includes secrets. Those objects stay out of the
    session's own state, which is saved as JSON with the session.
    """
    from dagctx.context import Context, ContextState
    from dagctx.knowledge import KnowledgeStore, Workspace
    from dagctx.tools.files import INCLUDE_SECRETS_KEY, READ_LIMIT_KEY, WORKING_DIR_KEY
    from dagctx.tools.knowledge import KNOWLEDGE_STORE_KEY, WORKSPACE_KEY

    layer = ContextState(parent=session.context.state)
    store = layer.get(KNOWLEDGE_STORE_KEY)
    if store is None:
        store = KnowledgeStore()
        layer.set(KNOWLEDGE_STORE_KEY, store)
    if WORKSPACE_KEY not in layer:
        layer.set(WORKSPACE_KEY, Workspace(TASK_ID, knowledge_store=store))
    if WORKING_DIR_KEY not in layer:
        layer.set(WORKING_DIR_KEY, str(session.root))
    if READ_LIMIT_KEY not in layer:
        layer.set(READ_LIMIT_KEY, READ_LIMIT)
    if session.include_secrets and INCLUDE_SECRETS_KEY not in layer:
        layer.set(INCLUDE_SECRETS_KEY, True)
    return Context(TASK_ID, state=layer)


def bind_context_tools(session: Session, reading: Context | None = None) -> list[Tool[Any]]:
    """The seven context tools, in the seed's order, bound for serving `session`.

    The planning tools act on ``session.context``, so the todo list lives (and is saved)
    with the session; ``read_file`` and the knowledge tools act on `reading` (default: a
    new `reading_context`).
    """
    from dagctx.tools import get_context_tools, get_planning_tools

    planning, reading = session.context, reading or reading_context(session)
    planning_names = {tool.name for tool in get_planning_tools()}
    return [
        tool.bind(planning if tool.name in planning_names else reading)
        for tool in get_context_tools()
    ]


def explain_data(projection: Projection) -> dict[str, Any]:
    """Where the tokens of `projection` went, as JSON: the totals, then one entry per
    section (node id, label, requested and rendered state, tokens, lines cut, why) and
    per node left out (node id, label, why)."""
    labels, reasons = projection.labels, projection.reasons
    return {
        "tokens": projection.tokens,
        "budget": projection.budget,
        "stable_prefix_tokens": projection.stable_prefix_tokens,
        "sections": [
            {
                "node_id": s.node_id,
                "label": labels.get(s.node_id, ""),
                "requested_state": s.requested_state.name,
                "rendered_state": s.rendered_state.name,
                "tokens": s.tokens,
                "cut_lines": s.cut_lines,
                "reference": s.reference,
                "why": reasons.get(s.node_id, ""),
            }
            for s in projection.sections
        ],
        "omitted": [
            {"node_id": n, "label": labels.get(n, ""), "why": reasons.get(n, "budget")}
            for n in projection.omitted
        ],
    }


class SessionServer:
    """The tools and resources of one served session, independent of the transport.

    Args:
        session: the session the tools (see `bind_context_tools`) and resources act on.
        after_tick: called (in the worker thread, with the session to itself) after each
            tick of `follow`, e.g. to save the session now and then.
    """

    def __init__(
        self, session: Session, *, after_tick: Callable[[TickResult], None] | None = None
    ) -> None:
        from dagctx.tools import get_graph_tools
        from dagctx.tools.base import ContextTool
        from dagctx.tools.graph import SessionTool
        from dagctx.tools.knowledge import add_knowledge

        self.session = session
        #: What ``read_file`` and the knowledge tools act on (see `reading_context`).
        self.reading = reading_context(session)
        tools: list[Tool[Any]] = [SessionTool(get_context).bind(session)]
        tools += bind_context_tools(session, self.reading)
        tools.append(ContextTool(add_knowledge).bind(self.reading))
        tools += [tool.bind(session) for tool in get_graph_tools()]
        self.tools: dict[str, Tool[Any]] = {tool.name: tool for tool in tools}
        self._after_tick = after_tick
        self._lock = anyio.Lock()
        #: Subscribed resource URI → the client connections to tell when it changed.
        self._subscribers: dict[str, set[ServerSession]] = {}
        #: The projection text the clients were last told about (or read themselves).
        self._seen: str | None = None
        #: Where the changes not yet shown to a client start (see `client_view`), and
        #: whether a tick that was not a client's came since it was placed.
        self._reader = session.graph.traces.cursor(limit=READER_TRACES)
        self._missed = False

    # -- what the server offers -------------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        """Every tool as an MCP tool definition (schemas: `client_schema` of
        `Tool.parameters`; title and annotations: `TOOL_HINTS`)."""
        return [_definition(tool) for tool in self.tools.values()]

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
                " was degraded or left out; a text table, then the same as JSON.",
                mime_type="text/plain",
            ),
        ]

    # -- answering requests -----------------------------------------------------------

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run a tool; its text (result or message for the model) is the content, with
        ``is_error`` when the tool refused the call (a `Refusal`). ``get_context`` gives
        the projection as a read of the resource does (`client_view`); after another tool
        the subscribers are told if the projection changed. Tools run one at a time,
        holding the session, except ``read_file`` (`_DISK_ONLY`), which changes nothing
        and does not wait for a command ``run_shell`` or ``shell_output`` waits on.

        An unexpected failure inside a tool is logged and returned with ``is_error``.

        Raises:
            MCPError: no tool has that name (an MCP ``INVALID_PARAMS`` error).
        """
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}; tools: {known}")
        from dagctx.tools.base import Refusal

        given = coerce_arguments(tool.parameters, arguments or {})
        work: Callable[[], str] = partial(_execute, tool, given)
        if name == "get_context":  # the projection, as the resource gives it
            work = partial(self._shown, work)
        try:
            if name in _DISK_ONLY:
                text = await anyio.to_thread.run_sync(work)
            else:
                text = await self._exclusive(work)
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return types.CallToolResult(
                content=[types.TextContent(text=f"{name} failed unexpectedly: {exc!r}")],
                is_error=True,
            )
        if not isinstance(text, Refusal) and name != "get_context" and name not in _DISK_ONLY:
            await self._notify_if_changed()  # (get_context was a read of the projection)
        return types.CallToolResult(
            content=[types.TextContent(text=str(text))], is_error=isinstance(text, Refusal)
        )

    async def read_resource(self, uri: str) -> list[types.TextResourceContents]:
        """The contents of a resource (see the module docstring).

        Raises:
            MCPError: unknown URI (an MCP ``INVALID_PARAMS`` error).
        """
        if uri == PROJECTION_URI:
            text = await self._exclusive(self._projection_text)
            return [types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        if uri == EXPLAIN_URI:
            projection = await self._exclusive(self._current)
            data = json.dumps(explain_data(projection), ensure_ascii=False)
            return [
                types.TextResourceContents(
                    uri=uri, mime_type="text/plain", text=projection.explain()
                ),
                types.TextResourceContents(uri=uri, mime_type="application/json", text=data),
            ]
        known = f"{PROJECTION_URI}, {EXPLAIN_URI}"
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; resources: {known}")

    def subscribe(self, uri: str, client: ServerSession) -> None:
        """Tell `client` when resource `uri` changed.

        Raises:
            MCPError: unknown URI (an MCP ``INVALID_PARAMS`` error).
        """
        if uri not in (PROJECTION_URI, EXPLAIN_URI):
            known = f"{PROJECTION_URI}, {EXPLAIN_URI}"
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; resources: {known}")
        self._subscribers.setdefault(uri, set()).add(client)

    def unsubscribe(self, uri: str, client: ServerSession) -> None:
        """Stop telling `client` about `uri` (nothing happens if it was not subscribed)."""
        self._subscribers.get(uri, set()).discard(client)

    def _projection_text(self) -> str:
        return self._shown(lambda: self.session.tick().projection.text)

    def _shown(self, tick: Callable[[], str]) -> str:
        """The text of the projection that `tick` makes (ticking the session), as
        `client_view` says a client gets it; a `Refusal` is passed on."""
        from dagctx.tools.base import Refusal

        text = tick()
        if isinstance(text, Refusal):
            return text
        return self.client_view(text)

    def client_view(self, ticked: str) -> str:
        """The projection a client gets after a tick made for it whose text is
        `ticked`: that text when no other tick came since the client's last projection;
        else the projection of the graph as it is, its changes section listing every
        change since that last projection (the watcher's ticks consumed them). Marks
        everything until now as shown. Call it right after the tick, holding the
        session."""
        text = ticked
        if self._missed:
            text = self.session.project(since=self._reader.position).text
        self._reader.position = len(self.session.graph.traces)
        self._missed = False
        self._seen = text
        return text

    def _current(self) -> Projection:
        """The projection a read would give now, without the tick (changes since the
        client's last projection)."""
        return self.session.project(since=self._reader.position)

    async def _exclusive(self, work: Callable[[], T]) -> T:
        """Run blocking `work` in a worker thread, never two at a time."""
        async with self._lock:
            return await anyio.to_thread.run_sync(work)

    async def _notify_if_changed(self, projection: Projection | None = None) -> None:
        """Send ``resources/updated`` to the subscribers when the text of `projection`
        (default: the session's current one) differs from the one they last saw."""
        if not any(self._subscribers.values()):
            return
        if projection is None:
            projection = await self._exclusive(self._current)
        text = projection.text
        if text == self._seen:
            return
        self._seen = text
        for uri in (PROJECTION_URI, EXPLAIN_URI):
            for client in list(self._subscribers.get(uri, ())):
                try:
                    await client.send_resource_updated(uri)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self._subscribers[uri].discard(client)

    # -- following the tree -----------------------------------------------------------

    async def follow(
        self,
        ignore: Iterable[str | os.PathLike[str]] = (),
        *,
        steering: Steering | None = None,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Scan the session's tree (re-survey it when the session holds it), tick, then
        tick once per batch of file changes until cancelled, telling the subscribers
        when the projection changed. ``ignore`` names files never tracked; ``steering``
        (a `~dagctx.watch.steering.Steering`) narrows the tree and gives the matching
        files their priority and state, also the files that appear later. Reports
        started (for `anyio.abc.TaskGroup.start`) once it holds the session, so no
        request sees it before the scan.

        Raises:
            WatchError: the OS refused to watch the tree.
        """
        from dagctx.watch.loop import TreeWatcher
        from dagctx.watch.steering import NO_STEERING
        from dagctx.watch.tracker import TreeTracker

        tracker = TreeTracker(self.session, ".", ignore=ignore, steering=steering or NO_STEERING)
        async with TreeWatcher(tracker) as watcher:
            async with self._lock:
                task_status.started()
                start = len(self.session.graph.traces)
                await anyio.to_thread.run_sync(tracker.load)
                await anyio.to_thread.run_sync(self._tick, tracker)
                if self.session.turn > 1:  # resumed: what changed unwatched is news
                    self._reader.position = start
                else:  # new: the scan's links are the graph, not changes to it
                    self._reader.position = len(self.session.graph.traces)
                    self._missed = False
                await anyio.to_thread.run_sync(self.add_docs, self.doc_paths())
            while (batch := await watcher.next()) is not None:
                async with self._lock:
                    changed = {Path(path) for _, path in batch[0]}
                    docs = [p for p in self.doc_paths(changed) if p in changed]
                    await anyio.to_thread.run_sync(self.add_docs, docs)
                    plan = await anyio.to_thread.run_sync(tracker.plan, *batch)
                    if not plan:
                        continue
                    self.session.queue_result(partial(tracker.apply, plan))
                    result = await anyio.to_thread.run_sync(self._tick, tracker)
                await self._notify_if_changed(result.projection)

    def doc_paths(self, candidates: Iterable[Path] | None = None) -> list[Path]:
        """The files under the root that `DOC_FILES` names (at most 500, in order): among
        `candidates` when given (they need not exist), else on the disk, noting how many
        more there are for the knowledge tools to say (`UNINDEXED_KEY`)."""
        root = self.session.root
        if candidates is not None:
            return [
                p for p in candidates if p.is_relative_to(root) and _is_doc(p.relative_to(root))
            ][:_MAX_DOCS]
        from dagctx.tools.knowledge import UNINDEXED_KEY

        found: dict[Path, None] = {}
        for pattern in DOC_FILES:
            for path in sorted(root.glob(pattern)):
                if not any(part.startswith(".") for part in path.relative_to(root).parts):
                    found.setdefault(path)
        self.reading.state[UNINDEXED_KEY] = max(0, len(found) - _MAX_DOCS)
        return list(found)[:_MAX_DOCS]

    def add_docs(self, paths: Iterable[Path]) -> None:
        """Store each file as the knowledge artifact named by its path relative to the
        root (read whole as ``read_file`` reads; a file that is gone or refused is
        dropped)."""
        from dagctx.tools.base import Refusal
        from dagctx.tools.files import read_whole
        from dagctx.tools.knowledge import WORKSPACE_KEY

        workspace = self.reading.state[WORKSPACE_KEY]
        for path in paths:
            name = path.relative_to(self.session.root).as_posix()
            text = read_whole(self.reading, name)
            if isinstance(text, Refusal):
                workspace.delete_sync(name)
            elif workspace.read(name) != text:
                workspace.write_sync(name, text)

    def _tick(self, tracker: TreeTracker) -> TickResult:
        result = self.session.tick()
        self._missed = True
        if tracker.pending_removals():
            self.session.queue_result(tracker.reap)
        if self._after_tick is not None:
            self._after_tick(result)
        return result

    # -- the SDK server ---------------------------------------------------------------

    def build(self) -> Server[Any]:
        """A low-level MCP `Server` answering tools and resources requests and resource
        subscriptions."""

        async def itself() -> SessionServer:
            return self

        return _sdk_server(itself, _instructions(self.session.root, self.session.budget))


def _definition(tool: Tool[Any]) -> types.Tool:
    hints = TOOL_HINTS.get(tool.name)
    annotations = None
    if hints is not None:
        annotations = types.ToolAnnotations(
            title=hints.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        )
    return types.Tool(
        name=tool.name,
        title=None if hints is None else hints.title,
        description=tool.description,
        input_schema=client_schema(tool.parameters),
        annotations=annotations,
    )


def get_context(session: Session, focus: str | None = None) -> str:
    """Show the project as context within the token budget: the files that matter most
    in full or cut to their relevant parts, outlines of the next, names of the rest, and
    a last line counting what was left out. Call it first to see the project, and again
    after set_focus, open_file, run_shell or edits.

    Args:
        focus: What you are working on, in a sentence or a few words (e.g. "how are
            checkpoints restored"); it is set before the context is shown, as set_focus
            does, and stays until changed. Omit it to keep the current focus; an empty
            text clears it.
    """
    if focus is not None:
        session.focus(focus.strip() or None)
    return session.tick().projection.text


def _instructions(root: Path, budget: int) -> str:
    return (
        f"dagctx keeps this agent's context for {root} as a DAG of nodes"
        f" and renders it within {budget} tokens. Call get_context (with a focus: what"
        f" you are working on) or read {PROJECTION_URI} for the current prompt; steer it"
        " with set_focus, open_file, set_node_state, hide_node, run_shell,"
        " checkpoint/restore and set_budget. read_file reads a file or the lines an"
        " outline names ([L12-30]); the knowledge tools search the README, docs/ and"
        " what add_knowledge stored, not the code (run_shell with grep does)."
    )


def _sdk_server(served: Callable[[], Awaitable[SessionServer]], instructions: str) -> Server[Any]:
    """The SDK's low-level `Server`, each handler passing its request to the
    `SessionServer` that `served` returns (waiting for it while the session opens)."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=(await served()).list_tools())

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await (await served()).call_tool(params.name, params.arguments)

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await served()
        return types.ListResourcesResult(resources=SessionServer.list_resources())

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        contents = await (await served()).read_resource(str(params.uri))
        return types.ReadResourceResult(contents=list(contents))

    async def on_subscribe(
        ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        (await served()).subscribe(str(params.uri), ctx.session)
        return types.EmptyResult()

    async def on_unsubscribe(
        ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        (await served()).unsubscribe(str(params.uri), ctx.session)
        return types.EmptyResult()

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_subscribe_resource=on_subscribe,
        on_unsubscribe_resource=on_unsubscribe,
    )


def _is_doc(relative: Path) -> bool:
    """Whether the path (relative to the root) is one `DOC_FILES` names."""
    parts = relative.parts
    if not parts or any(part.startswith(".") for part in parts):
        return False
    if len(parts) == 1:
        return parts[0] in DOC_FILES
    return parts[0] == "docs" and relative.suffix in _DOC_SUFFIXES


def _execute(tool: Tool[Any], arguments: dict[str, Any]) -> str:
    """Run a tool to completion on a private event loop (called in a worker thread)."""
    return asyncio.run(tool.execute(**arguments))


def _version() -> str:
    try:
        return metadata.version("dagctx")
    except metadata.PackageNotFoundError:
        return "0"


async def serve_stdio(
    session: Session,
    *,
    follow: bool = False,
    ignore: Iterable[str | os.PathLike[str]] = (),
    after_tick: Callable[[TickResult], None] | None = None,
    steering: Steering | None = None,
) -> None:
    """Serve `session` over this process's stdin/stdout until the client disconnects;
    with `follow`, scan and watch its tree meanwhile (`SessionServer.follow`, given
    `ignore` and `steering`; `after_tick` runs after each of its ticks)."""
    server = SessionServer(session, after_tick=after_tick)
    lowlevel = server.build()
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as group:
        if follow:
            await group.start(partial(server.follow, ignore, steering=steering))
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()


class _Opening:
    """The `SessionServer` of a session being opened: requests wait for it, and get an
    MCP error naming the failure when opening failed."""

    def __init__(self) -> None:
        self.server: SessionServer | None = None
        self.failure: Exception | None = None
        self.done = anyio.Event()

    async def served(self) -> SessionServer:
        await self.done.wait()
        if self.server is None:
            raise MCPError(types.INTERNAL_ERROR, f"the session could not be opened: {self.failure}")
        return self.server

    async def open_and_follow(
        self,
        open_session: Callable[[], Session],
        ignore: Iterable[str | os.PathLike[str]],
        after_tick: Callable[[TickResult], None] | None,
        steering: Steering | None,
    ) -> None:
        """Open the session in a worker thread, then follow its tree (requests go on
        waiting until `SessionServer.follow` holds the session for the first scan)."""

        def opened() -> SessionServer:
            return SessionServer(open_session(), after_tick=after_tick)

        try:
            server = await anyio.to_thread.run_sync(opened)
        except Exception as exc:
            self.failure = exc
            self.done.set()
            return
        async with anyio.create_task_group() as group:
            await group.start(partial(server.follow, ignore, steering=steering))
            self.server = server
            self.done.set()


async def serve_stdio_while_opening(
    open_session: Callable[[], Session],
    *,
    root: Path,
    budget: int,
    ignore: Iterable[str | os.PathLike[str]] = (),
    after_tick: Callable[[TickResult], None] | None = None,
    steering: Steering | None = None,
) -> None:
    """Serve over this process's stdin/stdout, answering ``initialize`` at once, while
    `open_session` (called in a worker thread) opens the session; then serve it as
    `serve_stdio` with ``follow=True`` (and `ignore`, `after_tick`, `steering`) does.
    Requests that need the session wait for it (and for the first scan, which holds it).
    ``root`` and ``budget`` are the session's, for the server's instructions.

    Raises:
        Exception: what `open_session` raised, once the client disconnected (every
            request meanwhile got an MCP error naming it).
    """
    opening = _Opening()
    lowlevel = _sdk_server(opening.served, _instructions(root, budget))
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as group:
        group.start_soon(opening.open_and_follow, open_session, ignore, after_tick, steering)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()
    if opening.failure is not None:
        raise opening.failure


def run_stdio(
    path: str | os.PathLike[str] = ".",
    *,
    budget: int = 8000,
    encoding: str = DEFAULT_ENCODING,
    include_secrets: bool = False,
) -> None:
    """Open a session on `path`, scan its tree and serve it over stdio, following file
    changes, until the client disconnects; the session (and every command it still runs)
    is closed afterwards. Nothing is saved (``dagctx mcp`` resumes and saves).
    ``include_secrets`` as for :class:`~dagctx.session.Session`.

    Raises:
        BudgetError, EncodingError, PathError: bad budget, encoding or path (raised
            before anything is served).
    """
    from dagctx.session import Session

    with Session(
        path, budget=budget, encoding=encoding, include_secrets=include_secrets
    ) as session:
        anyio.run(partial(serve_stdio, session, follow=True))
