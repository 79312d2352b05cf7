"""Structure checkpoints of a context graph: what :meth:`ContextGraph.checkpoint` saves and
how :meth:`ContextGraph.restore` puts it back.

A checkpoint holds the ordered children of every parent, the root order, every node's
state and the node objects themselves (content is not saved: nodes are live objects).
Restoring keeps the graph's invariants: it puts back edges and child order exactly (the
saved structure was acyclic), keeps nodes created since as roots after the saved roots,
brings back nodes removed since, and bumps the version of every parent whose children
differ and every node whose state differs (so caches that compare versions stay valid).

Part of :mod:`dagctx.graph`: it reads and writes the graph's private fields and imports
only :mod:`dagctx.nodes.base` (and the graph for typing).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from operator import attrgetter, ne
from typing import TYPE_CHECKING

from dagctx.graph.traces import RECENT, TraceCursor
from dagctx.nodes.base import Node, NodeState

if TYPE_CHECKING:
    from dagctx.graph.core import ContextGraph

_STATE = attrgetter("state")


class StructureCheckpoint:
    """A saved structure: ordered children per parent, root order, node states, nodes.

    A checkpoint made by :meth:`ContextGraph.checkpoint` does not copy every node's
    children: while it is *live*, the graph hands it a parent's children the first time
    they change afterwards (copy on write), so taking it and restoring it cost what
    changed in between, not the size of the graph. :attr:`children` is assembled on first
    access, which ends the copy on write (the checkpoint then holds a plain copy). States
    are kept as one byte per node.
    """

    __slots__ = (
        "_added",
        "_children",
        "_codes",
        "_cursor",
        "_graph",
        "_pre",
        "_removed",
        "name",
        "nodes",
        "roots",
    )

    def __init__(
        self,
        name: str,
        children: dict[str, tuple[str, ...]],
        roots: tuple[str, ...],
        states: dict[str, NodeState],
        nodes: dict[str, Node],
    ) -> None:
        self.name = name
        self.roots = roots
        self.nodes = nodes
        self._children: dict[str, tuple[str, ...]] | None = children
        self._codes = bytes(states.get(nid, nodes[nid].state) for nid in nodes)
        self._graph: ContextGraph | None = None
        self._pre: dict[str, tuple[str, ...]] = {}  # children before their first change
        self._added: dict[str, None] = {}  # nodes added since, in order
        self._removed: set[str] = set()  # nodes of the checkpoint removed since
        self._cursor: TraceCursor | None = None  # live checkpoints: changes since taken

    @classmethod
    def _live(cls, name: str, graph: ContextGraph) -> StructureCheckpoint:
        saved = cls.__new__(cls)
        saved.name = name
        saved.roots = tuple(graph._roots)
        saved.nodes = dict(graph._nodes)
        saved._codes = bytes(map(_STATE, saved.nodes.values()))
        saved._children = None
        saved._graph = graph
        saved._pre, saved._added, saved._removed = {}, {}, set()
        # Reading the changes since costs less than comparing every node only while they
        # are fewer than the nodes: the log may drop them after that many.
        saved._cursor = graph.traces.cursor(limit=max(len(saved.nodes), RECENT))
        return saved

    @property
    def live(self) -> bool:
        """Whether the graph still reports changes to it (copy on write)."""
        return self._graph is not None

    @property
    def states(self) -> dict[str, NodeState]:
        """Node id → state at the checkpoint."""
        return dict(zip(self.nodes, map(NodeState, self._codes), strict=True))

    @property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Parent id → its children at the checkpoint, in order (parents only)."""
        if self._children is None:
            graph = self._graph
            assert graph is not None
            pre, added = self._pre, self._added
            rows = graph._adj.succ.get  # in node order, as the children are restored
            kids = {
                p: tuple(c)
                for p in graph._nodes
                if (c := rows(p)) and p not in pre and p not in added
            }
            kids.update((p, c) for p, c in pre.items() if c)
            self._children = kids
            graph._retire(self)
            self._pre = {}
        return self._children

    def _changing(self, pid: str, kids: Iterable[str]) -> None:
        if pid not in self._pre and pid not in self._added:
            self._pre[pid] = tuple(kids)

    def __repr__(self) -> str:
        return f"<StructureCheckpoint {self.name!r}: {len(self.nodes)} nodes>"


