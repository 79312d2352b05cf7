"""Section text and token counts, cached per (node, version, state).

A section is a node's render normalised to end with one blank line, so that sections can
be concatenated and their token counts summed: with the encodings whose pre-tokenizer
ends every piece that contains a newline at the end of that newline run (``cl100k_base``,
``o200k_base``), a boundary after ``"\\n\\n"`` followed by a non-space is always a piece
boundary, so the sum of the parts is the count of the whole. The projection falls back to
an exact count near the budget for other encodings or sections that start with a space.

Counts are kept for every state a node was measured at; rendered text is not kept (the
projection keeps the text of the sections it shows). Texts rendered while counting are
parked until :meth:`SectionCache.release`, so a section counted and then shown in the same
projection is rendered once.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagctx.nodes.base import Node, NodeState
from dagctx.tokens import TokenCounter

_STATES = tuple(NodeState)

#: Encodings whose section counts add up exactly (see the module docstring).
SUMMABLE_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})


def section_text(rendered: str) -> str:
    """Normalise a node render into section text (empty stays empty)."""
    body = rendered.rstrip()
    return f"{body}\n\n" if body else ""


def reference_text(node: Node) -> str:
    """The one-line reference shown where a node already rendered appears again."""
    return section_text(f"(see #{node.id} above: {node.label()})")


_FIELD = 32  # bits per count in a packed entry
_MASK = (1 << _FIELD) - 1
_ALL_UNKNOWN = sum(_MASK << (_FIELD * k) for k in range(4))


class SectionCache:
    """Token counts per node version and state; see the module docstring.

    Each node's counts are one integer (its version and four 32-bit counts, all ones for
    "not counted yet"): a few dozen bytes per node instead of a list and its items. The
    counter is asked not to remember section texts, which this cache already keys by
    node version.

    ``renders`` counts actual renders (cache misses), for tests and benchmarks.
    """

    __slots__ = ("_counts", "_parked", "counter", "projector", "renders")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._counts: dict[str, int] = {}  # node id → version << 128 | packed counts
        self._parked: dict[tuple[str, int, int], str] = {}
        self.renders = 0
        #: The incremental projector of the graph this cache serves (set by it).
        self.projector: object | None = None

    def _known(self, node: Node, state: int) -> int:
        """The stored count of ``node`` at visible ``state``, or -1."""
        packed = self._counts.get(node.id)
        if packed is None or packed >> (4 * _FIELD) != node.version:
            return -1
        count = (packed >> (_FIELD * (state - 1))) & _MASK
        return -1 if count == _MASK else count

    def _store(self, node: Node, state: int, count: int) -> None:
        packed = self._counts.get(node.id)
        if packed is None or packed >> (4 * _FIELD) != node.version:
            packed = node.version << (4 * _FIELD) | _ALL_UNKNOWN
        shift = _FIELD * (state - 1)
        self._counts[node.id] = packed & ~(_MASK << shift) | min(count, _MASK - 1) << shift

    def _render(self, node: Node, state: int) -> str:
        self.renders += 1
        return section_text(node.render(_STATES[state]))

    def tokens(self, node: Node, state: int) -> int:
        """Token count of ``node``'s section at ``state`` (0 when HIDDEN)."""
        if state == NodeState.HIDDEN:
            return 0
        count = self._known(node, state)
        if count < 0:
            key = (node.id, node.version, state)
            text = self._parked.get(key)
            if text is None:
                text = self._parked[key] = self._render(node, state)
            count = self.counter.count(text, remember=False)
            self._store(node, state, count)
        return count

    def text(self, node: Node, state: int) -> str:
        """Section text of ``node`` at ``state`` (a parked render, or a new one)."""
        if state == NodeState.HIDDEN:
            return ""
        parked = self._parked.pop((node.id, node.version, state), None)
        return parked if parked is not None else self._render(node, state)

    def get(self, node: Node, state: int) -> tuple[str, int]:
        """Section text and token count of ``node`` rendered at ``state``."""
        tokens = self.tokens(node, state)
        return self.text(node, state), tokens

    def prime(self, pairs: Iterable[tuple[Node, int]]) -> None:
        """Count the sections of many (node, state) pairs at once, in parallel batches."""
        todo: list[tuple[Node, int, tuple[str, int, int], str]] = []
        for node, state in pairs:
            if state == NodeState.HIDDEN or self._known(node, state) >= 0:
                continue
            key = (node.id, node.version, state)
            text = self._parked.get(key)
            if text is None:
                text = self._render(node, state)
            todo.append((node, state, key, text))
        if not todo:
            return
        counts = self.counter.count_many([t[3] for t in todo], remember=False)
        for (node, state, key, text), count in zip(todo, counts, strict=True):
            self._store(node, state, count)
            self._parked[key] = text

    def release(self) -> None:
        """Drop the texts parked by counting (end of a projection)."""
        self._parked.clear()

    def measure(self, text: str, *, remember: bool = True) -> tuple[str, int]:
        """Section text and tokens of free text (changes list, footer), cached by content.

        ``remember=False`` for trial texts that change from turn to turn (a search for
        the most lines that fit): their counts go to the counter's bounded recent memory.
        """
        section = section_text(text)
        return section, self.counter.count(section, remember=remember)

    def forget(self, node_id: str) -> None:
        """Drop what is cached for a node (it left the graph)."""
        self._counts.pop(node_id, None)

    def __len__(self) -> int:
        return len(self._counts)


def reference_section(node: Node, cache: SectionCache) -> tuple[str, int]:
    """Text and tokens of the reference to ``node``."""
    text = reference_text(node)
    return text, cache.counter.count(text)
