"""The context graph: typed nodes in an ordered multi-parent DAG, and the change cascade.

Owns the DAG (:mod:`.core`: nodes, ordered edges, roots, glitch-free notification,
scheduling), its structure checkpoints and the trace log. Imports only
:mod:`dagctx.nodes.base` and :mod:`dagctx.errors`; it must not import the projection,
the session or anything that does I/O.
"""

from dagctx.graph.core import ContextGraph, NodeRef, StructureCheckpoint

__all__ = ["ContextGraph", "NodeRef", "StructureCheckpoint"]
