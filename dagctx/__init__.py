"""dagctx: a budgeted, incremental context DAG for LLM agents.

The public surface fits on this page; everything else is reachable from these names.
Tools live in :mod:`dagctx.tools`, capability contexts in :mod:`dagctx.capability`,
agent state in :mod:`dagctx.state`, knowledge stores in :mod:`dagctx.knowledge`.

``import dagctx`` imports only the errors; every other public name is imported from its
module on first use (PEP 562 ``__getattr__``), so ``import dagctx`` and the ``dagctx``
command's ``--help`` do not pay for networkx, pydantic, tiktoken or the MCP SDK.
Subpackages (``dagctx.tools``, ...) are reachable as attributes the same way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dagctx.errors import (
    ArgumentError,
    ArtifactNotFoundError,
    BlockingCallError,
    BudgetError,
    CapabilityError,
    CapabilityTypeError,
    CheckpointError,
    ContextError,
    ContextKeyError,
    CoordinationError,
    CycleError,
    DagctxError,
    EncodingError,
    ForeignWorkError,
    GraphError,
    GraphLoadError,
    KnowledgeError,
    LockError,
    MCPClientError,
    MCPServerNotFoundError,
    MCPStateError,
    MCPToolNotFoundError,
    NoActiveTopicError,
    NodeClosedError,
    NodeFieldError,
    NodeNotFoundError,
    NodeTypeError,
    NoSessionError,
    PathError,
    SessionClosedError,
    SessionConflictError,
    SessionError,
    SessionFileUnavailableError,
    SettingsError,
    ShellError,
    StateError,
    ToolCallIdError,
    ToolError,
    TracesDroppedError,
    WatchError,
)

if TYPE_CHECKING:
    from dagctx.checkpoint import Checkpoint, CheckpointStore, SQLiteCheckpointStore
    from dagctx.context import AutomationMode, Context, ContextConfig, ContextState, make_config
    from dagctx.graph import ContextGraph
    from dagctx.nodes import (
        ArtifactNode,
        CapabilityNode,
        GroupNode,
        LockNode,
        MarkdownNode,
        MarkdownSectionNode,
        MCPServerNode,
        MCPToolNode,
        MessageNode,
        Node,
        NodeState,
        SessionNode,
        ShellNode,
        TextNode,
        TickFrequency,
        TopicNode,
        Trace,
        WorkNode,
    )
    from dagctx.projection import Projection, Section
    from dagctx.session import Session, TickResult
    from dagctx.tokens import DEFAULT_ENCODING, TokenCounter

#: Module of each public name imported on first use.
_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "dagctx.checkpoint": (
            "Checkpoint",
            "CheckpointStore",
            "SQLiteCheckpointStore",
        ),
        "dagctx.context": (
            "AutomationMode",
            "Context",
            "ContextConfig",
            "ContextState",
            "make_config",
        ),
        "dagctx.graph": ("ContextGraph",),
        "dagctx.nodes": (
            "ArtifactNode",
            "CapabilityNode",
            "GroupNode",
            "LockNode",
            "MarkdownNode",
            "MarkdownSectionNode",
            "MCPServerNode",
            "MCPToolNode",
            "MessageNode",
            "Node",
            "NodeState",
            "SessionNode",
            "ShellNode",
            "TextNode",
            "TickFrequency",
            "TopicNode",
            "Trace",
            "WorkNode",
        ),
        "dagctx.projection": (
            "Projection",
            "Section",
        ),
        "dagctx.session": (
            "Session",
            "TickResult",
        ),
        "dagctx.tokens": (
            "DEFAULT_ENCODING",
            "TokenCounter",
        ),
    }.items()
    for name in names
}
#: Subpackages and modules reachable as attributes of the package.
_SUBMODULES = frozenset(
    {"capability", "checkpoint", "cli", "context", "dsl", "errors", "graph", "knowledge",
     "mcp", "nodes", "outline", "projection", "runtime", "session", "state", "tokens",
     "tools", "watch"}
)  # fmt: skip


def __getattr__(name: str) -> Any:
    """Import a public name (or a subpackage) on first use and keep it here."""
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


__all__ = [
    "DEFAULT_ENCODING",
    "ArgumentError",
    "ArtifactNode",
    "ArtifactNotFoundError",
    "AutomationMode",
    "BlockingCallError",
    "BudgetError",
    "CapabilityError",
    "CapabilityNode",
    "CapabilityTypeError",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "Context",
    "ContextConfig",
    "ContextError",
    "ContextGraph",
    "ContextKeyError",
    "ContextState",
    "CoordinationError",
    "CycleError",
    "DagctxError",
    "EncodingError",
    "ForeignWorkError",
    "GraphError",
    "GraphLoadError",
    "GroupNode",
    "KnowledgeError",
    "LockError",
    "LockNode",
    "MCPClientError",
    "MCPServerNode",
    "MCPServerNotFoundError",
    "MCPStateError",
    "MCPToolNode",
    "MCPToolNotFoundError",
    "MarkdownNode",
    "MarkdownSectionNode",
    "MessageNode",
    "NoActiveTopicError",
    "NoSessionError",
    "Node",
    "NodeClosedError",
    "NodeFieldError",
    "NodeNotFoundError",
    "NodeState",
    "NodeTypeError",
    "PathError",
    "Projection",
    "SQLiteCheckpointStore",
    "Section",
    "Session",
    "SessionClosedError",
    "SessionConflictError",
    "SessionError",
    "SessionFileUnavailableError",
    "SessionNode",
    "SettingsError",
    "ShellError",
    "ShellNode",
    "StateError",
    "TextNode",
    "TickFrequency",
    "TickResult",
    "TokenCounter",
    "ToolCallIdError",
    "ToolError",
    "TopicNode",
    "Trace",
    "TracesDroppedError",
    "WatchError",
    "WorkNode",
    "make_config",
]
