"""The checks behind dagctx's argument validation: "an int, but not a bool", and numbers.

Python's ``bool`` is a subclass of ``int`` (``isinstance(True, int)`` holds), so every
check that wants a count, an index, a budget or a number of seconds must exclude it; these
predicates do, and narrow the type for mypy. Callers keep their own error class and
message (``if not is_int(budget) or budget <= 0: raise BudgetError(...)``).

Imports nothing of dagctx.
"""

from __future__ import annotations

import math
from typing import TypeGuard


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an int and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float (NaN and infinities included), not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_finite(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a finite float, not a bool."""
    return is_number(value) and math.isfinite(value)


__all__ = ["is_finite", "is_int", "is_number"]
