"""A graph's whole state as plain data: :meth:`ContextGraph.dump` and :meth:`ContextGraph.load`.

:class:`GraphData` is what persistence needs to rebuild a graph exactly: its nodes (live
objects: serializing them is the caller's business), every edge with its position among
the parent's children *and* among the child's parents, the root order, the structure
checkpoints, the logical clock, the id counters and the kept traces with the position of
the first.

:func:`load_graph` checks the graph's invariants on the data before it changes anything
and raises :class:`~dagctx.errors.GraphLoadError` (naming the bad value) when one breaks:

- every id an edge or a root names is a node of the data; no node id twice;
- no edge repeated (the same parent and child, or two edges at one position);
- acyclic (following the parents never comes back to a node);
- the roots are exactly the nodes without parents, each once;
- the clock and the id counters are ints in range; the trace start is not negative.

Part of :mod:`dagctx.graph`: it writes the graph's private fields; imports only
:mod:`dagctx.nodes.base` and :mod:`dagctx.errors` (and the graph for typing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from graphlib import CycleError as GraphlibCycleError
from graphlib import TopologicalSorter
from typing import TYPE_CHECKING

from dagctx._validate import is_int
from dagctx.errors import GraphLoadError
from dagctx.nodes.base import Node, Trace

if TYPE_CHECKING:
    from dagctx.graph.checkpoints import StructureCheckpoint
    from dagctx.graph.core import ContextGraph

Edge = tuple[str, int, str, int]
"""``(parent, position among the parent's children, child, rank among the child's parents)``."""

CLOCK_LIMIT = 2**62
"""Clocks and counters stay below this (every change adds one; SQLite stops at 2**63)."""


@dataclass(slots=True)
class GraphData:
    """Everything :meth:`ContextGraph.load` needs to rebuild a graph (see the module)."""

    nodes: list[Node]
    edges: list[Edge]
    roots: list[str]
    checkpoints: list[StructureCheckpoint] = field(default_factory=list)
    clock: int = 0
    #: Node type name → the last number :meth:`ContextGraph.new_id` gave it.
    id_counters: dict[str, int] = field(default_factory=dict)
    traces: list[Trace] = field(default_factory=list)
    trace_start: int = 0  # position of ``traces[0]`` in the trace log
    #: Identity of the trace log dumped (:attr:`TraceLog.log_id`); ignored by ``load``.
    trace_log_id: str = ""


def dump_graph(graph: ContextGraph) -> GraphData:
    """The state of ``graph`` as :class:`GraphData` (node objects are shared, not copied)."""
    succ, pred = graph._adj.succ, graph._adj.pred
    rank = {child: {p: i for i, p in enumerate(pred[child])} for child in pred if pred[child]}
    edges: list[Edge] = [
        (parent, position, child, rank[child][parent])
        for parent in graph._nodes
        for position, child in enumerate(succ[parent])
    ]
    traces = graph.traces
    return GraphData(
        nodes=list(graph._nodes.values()),
        edges=edges,
        roots=list(graph._roots),
        checkpoints=[graph._checkpoints[name] for name in graph._checkpoints],
        clock=graph.clock,
        id_counters=dict(graph._id_counters),
        traces=list(traces),
        trace_start=traces.start,
        trace_log_id=traces.log_id,
    )


def load_graph(graph: ContextGraph, data: GraphData) -> None:
    """Give ``graph`` the state in ``data``; see :meth:`ContextGraph.load`."""
    ids = [node.id for node in data.nodes]
    known = set(ids)
    if len(known) != len(ids):
        twice = next(nid for nid in ids if ids.count(nid) > 1)
        raise GraphLoadError(f"node id {twice!r} appears twice", value=twice)
    extra = [nid for nid in graph._nodes if nid not in known]
    if extra:
        raise GraphLoadError(
            f"the graph holds node {extra[0]!r}, which the data lacks", value=extra[0]
        )
    clash = next((n for n in data.nodes if n.graph not in (None, graph)), None)
    if clash is not None or any(graph._adj.succ.values()) or graph._checkpoints:
        raise GraphLoadError("load needs a new graph (only nodes of the data added)", value=clash)
    rows = _forest_rows(data.edges, known)
    orders = _orders(data.edges, known) if rows is None else ({}, {})
    children_of = {child for _, _, child, _ in data.edges}
    parentless_ids = [nid for nid in ids if nid not in children_of]
    roots = data.roots
    if len(set(roots)) != len(roots) or set(roots) != set(parentless_ids):
        raise GraphLoadError(f"roots {roots} are not the nodes without parents", value=roots)
    _check_count("'clock'", data.clock)
    for type_name, number in data.id_counters.items():
        _check_count(f"id counter {type_name!r}", number)
    _check_count("trace start", data.trace_start)
    # Checked: now change the graph.
    for node in data.nodes:
        if node.graph is None:
            graph.add(node)
    if rows is None:
        graph._adj.set_orders(*orders)
    else:
        graph._adj.add_rows(rows)
    graph._roots = dict.fromkeys(roots)
    graph.structure_version += 1
    graph.clock = data.clock
    graph._id_counters = dict(data.id_counters)
    for saved in data.checkpoints:
        graph.put_checkpoint(saved)
    graph.traces.load(data.traces, data.trace_start)


def _check_count(what: str, value: object) -> None:
    if not is_int(value) or not 0 <= value < CLOCK_LIMIT:
        raise GraphLoadError(f"bad {what}: {value!r}", value=value)


def _forest_rows(edges: list[Edge], known: set[str]) -> dict[str, list[str]] | None:
    """Each parent's children in position order, when every node named is known, no
    node is a child twice (so each has one parent, at rank 0), a parent's positions are
    distinct ints, and following the parents never comes back to a node: a forest, as a
    watched tree of directories is, checked in bulk. None for any other edges, which
    :func:`_orders` checks edge by edge (and names what breaks)."""
    if not edges:
        return {}
    parents, positions, children, ranks = zip(*edges, strict=True)
    child_set = set(children)
    if (
        len(child_set) != len(edges)
        or set(ranks) != {0}
        or set(map(type, positions)) != _INT
        or not known.issuperset(parents)
        or not known.issuperset(child_set)
        or len(set(zip(parents, positions, strict=True))) != len(edges)
    ):
        return None
    rows: dict[str, list[str]] = {}
    for parent, _, child, _ in sorted(edges, key=_parent_and_position):
        rows.setdefault(parent, []).append(child)
    # Acyclic when walking down from the parents that are no one's child reaches every
    # child (a cycle of single parents hangs below no such parent).
    stack = [parent for parent in rows if parent not in child_set]
    reached = 0
    while stack:
        kids = rows[stack.pop()]
        reached += len(kids)
        stack.extend(rows.keys() & kids)
    return rows if reached == len(edges) else None


_INT = frozenset({int})


def _parent_and_position(edge: Edge) -> tuple[str, int]:
    return edge[0], edge[1]


def _orders(
    edges: list[Edge], known: set[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each parent's children in position order and each child's parents in rank order,
    as saved: both set at once (:meth:`Adjacency.set_orders`), since inserting the edges
    one by one cannot always give both (node 2's children [3, 1] and node 4's [1, 3],
    while 1's parents are [2, 4] and 3's [4, 2], each ask for the other's edge first).

    Raises:
        GraphLoadError: an unknown id, a repeated edge or position, or a cycle.
    """
    kids: dict[str, dict[int, str]] = {}
    parents: dict[str, dict[int, str]] = {}
    for parent, position, child, rank in edges:
        for nid in (parent, child):
            if nid not in known:
                raise GraphLoadError(f"an edge names unknown node {nid!r}", value=nid)
        of_child = parents.setdefault(child, {})
        taken = position in kids.get(parent, {}) or rank in of_child
        if taken or parent in of_child.values():
            raise GraphLoadError(
                f"the edge {parent!r} → {child!r} is repeated", value=(parent, child)
            )
        kids.setdefault(parent, {})[position] = child
        of_child[rank] = parent
    if all(len(ranked) == 1 for ranked in parents.values()):
        _check_tree(parents)
    else:
        try:
            TopologicalSorter({c: list(ps.values()) for c, ps in parents.items()}).prepare()
        except GraphlibCycleError as exc:
            cycle = exc.args[1]
            raise GraphLoadError(f"the edges close a cycle: {cycle}", value=cycle) from exc
    return _in_order(kids), _in_order(parents)


def _in_order(table: dict[str, dict[int, str]]) -> dict[str, list[str]]:
    return {nid: [ranked[i] for i in sorted(ranked)] for nid, ranked in table.items()}


def _check_tree(parents: dict[str, dict[int, str]]) -> None:
    """Raise GraphLoadError if following the (single) parent links ever comes back to a
    node already on the way (a cycle)."""
    parent_of = {child: next(iter(ranked.values())) for child, ranked in parents.items()}
    settled: set[str] = set()  # nodes whose chain of parents reaches a root
    for start in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        nid: str | None = start
        while nid is not None and nid not in settled:
            if nid in on_path:
                cycle = [*path[path.index(nid) :], nid]
                raise GraphLoadError(f"the edges close a cycle: {cycle}", value=cycle)
            path.append(nid)
            on_path.add(nid)
            nid = parent_of.get(nid)
        settled.update(path)


__all__ = ["CLOCK_LIMIT", "Edge", "GraphData", "dump_graph", "load_graph"]
