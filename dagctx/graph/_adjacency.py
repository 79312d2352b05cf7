"""The edge store of a context graph: each node's children and parents, in order.

:class:`Adjacency` keeps :attr:`~Adjacency.succ` (the children, in order), a dict keyed by
the nodes that have children; reading it at any other node gives the empty row (so it
reads like a row per node, but ``in`` and iteration see parents only). A node's parents
(in the order they were linked) are kept in the node itself, in its ``_parent_ids`` slot,
which only this module writes: :attr:`~Adjacency.pred` reads them by id through the
graph's dict of nodes (a dict keyed by every node id for the parents alone would cost more
than the slot). It hands the rows out read-only; every write goes through a method here.
Reading a row costs a dict lookup (the cascade, the walk and the checkpoints read them on
every change).

The rows are lean because a graph of files has a row per node: a node without children
has no row of children at all (most nodes of a tree are files), a node without parents
shares one empty tuple, a parent's children are a tuple while there are at most
:data:`SMALL_ROW` of them (a directory's files; a new tuple per link or unlink, of at most
that many ids) and a dict beyond (ordered, O(1) membership and removal, whatever the
fan-out), and a node's parents are a tuple (most nodes have one or two; a new tuple per
link or unlink of that node, except that children whose only parent is the same node
share one). That is about a third of what a
networkx ``DiGraph`` spends per node and edge (a dict per node per direction and a dict
per edge end). networkx stays the engine of graph algorithms: :attr:`~Adjacency.digraph`
builds a ``DiGraph`` with the same nodes and edges, both orders included, when one is
asked for.

It keeps no invariant of its own beyond consistency (``p`` is in ``pred[c]`` exactly when
``c`` is in ``succ[p]``, each once; the keys of ``pred`` are the nodes, those of ``succ``
the nodes with children); acyclicity, root
order and the rest belong to :class:`~dagctx.graph.ContextGraph`, which is its only
user. Imports networkx only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import ClassVar, Protocol

import networkx as nx

Row = Collection[str]
"""A node's children (or parents): ids in order, supporting ``in`` and ``len``."""

_NONE: tuple[str, ...] = ()
#: Children kept in a tuple up to this many (a third of a dict's bytes), in a dict beyond.
SMALL_ROW = 16


class Holder(Protocol):
    """What the adjacency needs of a node: the slot that holds its parents (``()``
    while it has none, and once it leaves the graph), and whether a change of them
    changes its render (:attr:`~dagctx.nodes.base.Node.placed`)."""

    _parent_ids: tuple[str, ...]
    placed: ClassVar[bool]


