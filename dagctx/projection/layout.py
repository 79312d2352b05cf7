"""The walk at the requested states, as flat arrays the incremental projection indexes.

:class:`Layout` holds what :func:`~dagctx.projection.walk.walk` yields — visible entries
in depth-first preorder, a repeated (multi-parent) node as a reference entry — plus each
entry's walk parent and the index of every node's first entry and of its references.
It depends only on structure and requested states, so it is rebuilt only when the graph's
structure version or a node's requested state changes. Each entry's relevance level
(:mod:`dagctx.projection.relevance`) is stored beside it; the degrade order reads it.

The index of each node's first entry is kept in the node itself (its ``_entry`` slot,
written when a layout is built; :class:`FirstEntries` reads it): a slot costs less than
a dict entry (about 30 bytes a node at repo-10k).
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Iterator, Mapping
from itertools import count

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState

_stamps = count(1)
# graph → the stamp of the last layout built of it: the layout whose indices its nodes hold
_written: weakref.WeakKeyDictionary[ContextGraph, int] = weakref.WeakKeyDictionary()


class FirstEntries(Mapping[str, int]):
    """Node id → index of the node's first (not a reference) entry in a layout, read from
    the node's ``_entry`` slot. An index is taken when the layout's entry there is that
    node and not a reference, so it is right whoever wrote it; a node for which it is
    not is outside the layout, unless another layout of the graph was built since (a
    second projector), which may have written its own indices: then a dict of every
    entry is made once and read instead. :meth:`table` gives that dict for passes over
    many ids (a focus change's), which read it faster than :meth:`index`."""

    __slots__ = ("_graph", "_layout", "_n", "_stamp", "_table")

    def __init__(self, graph: ContextGraph, layout: Layout, n: int, stamp: int) -> None:
        self._graph = graph
        self._layout = layout
        self._n = n  # nodes with an entry
        self._stamp = stamp
        self._table: dict[str, int] | None = None

    def table(self) -> dict[str, int]:
        """Node id → index of its first entry, as a dict (made on first use, then kept)."""
        if self._table is None:
            nodes, ref = self._layout.nodes, self._layout.ref
            self._table = {n.id: i for i, n in enumerate(nodes) if not ref[i]}
        return self._table

    def index(self, node_id: str) -> int:
        """The index of the node's first entry, or -1 when it has none."""
        if self._table is not None:
            return self._table.get(node_id, -1)
        graph = self._graph
        if node_id not in graph:
            return -1
        node = graph.get(node_id)
        i, layout = node._entry, self._layout
        if 0 <= i < len(layout.nodes) and layout.nodes[i] is node and not layout.ref[i]:
            return i
        if _written.get(graph) == self._stamp:  # the nodes hold this layout's indices
            return -1
        return self.table().get(node_id, -1)

    def __getitem__(self, node_id: str) -> int:
        i = self.index(node_id)
        if i < 0:
            raise KeyError(node_id)
        return i

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and self.index(node_id) >= 0

    def __iter__(self) -> Iterator[str]:
        nodes, ref = self._layout.nodes, self._layout.ref
        return (n.id for i, n in enumerate(nodes) if not ref[i])

    def __len__(self) -> int:
        return self._n


class Layout:
    """Visible entries of a graph at the requested states (see the module docstring).

    Attributes:
        nodes: the node of each entry.
        ref: 1 where the entry is a reference to a node shown earlier.
        end: one past the last entry of each entry's subtree.
        parent: the walk parent entry of each entry (-1 for roots).
        requested: each entry's node state when the layout was built.
        first: node id → index of its (non-reference) entry (:class:`FirstEntries`).
        refs: node id → indices of its reference entries (multi-parent nodes only).
        hidden: ids of nodes left out only because their own state is HIDDEN (a new
            state makes them visible: the layout must be rebuilt).
        version: the graph's structure version the layout was built at.
        level: each entry's relevance level (higher: degraded later; 0 until leveled).
    """

    __slots__ = (
        "end",
        "first",
        "hidden",
        "level",
        "nodes",
        "parent",
        "ref",
        "refs",
        "requested",
        "version",
    )

    def __init__(self, graph: ContextGraph) -> None:
        self.version = graph.structure_version
        nodes: list[Node] = []
        ref = bytearray()
        end = array("i")
        parent = array("i")
        requested = bytearray()
        stamp = next(_stamps)
        _written[graph] = stamp
        firsts = 0  # nodes with an entry
        refs: dict[str, list[int]] = {}
        self.hidden: set[str] = set()
        hidden = NodeState.HIDDEN
        # Stack items: (node, walk parent) to enter, or ~index: the subtree of index ends.
        stack: list[tuple[Node, int] | int] = [(r, -1) for r in reversed(graph.roots())]
        while stack:
            item = stack.pop()
            if isinstance(item, int):
                end[~item] = len(nodes)
                continue
            node, up = item
            state = node.state
            if state == hidden:
                self.hidden.add(node.id)
                continue
            index = len(nodes)
            nodes.append(node)
            end.append(index + 1)
            parent.append(up)
            requested.append(state)
            seen = node._entry  # this walk's index if it met the node already
            if 0 <= seen < index and nodes[seen] is node and not ref[seen]:
                ref.append(1)
                refs.setdefault(node.id, []).append(index)
                continue
            ref.append(0)
            firsts += 1
            node._entry = index
            if state in node.expands_at:
                kids = graph.child_nodes(node.id)
                if kids:
                    stack.append(~index)
                    stack.extend((kid, index) for kid in reversed(kids))
        self.nodes, self.ref, self.end, self.parent = nodes, ref, end, parent
        self.requested, self.refs = requested, refs
        self.first = FirstEntries(graph, self, firsts, stamp)
        self.level = array("H", bytes(2 * len(nodes)))

    def __len__(self) -> int:
        return len(self.nodes)
