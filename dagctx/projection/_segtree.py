"""Array-backed segment trees over the slots of the degrade order (see :mod:`.allocation`).

- :class:`PrefixTree`: each leaf is a block of consecutive steps (a node's degrade steps),
  stored as (sum of deltas, minimum prefix sum within the block, trigger flag). It finds,
  in O(log n), the first leaf at which a running total first drops to a threshold.
- :class:`MinTree`: a value per leaf; finds the last leaf before a position whose value
  is at most a bound (the next node a greedy pass in reverse order would take).

Either is built at once from its leaves (``load``), or from another tree's leaves at
other positions (``moved``: the order laid out again): a :class:`PrefixTree` each level
of inner nodes in one pass over slices of the arrays, a :class:`MinTree` (whose leaves
are mostly INF: hidden entries are no candidates) from the leaves holding a value and
the inner nodes above them.

A tree of ``cap`` leaves (any number, not only a power of two: the degrade order's
slots, no padding) keeps them at ``cap``..``2 cap - 1`` of its arrays and each inner
node ``j`` at ``j``, made from ``2j`` and ``2j + 1``. When ``cap`` is not a power of
two the leaves lie at two depths and a few inner nodes join the last leaves with the
first ones out of order; no search reads such a node: a search starts from the nodes
covering a range of leaves (:func:`_cover`), each the root of a whole subtree of
consecutive leaves, and the root (node 1) is read only for what order does not change
(the sum of all leaves, the least of them, whether any leaf holds a value).

Values are machine integers (``array('q')``): no Python objects per leaf. ``INF`` marks
an empty leaf; sums involving it stay far above any real total. A :class:`MinTree` sums
nothing, so it keeps its values in 32 bits (``array('i')``, half the bytes): ``INF`` and
``-INF`` as the largest and smallest 32-bit ints, and a real value, a token count or a
difference of two, kept exactly below them (:func:`_narrow`).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from operator import add, itemgetter

INF = 1 << 60
_TOP = (1 << 31) - 1  # INF in a MinTree
_BOTTOM = -(1 << 31)  # -INF in a MinTree


def _narrow(value: int) -> int:
    """``value`` as a :class:`MinTree` keeps it: ``INF`` (and above) as ``_TOP``,
    ``-INF`` (and below) as ``_BOTTOM``, any other value clamped to the range between,
    which changes no comparison between token counts (they are below 2**31 - 1)."""
    if value >= INF:
        return _TOP
    if value <= -INF:
        return _BOTTOM
    return _BOTTOM + 1 if value <= _BOTTOM else _TOP - 1 if value >= _TOP else value


def picker(source: Sequence[int]) -> Callable[[Sequence[int]], list[int]]:
    """A function reading a list at each index of ``source``, in order, as a new list:
    one ``itemgetter`` over the indices, made once and read in C (a list of a few
    thousand indices is read several times per focus change)."""
    if len(source) < 2:  # itemgetter of one index gives the item, not a tuple
        return lambda values: [values[k] for k in source]
    get = itemgetter(*source)
    return lambda values: list(get(values))


def _gather(
    leaves: tuple[list[int], list[int], list[int]], source: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """Each list of ``leaves`` (a prefix tree's sums, minima, triggers) read at each
    ``k`` of ``source`` (an empty leaf for -1; the lists are appended to)."""
    pick = picker(source)
    out = []
    for values, empty in zip(leaves, (0, INF, 0), strict=True):
        values.append(empty)  # what -1 reads
        out.append(pick(values))
    return out[0], out[1], out[2]


def _spans(cap: int, used: int) -> list[tuple[int, int]]:
    """The inner nodes above leaves 0..``used`` - 1 of a tree of ``cap`` leaves, as
    ranges ``[lo, hi)``: the parents of those leaves, then the parents of those, up to
    the root. Made in this order, each node is made again after the last of its
    children was (a child made in one range has its parent in the next), so the last
    making of each is from its children's final values, though the leaves lie at two
    depths when ``cap`` is not a power of two (a level a range when it is)."""
    spans = []
    lo, hi = cap, cap + used
    while hi > 2:
        lo, hi = max(1, lo >> 1), ((hi - 1) >> 1) + 1
        spans.append((lo, hi))
    return spans


def _cover(cap: int, lo: int, hi: int) -> list[int]:
    """Tree nodes covering leaves [lo, hi), left to right, each the root of a subtree
    whose leaves are all at one depth and all in the range (the nodes taken at the
    ``k``-th step up lie between ``lo >> k`` and ``hi >> k`` of that step, so their
    leaves lie between the range's ends)."""
    left: list[int] = []
    right: list[int] = []
    lo += cap
    hi += cap
    while lo < hi:
        if lo & 1:
            left.append(lo)
            lo += 1
        if hi & 1:
            hi -= 1
            right.append(hi)
        lo >>= 1
        hi >>= 1
    right.reverse()
    return left + right


class PrefixTree:
    """Blocks of steps with prefix-sum search (see the module docstring)."""

    __slots__ = ("cap", "mn", "sum", "trig")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.sum = array("q", bytes(16 * cap))
        self.mn = array("q", [INF]) * (2 * cap)
        self.trig = array("i", bytes(8 * cap))

    def load(self, leaves: list[tuple[int, int, int]]) -> None:
        """Set leaves 0..len-1 at once (the rest empty) and build the inner nodes."""
        cap, n = self.cap, len(leaves)
        self.sum[cap : cap + n] = array("q", [a for a, _, _ in leaves])
        self.mn[cap : cap + n] = array("q", [b for _, b, _ in leaves])
        self.trig[cap : cap + n] = array("i", [c for _, _, c in leaves])
        self._build()

    def moved(
        self, cap: int, source: Sequence[int], fresh: dict[int, tuple[int, int, int]]
    ) -> PrefixTree:
        """A tree of ``cap`` leaves whose leaf ``k`` is ``fresh[k]`` where given, else
        this tree's leaf ``source[k]`` (empty where that is -1): the same blocks at
        other slots, some of them new."""
        sums, mins, trigs = _gather(self.leaves(), source)
        for k, (a, b, c) in fresh.items():
            sums[k], mins[k], trigs[k] = a, b, c
        return PrefixTree._of(cap, sums, mins, trigs)

    def leaves(self) -> tuple[list[int], list[int], list[int]]:
        """Copies of the leaves' sums, minimum prefixes and triggers (index = leaf),
        to change and give to :meth:`gathered`."""
        cap = self.cap
        return self.sum[cap:].tolist(), self.mn[cap:].tolist(), self.trig[cap:].tolist()

    @staticmethod
    def gathered(
        cap: int, source: Sequence[int], leaves: tuple[list[int], list[int], list[int]]
    ) -> PrefixTree:
        """A tree of ``cap`` leaves whose leaf ``k`` is leaf ``source[k]`` of ``leaves``
        (:meth:`leaves`' lists, which it appends to; empty where that is -1)."""
        return PrefixTree._of(cap, *_gather(leaves, source))

    @staticmethod
    def _of(cap: int, sums: list[int], mins: list[int], trigs: list[int]) -> PrefixTree:
        """The tree of leaves 0..len - 1 as given (the rest empty): the inner nodes
        above the last leaf that is not empty are made, the others are empty already."""
        tree = PrefixTree(cap)
        n = len(sums)
        tree.sum[cap : cap + n] = array("q", sums)
        tree.mn[cap : cap + n] = array("q", mins)
        tree.trig[cap : cap + n] = array("i", trigs)
        while n and mins[n - 1] == INF and not sums[n - 1] and not trigs[n - 1]:
            n -= 1
        tree._build(n)
        return tree

    def _build(self, used: int | None = None) -> None:
        """Make every inner node from its children, a range at a time (:func:`_spans`;
        each range in one pass over slices of the arrays: the sums, minima and trigger
        counts of :meth:`set`); with ``used``, only those above leaves 0..``used`` - 1
        (the rest of a new tree is empty)."""
        s, m, t = self.sum, self.mn, self.trig
        for lo, hi in _spans(self.cap, self.cap if used is None else used):
            a, b = 2 * lo, 2 * hi
            left = s[a:b:2]
            s[lo:hi] = array("q", map(add, left, s[a + 1 : b : 2]))
            low = zip(m[a:b:2], map(add, left, m[a + 1 : b : 2]), strict=True)
            m[lo:hi] = array("q", [x if x < y else y for x, y in low])
            t[lo:hi] = array("i", map(add, t[a:b:2], t[a + 1 : b : 2]))

    def set(self, i: int, total: int, low: int, trig: int) -> None:
        """Set leaf ``i`` to a block with sum ``total``, minimum prefix ``low``."""
        s, m, t = self.sum, self.mn, self.trig
        j = i + self.cap
        if s[j] == total and m[j] == low and t[j] == trig:
            return
        s[j], m[j], t[j] = total, low, trig
        j >>= 1
        while j:
            lft = 2 * j
            s[j] = s[lft] + s[lft + 1]
            x, y = m[lft], s[lft] + m[lft + 1]
            m[j] = x if x < y else y
            t[j] = t[lft] + t[lft + 1]
            j >>= 1

    def shift(self, lo: int, hi: int) -> None:
        """Move leaves ``lo``..``hi`` - 2 one on, to ``lo`` + 1..``hi`` - 1 (what was at
        ``hi`` - 1 goes; leaf ``lo`` keeps its value until set)."""
        cap, s, m, t = self.cap, self.sum, self.mn, self.trig
        a, b = cap + lo, cap + hi - 1
        s[a + 1 : b + 1], m[a + 1 : b + 1], t[a + 1 : b + 1] = s[a:b], m[a:b], t[a:b]
        a >>= 1
        b >>= 1
        while b:  # up to the root: with leaves at two depths, a may reach 0 before b
            for j in range(a or 1, b + 1):
                lft = 2 * j
                s[j] = s[lft] + s[lft + 1]
                x, y = m[lft], s[lft] + m[lft + 1]
                m[j] = x if x < y else y
                t[j] = t[lft] + t[lft + 1]
            a >>= 1
            b >>= 1

    def total(self) -> int:
        return self.sum[1]

    def prefix(self, i: int) -> int:
        """Sum of leaves [0, i)."""
        s = self.sum
        return sum(s[j] for j in _cover(self.cap, 0, i))

    def first_trigger(self) -> int:
        """Index of the first leaf with a trigger, or ``cap`` if none."""
        t, cap = self.trig, self.cap
        if not t[1]:
            return cap
        for j in _cover(cap, 0, cap):
            if t[j]:
                while j < cap:
                    j = 2 * j if t[2 * j] else 2 * j + 1
                return j - cap
        return cap

    def find_first(self, bound: int, lo: int, hi: int) -> tuple[int, int]:
        """First leaf ``i`` in [lo, hi) with prefix(i) + minprefix(leaf i) <= ``bound``.

        Returns (i, prefix(i)), or (-1, 0) when no leaf qualifies.
        """
        if lo >= hi:
            return -1, 0
        s, m, cap = self.sum, self.mn, self.cap
        pre = self.prefix(lo)
        for j in _cover(cap, lo, hi):
            if pre + m[j] <= bound:
                while j < cap:
                    j *= 2
                    if pre + m[j] > bound:
                        pre += s[j]
                        j += 1
                return j - cap, pre
            pre += s[j]
        return -1, 0


class MinTree:
    """A value per leaf; finds the last leaf before a position with value <= a bound.
    Values are kept in 32 bits (see the module docstring)."""

    __slots__ = ("cap", "mn")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.mn = array("i", [_TOP]) * (2 * cap)

    def load(self, values: list[int]) -> None:
        """Set leaves 0..len-1 at once (the rest empty) and build the inner nodes."""
        cap = self.cap
        self.mn[cap : cap + len(values)] = array("i", map(_narrow, values))
        self._build()

    def moved(self, cap: int, where: Callable[[int], int], fresh: dict[int, int]) -> MinTree:
        """A tree of ``cap`` leaves holding each value of this tree that is not INF at
        leaf ``where(k)`` for its leaf ``k`` (dropped where that is -1), and ``fresh[k]``
        at leaf ``k`` where given: the same values at other slots, some of them new.
        The values are found from the root down and only the inner nodes above them
        are made (the rest of a new tree is INF already), so a tree holding few values
        (most entries hidden) moves in O(values × log cap), not O(cap)."""
        tree = MinTree(cap)
        m, old = self.mn, self.cap
        leaves: dict[int, int] = {}
        for k in self._held():
            new = where(k)
            if new >= 0:
                leaves[new] = m[old + k]
        for k, value in fresh.items():
            leaves[k] = _narrow(value)
        tree._put(leaves)
        return tree

    def _held(self) -> list[int]:
        """The leaves whose value is not INF, left to right."""
        m, cap = self.mn, self.cap
        if m[1] == _TOP:
            return []
        held: list[int] = []
        level = [1]
        while level:  # the nodes of one depth holding a value, a depth at a time
            held += [j - cap for j in level if j >= cap]
            level = [c for j in level if j < cap for c in (2 * j, 2 * j + 1) if m[c] != _TOP]
        if cap & (cap - 1):  # leaves at two depths: the deeper ones came last
            held.sort()
        return held

    def _build(self) -> None:
        """Make every inner node the minimum of its children, a range at a time
        (:func:`_spans`)."""
        m = self.mn
        for lo, hi in _spans(self.cap, self.cap):
            pairs = zip(m[2 * lo : 2 * hi : 2], m[2 * lo + 1 : 2 * hi : 2], strict=True)
            m[lo:hi] = array("i", [x if x < y else y for x, y in pairs])

    def shift(self, lo: int, hi: int) -> None:
        """Move leaves ``lo``..``hi`` - 2 one on, as :meth:`PrefixTree.shift`."""
        cap, m = self.cap, self.mn
        a, b = cap + lo, cap + hi - 1
        m[a + 1 : b + 1] = m[a:b]
        a >>= 1
        b >>= 1
        while b:
            for j in range(a or 1, b + 1):
                x, y = m[2 * j], m[2 * j + 1]
                m[j] = x if x < y else y
            a >>= 1
            b >>= 1

    def set(self, i: int, value: int) -> None:
        value = _narrow(value)
        m = self.mn
        j = i + self.cap
        if m[j] == value:
            return
        m[j] = value
        j >>= 1
        while j:
            x, y = m[2 * j], m[2 * j + 1]
            v = x if x < y else y
            if m[j] == v:
                return
            m[j] = v
            j >>= 1

    def set_many(self, leaves: dict[int, int]) -> None:
        """Set each leaf of ``leaves`` (leaf → value), then the minima above them, each
        once (all of them when the leaves are many): the tree :meth:`set` of each leaf
        would leave, for fewer operations."""
        self._put({i: _narrow(value) for i, value in leaves.items()})

    def _put(self, leaves: dict[int, int]) -> None:
        """:meth:`set_many` of values kept as they are (narrowed already)."""
        cap, m = self.cap, self.mn
        for i, value in leaves.items():
            m[cap + i] = value
        if 4 * len(leaves) > cap:
            above = range(cap - 1, 0, -1)
            for j in above:
                x, y = m[2 * j], m[2 * j + 1]
                m[j] = x if x < y else y
            return
        # a set of parents at a time: a node is made again after the last of its children
        # (as in _spans), though the leaves lie at two depths when cap is not a power of 2
        level = {(cap + i) >> 1 for i in leaves}
        while level:
            for j in level:
                x, y = m[2 * j], m[2 * j + 1]
                m[j] = x if x < y else y
            level = {j >> 1 for j in level if j > 1}

    def find_last(self, hi: int, bound: int) -> int:
        """The last leaf ``i < hi`` with value <= ``bound``, or -1."""
        m, cap = self.mn, self.cap
        bound = _narrow(bound)
        if m[1] > bound or hi <= 0:
            return -1
        for j in reversed(_cover(cap, 0, hi)):
            if m[j] <= bound:
                while j < cap:
                    j = 2 * j + 1
                    if m[j] > bound:
                        j -= 1
                return j - cap
        return -1
