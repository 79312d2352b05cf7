"""The edge store of a context graph: a typed adapter over a networkx DiGraph's adjacency.

:class:`Adjacency` is the only code that touches networkx's private adjacency dicts
(``_succ`` / ``_pred``). It hands them out read-only, typed as mappings: a node's children
(or parents) are the keys of its row, in insertion order, so reading them costs a dict
lookup, not the call and allocation of a networkx view — the cascade, the walk and the
checkpoints read them on every change. Every write goes through a method here.

It keeps no invariant of its own beyond networkx's (no repeated edge; an edge's ends are
nodes); acyclicity, root order and the rest belong to :class:`~dagctx.graph.ContextGraph`,
which is its only user. Imports networkx only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import networkx as nx

Row = Mapping[str, object]
"""A node's children (or parents): its keys, in order. The values mean nothing."""


class _NoAttributes(dict[str, object]):
    """The one attribute mapping of every node and edge of a :class:`_Dag`: always empty.

    dagctx stores nothing in networkx's attribute dicts; sharing one empty mapping saves
    two dicts per node and edge. Adding an attribute raises TypeError.
    """

    __slots__ = ()

    def update(self, *args: object, **kwargs: object) -> None:
        if any(args) or kwargs:
            raise TypeError("dagctx graphs keep no node or edge attributes")

    def __setitem__(self, key: object, value: object) -> None:
        raise TypeError("dagctx graphs keep no node or edge attributes")


_NO_ATTRIBUTES = _NoAttributes()


def _no_attributes() -> _NoAttributes:
    return _NO_ATTRIBUTES


if TYPE_CHECKING:  # networkx's stubs make DiGraph generic; the class itself is not
    _DiGraph = nx.DiGraph[str]
else:
    _DiGraph = nx.DiGraph


class _Dag(_DiGraph):
    """A networkx DiGraph whose nodes and edges share one empty attribute mapping."""

    node_attr_dict_factory = staticmethod(_no_attributes)
    edge_attr_dict_factory = staticmethod(_no_attributes)


class Adjacency:
    """Ordered edges parent → child over a networkx DiGraph.

    :attr:`succ` and :attr:`pred` map a node id to its children / parents (the keys of the
    row, in the order the edges were added). They are networkx's own dicts, shared, not
    copied: read them, never write them, and do not keep a row across a write.
    """

    __slots__ = ("_dag", "pred", "succ")

    def __init__(self) -> None:
        self._dag = _Dag()
        # networkx's stubs leave its adjacency dicts out: read them from the instance.
        fields = vars(self._dag)
        self.succ: Mapping[str, Row] = fields["_succ"]
        self.pred: Mapping[str, Row] = fields["_pred"]

    @property
    def digraph(self) -> nx.DiGraph[str]:
        """The networkx graph itself, for networkx's algorithms (read it, do not write)."""
        return self._dag

    def has_edge(self, parent: str, child: str) -> bool:
        row = self.succ.get(parent)
        return row is not None and child in row

    def has_path(self, source: str, target: str) -> bool:
        """Whether ``target`` is reachable from ``source`` along edges."""
        return bool(nx.has_path(self._dag, source, target))

    def add_node(self, node_id: str) -> None:
        self._dag.add_node(node_id)

    def remove_node(self, node_id: str) -> None:
        """Remove a node and every edge at it."""
        self._dag.remove_node(node_id)

    def add_edge(self, parent: str, child: str) -> None:
        """Append ``child`` to the children of ``parent`` (and ``parent`` to its parents)."""
        self._dag.add_edge(parent, child)

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """Add edges in the given order (which fixes both children and parents order)."""
        self._dag.add_edges_from(edges)

    def remove_edge(self, parent: str, child: str) -> None:
        self._dag.remove_edge(parent, child)

    def insert_child(self, parent: str, child: str, position: int) -> None:
        """Make ``child`` the child of ``parent`` at ``position`` among its children."""
        tail = list(self.succ[parent])[position:]
        dag = self._dag
        for sibling in tail:
            dag.remove_edge(parent, sibling)
        dag.add_edge(parent, child)
        for sibling in tail:
            dag.add_edge(parent, sibling)

    def clear_children(self, parent: str) -> None:
        """Remove every edge from ``parent`` to its children."""
        self._dag.remove_edges_from([(parent, c) for c in list(self.succ[parent])])


__all__ = ["Adjacency", "Row"]