def restore_structure(graph: ContextGraph, saved: StructureCheckpoint) -> list[str]:
    """Put back the structure of ``saved`` in ``graph``; return ids of nodes created since.

    See :meth:`ContextGraph.restore`. A live checkpoint only revisits the parents whose
    children changed since.
    """
    nodes, adj, kept, name = graph._nodes, graph._adj, saved.nodes, saved.name
    succ = adj.succ
    # Nodes created since: current roots first (in root order), then the others.
    if saved.live:
        added = saved._added
        newer = [nid for nid in graph._roots if nid in added]
        newer += [nid for nid in added if nid not in graph._roots]
    else:
        newer = [nid for nid in graph._roots if nid not in kept]
        if nodes.keys() - kept.keys():
            newer += [nid for nid in nodes if nid not in kept and nid not in graph._roots]
    with graph.batch():
        missing = saved._removed if saved.live else kept.keys() - nodes.keys()
        back = [nid for nid in kept if nid in missing and nid not in nodes] if missing else []
        for nid in back:
            node = kept[nid]
            node.graph = None
            graph.add(node)
        if saved.live:
            targets = dict(saved._pre)
            targets.update((nid, ()) for nid in saved._added if succ[nid])
            changed_parents = [nid for nid, kids in targets.items() if tuple(succ[nid]) != kids]
        else:
            # Compare every node (in node order: the order edges are added back in), with
            # the per-node loop in C (map/compress).
            targets = saved.children
            rows = map(tuple, map(succ.get, nodes, repeat(())))
            changed_parents = list(
                compress(nodes, map(ne, rows, map(targets.get, nodes, repeat(()))))
            )
        for nid in changed_parents:
            graph._children_changing(nid)
            adj.clear_children(nid)
        for nid in changed_parents:
            adj.add_edges((nid, c) for c in targets.get(nid, ()))
        graph._roots = dict.fromkeys(saved.roots)
        for nid in newer:
            if not adj.pred[nid]:
                graph._roots[nid] = None
        graph.structure_version += 1
        if saved.live:
            saved._pre = {}
        for nid in changed_parents:
            nodes[nid].mark_changed(f"restored children from checkpoint {name!r}")
        _restore_states(graph, saved)
        if saved.live:
            saved._removed = set()
            assert saved._cursor is not None
            saved._cursor.position = len(graph.traces)
    return newer


def _restore_states(graph: ContextGraph, saved: StructureCheckpoint) -> None:
    """Set every node of ``saved`` back to its state there. A live checkpoint only
    looks at the nodes with a change recorded since (a state change is one) and the
    nodes removed meanwhile (whose changes were not recorded) — unless the trace log
    dropped some of those changes: then, like a checkpoint that is not live, it compares
    every node."""
    nodes, kept, codes = graph._nodes, saved.nodes, saved._codes
    traces = graph.traces
    cursor = saved._cursor
    if cursor is not None and traces.start <= cursor.position <= len(traces):
        look = {t.node_id for t in traces.since(cursor.position)} | saved._removed
        position = dict(zip(kept, range(len(kept)), strict=True)) if look else {}
        for nid in look:
            i = position.get(nid)
            if i is not None and nodes[nid].state != codes[i]:
                nodes[nid].set_state(NodeState(codes[i]))
        return
    now = bytes(map(_STATE, map(nodes.__getitem__, kept)))
    if now != codes:
        ids = list(kept)
        for i in list(compress(range(len(ids)), map(ne, now, codes))):
            nodes[ids[i]].set_state(NodeState(codes[i]))


__all__ = ["StructureCheckpoint", "restore_structure"]
