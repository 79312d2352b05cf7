"""Rendered section text and token counts, cached per (node, version, state).

A section is a node's render normalised to end with one blank line, so that sections can
be concatenated and (for tiktoken's pre-tokenizer, which never merges across a newline
followed by a non-space) their token counts summed. The projection still proves the
budget with an exact count whenever the sum comes near it.
"""

from __future__ import annotations

from dagctx.nodes.base import Node, NodeState
from dagctx.tokens import TokenCounter


def section_text(rendered: str) -> str:
    """Normalise a node render into section text (empty stays empty)."""
    body = rendered.rstrip()
    return f"{body}\n\n" if body else ""


class SectionCache:
    """Section text and tokens per node id, valid for one node version at a time.

    ``renders`` counts actual renders (cache misses), for tests and benchmarks.
    """

    __slots__ = ("_by_node", "counter", "renders")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._by_node: dict[str, tuple[int, dict[NodeState, tuple[str, int]]]] = {}
        self.renders = 0

    def get(self, node: Node, state: NodeState) -> tuple[str, int]:
        """Section text and token count of ``node`` rendered at ``state``."""
        entry = self._by_node.get(node.id)
        if entry is None or entry[0] != node.version:
            entry = (node.version, {})
            self._by_node[node.id] = entry
        hit = entry[1].get(state)
        if hit is None:
            text = section_text(node.render(state))
            self.renders += 1
            hit = (text, self.counter.count(text))
            entry[1][state] = hit
        return hit

    def tokens(self, node: Node, state: NodeState) -> int:
        return self.get(node, state)[1]

    def measure(self, text: str) -> tuple[str, int]:
        """Section text and tokens of free text (changes list, footer), cached by content."""
        section = section_text(text)
        return section, self.counter.count(section)

    def forget(self, node_id: str) -> None:
        """Drop what is cached for a node (it left the graph)."""
        self._by_node.pop(node_id, None)

    def __len__(self) -> int:
        return len(self._by_node)
