"""Strict JSON for what dagctx stores in its files: values that come back unchanged.

Owns :func:`encode_json` (check, then write compact JSON text), :func:`dump_json` (the same
compact text without the round-trip check) and :func:`decode_json` (read it back, refusing
NaN and infinities). Used by the checkpoint store and the session file. Imports nothing of
dagctx but :mod:`dagctx.errors`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from dagctx.errors import CheckpointError


def _check_json(value: object, where: str, open_containers: set[int]) -> None:
    """Raise unless ``value`` survives a JSON round trip unchanged (types included)."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CheckpointError(f"{where} is {value!r}, which JSON cannot hold", value=value)
        return
    if not isinstance(value, list | dict):
        hint = "; store it as a list" if isinstance(value, tuple) else ""
        raise CheckpointError(
            f"{where} is a {type(value).__name__}, which JSON cannot hold{hint}", value=value
        )
    if id(value) in open_containers:
        raise CheckpointError(f"{where} contains itself, which JSON cannot hold", value=value)
    open_containers.add(id(value))
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", open_containers)
    else:
        for key, item in value.items():
            if not isinstance(key, str):
                raise CheckpointError(
                    f"{where} has key {key!r}; JSON keys must be strings", value=key
                )
            _check_json(item, f"{where}[{key!r}]", open_containers)
    open_containers.discard(id(value))


def dump_json(value: Any) -> str:
    """Return ``value`` as compact JSON text (ASCII escapes, so lone surrogates, which
    UTF-8 text columns could not hold, survive).

    Raises:
        TypeError, ValueError, RecursionError: as :func:`json.dumps` (NaN and infinities
            are a ValueError).
    """
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def encode_json(value: dict[str, Any], name: str) -> str:
    """Return ``value`` as JSON text that :func:`decode_json` turns back into an equal value.

    Raises:
        CheckpointError: a value would not come back unchanged from JSON (a tuple, a set,
            NaN, an object, a non-string key, a cycle), naming where it sits.
    """
    try:
        _check_json(value, name, set())
    except RecursionError as exc:
        raise CheckpointError(f"{name} is nested too deeply to store as JSON", value=value) from exc
    return dump_json(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (a file written by dagctx never holds it)")


def decode_json(text: str | bytes) -> Any:
    """Read JSON text written by :func:`encode_json` or :func:`dump_json`: strict, so NaN
    and infinities (which :func:`json.loads` accepts and no stored value holds) are a
    ValueError too.

    Raises:
        ValueError: the text is not JSON (:class:`json.JSONDecodeError` is one).
    """
    return json.loads(text, parse_constant=_no_constant)


__all__ = ["decode_json", "dump_json", "encode_json"]
