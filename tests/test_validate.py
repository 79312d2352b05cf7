"""The shared argument checks (``dagctx._validate``): bools are never counts or numbers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagctx._validate import is_finite, is_int, is_number
from dagctx.errors import BudgetError
from dagctx.session import check_budget

ANYTHING = st.one_of(
    st.booleans(), st.integers(), st.floats(), st.text(max_size=3), st.none(), st.just([1])
)


class TestPredicates:
    @given(ANYTHING)
    def test_a_bool_is_neither_an_int_nor_a_number(self, value: object) -> None:
        assert is_int(value) == (type(value) is int)
        assert is_number(value) == (type(value) in (int, float))
        assert is_finite(value) == (is_number(value) and math.isfinite(value))

    def test_an_int_subclass_other_than_bool_is_an_int(self) -> None:
        class Count(int):
            pass

        assert is_int(Count(3)) and is_number(Count(3)) and is_finite(Count(3))


class TestBudget:
    @pytest.mark.parametrize("budget", [True, False, 0, -1, 1.5, "100", None])
    def test_refused(self, budget: object) -> None:
        with pytest.raises(BudgetError, match="positive integer number of tokens"):
            check_budget(budget)

    def test_accepted(self) -> None:
        assert check_budget(1) == 1
