"""dagctx: a budgeted, incremental context DAG for LLM agents."""

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

__all__ = [
    "BudgetError",
    "CheckpointError",
    "ContextError",
    "CycleError",
    "DagctxError",
    "EncodingError",
    "GraphError",
    "NodeNotFoundError",
    "PathError",
    "ToolError",
]
