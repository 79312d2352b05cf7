"""Work-coordination verbs: claim files for a piece of work and see other agents' claims.

Each session is one agent (id ``pid-random``, optional name) on a coordination store
(:mod:`dagctx.runtime.coordination`), by default ``<root>/.dagctx/coordination.db``; configure it
with ``use_coordination(path, stale_after=..., agent_name=...)`` before the first claim
(a ``postgresql://`` URL, or the session's ``store``, for agents on several machines).
``work_on(intent, *files, mode=...)`` stores a claim and adds a
:class:`~dagctx.nodes.work.WorkNode` that every tick heartbeats the claim and shows the
conflicts with other agents' claims; ``work_update`` changes the claim, ``work_done``
releases it, ``work_list`` lists every live claim. Closing the session releases all of its
agent's claims. A refused call changes neither the graph nor the store.

The board is held by the session's :class:`~dagctx.session.parts.work.Coordination` part,
``self._work``.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable

from dagctx._fs import STATE_DIR, make_state_dir
from dagctx.errors import (
    CoordinationError,
    ForeignWorkError,
    NodeClosedError,
    NodeTypeError,
    PathError,
)
from dagctx.graph import NodeRef
from dagctx.nodes.base import NodeState
from dagctx.nodes.work import WorkNode
from dagctx.runtime.coordination import (
    DEFAULT_STALE_AFTER,
    Agent,
    Claim,
    WorkBoard,
    check_ttl,
    open_coordination_store,
)
from dagctx.session.core import SessionCore

STORE_FILE = "coordination.db"  # in the session's state directory (.dagctx)


class WorkVerbs(SessionCore):
    """``work_on``, ``work_update``, ``work_done``, ``work_list`` and the store set-up."""

    def use_coordination(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        agent_name: str | None = None,
    ) -> WorkBoard:
        """Choose this session's coordination store, claim lifetime and agent name.

        ``path`` defaults to the session's ``store`` URL (or ``DAGCTX_STORE``) when that
        is a ``postgresql://`` URL, else to ``<root>/.dagctx/coordination.db``; a
        ``postgresql://`` URL keeps the claims in PostgreSQL, keyed by the repository
        (:mod:`dagctx.runtime.coordination_pg`); a relative path is taken from the session
        root (it may be outside it, to share a store across trees).
        Claims expire ``stale_after`` seconds after their last heartbeat (one per tick).

        Raises:
            CoordinationError: the session holds active claims, a bad ``stale_after`` or
                ``agent_name``, or the store cannot be opened (also: the default store's
                ``.dagctx`` is a symlink or not a directory, see
                :func:`dagctx._fs.make_state_dir`).
        """
        self._check_open()
        current = self._work.board
        if current is not None and self._active_work(current):
            raise CoordinationError(
                f"this session holds active claims in {str(current.store.location)!r};"
                " finish them with work_done() before choosing another store",
                value=current.store.location,
            )
        check_ttl(stale_after)
        agent = Agent.new(agent_name)
        if path is not None and not isinstance(path, str | os.PathLike):
            raise CoordinationError(f"a store path must be a path, got {path!r}", value=path)
        if path is None:
            path = self.store
        if path is None:
            try:
                target: str | os.PathLike[str] = make_state_dir(self.root / STATE_DIR) / STORE_FILE
            except OSError as exc:
                raise CoordinationError(
                    f"cannot open the coordination store: {exc}", value=exc.filename
                ) from exc
        else:
            target = path
        store = open_coordination_store(target, root=self.root)
        board = WorkBoard(store, agent, stale_after=stale_after, tick_of=_turn_of(self))
        self._work.replace(board)
        return board

    def coordination(self) -> WorkBoard:
        """This session's board (agent + store), opening the default store on first use.

        Raises:
            CoordinationError: the default store cannot be opened.
        """
        board = self._work.board
        return board if board is not None else self.use_coordination()

    def work_on(
        self,
        intent: str,
        *files: str | os.PathLike[str],
        mode: str = "write",
        parent: NodeRef | None = None,
        state: NodeState | str | None = None,
        priority: int | None = None,
    ) -> WorkNode:
        """Claim ``files`` (under the root; a directory covers what is below it) for
        ``intent`` and add a WorkNode showing the claim and its conflicts; return it.

        Raises:
            PathError: a file outside the session root.
            CoordinationError: an empty intent, a mode other than read/write, or a store
                failure. NodeNotFoundError: unknown parent; GraphError: bad state/priority.
        """
        self._check_open()
        paths = self._claim_paths(files)
        if parent is not None:
            self.get(parent)
        board = self.coordination()
        claim = board.new_claim(intent, paths, mode)
        node = WorkNode(
            claim, root=self.root.as_posix(), board=board, state=state, priority=priority
        )
        board.put(claim)
        node.observe(board.live_claims())
        self.add(node, parent=parent)
        return node

    def work_update(
        self,
        node: NodeRef,
        intent: str | None = None,
        files: Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
        mode: str | None = None,
    ) -> WorkNode:
        """Change a claim's intent, files (replaced as a whole) or mode, and renew it (an
        expired claim is taken again); return the node.

        Raises:
            NodeNotFoundError: unknown id. NodeTypeError / ForeignWorkError: not a
            WorkNode of this session. NodeClosedError: the work is done. PathError /
            CoordinationError: as for :meth:`work_on`.
        """
        self._check_open()
        work = self._own_work(node)
        if work.status == "done":
            raise NodeClosedError(
                f"work #{work.id} ({work.intent!r}) is done; start a new one", node_id=work.id
            )
        if isinstance(files, str | os.PathLike):
            files = [files]
        paths = work.paths if files is None else self._claim_paths(files)
        board = self.coordination()
        claim = board.new_claim(
            work.intent if intent is None else intent,
            paths,
            work.access if mode is None else mode,
            claim_id=work.claim_id,
        )
        board.put(claim)
        before = (work.intent, work.access, work.paths, work.status)
        work.adopt_claim(claim)
        changed = before != (work.intent, work.access, work.paths, work.status)
        work.refresh(board.live_claims(), _update_description(before, work) if changed else None)
        return work

    def work_done(self, node: NodeRef) -> bool:
        """Release a claim and mark its WorkNode done; False if it was done already.

        Raises:
            NodeNotFoundError: unknown id. NodeTypeError / ForeignWorkError: not a
            WorkNode of this session.
            CoordinationError: the store failed (the node stays as it was).
        """
        self._check_open()
        work = self._own_work(node)
        if work.status == "done":
            return False
        self.coordination().release(work.claim_id)
        return work.finish()

    def work_list(self) -> list[Claim]:
        """Every live claim in the store (all agents, this one included), oldest first.

        Raises:
            CoordinationError: the store failed.
        """
        self._check_open()
        return list(self.coordination().live_claims())

    # -- helpers ----------------------------------------------------------------------

    def _claim_paths(self, files: Iterable[object]) -> list[str]:
        paths = []
        for path in files:
            if not isinstance(path, str | os.PathLike):
                raise PathError(f"a claimed file must be a path, got {path!r}", path=path)
            absolute, _ = self.resolve_path(path)
            paths.append(absolute.as_posix())
        return paths

    def _own_work(self, ref: NodeRef) -> WorkNode:
        node = self.get(ref)
        if not isinstance(node, WorkNode):
            raise NodeTypeError(
                f"#{node.id} is a {node.type_name} node, not a work node",
                node_id=node.id,
                expected="work",
            )
        if node.board is None or node.board is not self._work.board:
            raise ForeignWorkError(
                f"work #{node.id} is not a claim of this session's agent (a loaded or"
                " foreign node); start a new one with work_on()",
                node_id=node.id,
            )
        return node

    def _active_work(self, board: WorkBoard) -> bool:
        return any(
            isinstance(n, WorkNode) and n.board is board and n.status == "active"
            for n in self.graph
        )


def _turn_of(session: SessionCore) -> Callable[[], int]:
    """A callable returning the session's turn without keeping the session alive."""
    ref = weakref.ref(session)

    def turn() -> int:
        alive = ref()
        return alive.turn if alive is not None else -1

    return turn


def _update_description(before: tuple[str, str, tuple[str, ...], str], work: WorkNode) -> str:
    intent, mode, paths, status = before
    parts = []
    if status != work.status:
        parts.append("claimed again")
    if intent != work.intent:
        parts.append(f"intent {work.intent!r}")
    if mode != work.access:
        parts.append(f"mode {work.access}")
    if paths != work.paths:
        parts.append(f"{len(work.paths)} files")
    return "work updated: " + ", ".join(parts)
