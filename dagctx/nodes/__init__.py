"""Node types of the context DAG; each type lives in its own module and registers itself.

:mod:`.base` holds :class:`Node`, its states, frequencies and traces; :mod:`.registry`
rebuilds a node from ``to_dict`` data by type name. A node renders itself and changes
through its own methods; the live resources some nodes describe (processes, the
coordination store, capability data) come from :mod:`dagctx.runtime` and
:mod:`dagctx.capability`. Must not import the session, the projection or the graph at
run time (the graph calls the nodes, not the other way round).
"""

from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import Node, NodeState, TickFrequency, Trace
from dagctx.nodes.capability import CapabilityNode
from dagctx.nodes.focus import FocusNode
from dagctx.nodes.group import GroupNode
from dagctx.nodes.lock import LockNode
from dagctx.nodes.markdown import MarkdownNode, MarkdownSectionNode
from dagctx.nodes.mcp import MCPServerNode, MCPToolNode
from dagctx.nodes.message import MessageNode
from dagctx.nodes.registry import node_types
from dagctx.nodes.session_node import SessionNode
from dagctx.nodes.shell import ShellNode
from dagctx.nodes.text import TextNode
from dagctx.nodes.topic import TopicNode
from dagctx.nodes.work import WorkNode

__all__ = [
    "ArtifactNode",
    "CapabilityNode",
    "FocusNode",
    "GroupNode",
    "LockNode",
    "MCPServerNode",
    "MCPToolNode",
    "MarkdownNode",
    "MarkdownSectionNode",
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
    "node_types",
]
