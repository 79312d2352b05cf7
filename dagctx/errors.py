"""The exception hierarchy of dagctx.

Every error dagctx raises on purpose derives from :class:`DagctxError`, and its message
names the offending value and, where there is one, what to do about it. An operation that
raises leaves every piece of state (graph, context, store) as it was before the call.
"""

from __future__ import annotations


class DagctxError(Exception):
    """Base class of every error dagctx raises on purpose."""


class GraphError(DagctxError):
    """A graph operation was refused (bad structure, duplicate id, self-link, ...)."""


class CycleError(GraphError):
    """A link would close a cycle in the context DAG."""


class NodeNotFoundError(GraphError, KeyError):
    """An id names no node of the graph."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class BudgetError(DagctxError, ValueError):
    """A token budget is not a positive integer."""


class EncodingError(DagctxError):
    """A tiktoken encoding cannot be loaded here."""


class PathError(DagctxError):
    """A path is outside the session root or cannot be used."""


class ContextError(DagctxError):
    """A task-context operation was refused."""


class CheckpointError(DagctxError):
    """A checkpoint is unknown, malformed or cannot be stored."""


class ToolError(DagctxError):
    """A tool was used wrongly by the program (not by the model)."""


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
