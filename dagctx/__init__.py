"""dagctx: a budgeted, incremental context DAG for LLM agents.

The public surface fits on this page; everything else is reachable from these names.
"""

from dagctx.errors import (
    BudgetError,
    CheckpointError,
    ContextError,
    CycleError,
    DagctxError,
    EncodingError,
    GraphError,
    NodeNotFoundError,
    PathError,
    ToolError,
)
from dagctx.graph import ContextGraph
from dagctx.nodes import GroupNode, Node, NodeState, TextNode, TickFrequency, Trace
from dagctx.projection import Projection, Section
from dagctx.session import Session, TickResult
from dagctx.tokens import DEFAULT_ENCODING, TokenCounter

__all__ = [
    "DEFAULT_ENCODING",
    "BudgetError",
    "CheckpointError",
    "ContextError",
    "ContextGraph",
    "CycleError",
    "DagctxError",
    "EncodingError",
    "GraphError",
    "GroupNode",
    "Node",
    "NodeNotFoundError",
    "NodeState",
    "PathError",
    "Projection",
    "Section",
    "Session",
    "TextNode",
    "TickFrequency",
    "TickResult",
    "TokenCounter",
    "ToolError",
    "Trace",
]
