"""Node types of the context DAG; each type lives in its own module and registers itself."""

from dagctx.nodes.base import Node, NodeState, TickFrequency, Trace
from dagctx.nodes.group import GroupNode
from dagctx.nodes.lock import LockNode
from dagctx.nodes.registry import node_types
from dagctx.nodes.shell import ShellNode
from dagctx.nodes.text import TextNode

__all__ = [
    "GroupNode",
    "LockNode",
    "Node",
    "NodeState",
    "ShellNode",
    "TextNode",
    "TickFrequency",
    "Trace",
    "node_types",
]
