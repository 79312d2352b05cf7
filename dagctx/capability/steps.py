"""Plan steps as readers of capability contexts: which entries a step names, and whether
the found entries meet the step's constraints.

Used by :meth:`ContextManager.extract_from_step` and :meth:`ContextManager.get_summaries`;
pure checks over their arguments that raise :class:`CapabilityError` naming the offending
value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from dagctx.capability.context import StoredContext, check_name
from dagctx.errors import CapabilityError

Constraint = str | tuple[str, str]
ConstraintMode = Literal["hard", "soft"]


def input_pairs(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return the ``(context_type, key)`` pairs of one ``{context_type: key}`` mapping."""
    pairs = []
    for context_type, key in item.items():
        check_name("context type in a step input", context_type)
        check_name(f"context key for {context_type} in a step input", key)
        pairs.append((context_type, key))
    return pairs


def step_inputs(step: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return the ``(context_type, key)`` pairs a step names in ``step["inputs"]``, in
    order and each once."""
    if not isinstance(step, Mapping):
        raise CapabilityError(
            f"step must be a mapping with an 'inputs' list, got {type(step).__name__}", value=step
        )
    inputs = step.get("inputs") or []
    if isinstance(inputs, str | bytes | Mapping) or not isinstance(inputs, Iterable):
        raise CapabilityError(
            f"step['inputs'] must be a list of {{context_type: key}} mappings, got {inputs!r}",
            value=inputs,
        )
    pairs: list[tuple[str, str]] = []
    for item in inputs:
        if not isinstance(item, Mapping):
            raise CapabilityError(
                f"step input {item!r} must be a mapping {{context_type: key}}", value=item
            )
        pairs.extend(input_pairs(item))
    return list(dict.fromkeys(pairs))  # a repeated input names the same context once


def parse_constraints(constraints: Iterable[Constraint] | None) -> list[tuple[str, str | None]]:
    """Return the constraints as ``(context_type, cardinality or None)`` pairs."""
    if constraints is None:
        return []
    if isinstance(constraints, str | bytes | Mapping):
        raise CapabilityError(
            f"constraints must be a list of types or (type, cardinality) pairs, "
            f"got {constraints!r}",
            value=constraints,
        )
    parsed: list[tuple[str, str | None]] = []
    for item in constraints:
        if isinstance(item, str) and item:
            parsed.append((item, None))
        elif isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
            context_type, cardinality = item
            if cardinality not in ("single", "multiple"):
                raise CapabilityError(
                    f"invalid cardinality {cardinality!r} for {context_type}: "
                    f"must be 'single' or 'multiple'",
                    value=cardinality,
                )
            parsed.append((context_type, cardinality))
        else:
            raise CapabilityError(
                f"constraint {item!r} must be a context type or a (type, cardinality) pair",
                value=item,
            )
    return parsed


def check_constraints(
    found: Mapping[str, list[StoredContext]],
    constraints: list[tuple[str, str | None]],
    mode: ConstraintMode,
) -> None:
    """Raise :class:`CapabilityError` when ``found`` (entries by type) breaks a
    constraint in ``mode``."""
    missing = []
    for context_type, cardinality in constraints:
        count = len(found.get(context_type, ()))
        if count == 0:
            missing.append(context_type)
        elif cardinality == "single" and count != 1:
            raise CapabilityError(
                f"constraint ({context_type!r}, 'single'): expected single instance of "
                f"{context_type} but got {count}",
                value=context_type,
            )
        elif cardinality == "multiple" and count < 2:
            raise CapabilityError(
                f"constraint ({context_type!r}, 'multiple'): expected multiple instances of "
                f"{context_type} but got single",
                value=context_type,
            )
    provided = ", ".join(found) or "none"
    if mode == "hard" and missing:
        raise CapabilityError(
            f"step lacks required context type(s) {', '.join(missing)}; it provides: {provided}",
            value=missing,
        )
    if mode == "soft" and constraints and len(missing) == len(constraints):
        wanted = ", ".join(t for t, _ in constraints)
        raise CapabilityError(
            f"step provides none of the context types {wanted} (soft mode needs at least "
            f"one); it provides: {provided}",
            value=constraints,
        )
