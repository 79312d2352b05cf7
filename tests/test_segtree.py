"""The degrade order's segment trees (dagctx.projection._segtree) against plain lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.projection._segtree import INF, MinTree, PrefixTree, picker

_VALUES = st.one_of(
    st.sampled_from([INF, -INF]),
    st.integers(-(2**31) + 2, 2**31 - 3),  # token counts and their differences
    st.integers(-1000, 1000),
)
_BOUNDS = st.one_of(
    st.sampled_from([INF, INF - 1, -INF, 10**12, -(10**12)]),
    st.integers(-(2**40), 2**40),
    st.integers(-1000, 1000),
)


class TestMinTree:
    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(_VALUES, min_size=1, max_size=40),
        st.lists(st.tuples(st.integers(0, 63), _VALUES), max_size=20),
        st.lists(st.tuples(st.integers(-1, 64), _BOUNDS), min_size=1, max_size=20),
    )
    def test_find_last_is_the_last_leaf_at_most_the_bound(
        self,
        values: list[int],
        sets: list[tuple[int, int]],
        queries: list[tuple[int, int]],
    ) -> None:
        # values are kept in 32 bits (INF and -INF at the ends): no answer may change
        cap = 64
        tree = MinTree(cap)
        tree.load(values)
        plain = values + [INF] * (cap - len(values))
        for i, value in sets:
            tree.set(i, value)
            plain[i] = value
        for hi, bound in queries:
            hits = [i for i in range(hi) if plain[i] <= bound]
            assert tree.find_last(hi, bound) == (hits[-1] if hits else -1)

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(_VALUES, min_size=1, max_size=64),
        st.dictionaries(st.integers(0, 63), _VALUES, max_size=64),
    )
    def test_set_many_leaves_the_tree_each_set_leaves(
        self, values: list[int], leaves: dict[int, int]
    ) -> None:
        """Few leaves (their minima set level by level) or many (all minima made again)."""
        one_by_one, at_once = MinTree(64), MinTree(64)
        one_by_one.load(values)
        at_once.load(values)
        for i, value in leaves.items():
            one_by_one.set(i, value)
        at_once.set_many(leaves)
        assert at_once.mn == one_by_one.mn


# a leaf of pass A: (sum, minimum running sum, trigger), or the empty leaf
_BLOCKS = st.one_of(
    st.just((0, INF, 0)),
    st.tuples(st.integers(-(10**9), 10**9), st.integers(-(10**9), 10**9), st.integers(0, 1)),
)


def _permutation(draw: st.DrawFn, cap: int) -> list[int]:
    """Where each of ``cap`` new leaves comes from: an old leaf, each at most once, or -1."""
    old = draw(st.permutations(list(range(cap))))
    holes = draw(st.sets(st.integers(0, cap - 1)))
    return [-1 if k in holes else old[k] for k in range(cap)]


_POWERS = st.sampled_from([1, 2, 8, 32])


@st.composite
def _moves(
    draw: st.DrawFn,
    leaf: st.SearchStrategy[object],
    caps: st.SearchStrategy[int] = _POWERS,
) -> tuple[list, list[int], dict]:
    cap = draw(caps)
    leaves = draw(st.lists(leaf, min_size=cap, max_size=cap))
    source = _permutation(draw, cap)
    fresh = draw(st.dictionaries(st.integers(0, cap - 1), leaf, max_size=cap))
    return leaves, source, fresh


class TestPicker:
    @given(data=st.data(), values=st.lists(st.integers(), min_size=1, max_size=40))
    def test_reads_each_index_in_order(self, data: st.DataObject, values: list[int]) -> None:
        """Any number of indices (none, one, many; -1 the last), each read in order, as a
        new list."""
        source = data.draw(st.lists(st.integers(-1, len(values) - 1), max_size=60))
        got = picker(source)(values)
        assert got == [values[k] for k in source]
        assert isinstance(got, list)


class TestMovedTrees:
    """A tree whose leaves follow their entries to new slots (the degrade order laid
    out again) is the tree loaded with the leaves at those slots."""

    @settings(max_examples=200, deadline=None)
    @given(_moves(_BLOCKS))
    def test_a_moved_prefix_tree_is_the_tree_of_its_leaves(
        self, case: tuple[list[tuple[int, int, int]], list[int], dict[int, tuple[int, int, int]]]
    ) -> None:
        leaves, source, fresh = case
        cap = len(leaves)
        old = PrefixTree(cap)
        old.load(leaves)
        moved = old.moved(cap, source, fresh)
        placed = [leaves[k] if k >= 0 else (0, INF, 0) for k in source]
        for k, block in fresh.items():
            placed[k] = block
        expected = PrefixTree(cap)
        for k, block in enumerate(placed):  # one leaf at a time: every inner node set
            expected.set(k, *block)
        assert (moved.sum, moved.mn, moved.trig) == (expected.sum, expected.mn, expected.trig)

    @settings(max_examples=200, deadline=None)
    @given(_moves(_BLOCKS))
    def test_a_gathered_prefix_tree_is_the_tree_of_its_leaves(
        self, case: tuple[list[tuple[int, int, int]], list[int], dict[int, tuple[int, int, int]]]
    ) -> None:
        """Leaves read from a tree's lists changed in place (a plan built again writes the
        leaves of the files it refloors at their old slots), each at its new slot; the
        inner nodes above empty leaves at the end are left empty."""
        leaves, source, changed = case
        cap = len(leaves)
        old = PrefixTree(cap)
        old.load(leaves)
        sums, mins, trigs = lists = old.leaves()
        for k, (a, b, c) in changed.items():  # keyed by old leaf here
            sums[k], mins[k], trigs[k] = a, b, c
        tree = PrefixTree.gathered(cap, source, lists)
        now = [changed.get(k, block) for k, block in enumerate(leaves)]
        expected = PrefixTree(cap)
        for k, was in enumerate(source):  # one leaf at a time: every inner node set
            expected.set(k, *(now[was] if was >= 0 else (0, INF, 0)))
        assert (tree.sum, tree.mn, tree.trig) == (expected.sum, expected.mn, expected.trig)

    @settings(max_examples=200, deadline=None)
    @given(_moves(_VALUES))
    def test_a_moved_min_tree_is_the_tree_of_its_leaves(
        self, case: tuple[list[int], list[int], dict[int, int]]
    ) -> None:
        values, source, fresh = case
        cap = len(values)
        old = MinTree(cap)
        old.load(values)
        where = [-1] * cap  # each old leaf's new place
        for k, was in enumerate(source):
            if was >= 0:
                where[was] = k
        moved = old.moved(cap, where.__getitem__, fresh)
        expected = MinTree(cap)
        for k, where in enumerate(source):
            expected.set(k, fresh.get(k, values[where] if where >= 0 else INF))
        assert moved.mn == expected.mn

    @settings(max_examples=100, deadline=None)
    @given(st.dictionaries(st.integers(0, 2**12 - 1), _VALUES, max_size=12))
    def test_a_moved_min_tree_looks_only_at_the_leaves_holding_a_value(
        self, values: dict[int, int]
    ) -> None:
        """Most leaves of the fill and cut trees are INF (hidden entries): a move asks
        where the others go, and no more."""
        cap = 2**12
        old = MinTree(cap)
        old.set_many(values)
        asked: list[int] = []

        def where(k: int) -> int:
            asked.append(k)
            return cap - 1 - k

        moved = old.moved(cap, where, {})
        assert asked == sorted(k for k, v in values.items() if v < INF)
        expected = MinTree(cap)
        expected.set_many({cap - 1 - k: v for k, v in values.items()})
        assert moved.mn == expected.mn


class TestAnyNumberOfLeaves:
    """Trees of any number of leaves (the degrade order's slots, no padding up to a
    power of two) answer every search as plain lists do, after loads, sets, shifts and
    batches of sets."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.integers(1, 70).flatmap(
            lambda cap: st.tuples(
                st.just(cap),
                st.lists(_BLOCKS, min_size=cap, max_size=cap),
                st.lists(st.tuples(st.integers(0, cap - 1), _BLOCKS), max_size=10),
                st.lists(
                    st.tuples(st.integers(0, cap), st.integers(0, cap), _BOUNDS),
                    min_size=1,
                    max_size=10,
                ),
            )
        )
    )
    def test_prefix_tree_searches(
        self,
        case: tuple[
            int,
            list[tuple[int, int, int]],
            list[tuple[int, tuple[int, int, int]]],
            list[tuple[int, int, int]],
        ],
    ) -> None:
        cap, leaves, sets, queries = case
        tree = PrefixTree(cap)
        tree.load(leaves)
        plain = list(leaves)
        for i, block in sets:
            tree.set(i, *block)
            plain[i] = block
        sums = [0]
        for a, _, _ in plain:
            sums.append(sums[-1] + a)
        assert tree.total() == sums[-1]
        triggers = [i for i, (_, _, c) in enumerate(plain) if c]
        assert tree.first_trigger() == (triggers[0] if triggers else cap)
        for lo, hi, bound in queries:
            assert tree.prefix(lo) == sums[lo]
            hits = [i for i in range(lo, hi) if sums[i] + plain[i][1] <= bound]
            expected = (hits[0], sums[hits[0]]) if hits else (-1, 0)
            assert tree.find_first(bound, lo, hi) == expected

    @settings(max_examples=300, deadline=None)
    @given(
        st.integers(1, 70).flatmap(
            lambda cap: st.tuples(
                st.lists(_VALUES, min_size=cap, max_size=cap),
                st.dictionaries(st.integers(0, cap - 1), _VALUES, max_size=cap),
                st.lists(st.tuples(st.integers(-1, cap), _BOUNDS), min_size=1, max_size=10),
            )
        )
    )
    def test_min_tree_searches(
        self, case: tuple[list[int], dict[int, int], list[tuple[int, int]]]
    ) -> None:
        values, leaves, queries = case
        cap = len(values)
        one_by_one, at_once = MinTree(cap), MinTree(cap)
        one_by_one.load(values)
        at_once.load(values)
        plain = list(values)
        for i, value in leaves.items():
            one_by_one.set(i, value)
            plain[i] = value
        at_once.set_many(leaves)
        assert at_once.mn == one_by_one.mn
        for hi, bound in queries:
            hits = [i for i in range(hi) if plain[i] <= bound]
            assert one_by_one.find_last(hi, bound) == (hits[-1] if hits else -1)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(_BLOCKS, min_size=2, max_size=70), st.data())
    def test_a_shift_equals_a_load(
        self, leaves: list[tuple[int, int, int]], data: st.DataObject
    ) -> None:
        cap = len(leaves)
        lo = data.draw(st.integers(0, cap - 2))
        hi = data.draw(st.integers(lo + 2, cap))
        moved = leaves[: lo + 1] + leaves[lo : hi - 1] + leaves[hi:]
        prefix, again = PrefixTree(cap), PrefixTree(cap)
        prefix.load(leaves)
        prefix.shift(lo, hi)
        again.load(moved)
        assert (prefix.sum, prefix.mn, prefix.trig) == (again.sum, again.mn, again.trig)
        keys, fresh_keys = MinTree(cap), MinTree(cap)
        keys.load([b for _, b, _ in leaves])
        keys.shift(lo, hi)
        fresh_keys.load([b for _, b, _ in moved])
        assert keys.mn == fresh_keys.mn

    @settings(max_examples=200, deadline=None)
    @given(_moves(_BLOCKS, st.integers(1, 40)), _moves(_VALUES, st.integers(1, 40)))
    def test_moved_and_gathered_trees_are_the_trees_of_their_leaves(
        self,
        blocks: tuple[list[tuple[int, int, int]], list[int], dict[int, tuple[int, int, int]]],
        values: tuple[list[int], list[int], dict[int, int]],
    ) -> None:
        leaves, source, fresh = blocks
        cap = len(leaves)
        old = PrefixTree(cap)
        old.load(leaves)
        placed = [leaves[k] if k >= 0 else (0, INF, 0) for k in source]
        expected = PrefixTree(cap)
        for k, block in enumerate(placed):
            expected.set(k, *block)
        gathered = PrefixTree.gathered(cap, source, old.leaves())
        assert (gathered.sum, gathered.mn, gathered.trig) == (
            expected.sum,
            expected.mn,
            expected.trig,
        )
        for k, block in fresh.items():
            expected.set(k, *block)
        moved = old.moved(cap, source, fresh)
        assert (moved.sum, moved.mn, moved.trig) == (expected.sum, expected.mn, expected.trig)
        numbers, source, fresh_values = values
        cap = len(numbers)
        tree = MinTree(cap)
        tree.load(numbers)
        where = [-1] * cap
        for k, was in enumerate(source):
            if was >= 0:
                where[was] = k
        asked: list[int] = []
        moved_values = tree.moved(cap, lambda k: asked.append(k) or where[k], fresh_values)
        assert asked == sorted(k for k, v in enumerate(numbers) if v < INF)
        expected_values = MinTree(cap)
        for k, was in enumerate(source):
            value = numbers[was] if was >= 0 else INF
            expected_values.set(k, fresh_values.get(k, value))
        assert moved_values.mn == expected_values.mn
