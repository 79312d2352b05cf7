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


class ContextKeyError(ContextError, KeyError):
    """A key is not visible in a ContextState (or not local, for a removal)."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class StateError(ContextError, ValueError):
    """An agent-state helper was given a state or argument it cannot use."""


class CapabilityError(ContextError, ValueError):
    """A capability-context operation was refused: a missing context, a violated step
    constraint, malformed stored data or a bad argument."""


class CapabilityTypeError(ContextError, TypeError):
    """A capability context class, or a value stored as one, breaks the contract."""


class ShellError(DagctxError):
    """A shell command was asked for with bad arguments (the message names the value)."""


class LockError(DagctxError):
    """A lock was asked for with bad arguments (the message names the value)."""


class CoordinationError(DagctxError):
    """The coordination store cannot be opened or written, or a claim is malformed."""


class KnowledgeError(DagctxError, ValueError):
    """A workspace or knowledge-store operation was refused (bad name, version, setting)."""


class ArtifactNotFoundError(KnowledgeError, KeyError):
    """A name matches no artifact of the workspace."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class MCPClientError(DagctxError):
    """An MCP server could not be started, reached, or asked (the message says which and
    why; ``stderr_tail`` holds the last lines the server wrote to stderr, if any)."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


__all__ = [
    "ArtifactNotFoundError",
    "BudgetError",
    "CapabilityError",
    "CapabilityTypeError",
    "CheckpointError",
    "ContextError",
    "ContextKeyError",
    "CoordinationError",
    "CycleError",
    "DagctxError",
    "EncodingError",
    "GraphError",
    "KnowledgeError",
    "LockError",
    "MCPClientError",
    "NodeNotFoundError",
    "PathError",
    "ShellError",
    "StateError",
    "ToolError",
]
