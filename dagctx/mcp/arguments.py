"""Tool schemas and arguments as MCP clients handle them.

A tool's `~dagctx.tools.Tool.parameters` describe an optional argument whose default is
``None`` as a union with null (``{"type": ["integer", "null"]}``, or an ``anyOf`` with a
``{"type": "null"}`` member). Form-based clients (the MCP Inspector among them) cannot
render such a union and send what the user typed as a string. So the server publishes
`client_schema` (null dropped from the unions of optional arguments: leaving an argument
out is how a client says "none") and runs `coerce_arguments` on what arrives: a string
that is the lossless form of what the schema asks for (``"12"`` for an integer,
``"1.5"`` for a number, ``"true"`` for a boolean, ``'["log", "-3"]'`` for an array, a
JSON object for an object) becomes that value; anything else is left as it came, so the
tool's own validation names it precisely.

Imports nothing from dagctx: it works on plain JSON Schema dicts.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["client_schema", "coerce_arguments"]

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def client_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the object schema `parameters` in which no optional argument's schema
    is a union with null."""
    schema = copy.deepcopy(dict(parameters))
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        if name not in required:
            _drop_null(prop)
    return schema


def _drop_null(prop: dict[str, Any]) -> None:
    kinds = prop.get("type")
    if isinstance(kinds, list) and "null" in kinds and len(kinds) > 1:
        rest = [k for k in kinds if k != "null"]
        prop["type"] = rest[0] if len(rest) == 1 else rest
    members = prop.get("anyOf")
    if isinstance(members, list) and {"type": "null"} in members:
        rest = [m for m in members if m != {"type": "null"}]
        del prop["anyOf"]
        if len(rest) == 1:
            prop.update(rest[0])
        else:
            prop["anyOf"] = rest
    if prop.get("default", 0) is None:
        del prop["default"]


def coerce_arguments(parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each string that losslessly spells a value of the argument's
    schema (and the schema accepts no string) replaced by that value; a new dict."""
    properties: Mapping[str, Any] = parameters.get("properties", {})
    coerced = dict(arguments)
    for name, value in arguments.items():
        prop = properties.get(name)
        if isinstance(value, str) and isinstance(prop, Mapping):
            kinds = _kinds(prop)
            if "string" not in kinds:
                coerced[name] = _parse(value, kinds)
    return coerced


def _kinds(prop: Mapping[str, Any]) -> set[str]:
    if "anyOf" in prop:
        return set().union(*(_kinds(m) for m in prop["anyOf"]))
    if "enum" in prop:
        return {"string"} if any(isinstance(v, str) for v in prop["enum"]) else set()
    kinds = prop.get("type")
    if kinds is None:
        return {"string"}  # any value: a string is one
    return set(kinds) if isinstance(kinds, list) else {kinds}


def _parse(text: str, kinds: set[str]) -> Any:
    """The value `text` spells for one of `kinds`, else `text` unchanged."""
    stripped = text.strip()
    if "integer" in kinds and _INTEGER.fullmatch(stripped):
        return int(stripped)
    if "number" in kinds and _NUMBER.fullmatch(stripped):
        number = float(stripped)
        if math.isfinite(number):
            return number
    if "boolean" in kinds and stripped in ("true", "false"):
        return stripped == "true"
    if "null" in kinds and stripped == "null":
        return None
    if kinds & {"array", "object"} and stripped[:1] in ("[", "{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
        if ("array" in kinds and isinstance(value, list)) or (
            "object" in kinds and isinstance(value, dict)
        ):
            return value
    return text
