"""The degrade order's segment trees (dagctx.projection._segtree) against plain lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.projection._segtree import INF, MinTree

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
