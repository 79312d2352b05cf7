"""The projection walk: visible nodes in prompt order, from the roots down.

A node is visible when it is not HIDDEN and every node on the path that leads to it is
expanded (its state is one at which it shows its children, e.g. a group at DETAILS). A
node reached a second time (a multi-parent node) becomes a reference entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState


@dataclass(slots=True)
class Entry:
    """One position in the walk; ``end`` is one past the last entry of its subtree."""

    node: Node
    reference: bool
    end: int


def walk(graph: ContextGraph, state_of: Callable[[Node], NodeState]) -> list[Entry]:
    """Visible entries in depth-first preorder of the ordered roots and children."""
    entries: list[Entry] = []
    seen: set[str] = set()
    # Stack items: a node to enter, or the index of an entry whose subtree ends here.
    stack: list[Node | int] = list(reversed(graph.roots()))
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            entries[item].end = len(entries)
            continue
        state = state_of(item)
        if state == NodeState.HIDDEN:
            continue
        index = len(entries)
        if item.id in seen:
            entries.append(Entry(item, True, index + 1))
            continue
        seen.add(item.id)
        entries.append(Entry(item, False, index + 1))
        if state in item.expands_at:
            stack.append(index)
            stack.extend(reversed(graph.children(item)))
    return entries
