"""The walk at the requested states, as flat arrays the incremental projection indexes.

:class:`Layout` holds what :func:`~dagctx.projection.walk.walk` yields — visible entries
in depth-first preorder, a repeated (multi-parent) node as a reference entry — plus each
entry's walk parent and the index of every node's first entry and of its references.
It depends only on structure and requested states, so it is rebuilt only when the graph's
structure version or a node's requested state changes. Each entry's relevance level
(:mod:`dagctx.projection.relevance`) is stored beside it; the degrade order reads it.
"""

from __future__ import annotations

from array import array

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState


class Layout:
    """Visible entries of a graph at the requested states (see the module docstring).

    Attributes:
        nodes: the node of each entry.
        ref: 1 where the entry is a reference to a node shown earlier.
        end: one past the last entry of each entry's subtree.
        parent: the walk parent entry of each entry (-1 for roots).
        requested: each entry's node state when the layout was built.
        first: node id → index of its (non-reference) entry.
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
        first: dict[str, int] = {}
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
            if node.id in first:
                ref.append(1)
                refs.setdefault(node.id, []).append(index)
                continue
            ref.append(0)
            first[node.id] = index
            if state in node.expands_at:
                kids = graph.child_nodes(node.id)
                if kids:
                    stack.append(~index)
                    stack.extend((kid, index) for kid in reversed(kids))
        self.nodes, self.ref, self.end, self.parent = nodes, ref, end, parent
        self.requested, self.first, self.refs = requested, first, refs
        self.level = array("H", bytes(2 * len(nodes)))

    def __len__(self) -> int:
        return len(self.nodes)
