"""MCPConnection: one live MCP client session, run on a session's background loop.

A connection starts a server (stdio: a subprocess whose stderr goes to a pipe that a
thread drains into a :class:`~dagctx.runtime.processes.CappedBuffer`, so a server flooding
stderr costs bounded memory; or streamable HTTP: a URL), performs the initialize
handshake, lists the tools, and then keeps the SDK's ``ClientSession`` open in a
long-running task until :meth:`close` or until the server goes away. It never touches
nodes: it reports through the callbacks it was given (a refreshed tool list after
``notifications/tools/list_changed``; the loss of the server), and
:mod:`dagctx.session.mcp` turns those reports into queued node changes.

Every wait is bounded: the handshake by ``connect_timeout``, each call by its timeout,
shutdown by the SDK's own bounded stdio shutdown (stdin closed, then SIGTERM, SIGKILL to
the server's process group).

All coroutines here must run on the background loop that runs :meth:`start`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import select
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import IO, Any, TextIO, cast

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from dagctx.errors import MCPClientError
from dagctx.mcp import DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, SHUTDOWN_TIMEOUT
from dagctx.nodes.base import Node
from dagctx.nodes.mcp import ToolSpec
from dagctx.runtime.processes import CHUNK_BYTES, CappedBuffer

STDERR_TAIL_BYTES = 4096
#: Bytes of a server's stderr kept in memory: the first half and the last half.
STDERR_CAP_BYTES = 4 * STDERR_TAIL_BYTES
_TOOL_PAGES = 100

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CallResult:
    """What a tool call returned: the content as text, the structured content, whether
    the tool reported an error, and the SDK's result object."""

    server: str
    tool: str
    text: str
    structured: Any
    is_error: bool
    raw: types.CallToolResult = field(repr=False)
    #: The node the session recorded the result in (set by ``Session.mcp_call``).
    artifact: Node | None = None


def tool_spec(tool: types.Tool) -> ToolSpec:
    """The plain :class:`ToolSpec` of an SDK tool definition."""
    annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else None
    return ToolSpec(
        name=tool.name,
        description=tool.description or "",
        title=tool.title,
        input_schema=dict(tool.input_schema or {}),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        annotations=annotations or None,
    )


