"""The degrade order of one allocation: a key per entry and the slot it holds.

Entries (non-references of a :class:`~dagctx.projection.layout.Layout`) are degraded
least important first: by priority, then relevance level (the layout's, from
:mod:`dagctx.projection.relevance`), then recency, a container keyed like the most
important node it shows (so it comes after all of them). Each entry holds a *slot*; the
slots of one block (one priority and level) are consecutive, with a gap after them. A
node that changes gets the newest recency, so it belongs at the end of its block: it
takes the next free slot of the gap and leaves a hole where it was. When a gap fills up,
the slots are laid out again in the same order (:meth:`DegradeOrder.relayout`).

Keys are one int each: ``(priority << 8 | level) << 80 | recency << 16 | height``, where
height counts how far up a key was inherited (a container after the child whose key it
took); ``key >> 80`` names the block.
"""

from __future__ import annotations

from array import array

from dagctx.projection._segtree import capacity_for
from dagctx.projection.layout import Layout

SEQ_SHIFT = 16
PRIO_SHIFT = 80
HEIGHT = (1 << SEQ_SHIFT) - 1
LEVEL_BITS = 8


def own_key(layout: Layout, i: int) -> int:
    """The key entry ``i`` has by itself (height 0)."""
    node = layout.nodes[i]
    block = (node.priority << LEVEL_BITS) + layout.level[i]
    return (block << PRIO_SHIFT) + (node.seq << SEQ_SHIFT)


class DegradeOrder:
    """Keys and slots of the entries of ``layout`` (see the module docstring).

    Attributes:
        key: each entry's key (0 for references).
        slot: each entry's slot (-1 for references).
        entry_at: the entry holding each slot (-1: a hole or a gap).
        cap: the number of slots (a power of two, for the search trees).
    """

    __slots__ = (
        "_end",
        "_gaps",
        "_limit",
        "_max",
        "_start",
        "cap",
        "entry_at",
        "key",
        "layout",
        "slot",
    )

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        ref, parent = layout.ref, layout.parent
        n = len(ref)
        key = [0] * n
        for i in range(n):
            if not ref[i]:
                key[i] = own_key(layout, i)
        for i in range(n - 1, -1, -1):  # children come after their parent in the walk
            p = parent[i]
            if p >= 0 and not ref[i] and key[i] + 1 > key[p]:
                key[p] = key[i] + 1
        self.key = key
        blocks: list[tuple[int, list[int]]] = []
        for i in sorted((i for i in range(n) if not ref[i]), key=key.__getitem__):
            block = key[i] >> PRIO_SHIFT
            if not blocks or blocks[-1][0] != block:
                blocks.append((block, []))
            blocks[-1][1].append(i)
        self._place(blocks, {block: key[members[-1]] for block, members in blocks})

    def entries(self) -> list[int]:
        """The entries in order."""
        return [i for i in self.entry_at if i >= 0]

    def _place(self, blocks: list[tuple[int, list[int]]], block_max: dict[int, int]) -> None:
        """Give each block's entries consecutive slots, with a gap after them."""
        # many blocks (one per priority and level) share the room of the gaps
        self._gaps = 8 + sum(len(b) for _, b in blocks) // (16 * max(1, len(blocks)))
        size = sum(len(b) + self._gap(len(b)) for _, b in blocks)
        self.cap = cap = capacity_for(max(1, size))
        self.slot = array("i", [-1]) * len(self.layout)
        self.entry_at = array("i", [-1]) * cap
        self._start: dict[int, int] = {}
        self._end: dict[int, int] = {}
        self._limit: dict[int, int] = {}
        self._max = block_max
        s = 0
        for block, members in blocks:
            self._start[block] = s
            for i in members:
                self.slot[i] = s
                self.entry_at[s] = i
                s += 1
            self._end[block] = s
            s += self._gap(len(members))
            self._limit[block] = s

    def _gap(self, size: int) -> int:
        return self._gaps + size // 8

    def relayout(self) -> None:
        """Lay the slots out again in the current order, with fresh gaps."""
        entry_at = self.entry_at
        blocks = [
            (block, [i for i in entry_at[start : self._end[block]] if i >= 0])
            for block, start in sorted(self._start.items(), key=lambda kv: kv[1])
        ]
        self._place(blocks, self._max)

    def rekey(self, changed: list[int]) -> list[int] | None:
        """New keys for the changed entries and the containers that inherit them; the
        entries whose key grew, in key order. None when a block (priority or level) went
        down (the order must be rebuilt: a key may only grow here)."""
        layout = self.layout
        key, parent = self.key, layout.parent
        moved: set[int] = set()
        for i in changed:
            own = own_key(layout, i)
            old = key[i]
            if old & HEIGHT == 0 and own >> PRIO_SHIFT < old >> PRIO_SHIFT:
                return None
            if own <= old:
                continue
            key[i] = own
            moved.add(i)
            p = parent[i]
            while p >= 0 and key[i] + 1 > key[p]:
                key[p] = key[i] + 1
                moved.add(p)
                i, p = p, parent[p]
        return sorted(moved, key=key.__getitem__)

    def can_append(self, i: int) -> bool:
        """Whether entry ``i``'s (grown) key belongs at the end of its block."""
        k = self.key[i]
        block = k >> PRIO_SHIFT
        return block in self._end and k > self._max[block]

    def full(self, i: int) -> bool:
        """Whether the gap of entry ``i``'s block is used up."""
        block = self.key[i] >> PRIO_SHIFT
        return self._end[block] >= self._limit[block]

    def append(self, i: int) -> int:
        """Move entry ``i`` to the next slot of its block's gap; return its old slot
        (now a hole). Call only when :meth:`can_append` and not :meth:`full`."""
        k = self.key[i]
        block = k >> PRIO_SHIFT
        old, new = self.slot[i], self._end[block]
        self.entry_at[old] = -1
        self._end[block] = new + 1
        self._max[block] = k
        self.slot[i] = new
        self.entry_at[new] = i
        return old
