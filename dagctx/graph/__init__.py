"""The context graph: typed nodes in an ordered multi-parent DAG, and the change cascade.

Owns the DAG (:mod:`.core`: nodes, ordered edges, roots, glitch-free notification,
scheduling), its edge store (:mod:`._adjacency`, which also builds a networkx graph for
networkx's algorithms), its structure checkpoints (:mod:`.checkpoints`), the trace log
(:mod:`.traces`) and its bulk dump/load for persistence (:mod:`.snapshot`). No module
outside this package touches a graph's private fields. Imports only
:mod:`dagctx.nodes.base` and :mod:`dagctx.errors`; it must not import the projection,
the session or anything that does I/O.
"""

from dagctx.graph.checkpoints import StructureCheckpoint
from dagctx.graph.core import ContextGraph, NodeRef
from dagctx.graph.snapshot import GraphData
from dagctx.graph.traces import TraceCursor, TraceLog

__all__ = ["ContextGraph", "GraphData", "NodeRef", "StructureCheckpoint", "TraceCursor", "TraceLog"]
