"""The live viz page of a session: a Starlette app served by uvicorn on the loopback.

`VizServer` holds the last projection it was given (`publish`, after each tick) and
serves:

- ``GET /``: the page (:func:`dagctx.viz.page.page_html` with ``live=True``);
- ``GET /events``: server-sent events; an ``view`` event (JSON: ``view``, the HTML of
  :func:`~dagctx.viz.page.view_html`, and ``turn``) on connecting and after each
  `publish`;
- ``GET /api/node/{id}``: the node panel's data: type, state, version, parents, and its
  render at each state with the token count;
- ``POST /api/node/{id}/state`` (JSON ``{"state": "collapsed"}``, or ``"hidden"``): the
  graph tools' verbs (`~dagctx.tools.graph.set_node_state`,
  `~dagctx.tools.graph.hide_node`); the page then shows the projection the next tick
  will build (``Session.project``: no tick, so the turn and the watch's files move on at
  the next tick). The answer is the tool's message.

Everything runs on one event loop, the one that ticks the session (``dagctx viz``,
``dagctx watch --viz``); the handlers touch the session only synchronously, so never in
the middle of a tick's own steps. The server listens on 127.0.0.1 only and installs no
signal handlers (the command keeps its own Ctrl-C handling).

Imports Starlette and uvicorn; nothing imports this module until a command runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from dagctx.errors import DagctxError
from dagctx.nodes.base import NodeState
from dagctx.tools.base import Refusal
from dagctx.tools.graph import hide_node, set_node_state
from dagctx.viz.page import page_html, view_html

if TYPE_CHECKING:
    from dagctx.projection import Projection
    from dagctx.session import Session, TickResult

HOST = "127.0.0.1"
PANEL_CHARS = 4000
"""Characters of each render the node panel shows."""
PING_SECONDS = 15.0
"""An idle event stream sends a comment this often (proxies and browsers keep it open)."""


class VizServer:
    """The live page of ``session``; `publish` each tick's result, `serve` to listen.

    Args:
        session: the session shown and steered.
        title: shown in the page's heading (e.g. the root's path).
    """

    def __init__(self, session: Session, *, title: str = "") -> None:
        self.session = session
        self.title = title
        self.turn = 0
        self.projection: Projection | None = None
        self.changed: frozenset[str] = frozenset()
        self._message = ""
        self._seq = 0
        self._updated = asyncio.Event()
        self._closing = asyncio.Event()

    def publish(self, result: TickResult) -> None:
        """Show ``result``'s projection and tell every open page. The nodes its tick
        changed directly are highlighted (not their ancestors, which change with them);
        none at turn 1, whose changes are the building of the graph, as in the
        projection's own changes section."""
        self.turn = result.turn
        changed = [t.node_id for t in result.changes if not t.derived]
        self._show(result.projection, changed if result.turn > 1 else ())

    def _show(self, projection: Projection, changed: Iterable[str]) -> None:
        self.projection = projection
        self.changed = frozenset(changed)
        view = view_html(projection, changed=self.changed)
        self._message = json.dumps({"view": view, "turn": self.turn}, ensure_ascii=False)
        self._seq += 1
        self._updated.set()
        self._updated = asyncio.Event()

    def set_state(self, node_id: str, state: str) -> str:
        """Apply a graph tool's verb (``state`` "hidden" hides) and show the projection
        the next tick will build, ``node_id`` highlighted; return the tool's message."""
        if state.strip().lower() == "hidden":
            message = hide_node(self.session, node_id)
        else:
            message = set_node_state(self.session, node_id, state)
        if not isinstance(message, Refusal):
            self._show(self.session.project(), [node_id])
        return message

    def node(self, node_id: str) -> dict[str, Any]:
        """The node panel's data for ``node_id``.

        Raises:
            NodeNotFoundError: no such node.
        """
        node = self.session.get(node_id)
        renders = []
        for state in (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL):
            text = node.render(state)
            if len(text) > PANEL_CHARS:
                text = text[:PANEL_CHARS] + "…"
            renders.append(
                {
                    "state": state.name,
                    "tokens": self.session.cache.tokens(node, state),
                    "text": text,
                }
            )
        return {
            "id": node.id,
            "type": node.type_name,
            "label": node.label(),
            "state": node.state.name,
            "version": node.version,
            "parents": [{"id": p.id, "label": p.label()} for p in node.parents],
            "renders": renders,
        }

    # -- the web app -------------------------------------------------------------------

    def app(self) -> Starlette:
        """The Starlette app of the routes in the module docstring."""

        async def index(request: Request) -> Response:
            if self.projection is None:
                return HTMLResponse("dagctx viz: the first tick is still running", 503)
            page = page_html(self.projection, changed=self.changed, live=True, title=self.title)
            return HTMLResponse(page)

        async def events(request: Request) -> Response:
            return StreamingResponse(
                self._stream(),
                media_type="text/event-stream",
                headers={"cache-control": "no-store"},
            )

        async def node(request: Request) -> Response:
            try:
                return JSONResponse(self.node(request.path_params["node_id"]))
            except DagctxError as exc:
                return JSONResponse({"error": str(exc)}, 404)

        async def state(request: Request) -> Response:
            try:
                body = await request.json()
            except ValueError:
                body = None
            wanted = body.get("state") if isinstance(body, dict) else None
            if not isinstance(wanted, str):
                return JSONResponse({"message": 'send {"state": "collapsed"}'}, 400)
            message = self.set_state(request.path_params["node_id"], wanted)
            ok = not isinstance(message, Refusal)
            return JSONResponse({"message": str(message), "ok": ok}, 200 if ok else 400)

        return Starlette(
            routes=[
                Route("/", index),
                Route("/events", events),
                Route("/api/node/{node_id}", node),
                Route("/api/node/{node_id}/state", state, methods=["POST"]),
            ]
        )

    async def _stream(self) -> AsyncIterator[str]:
        seen = -1
        while not self._closing.is_set():
            if self._seq != seen and self._message:
                seen = self._seq
                yield f"event: view\ndata: {self._message}\n\n"
                continue
            updated = self._updated
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(updated.wait(), PING_SECONDS)
                continue
            yield ": ping\n\n"

    async def serve(self, port: int = 0, ready: Callable[[str], None] | None = None) -> None:
        """Listen on 127.0.0.1:``port`` (0: any free port) until cancelled; ``ready``
        gets the page's URL once the socket listens.

        Raises:
            OSError: the port is taken or cannot be bound.
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
            sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
        except OSError:
            sock.close()
            raise
        config = uvicorn.Config(
            self.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        server = _QuietServer(config)
        if ready is not None:
            ready(f"http://{HOST}:{sock.getsockname()[1]}/")
        try:
            await server.serve(sockets=[sock])
        finally:
            self._closing.set()
            self._updated.set()
            server.should_exit = True
            sock.close()


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its signal handlers: the command that runs it owns Ctrl-C."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
