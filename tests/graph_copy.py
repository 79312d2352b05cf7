"""Test helper (not a test module): rebuild a graph from its nodes' ``to_dict`` output."""

from __future__ import annotations

from collections.abc import Iterable

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState

VISIBLE_STATES = (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL)


def rebuild(nodes: Iterable[Node]) -> ContextGraph:
    """A new graph holding ``Node.from_dict(n.to_dict())`` of each node, with the same
    ids and the same ordered edges."""
    nodes = list(nodes)
    copy = ContextGraph()
    for node in nodes:
        copy.add(Node.from_dict(node.to_dict()))
    for node in nodes:
        for child in node.children:
            copy.link(node.id, child.id)
    return copy


def renders(node: Node) -> list[str]:
    """The node's render at each visible state."""
    return [node.render(state) for state in VISIBLE_STATES]