class _Parents(Mapping[str, tuple[str, ...]]):
    """Node id → its parents, read from the nodes themselves (every node of the graph)."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: Mapping[str, Holder]) -> None:
        self._nodes = nodes

    def __getitem__(self, node_id: str) -> tuple[str, ...]:
        return self._nodes[node_id]._parent_ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes


class _Children(dict[str, "dict[str, None] | tuple[str, ...]"]):
    """Parent id → its children; a node without children reads as the empty row (and is
    not stored: reading it does not add it)."""

    __slots__ = ()

    def __missing__(self, node_id: str) -> tuple[str, ...]:
        return _NONE


def _row(kids: Collection[str]) -> dict[str, None] | tuple[str, ...]:
    """A row of children in order: a tuple while it is small, a dict beyond."""
    return tuple(kids) if len(kids) <= SMALL_ROW else dict.fromkeys(kids)


class Adjacency:
    """Ordered edges parent → child between the nodes of ``nodes`` (the graph's dict of
    nodes by id, which the graph keeps: a node is added there, with no parents, before
    its first edge, and removed after :meth:`remove_node`).

    :attr:`succ` and :attr:`pred` map every node id to its children / parents (a
    :data:`Row`, in order; ``succ`` holds only the nodes with children and reads the
    others as the empty row). They are the store itself, not copies: read them, never
    write them, and do not keep a row across a write.
    """

    __slots__ = ("_children", "_nodes", "moved", "pred", "succ")

    def __init__(self, nodes: Mapping[str, Holder]) -> None:
        self._children = _Children()
        self._nodes = nodes
        #: Ids of the placed nodes whose parents changed since the graph's projection
        #: last took them (:meth:`~dagctx.graph.ContextGraph.take_moved`).
        self.moved: set[str] = set()
        self.succ: Mapping[str, Row] = self._children
        self.pred: Mapping[str, Row] = _Parents(nodes)

    @property
    def digraph(self) -> nx.DiGraph[str]:
        """A new networkx ``DiGraph`` of the same nodes and edges, for networkx's
        algorithms: nodes in insertion order, each node's successors in child order and
        its predecessors in parent order (orders no sequence of ``add_edge`` calls can
        always give both of, so its adjacency dicts are filled directly)."""
        dag: nx.DiGraph[str] = nx.DiGraph()
        dag.add_nodes_from(self._nodes)
        # networkx's stubs leave its adjacency dicts out: reach them through the instance.
        fields = vars(dag)
        succ: dict[str, dict[str, dict[str, object]]] = fields["_succ"]
        pred: dict[str, dict[str, dict[str, object]]] = fields["_pred"]
        for parent, kids in self._children.items():
            succ[parent].update((child, {}) for child in kids)
        for child, node in self._nodes.items():
            pred[child].update((parent, succ[parent][child]) for parent in node._parent_ids)
        return dag

    def has_edge(self, parent: str, child: str) -> bool:
        return child in self._children.get(parent, _NONE)

    def has_path(self, source: str, target: str) -> bool:
        """Whether ``target`` is reachable from ``source`` along edges (``source`` itself
        included)."""
        children = self._children
        seen = {source}
        stack = [source]
        while stack:
            nid = stack.pop()
            if nid == target:
                return True
            for child in children[nid]:
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return False

    def remove_node(self, node_id: str) -> None:
        """Remove every edge at a node (before the graph drops it from its nodes)."""
        for child in self._children.pop(node_id, _NONE):
            self._drop_parent(child, node_id)
        node = self._nodes[node_id]
        for parent in node._parent_ids:
            self._drop_child(parent, node_id)
        node._parent_ids = _NONE
        self.moved.discard(node_id)

    def add_edge(self, parent: str, child: str) -> None:
        """Append ``child`` to the children of ``parent`` (and ``parent`` to its parents);
        an existing edge is left as it is."""
        kids = self._children[parent]
        if child in kids:
            return
        self._nodes[child]._parent_ids = self._with_parent(child, parent, kids)
        if isinstance(kids, dict):
            kids[child] = None
        else:
            self._children[parent] = _row((*kids, child))

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """Add edges in the given order (which fixes both children and parents order)."""
        for parent, child in edges:
            self.add_edge(parent, child)

    def add_rows(self, rows: Mapping[str, Collection[str]]) -> None:
        """Give each parent of ``rows`` its children, in order, in a graph without edges
        where no child has another parent (a forest): the rows and parents that
        :meth:`add_edges` makes, each made once (the children of a parent share one
        tuple of parents, as :meth:`_with_parent` shares it)."""
        nodes = self._nodes
        for parent, kids in rows.items():
            self._children[parent] = _row(kids)
            shared = (parent,)
            for child in kids:
                nodes[child]._parent_ids = shared

    def set_orders(
        self, children: Mapping[str, Sequence[str]], parents: Mapping[str, Sequence[str]]
    ) -> None:
        """Give each parent of ``children`` its children and each child of ``parents`` its
        parents, each in the order given, in a graph without edges (``children`` and
        ``parents`` naming the same edges): both orders of a loaded graph, which no
        sequence of :meth:`add_edge` calls can always make."""
        for parent, kids in children.items():
            self._children[parent] = _row(kids)
        nodes = self._nodes
        for child, ranked in parents.items():
            nodes[child]._parent_ids = tuple(ranked)

    def remove_edge(self, parent: str, child: str) -> None:
        """Remove the edge ``parent → child`` (which must exist)."""
        self._drop_child(parent, child)
        self._drop_parent(child, parent)

    def insert_child(self, parent: str, child: str, position: int) -> None:
        """Make ``child`` the child of ``parent`` at ``position`` among its children
        (``parent`` goes last among the parents of ``child``)."""
        order = list(self._children[parent])
        self._nodes[child]._parent_ids = self._with_parent(child, parent, order)
        order.insert(position, child)
        self._children[parent] = _row(order)

    def clear_children(self, parent: str) -> None:
        """Remove every edge from ``parent`` to its children."""
        for child in self._children[parent]:
            self._drop_parent(child, parent)
        self._children.pop(parent, None)

    def _with_parent(self, child: str, parent: str, kids: Row) -> tuple[str, ...]:
        """The parents of ``child`` with ``parent`` appended, ``kids`` being the
        children ``parent`` had before. For a first parent that is the ``(parent,)``
        tuple of its first child when that child has no other parent: the children of a
        directory share one tuple instead of one each."""
        node = self._nodes[child]
        if node.placed:
            self.moved.add(child)
        parents = node._parent_ids
        if parents:
            return (*parents, parent)
        if kids:
            first = self._nodes[next(iter(kids))]._parent_ids
            if first == (parent,):
                return first
        return (parent,)

    def _drop_child(self, parent: str, child: str) -> None:
        kids = self._children[parent]
        if isinstance(kids, dict):
            del kids[child]
            if len(kids) <= SMALL_ROW:
                self._children[parent] = tuple(kids)
        elif len(kids) > 1:
            self._children[parent] = tuple(k for k in kids if k != child)
        else:
            del self._children[parent]

    def _drop_parent(self, child: str, parent: str) -> None:
        node = self._nodes[child]
        node._parent_ids = tuple(p for p in node._parent_ids if p != parent)
        if node.placed:
            self.moved.add(child)


__all__ = ["Adjacency", "Holder", "Row"]