def content_text(result: types.CallToolResult) -> str:
    """A tool result's content as text: text blocks as they are, other blocks as one-line
    placeholders; the structured content as JSON when there is no content."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            size = len(base64.b64decode(block.data, validate=False)) if block.data else 0
            parts.append(f"[{kind}: {block.mime_type}, {size:,} bytes]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(
                    f"[binary resource {resource.uri}, {resource.mime_type or 'unknown type'}]"
                )
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, indent=2, sort_keys=True, default=str))
    return "\n".join(parts)


def leaf_error(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """A one-line reason for an MCP failure, for error messages and the node's status."""
    exc = leaf_error(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return "the server closed the connection"
        return f"the server answered error {exc.code}: {exc.message}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _client_info() -> types.Implementation:
    try:
        version = metadata.version("dagctx")
    except metadata.PackageNotFoundError:
        version = "0"
    return types.Implementation(name="dagctx", version=version)


ToolsCallback = Callable[[int, list[ToolSpec]], None]
LostCallback = Callable[[str, str], None]


class _StderrCapture:
    """A stdio server's stderr: the write end of a pipe for the child, and a daemon
    thread that drains the read end into a :class:`CappedBuffer` of
    :data:`STDERR_CAP_BYTES` until end of file or :meth:`close`.

    :meth:`tail` first reads what is waiting in the pipe, so the last words of a server
    that just died are there even if the thread has not run since.
    """

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._fd = read_fd
        self.writer: IO[str] | None = os.fdopen(write_fd, "w", encoding="utf-8")
        self.buffer = CappedBuffer(STDERR_CAP_BYTES)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._run, name=f"dagctx-mcp-{name}-stderr", daemon=True).start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                if ready and not self._drain():
                    return
        finally:
            with self._lock:
                os.close(self._fd)
                self._fd = -1

    def _drain(self) -> bool:
        """Read what the pipe holds now; False at end of file."""
        with self._lock:
            while self._fd >= 0:
                try:
                    chunk = os.read(self._fd, CHUNK_BYTES)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not chunk:
                    return False
                self.buffer.feed(chunk)
            return False

    def started(self) -> None:
        """The child holds its copy of the write end: close ours (end of file comes when
        the child and its children close theirs)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def tail(self) -> str:
        """The last lines (at most :data:`STDERR_TAIL_BYTES`) the server wrote."""
        self._drain()
        with self._lock:
            buffer = self.buffer
            kept = bytes(buffer.head + buffer.tail) if not buffer.cut else bytes(buffer.tail)
            total = buffer.total
        data = kept[-STDERR_TAIL_BYTES:]
        text = data.decode("utf-8", "replace")
        if total > len(data) and "\n" in text:
            text = text.split("\n", 1)[1]  # drop the partial first line
        return text.rstrip()

    def close(self) -> None:
        """Stop the thread (it closes the read end) and close the write end if still ours."""
        self.started()
        self._stop.set()


class MCPConnection:
    """A live MCP session with one server, owned by a task on the background loop.

    Args:
        name: the server's name in the session.
        command: argv of a stdio server (first item: the executable).
        url: a streamable HTTP endpoint (instead of ``command``).
        env: extra environment variables for a stdio server.
        cwd: working directory of a stdio server.
        connect_timeout: seconds for the handshake and first tool listing.
        on_tools: called with (sequence number, tools) after the server announced a
            changed tool list and the new list was fetched.
        on_lost: called with (message, stderr tail) when the server went away on its own.
    """

    def __init__(
        self,
        name: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        on_tools: ToolsCallback | None = None,
        on_lost: LostCallback | None = None,
    ) -> None:
        self.name = name
        self.command = list(command) if command is not None else None
        self.url = url
        self.env = dict(env or {})
        self.cwd = cwd
        self.connect_timeout = connect_timeout
        self.on_tools = on_tools
        self.on_lost = on_lost
        self.tools: list[ToolSpec] = []
        self.info: dict[str, str] = {}
        self.closed = False
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._closing = False
        self._stderr: _StderrCapture | None = None
        self._refresh_lock: asyncio.Lock | None = None
        self._refreshes: set[asyncio.Task[None]] = set()
        self._seq = 0

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> list[ToolSpec]:
        """Start the server, shake hands and list its tools; return the tools.

        Raises:
            MCPClientError: the server could not be started, did not answer within
                ``connect_timeout``, or failed the handshake (with its stderr tail).
        """
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[ToolSpec]] = loop.create_future()
        self._wake = asyncio.Event()
        self._refresh_lock = asyncio.Lock()
        self._task = loop.create_task(self._run(ready), name=f"dagctx-mcp-{self.name}")
        try:
            return await asyncio.wait_for(
                asyncio.shield(ready), self.connect_timeout + SHUTDOWN_TIMEOUT
            )
        except TimeoutError:
            tail = self.stderr_tail()  # before close() drops the capture
            await self.close()
            _consume(ready)
            raise MCPClientError(
                f"MCP server {self.name!r} did not start within {self.connect_timeout:g} s",
                tail,
                server=self.name,
            ) from None
        except asyncio.CancelledError:
            await asyncio.shield(self.close())
            _consume(ready)
            raise

    async def close(self) -> None:
        """End the session and stop the server (bounded); idempotent."""
        self._closing = True
        if self._wake is not None:
            self._wake.set()
        for refresh in list(self._refreshes):
            refresh.cancel()
        task = self._task
        if task is not None and not task.done():
            _, pending = await asyncio.wait({task}, timeout=SHUTDOWN_TIMEOUT)
            for still in pending:
                still.cancel()
                await asyncio.wait({still}, timeout=2.0)
        self._cleanup_stderr()
        self.closed = True

    def stderr_tail(self) -> str:
        """The last lines (at most :data:`STDERR_TAIL_BYTES`) the server wrote to stderr."""
        return self._stderr.tail() if self._stderr is not None else ""

    def _open_stderr(self) -> IO[str]:
        self._cleanup_stderr()
        self._stderr = _StderrCapture(self.name)
        assert self._stderr.writer is not None
        return self._stderr.writer

    def _cleanup_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        if self.url is not None:
            async with streamable_http_client(self.url) as streams:
                yield streams
            return
        assert self.command
        params = StdioServerParameters(
            command=self.command[0], args=self.command[1:], env=self.env or None, cwd=self.cwd
        )
        async with stdio_client(params, errlog=cast(TextIO, self._open_stderr())) as streams:
            if self._stderr is not None:  # the server runs: it has its copy of the pipe
                self._stderr.started()
            yield streams

    async def _run(self, ready: asyncio.Future[list[ToolSpec]]) -> None:
        """Own the client session from start to end (see the module docstring)."""
        assert self._wake is not None
        lost = ""
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                watched = await self._watch_eof(stack, read)
                session = await stack.enter_async_context(
                    ClientSession(
                        watched, write, message_handler=self._on_message, client_info=_client_info()
                    )
                )
                with anyio.fail_after(self.connect_timeout):
                    init = await session.initialize()
                    tools = await self._list_tools(session)
                self.info = {
                    "name": init.server_info.name,
                    "version": init.server_info.version,
                    "protocol_version": init.protocol_version,
                    "instructions": init.instructions or "",
                }
                self._session, self.tools = session, tools
                if ready.done():  # start() gave up waiting
                    return
                ready.set_result(tools)
                await self._wake.wait()
                if not self._closing:
                    lost = "the server closed the connection"
        except BaseException as exc:  # reported through `ready` or on_lost
            message = describe_error(exc)
            if not ready.done():
                ready.set_exception(
                    MCPClientError(
                        f"MCP server {self.name!r} failed to start: {message}", self.stderr_tail()
                    )
                )
            elif not self._closing:
                lost = f"the connection failed: {message}"
            if isinstance(exc, asyncio.CancelledError):
                self.closed = True
                self._cleanup_stderr()
                raise
        finally:
            self._session = None
        if lost and self.on_lost is not None:
            self.on_lost(lost, self.stderr_tail())
        self.closed = True
        self._cleanup_stderr()

    async def _watch_eof(self, stack: AsyncExitStack, read: Any) -> Any:
        """Forward the transport's read stream through a pump that wakes :meth:`_run`
        when the server's side ends (the SDK session does not report that itself)."""
        assert self._wake is not None
        wake = self._wake
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            try:
                async with send:
                    async for item in read:
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                wake.set()

        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # runs before the group's exit
        group.start_soon(pump)
        return receive

    # -- requests ---------------------------------------------------------------------

    def _live(self) -> ClientSession:
        if self._session is None:
            raise MCPClientError(f"MCP server {self.name!r} is not connected", server=self.name)
        return self._session

    @staticmethod
    async def _list_tools(session: ClientSession) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        cursor: str | None = None
        for _ in range(_TOOL_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools += [tool_spec(t) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def list_tools(self, timeout: float = DEFAULT_CALL_TIMEOUT) -> tuple[int, list[ToolSpec]]:
        """Fetch the current tool list; return (sequence number, tools).

        Sequence numbers grow with each fetch, so a consumer can ignore a list older
        than one it already applied.

        Raises:
            MCPClientError: not connected, timed out, or the server answered an error.
        """
        session = self._live()
        self._seq += 1
        seq = self._seq
        try:
            with anyio.fail_after(timeout):
                tools = await self._list_tools(session)
        except Exception as exc:
            raise MCPClientError(
                f"listing the tools of MCP server {self.name!r} failed: {describe_error(exc)}",
                server=self.name,
            ) from exc
        self.tools = tools
        return seq, tools

    async def call(
        self, tool: str, arguments: Mapping[str, Any], timeout: float = DEFAULT_CALL_TIMEOUT
    ) -> CallResult:
        """Call ``tool`` with ``arguments``. A tool that fails reports it in the result
        (``is_error``); once the call returns, a tool list change it caused is fetched.

        Raises:
            MCPClientError: not connected, timed out, or a protocol-level error.
        """
        session = self._live()
        try:
            with anyio.fail_after(timeout):
                raw = await session.call_tool(tool, dict(arguments))
        except Exception as exc:
            raise MCPClientError(
                f"calling {tool!r} on MCP server {self.name!r} failed: {describe_error(exc)}",
                self.stderr_tail(),
                server=self.name,
            ) from exc
        await self._settle_refreshes()
        return CallResult(
            self.name, tool, content_text(raw), raw.structured_content, raw.is_error, raw
        )

    async def _settle_refreshes(self) -> None:
        # The server's list_changed notification precedes the call's response on the
        # wire, but is handled in its own task; give it a turn, then wait for the fetch.
        await asyncio.sleep(0)
        if self._refreshes:
            await asyncio.wait(set(self._refreshes), timeout=DEFAULT_CALL_TIMEOUT)

    # -- notifications ----------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and not self._closing:
            task = asyncio.get_running_loop().create_task(self._refresh())
            self._refreshes.add(task)
            task.add_done_callback(self._refreshes.discard)

    async def _refresh(self) -> None:
        assert self._refresh_lock is not None
        async with self._refresh_lock:
            try:
                seq, tools = await self.list_tools()
            except MCPClientError as exc:
                # Not fatal: the next notification or an explicit refresh tries again.
                logger.warning("%s", exc)
                return
        if self.on_tools is not None:
            self.on_tools(seq, tools)


def _consume(future: asyncio.Future[Any]) -> None:
    """Mark a future's exception as retrieved (nobody waits for it any more)."""
    if future.done() and not future.cancelled():
        future.exception()
