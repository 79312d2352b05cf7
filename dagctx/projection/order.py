"""The degrade order of one allocation: a key per entry and the slot it holds.

Entries (non-references of a :class:`~dagctx.projection.layout.Layout`) are degraded
least important first: by priority, then relevance level (the layout's, from
:mod:`dagctx.projection.relevance`), then recency, a container keyed like the most
important node it shows (so it comes after all of them). Each entry holds a *slot*; the
slots of one block (one priority and level) are consecutive but for a hole after every
:data:`HOLE_EVERY` entries, with a gap after them. An entry whose key moves (a changed
node gets the newest recency; a relevance level moves) leaves a hole where it was and
goes where its key belongs in its block (found by binary search): a hole there, else the
slot of the next entry, the entries up to the next hole (or the end of the block, into
the gap) moved one slot on — so a file whose level moves lands in the middle of a large
block moving a few entries, and a changed node usually lands at the end of its block,
moving nothing. When a gap fills up, the slots are laid out again in the same order
(:meth:`DegradeOrder.relayout`). A key in a block that has no slots yet opens it in the
gap of the block before it.

Keys are one int each: ``(priority << 16 | level) << 80 | recency << 16 | height``, where
height counts how far up a key was inherited (a container after the child whose key it
took); ``key >> 80`` names the block. An order laid out again for new levels (a focus
change moves most files' levels, not their priority or recency) takes each file's key from
the order it replaces with the level bits set anew, and makes only the keys of changed
nodes and of containers (``kept``). An order holds each key as two machine integers, its
block and the bits below (``array('q')``, not an int object of over 80 bits per entry;
lists once one does not fit: a priority or a recency beyond 2**46); one laid out again
copies the kept arrays at the new levels and splits only the keys it made.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, MutableSequence
from itertools import compress, repeat
from operator import and_, lshift, or_, rshift, sub

from dagctx.projection.layout import Layout

SEQ_SHIFT = 16
PRIO_SHIFT = 80
HEIGHT = (1 << SEQ_SHIFT) - 1
LEVEL_BITS = 16
_NOT_LEVEL_BLOCK = ~((1 << LEVEL_BITS) - 1)  # a block's bits but its level's
_LOW = (1 << PRIO_SHIFT) - 1  # a key's bits below its block's
MAX_SHIFT = 256  # entries an insertion may move one slot on
HOLE_EVERY = 32  # a block is laid out with a hole after every this many entries


def own_key(layout: Layout, i: int) -> int:
    """The key entry ``i`` has by itself (height 0)."""
    node = layout.nodes[i]
    block = (node.priority << LEVEL_BITS) + layout.level[i]
    return (block << PRIO_SHIFT) + (node.seq << SEQ_SHIFT)


class DegradeOrder:
    """Keys and slots of the entries of ``layout`` (see the module docstring).

    Attributes:
        block, low: each entry's key (:meth:`key`) in two: ``key >> 80`` and the bits
            below (-1 and 0 for a reference).
        slot: each entry's slot (-1 for references).
        entry_at: the entry holding each slot (-1: a hole or a gap).
        cap: the number of slots (the search trees' leaves): the blocks' entries, holes
            and gaps, no more.
    """

    __slots__ = (
        "_end",
        "_gaps",
        "_limit",
        "_pending",
        "_start",
        "block",
        "cap",
        "entry_at",
        "layout",
        "low",
        "slot",
    )

    block: MutableSequence[int]
    low: MutableSequence[int]

    def __init__(
        self, layout: Layout, kept: DegradeOrder | None = None, changed: Iterable[int] = ()
    ) -> None:
        """The order of ``layout``'s entries by their keys: made from the nodes, or (with
        ``kept``, the order of the same layout this one replaces) taken from ``kept``'s
        keys at ``layout``'s levels now, the nodes at entries ``changed`` (a new version
        or priority since ``kept`` was keyed) keyed afresh: the same keys either way."""
        self.layout = layout
        self._pending: set[int] = set()  # keys moved by rekey, slots not given again yet
        key, held = self._keys(kept, changed)
        # references (key -1) sort first and are left out
        ordered = sorted(range(len(key)), key=key.__getitem__)[self._references() :]
        keys = list(map(key.__getitem__, ordered))
        if not held:
            self._hold(key)
        blocks: list[tuple[int, list[int]]] = []
        lo = 0
        while lo < len(keys):  # a block ends before the first key of a greater block
            block = keys[lo] >> PRIO_SHIFT
            hi = bisect_left(keys, (block + 1) << PRIO_SHIFT, lo)
            blocks.append((block, ordered[lo:hi]))
            lo = hi
        self._place(blocks)

    def _references(self) -> int:
        """How many of the layout's entries are references."""
        return sum(len(entries) for entries in self.layout.refs.values())

    def _keys(self, kept: DegradeOrder | None, changed: Iterable[int]) -> tuple[list[int], bool]:
        """Each entry's key (-1 for a reference): its own (:func:`own_key`; with
        ``kept``, a node's priority and recency bits are ``kept``'s but for the entries
        ``changed``), a container's the greater of its own and one more than its
        greatest walk child's; and whether :attr:`block` and :attr:`low` hold them
        already (with ``kept`` in machine integers: its arrays are copied at the new
        levels and only the keys made afresh are split, instead of every key)."""
        layout = self.layout
        ref, nodes, level, end, parent = (
            layout.ref, layout.nodes, layout.level, layout.end, layout.parent,
        )  # fmt: skip
        n = len(ref)
        block: array[int] | None = None
        made: list[int] = []
        refs: list[int] = []
        if kept is None:
            key = [  # own_key, inline
                -1
                if ref[i]
                else (((nodes[i].priority << LEVEL_BITS) + level[i]) << PRIO_SHIFT)
                + (nodes[i].seq << SEQ_SHIFT)
                for i in range(n)
            ]
        else:
            blocks = map(or_, map(and_, kept.block, repeat(_NOT_LEVEL_BLOCK)), level)
            try:
                block = array("q", blocks)
                low = array("q", kept.low)
            except OverflowError:  # kept in lists: split each key again (_hold)
                block = None
                blocks = map(or_, map(and_, kept.block, repeat(_NOT_LEVEL_BLOCK)), level)
            key = list(
                map(
                    or_,
                    map(lshift, blocks if block is None else block, repeat(PRIO_SHIFT)),
                    kept.low,
                )
            )
            made = [*changed, *compress(range(n), map(sub, end, range(1, n + 1)))]
            for i in made:  # own_key, inline
                node = nodes[i]
                key[i] = (((node.priority << LEVEL_BITS) + level[i]) << PRIO_SHIFT) + (
                    node.seq << SEQ_SHIFT
                )
            refs = list(compress(range(n), ref))
            for i in refs:
                key[i] = -1
        # children come after their parent: each key is final when its parent reads it
        # (a reference's, -1, is below any parent's); a parent is a container, in made
        for p, k in zip(reversed(parent), reversed(key), strict=True):
            if p >= 0 and k >= key[p]:
                key[p] = k + 1
        if block is None:
            return key, False
        try:
            for i in made:
                k = key[i]
                block[i], low[i] = k >> PRIO_SHIFT, k & _LOW
        except OverflowError:
            return key, False
        for i in refs:
            block[i], low[i] = -1, 0
        self.block, self.low = block, low
        return key, True

    def _hold(self, key: list[int]) -> None:
        """Keep ``key`` (each entry's; changed) as :attr:`block` and :attr:`low`, a
        reference's as -1 and 0 (its key, -1, is read by no one once laid out)."""
        for i in compress(range(len(key)), self.layout.ref):
            key[i] = -1 << PRIO_SHIFT
        try:
            self.block = array("q", map(rshift, key, repeat(PRIO_SHIFT)))
            self.low = array("q", map(and_, key, repeat(_LOW)))
        except OverflowError:
            self.block = list(map(rshift, key, repeat(PRIO_SHIFT)))
            self.low = list(map(and_, key, repeat(_LOW)))

    def key(self, i: int) -> int:
        """Entry ``i``'s key (``i`` not a reference)."""
        return self.block[i] << PRIO_SHIFT | self.low[i]

    def _set(self, i: int, k: int) -> None:
        """Give entry ``i`` (not a reference) the key ``k``."""
        try:
            self.block[i], self.low[i] = k >> PRIO_SHIFT, k & _LOW
        except OverflowError:  # beyond a machine integer: held in lists from now on
            self.block, self.low = list(self.block), list(self.low)
            self.block[i], self.low[i] = k >> PRIO_SHIFT, k & _LOW

    def entries(self) -> list[int]:
        """The entries in order."""
        return [i for i in self.entry_at if i >= 0]

    def top_edge(self, count: int) -> int:
        """The lowest slot of the last ``count`` entries in the order (0 when there are
        no more): the gap after the last block and the holes and gaps among those
        entries are not counted."""
        entry_at = self.entry_at
        s = max(self._end.values(), default=0)
        while count > 0 and s > 0:
            s -= 1
            if entry_at[s] >= 0:
                count -= 1
        return s

    def _place(self, blocks: list[tuple[int, list[int]]]) -> None:
        """Give each block's entries consecutive slots, with a gap after them."""
        # many blocks (one per priority and level) share the room of the gaps
        self._gaps = 8 + sum(len(b) for _, b in blocks) // (16 * max(1, len(blocks)))
        size = sum(len(b) + len(b) // HOLE_EVERY + self._gap(len(b)) for _, b in blocks)
        self.cap = cap = max(1, size)
        slot = self.slot = array("i", [-1]) * len(self.layout)
        entry_at = self.entry_at = array("i", [-1]) * cap
        self._start: dict[int, int] = {}
        self._end: dict[int, int] = {}
        self._limit: dict[int, int] = {}
        s = 0
        for block, members in blocks:
            self._start[block] = s
            size = len(members)
            for first in range(0, size, HOLE_EVERY):
                run = members[first : first + HOLE_EVERY]
                entry_at[s : s + len(run)] = array("i", run)
                for i in run:
                    slot[i] = s
                    s += 1
                s += first + HOLE_EVERY < size  # a hole, unless the block ends here
            self._end[block] = s
            s += self._gap(size)
            self._limit[block] = s

    def _gap(self, size: int) -> int:
        return self._gaps + size // 8

    def relayout(self, new: set[int] | None = None) -> None:
        """Lay the slots out again in the current order, with fresh gaps (and empty
        blocks ``new`` among them)."""
        entry_at = self.entry_at
        blocks = [
            (block, [i for i in entry_at[start : self._end[block]] if i >= 0])
            for block, start in sorted(self._start.items(), key=lambda kv: kv[1])
        ]
        if new:
            blocks = sorted(blocks + [(block, []) for block in new if block not in self._end])
        self._place(blocks)

    def open_blocks(self, new: set[int]) -> bool:
        """Give each block of ``new`` (none has slots) the second half of the free gap
        after the block before it; False (nothing changed) when one has no block before
        it or too small a gap (then :meth:`relayout` makes room)."""
        blocks = sorted(self._start)
        plan: list[tuple[int, int, int]] = []  # (new block, block before it, first slot)
        taken: set[int] = set()
        for block in sorted(new):
            k = bisect_left(blocks, block)
            if k == 0 or blocks[k - 1] in taken:
                return False
            before = blocks[k - 1]
            free = self._limit[before] - self._end[before]
            if free < 2:
                return False
            taken.add(before)
            plan.append((block, before, self._end[before] + free // 2))
        for block, before, first in plan:
            self._start[block] = self._end[block] = first
            self._limit[block] = self._limit[before]
            self._limit[before] = first
        return True

    def missing(self, entries: list[int]) -> set[int]:
        """The blocks of the keys of ``entries`` that have no slots."""
        block = self.block
        return {block[i] for i in entries} - self._end.keys()

    def relevelled(self, entries: Iterable[int], enough: int) -> int:
        """How many of ``entries`` that have no children hold a key of another level than
        the layout's now, counted up to ``enough`` (the count stops there): each of them
        moves at the next :meth:`rekey` (with containers and new versions, more may), so a
        lower bound on how many keys it moves."""
        layout = self.layout
        block, level, end, ref = self.block, layout.level, layout.end, layout.ref
        mask = (1 << LEVEL_BITS) - 1
        found = 0
        for i in entries:
            if end[i] == i + 1 and not ref[i] and block[i] & mask != level[i]:
                found += 1
                if found >= enough:
                    break
        return found

    def rekey(self, changed: list[int]) -> list[int]:
        """New keys for the entries ``changed`` (a new version or a new level) and the
        containers above them (a container keyed after its most important child, found
        again among its children when that one's key went down); the entries whose key
        moved, in key order. None when a key landed in a block (priority and level) that
        has no slots (the order must be rebuilt)."""
        layout = self.layout
        key, parent, ref, end = self.key, layout.parent, layout.ref, layout.end
        block, low = self.block, self.low
        todo: set[int] = set()
        for i in changed:
            while i >= 0 and i not in todo:
                todo.add(i)
                i = parent[i]
        moved: list[int] = []
        for i in sorted(todo, reverse=True):  # children come after their parent
            k = own_key(layout, i)
            c, stop = i + 1, end[i]
            while c < stop:
                if not ref[c]:  # its key (:meth:`key`), inline: it runs per child
                    kc = block[c] << PRIO_SHIFT | low[c]
                    if kc + 1 > k:
                        k = kc + 1
                c = end[c]
            if k != key(i):
                self._set(i, k)
                block, low = self.block, self.low  # lists now if k did not fit
                moved.append(i)
        moved.sort(key=key)
        self._pending = set(moved)
        return moved

    def full(self, i: int) -> bool:
        """Whether the gap of entry ``i``'s block is used up."""
        block = self.block[i]
        return self._end[block] >= self._limit[block]

    def vacate(self, i: int) -> int:
        """Take entry ``i`` out of its slot (now a hole); return the slot."""
        self._pending.discard(i)
        old = self.slot[i]
        self.entry_at[old] = -1
        self.slot[i] = -1
        return old

    def insert(self, i: int) -> tuple[int, int] | None:
        """Put entry ``i`` (vacated, its key in a block that has slots) where its key
        belongs: in a hole between its neighbours in key order, else at the first of
        the block's entries with a greater key, those up to the next hole (or the end of
        the block, into the gap) moved one slot on. The entries :meth:`rekey` moved are
        put back in the order it returned them. Returns the slots that changed,
        ``(lo, hi)`` (the entries of ``lo``..``hi`` - 1 moved one on when
        ``hi - lo > 1``); None when the gap is used up or more than :data:`MAX_SHIFT`
        entries would move."""
        k, block = self.key(i), self.block[i]
        start, stop = self._start[block], self._end[block]
        blocks, low, entry_at, slot = self.block, self.low, self.entry_at, self.slot
        pending = self._pending
        # after = one past the last entry with a key <= k (binary search): holes and the
        # entries whose key moved too and that wait for their slot (put back in key
        # order, so after this one) are passed over; the others are in key order
        lo, hi = start, stop
        while lo < hi:
            mid = (lo + hi) // 2
            m = mid
            while m < hi and (entry_at[m] < 0 or entry_at[m] in pending):
                m += 1
            if m < hi and blocks[entry_at[m]] << PRIO_SHIFT | low[entry_at[m]] <= k:
                lo = m + 1
            else:
                hi = mid
        after = lo
        if after < stop and entry_at[after] < 0:  # a hole between its neighbours
            entry_at[after] = i
            slot[i] = after
            return after, after + 1
        at = end = after  # entries at..end - 1 move one on: up to the next hole, or the gap
        while end < stop and entry_at[end] >= 0:
            end += 1
            if end - at > MAX_SHIFT:
                return None
        if end == stop:
            if stop >= self._limit[block]:
                return None
            self._end[block] = stop + 1
        for t in range(end, at, -1):
            e = entry_at[t - 1]
            entry_at[t] = e
            slot[e] = t
        entry_at[at] = i
        slot[i] = at
        return at, end + 1
