"""Node types of the context DAG; each type lives in its own module and registers itself."""

from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import Node, NodeState, TickFrequency, Trace
from dagctx.nodes.capability import CapabilityNode
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
