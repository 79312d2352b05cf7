"""The core of a session: the graph and its verbs, the session's parts, close, and tick.

:class:`SessionCore` owns the :class:`~dagctx.graph.ContextGraph`, the token counter, the
section cache, the root task context and the parts of :mod:`dagctx.session.parts`, which
it creates in ``__init__`` and closes in :meth:`SessionCore.close`, in one fixed order.
The verb mixins of :mod:`dagctx.session` derive from it, and
:class:`~dagctx.session.Session` combines them. Nodes change only inside
:meth:`SessionCore.tick` (or through explicit calls); background work (shell commands,
locks, MCP, file watching) only queues results, which the next tick applies. ``tick``
runs, in order:

1. apply queued background results and pending file changes; mark held locks whose
   lock file vanished or was replaced as lost;
2. recompute each running node whose frequency is due; a running file node only when the
   OS reported a change to its file, or it is new, or it is polled
   (:mod:`dagctx.session.parts.files`);
3. collect the traces of this turn;
4. notify ancestors (each once per tick, children first) and refresh stale summaries;
5. build the projection (the first tick after a load takes back the projection saved
   with the session instead, when it would build the same: :mod:`dagctx.session.resume`).

Must not import the verb modules of :mod:`dagctx.session` (they derive from this one).
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from dagctx import _postgres
from dagctx._fs import OutsideRootError, resolve_inside
from dagctx._validate import is_int
from dagctx.checkpoint import BaseCheckpointStore
from dagctx.context import Context
from dagctx.errors import (
    ArgumentError,
    BlockingCallError,
    BudgetError,
    CycleError,
    NoSessionError,
    PathError,
    SessionClosedError,
)
from dagctx.graph import ContextGraph, NodeRef
from dagctx.nodes.base import Node, NodeState, TickFrequency, Trace
from dagctx.nodes.group import GroupNode, Summarizer
from dagctx.nodes.text import StatKey, TextNode
from dagctx.projection import Projection, SectionCache, build_projection
from dagctx.session.parts.files import FileWatch
from dagctx.session.parts.intake import Intake
from dagctx.session.parts.jobs import Jobs
from dagctx.session.parts.mcp import MCPClients
from dagctx.session.parts.runner import BackgroundRunner
from dagctx.session.parts.work import Coordination
from dagctx.session.resume import SavedPlan, files_compared, take_back
from dagctx.tokens import DEFAULT_ENCODING, TokenCounter

if TYPE_CHECKING:
    from dagctx.session import Session

_current: contextvars.ContextVar[SessionCore | None] = contextvars.ContextVar(
    "dagctx_session", default=None
)


def current_session() -> Session:
    """The session of the innermost ``with Session(...)`` block.

    Raises:
        NoSessionError: no session is active.
    """
    session = _current.get()
    if session is None:
        raise NoSessionError("no current session: open one with `with Session(...) as s:`")
    return cast("Session", session)  # only a Session enters itself


def check_budget(budget: object) -> int:
    """Return ``budget`` if it is a positive int. Raises BudgetError naming it otherwise."""
    if not is_int(budget) or budget <= 0:
        raise BudgetError(
            f"budget must be a positive integer number of tokens, got {budget!r}", value=budget
        )
    return budget


@dataclass(frozen=True, slots=True)
class TickResult:
    """What one tick did: the turn number, the traces of the turn, the recomputed node
    ids, the projection, and how long the tick took (seconds)."""

    turn: int
    changes: list[Trace]
    recomputed: list[str]
    projection: Projection
    duration: float = 0.0


class SessionCore:
    """The graph of a session and its parts (see the module docstring); use
    :class:`~dagctx.session.Session`, which adds the verbs of every concern.

    Args:
        root: the directory files are read from; paths outside it are refused.
        budget: the token budget of each projection (a positive int).
        encoding: the tiktoken encoding to count with (default works offline).
        include_secrets: show secret-bearing files (``.env``, private keys, certificates,
            credential files) and leave secrets in file content unredacted; by default
            such files are withheld and secrets redacted (:mod:`dagctx.nodes.text`).
        store: a ``postgresql://`` URL where the session keeps its work claims, locks and
            saved sessions, for agents on several machines (:mod:`dagctx._postgres`);
            None takes the URL in ``DAGCTX_STORE``, and without one everything stays in
            SQLite files and OS locks under ``<root>/.dagctx``.

    Attributes:
        cache_key: the prompt cache key its projections carry
            (:attr:`Projection.cache_key`, OpenAI's ``prompt_cache_key``): ``dagctx-`` and
            a hash of the resolved root, so a resumed session keeps it.

    Raises:
        BudgetError, EncodingError, PathError: bad budget, encoding or root.
        ArgumentError: ``store`` is not a ``postgresql://`` URL.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        budget: int = 8000,
        encoding: str = DEFAULT_ENCODING,
        *,
        include_secrets: bool = False,
        store: str | None = None,
    ) -> None:
        self.budget = check_budget(budget)
        if store is not None and not _postgres.is_url(store):
            raise ArgumentError(
                f"store must be a postgresql:// URL or None, got {store!r}",
                name="store",
                value=store,
            )
        self.store: str | None = _postgres.store_url(store)
        self.include_secrets = bool(include_secrets)
        root_path = Path(root).expanduser()
        try:
            is_dir = root_path.is_dir()
        except OSError as exc:  # a name too long, a symlink loop
            raise PathError(
                f"session root {str(root)!r} cannot be used: {exc}", path=root
            ) from None
        if not is_dir:
            raise PathError(f"session root {str(root)!r} is not a directory", path=root)
        self.root = root_path.resolve()
        digest = hashlib.sha256(os.fsencode(self.root)).hexdigest()
        self.cache_key = f"dagctx-{digest[:16]}"
        self.counter = TokenCounter(encoding)
        self.encoding = encoding
        self.graph = ContextGraph()
        self.cache = SectionCache(self.counter)
        self.turn = 0
        self.context = Context("session")  # the root task context; ticks add prompt_tokens
        # The parts (dagctx.session.parts), in creation order; close() closes them in the
        # reverse order, as each may use those created before it.
        self.background = BackgroundRunner()  # the event loop thread, started on first use
        self._intake = Intake()  # background results and changed paths, for the next tick
        self._jobs = Jobs(self.background, self._intake)  # shell commands and locks
        self._mcp = MCPClients(self.background, self._intake)  # MCP servers, connections
        self._work = Coordination()  # the work board; its store opens on first use
        self._files = FileWatch(self.root)  # running file nodes, told of changes by the OS
        self.graph.watcher = self._files.track
        # path → its text node, or a tuple of them when several show that path (a list
        # per path would cost more than the index entry itself: one text node per file)
        self._path_index: dict[str, TextNode | tuple[TextNode, ...]] = {}
        # Trace cursors: where the next tick's changes start, and where the last tick's
        # started (kept for a resumed watcher); both keep their traces in the log.
        self._trace_mark = self.graph.traces.cursor()
        self._turn_start = self.graph.traces.cursor()
        self._last_projection: Projection | None = None
        # the projection saved with the session or offered back by a load (resume.py)
        self._saved_plan: SavedPlan | None = None
        self._refresh: dict[str, Node] = {}
        self._ticking = threading.RLock()  # ticks from several threads run one at a time
        self._in_tick = False  # whether tick() runs (a tick inside it is refused)
        # Session file (resolved path) → the generation this session last read or wrote
        # there: a save refuses a file another session wrote since (session/file.py).
        self._file_generations: dict[Path | str, str] = {}
        self._closers: list[Callable[[], None]] = []
        self._tokens: list[contextvars.Token[SessionCore | None]] = []
        self.closed = False

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tokens:
            _current.reset(self._tokens.pop())
        self.close()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the session closes, before any part closes (see
        :meth:`close`)."""
        self._closers.append(callback)

    def close(self) -> None:
        """Close the session; later calls do nothing.

        In this order: the :meth:`on_close` callbacks, last registered first (every part
        still works then, but the session is marked closed, so verbs that start new work
        refuse); then the parts, in the reverse of their creation order: the file watch
        (its inotify instance closed), the work board (releasing this agent's claims),
        the MCP servers (stopped), the jobs (every lock released, every running command
        killed and waited for), the intake (queued results dropped), and last the
        background loop (its remaining tasks cancelled, its thread joined). Every step
        runs even if an earlier one raises; the first error is raised once all have run.
        """
        if self.closed:
            return
        self.closed = True
        callbacks, self._closers = self._closers[::-1], []
        steps = [
            *callbacks,
            self._files.close,
            self._work.close,
            self._mcp.close,
            self._jobs.close,
            self._intake.close,
            self.background.close,
        ]
        error: BaseException | None = None
        for step in steps:
            try:
                step()
            except BaseException as exc:  # closing goes on; the first error is raised
                error = error or exc
        if error is not None:
            raise error

    def _files_compared(self, paths: Set[str]) -> None:
        """The files at ``paths`` were compared with the disk since the load (a resume
        survey of a watched tree, :mod:`dagctx.watch.tracker`): when they are every path
        a text node reads, the saved projection may be taken back
        (:mod:`dagctx.session.resume`)."""
        if self._path_index.keys() <= paths:
            files_compared(self)

    def _plan_ahead(self) -> None:
        """Build the plan of the next projection now (:meth:`project`), when the last
        tick took back a saved projection and so built none: the next tick patches it
        instead of building it. The watch calls it while it waits for events."""
        if self._last_projection is not None and self.cache.projector is None:
            self.project()

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosedError("the session is closed", root=self.root)

    # -- paths ------------------------------------------------------------------------

    def resolve_path(self, path: str | os.PathLike[str]) -> tuple[Path, str]:
        """Return (absolute path, root-relative posix path) for a path under the root.

        Raises:
            PathError: the path is empty, has a NUL byte, resolves outside the root, or
                cannot be looked up at all (a symlink loop, a name too long).
        """
        raw = os.fspath(path)
        if not raw or "\x00" in raw:
            raise PathError(f"invalid path {raw!r}", path=raw)
        try:
            return resolve_inside(self.root, raw)
        except OutsideRootError:
            raise PathError(
                f"path {raw!r} is outside the session root {str(self.root)!r}", path=raw
            ) from None
        except OSError as exc:  # a symlink loop, a name too long
            raise PathError(f"cannot use path {raw!r}: {exc}", path=raw) from None

    # -- building the graph -----------------------------------------------------------

    def add(self, node: Node, *, parent: NodeRef | None = None) -> Node:
        """Add a node (as a root, or as the last child of ``parent``); return it."""
        self._check_open()
        if parent is not None:
            self.graph.get(parent)  # fail before adding
        self.graph.add(node)
        if isinstance(node, TextNode):
            self._index_path(node)
        if parent is not None:
            self.graph.link(parent, node)
        return node

    def _add_loaded(self, nodes: Sequence[Node]) -> None:
        """Add a loaded session's nodes (each with its id) as roots, in order, in bulk
        (:meth:`ContextGraph.add_many`), and index the text nodes by path.

        Raises:
            GraphError: as :meth:`ContextGraph.add_many` (nothing is added then).
        """
        self.graph.add_many(nodes)
        index = self._path_index
        for node in nodes:
            if isinstance(node, TextNode):
                if node.path in index:
                    self._index_path(node)
                else:
                    index[node.path] = node

    def text(
        self,
        path: str | os.PathLike[str],
        *,
        lines: tuple[int, int | None] | None = None,
        state: NodeState | str | None = None,
        priority: int | None = None,
        frequency: TickFrequency | None = None,
        parent: NodeRef | None = None,
    ) -> TextNode:
        """Add a :class:`TextNode` for a file under the root (optionally a line range).

        Raises:
            PathError: the path is outside the root, missing, or not a file.
            GraphError: a bad line range.
        """
        absolute, relative = self.resolve_path(path)
        if not absolute.exists():
            raise PathError(f"no such file {os.fspath(path)!r} under {str(self.root)!r}", path=path)
        if not absolute.is_file():
            raise PathError(f"{os.fspath(path)!r} is not a regular file", path=path)
        start = end = None
        if lines is not None:
            start, end = _check_lines(lines)
        node = TextNode(
            relative, root=self.root, start_line=start, end_line=end, state=state,
            priority=priority, frequency=frequency, include_secrets=self.include_secrets,
        )  # fmt: skip
        self.add(node, parent=parent)
        return node

    def group(
        self,
        *children: NodeRef,
        title: str | None = None,
        summarizer: Summarizer | None = None,
        state: NodeState | str | None = None,
        priority: int | None = None,
        parent: NodeRef | None = None,
    ) -> GroupNode:
        """Add a :class:`GroupNode` holding ``children`` (which stop being roots).

        Raises:
            NodeNotFoundError: a child or ``parent`` is unknown (nothing is added).
            CycleError: a child is ``parent`` or one of its ancestors (nothing is added).
        """
        members = [self.graph.get(c) for c in children]  # fail before adding anything
        if parent is not None:
            above = {self.graph.get(parent).id} | {n.id for n in self.graph.ancestors(parent)}
            for child in members:
                if child.id in above:
                    raise CycleError(
                        f"a group under {self.graph.get(parent).id!r} cannot hold"
                        f" {child.id!r}: that would close a cycle",
                        parent=self.graph.get(parent).id,
                        child=child.id,
                    )
        node = GroupNode(title, summarizer=summarizer, state=state, priority=priority)
        self.add(node, parent=parent)
        for child in members:
            self.graph.link(node, child)
        if summarizer is not None:
            self._refresh[node.id] = node
        return node

    def link(self, parent: NodeRef, child: NodeRef, *, after: NodeRef | None = None,
             index: int | None = None) -> None:  # fmt: skip
        """Link ``child`` under ``parent`` (see :meth:`ContextGraph.link`)."""
        self.graph.link(parent, child, after=after, index=index)

    def unlink(self, parent: NodeRef, child: NodeRef) -> None:
        """Remove the edge ``parent → child`` (see :meth:`ContextGraph.unlink`)."""
        self.graph.unlink(parent, child)

    def remove(self, ref: NodeRef) -> Node:
        """Remove a node from the session; its orphaned children become roots."""
        node = self.graph.remove(ref)
        self.cache.forget(node.id)
        if isinstance(node, TextNode):
            peers = tuple(p for p in self._peers(node.path) if p is not node)
            if not peers:
                self._path_index.pop(node.path, None)
            else:
                self._path_index[node.path] = peers[0] if len(peers) == 1 else peers
        return node

    def _peers(self, path: str) -> tuple[TextNode, ...]:
        """The text nodes in the path index under ``path``."""
        held = self._path_index.get(path)
        if held is None:
            return ()
        return (held,) if isinstance(held, TextNode) else held

    def _index_path(self, node: TextNode) -> None:
        """Add ``node`` to the path index (once)."""
        peers = self._peers(node.path)
        if node not in peers:
            self._path_index[node.path] = (*peers, node) if peers else node

    def get(self, node_id: NodeRef) -> Node:
        """The node with ``node_id``. Raises NodeNotFoundError."""
        return self.graph.get(node_id)

    def nodes(self) -> list[Node]:
        """Every node of the session, in creation order."""
        return list(self.graph)

    def text_nodes(self, path: str) -> list[TextNode]:
        """The text nodes showing the root-relative ``path``."""
        held, graph = self._path_index.get(path), self.graph
        if held is None:
            return []
        if isinstance(held, TextNode):  # one node, as for nearly every path
            return [held] if held.graph is graph else []
        return [n for n in held if n.graph is graph]

    def _differing(self, keys: Mapping[str, StatKey | None], among: Container[str]) -> list[str]:
        """The paths of ``keys`` that are ``among`` the given ones and whose text nodes
        would read their file again (:meth:`TextNode.differs_from` the stat key a walk
        took, or :meth:`TextNode.changed_on_disk` for a path whose key is None), in the
        order of ``keys``: a resume survey asks it of every file of a tree."""
        index, graph, differing = self._path_index, self.graph, []
        for path, key in keys.items():
            if path not in among:
                continue
            held = index.get(path)
            if held is None:
                continue
            if isinstance(held, TextNode):  # one node, as for nearly every path
                if held.graph is graph and (
                    held.changed_on_disk() if key is None else held.differs_from(key)
                ):
                    differing.append(path)
            elif any(
                [
                    node.changed_on_disk() if key is None else node.differs_from(key)
                    for node in held
                    if node.graph is graph
                ]
            ):
                differing.append(path)
        return differing

    def set_budget(self, budget: int) -> None:
        """Change the token budget of later projections. Raises BudgetError."""
        self.budget = check_budget(budget)

    # -- structure checkpoints --------------------------------------------------------

    def checkpoint(self, name: str) -> None:
        """Save the structure (edges with order, roots, states) under ``name``."""
        self.graph.checkpoint(name)

    def restore(self, name: str) -> list[str]:
        """Restore the structure saved under ``name``; return ids of nodes created since.

        Nodes removed since the checkpoint come back, and are again found by path
        (:meth:`file_changed`) and, for a group with a summarizer, refreshed at tick.

        Raises:
            CheckpointError: unknown name (nothing changes).
        """
        newer = self.graph.restore(name)
        for node in self.graph:
            if isinstance(node, TextNode):
                self._index_path(node)
            elif isinstance(node, GroupNode) and node.summarizer is not None:
                self._refresh[node.id] = node
        return newer

    def checkpoints(self) -> list[str]:
        return self.graph.checkpoints()

    # -- task context -----------------------------------------------------------------

    def fork(self, task_id: str, *, store: BaseCheckpointStore | None = None) -> Context:
        """Return a child of :attr:`context` for the sub-agent ``task_id``.

        Raises:
            ContextError: see :meth:`Context.fork`.
        """
        return self.context.fork(task_id, store=store)

    def merge(self, child: Context) -> None:
        """Fold a forked ``child`` back into :attr:`context` (state and net token usage).

        Raises:
            ContextError: ``child`` is not an unmerged child of :attr:`context`.
        """
        self.context.merge(child)

    # -- background intake ------------------------------------------------------------

    def queue_result(self, apply: Callable[[], None]) -> None:
        """Queue a change for the next tick (thread-safe; background tasks call this)."""
        self._intake.put(apply)

    def file_changed(self, path: str | os.PathLike[str]) -> None:
        """Tell the session a file changed; its text nodes re-read it at the next tick."""
        _, relative = self.resolve_path(path)
        self._intake.add_path(relative)

    def _apply_intake(self) -> list[str]:
        applied: list[str] = []
        while (apply := self._intake.next_result()) is not None:
            apply()
        for path in self._intake.take_paths():
            for node in self.text_nodes(path):
                if node.recompute():
                    applied.append(node.id)
        return applied

    # -- tick -------------------------------------------------------------------------

    def tick(self) -> TickResult:
        """Run one turn (see the module docstring) and return its :class:`TickResult`.

        Safe from plain synchronous code; from async code use :meth:`atick`. The turn
        runs in the calling thread; only the refresh of a group's custom summarizer runs
        on the session's loop (its result waited for). Ticks from several threads run
        one at a time.

        Raises:
            BlockingCallError: called on the session's own loop (use :meth:`atick`), or
                inside a tick of this session (a queued result, a node's recompute).
        """
        self._check_open()
        self.background.refuse_blocking()
        with self._ticking:
            if self._in_tick:  # the same thread, inside its own tick
                raise BlockingCallError(
                    "Session.tick() was called inside a tick of the same session"
                    " (from a queued result or a node's recompute)"
                )
            self._in_tick = True
            try:
                started = time.perf_counter()
                recomputed = self._take_changes()
                if self._summaries_due():
                    self.background.run(self._refresh_summaries())
                return self._finish_turn(started, recomputed)
            finally:
                self._in_tick = False

    async def atick(self) -> TickResult:
        """The async twin of :meth:`tick`."""
        self._check_open()
        started = time.perf_counter()
        recomputed = self._take_changes()
        await self._refresh_summaries()
        return self._finish_turn(started, recomputed)

    def _take_changes(self) -> list[str]:
        """Steps 1 and 2 of a tick: apply the intake, check the locks, recompute the due
        running nodes; returns the ids of the nodes recomputed."""
        with self.graph.batch():
            recomputed = self._apply_intake()
            self._jobs.check_locks()
            recomputed += self._recompute_due(time.time())
        return recomputed

    def _finish_turn(self, started: float, recomputed: list[str]) -> TickResult:
        """Steps 3 to 5 of a tick: the turn's traces and its projection."""
        self.turn += 1
        self._turn_start.position = self._trace_mark.position
        changes = self.graph.traces.take(self._trace_mark)
        projection = take_back(self, changes) or build_projection(
            self.graph,
            self.cache,
            self.budget,
            changes=self._shown_changes(changes, turn=self.turn),
            previous=self._last_projection,
            cache_key=self.cache_key,
        )
        self._last_projection = projection
        self.context.add_tokens({"prompt_tokens": projection.tokens})
        return TickResult(self.turn, changes, recomputed, projection, time.perf_counter() - started)

    def _recompute_due(self, now: float) -> list[str]:
        """Recompute the due running nodes: the scheduled ones, and the file nodes the
        file watch names (new, polled, or told of a change by the OS)."""
        recomputed = []
        for node in list(self.graph.scheduled.values()):
            if node.frequency.is_due(now, node.last_run):
                node.last_run = now
                if node.recompute():
                    recomputed.append(node.id)
        checks, changed = self._files.due(now)
        for file_node in checks:
            file_node.last_run = now
            if file_node.recompute():
                recomputed.append(file_node.id)
        for file_node in changed:
            file_node.last_run = now
            if file_node.recompute(changed=True):
                recomputed.append(file_node.id)
        return recomputed

    def _summaries_due(self) -> bool:
        """Whether a group of this graph has a custom summarizer to run (its summary is
        stale); groups no longer in the graph are forgotten."""
        due = False
        for node in list(self._refresh.values()):
            if node.graph is not self.graph:
                del self._refresh[node.id]
            elif isinstance(node, GroupNode) and node.stale:
                due = True
        return due

    async def _refresh_summaries(self) -> None:
        for node in list(self._refresh.values()):
            if node.graph is not self.graph:
                del self._refresh[node.id]
            elif isinstance(node, GroupNode) and node.stale:
                await node.refresh_summary()

    @property
    def last_projection(self) -> Projection | None:
        """The projection the last tick built (None before the first tick)."""
        return self._last_projection

    def project(self, budget: int | None = None, *, since: int | None = None) -> Projection:
        """Render the current graph within ``budget`` (default: the session's) without
        ticking; the changes section shows what changed since the last tick, or, given
        ``since`` (a position of ``graph.traces``, such as ``len(session.graph.traces)``
        read after an earlier tick), the changes from that position on that the log
        still keeps: for a reader who did not see the ticks in between.

        Raises:
            BudgetError: ``budget`` is not a positive int.
            ArgumentError: ``since`` is not a position of the trace log (an int from 0
                to its length).
        """
        limit = self.budget if budget is None else check_budget(budget)
        traces = self.graph.traces
        if since is None:
            changes = self._shown_changes(traces.since(self._trace_mark.position))
        elif is_int(since) and 0 <= since <= len(traces):
            changes = self._shown_changes(traces[since:])
        else:
            raise ArgumentError(
                f"since must be a position of the trace log, 0 to {len(traces)}, got {since!r}",
                name="since",
                value=since,
            )
        return build_projection(
            self.graph,
            self.cache,
            limit,
            changes=changes,
            previous=self._last_projection,
            cache_key=self.cache_key,
        )

    def _shown_changes(self, changes: list[Trace], *, turn: int | None = None) -> list[Trace]:
        """The changes a projection for ``turn`` lists: none before there is an earlier
        turn to compare with (the first projection shows the building of the graph, not
        changes to it). ``turn`` defaults to the next one."""
        return changes if (self.turn + 1 if turn is None else turn) > 1 else []

    def walk_nodes(self) -> Iterator[Node]:
        """Nodes reachable from the roots, depth-first in order, each once."""
        seen: set[str] = set()
        stack = list(reversed(self.graph.roots()))
        while stack:
            node = stack.pop()
            if node.id not in seen:
                seen.add(node.id)
                yield node
                stack.extend(reversed(node.children))


def _check_lines(lines: Iterable[Any]) -> tuple[int, int | None]:
    """Validate a 1-based inclusive ``(start, end)`` range; ``end=None`` means to the end."""
    try:
        start, end = lines
    except (TypeError, ValueError):
        raise PathError(f"lines must be a (start, end) pair, got {lines!r}", value=lines) from None
    ints = [v for v in (start, end) if v is not None]
    valid = start is not None and all(is_int(v) for v in ints)
    if not valid or start < 1 or (end is not None and end < start):
        raise PathError(
            f"invalid line range {lines!r}: need 1 <= start <= end (end may be None)", value=lines
        )
    return start, end
