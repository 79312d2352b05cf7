"""Check a model's tool arguments against the schema `dagctx.tools.schema` generates.

The checker covers exactly the schema vocabulary the generator emits (``type`` — one or
several —, ``items``, ``additionalProperties``, ``enum``, ``anyOf``, ``required``) and
returns problems as sentences a model can act on: which argument, what was expected, what
arrived. It never raises on bad input and never converts values (``"5"`` is not an
integer; ``True`` is not an integer either, although ``bool`` subclasses ``int`` in Python).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["describe_schema", "validate_arguments"]

_ARTICLE_TYPE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_SHOWN_VALUE_LENGTH = 60


def validate_arguments(
    tool_name: str, parameters: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str | None:
    """Return a message listing what is wrong with `arguments`, or ``None`` if they fit.

    `parameters` is an object schema as produced by `function_schema`.
    """
    properties: Mapping[str, Any] = parameters.get("properties", {})
    problems: list[str] = []
    for name in parameters.get("required", ()):
        if name not in arguments:
            problems.append(
                f"missing required argument '{name}' ({describe_schema(properties[name])})"
            )
    for name, value in arguments.items():
        if name not in properties:
            known = ", ".join(f"'{p}'" for p in properties) or "none"
            problems.append(f"unknown argument '{name}' (accepted arguments: {known})")
            continue
        problem = _check(value, properties[name], f"argument '{name}'")
        if problem:
            problems.append(problem)
    if not problems:
        return None
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems) + "."


def describe_schema(schema: Mapping[str, Any]) -> str:
    """A short English description of what `schema` accepts, e.g. ``an array of strings``."""
    if "enum" in schema:
        return "one of " + ", ".join(_show(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(describe_schema(member) for member in schema["anyOf"])
    kind = schema.get("type")
    if kind is None:
        return "any value"
    if isinstance(kind, list):
        return " or ".join(_ARTICLE_TYPE[k] for k in kind)
    if kind == "array" and "items" in schema:
        return f"an array of {_plural(describe_schema(schema['items']))}"
    return _ARTICLE_TYPE[kind]


def _plural(description: str) -> str:
    for article in ("an ", "a "):
        if description.startswith(article) and " or " not in description:
            return description[len(article) :] + "s"
    return f"items that are {description}"


def _check(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    if "anyOf" in schema:
        problems = [_check(value, member, where) for member in schema["anyOf"]]
        if None in problems:
            return None
        # When the value's kind picks one member (an array for list[str] | None), the
        # problem inside it says more than "must be an array of strings or null".
        same_kind = [
            problem
            for member, problem in zip(schema["anyOf"], problems, strict=True)
            if isinstance(member.get("type"), str) and _has_type(value, member["type"])
        ]
        return same_kind[0] if len(same_kind) == 1 else _mismatch(value, schema, where)
    if "enum" in schema:
        if any(_same_json(value, option) for option in schema["enum"]):
            return None
        return _mismatch(value, schema, where)
    kind = schema.get("type")
    if kind is None:
        return None
    kinds = kind if isinstance(kind, list) else [kind]
    if not any(_has_type(value, k) for k in kinds):
        return _mismatch(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problem = _check(item, schema["items"], f"{where}[{index}]")
            if problem:
                return problem
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            problem = _check(item, schema["additionalProperties"], f"{where}[{key!r}]")
            if problem:
                return problem
    return None


def _has_type(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return kind == "null" and value is None


def _same_json(value: Any, option: Any) -> bool:
    # 1 == True in Python, but not in JSON.
    return bool(value == option and isinstance(value, bool) == isinstance(option, bool))


def _mismatch(value: Any, schema: Mapping[str, Any], where: str) -> str:
    return f"{where} must be {describe_schema(schema)}, got {_kind_of(value)} {_show(value)}"


def _kind_of(value: Any) -> str:
    for kind in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _has_type(value, kind):
            return kind
    return type(value).__name__


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOWN_VALUE_LENGTH:
        text = text[: _SHOWN_VALUE_LENGTH - 3] + "..."
    return text
