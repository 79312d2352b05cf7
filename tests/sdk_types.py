"""A runtime check of a value against a provider SDK's request TypedDicts.

The SDKs declare their request parameters as TypedDicts (no runtime validation); this
walks one against a value: required keys present, no unknown keys, literals, unions,
lists and scalars as declared. Used by tests/test_provider_messages.py.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions

SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence}


class Mismatch(AssertionError):
    pass


def check(value: object, tp: Any, path: str = "$") -> None:
    """Raise :class:`Mismatch` naming the first place where ``value`` is not a ``tp``."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any or tp is object:
        return
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            raise Mismatch(f"{path}: expected a {tp.__name__} dict, got {type(value).__name__}")
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        missing = set(tp.__required_keys__) - value.keys()
        unknown = value.keys() - hints.keys()
        if missing or unknown:
            raise Mismatch(f"{path}: {tp.__name__} missing {missing or ''} unknown {unknown or ''}")
        for key, item in value.items():
            check(item, hints[key], f"{path}.{key}")
        return
    wrappers = (
        typing.Required,
        typing.NotRequired,
        typing.Annotated,
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing_extensions.Annotated,
    )
    if origin in wrappers:
        check(value, args[0], path)
    elif origin in (Union, types.UnionType):
        failures = []
        for option in args:
            try:
                check(value, option, path)
                return
            except Mismatch as exc:
                failures.append(str(exc))
        raise Mismatch(f"{path}: no alternative fits: {failures}")
    elif origin in (Literal, typing_extensions.Literal):
        if value not in args:
            raise Mismatch(f"{path}: {value!r} is not one of {args}")
    elif origin in SEQUENCES:
        if not isinstance(value, (list, tuple)):
            raise Mismatch(f"{path}: expected a list, got {type(value).__name__}")
        for k, item in enumerate(value):
            check(item, args[0] if args else Any, f"{path}[{k}]")
    elif origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            raise Mismatch(f"{path}: expected a dict")
        for key, item in value.items():
            check(key, args[0], f"{path}<key>")
            check(item, args[1], f"{path}.{key}")
    elif tp is type(None) or tp is None:
        if value is not None:
            raise Mismatch(f"{path}: expected None")
    elif tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise Mismatch(f"{path}: expected a number")
    elif isinstance(tp, type):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise Mismatch(f"{path}: expected {tp.__name__}, got {type(value).__name__}")
    else:
        raise Mismatch(f"{path}: cannot check against {tp!r}")
