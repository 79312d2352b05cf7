"""Check a model's tool arguments with pydantic and say what is wrong in sentences.

`validate_arguments` runs the pydantic model `dagctx.tools.schema` built for the tool
(strict: nothing is converted, ``"5"`` is not an integer and ``true`` is not one either)
and turns its `pydantic.ValidationError` into one message a model can act on: which
argument, what was expected (described from the published schema, so the words match
what the model was shown), what arrived. Every problem is listed — missing and unknown
arguments and one problem per wrong argument, its innermost bad item located as
``argument 'tags'[1]`` or ``argument 'options'['k']``. Nothing here raises on bad input.

Imports only `dagctx.tools.schema` and `dagctx._validate` from dagctx.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from dagctx._validate import is_int, is_number
from dagctx.tools.schema import FunctionSchema

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
# pydantic's location of an item: list indices and dict keys, union member tags.
Location = tuple[int | str, ...]


def validate_arguments(
    tool_name: str, schema: FunctionSchema, arguments: dict[str, Any]
) -> str | None:
    """Return a message listing what is wrong with `arguments`, or ``None`` if they fit.

    `schema` is what `function_schema` built for the tool; `arguments` are not changed.
    """
    try:
        schema.arguments.validate_python(arguments)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        return _message(tool_name, schema.parameters, arguments, errors)
    return None


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


def _message(
    tool_name: str,
    parameters: Mapping[str, Any],
    arguments: Mapping[str, Any],
    errors: Sequence[Any],
) -> str:
    """Missing arguments in the schema's order, then one problem per bad argument given."""
    properties: Mapping[str, Any] = parameters["properties"]
    failed: dict[str, list[Location]] = {}
    for error in errors:
        name, *rest = error["loc"]
        failed.setdefault(str(name), []).append(tuple(rest))
    problems = [
        f"missing required argument '{name}' ({describe_schema(properties[name])})"
        for name in parameters["required"]
        if name in failed and name not in arguments
    ]
    for name, value in arguments.items():
        if name not in failed:
            continue
        if name not in properties:
            known = ", ".join(f"'{p}'" for p in properties) or "none"
            problems.append(f"unknown argument '{name}' (accepted arguments: {known})")
        else:
            problems.append(_explain(value, properties[name], failed[name], f"argument '{name}'"))
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems) + "."


def _explain(
    value: Any, schema: Mapping[str, Any], where_failed: list[Location], where: str
) -> str:
    """The problem with `value`, given where inside it pydantic found errors.

    In a union the member of the value's own kind (an array for ``list[str] | None``)
    says more than "must be an array of strings or null", so the problem inside it is
    reported; when no single member has the value's kind, the union's.
    """
    if "anyOf" in schema:
        members: list[Mapping[str, Any]] = schema["anyOf"]
        same_kind = [m for m in members if _has_type(value, m.get("type"))]
        if len(same_kind) != 1:
            return _mismatch(value, schema, where)
        if sum(m != {"type": "null"} for m in members) > 1:
            # A real union: each location starts with the member's tag. The other members
            # have another kind and fail at their top, so deeper errors are this member's.
            where_failed = [loc[1:] for loc in where_failed if len(loc) > 1]
            if not where_failed:
                return _mismatch(value, same_kind[0], where)
        return _explain(value, same_kind[0], where_failed, where)
    first = where_failed[0] if where_failed and where_failed[0] else None
    if first is None or not isinstance(value, list | dict):
        return _mismatch(value, schema, where)
    step = first[0]
    if isinstance(value, list) and isinstance(step, int) and "items" in schema:
        inner = [loc[1:] for loc in where_failed if loc[:1] == (step,)]
        return _explain(value[step], schema["items"], inner, f"{where}[{step}]")
    extra = schema.get("additionalProperties")
    if isinstance(value, dict) and step in value and first[1:2] != ("[key]",) and extra:
        inner = [loc[1:] for loc in where_failed if loc[:1] == (step,)]
        return _explain(value[step], extra, inner, f"{where}[{step!r}]")
    return _mismatch(value, schema, where)


def _plural(description: str) -> str:
    for article in ("an ", "a "):
        if description.startswith(article) and " or " not in description:
            return description[len(article) :] + "s"
    return f"items that are {description}"


def _has_type(value: Any, kind: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return is_int(value)
    if kind == "number":
        return is_number(value)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return kind == "null" and value is None


def _mismatch(value: Any, schema: Mapping[str, Any], where: str) -> str:
    got = "null" if value is None else f"{_kind_of(value)} {_show(value)}"
    return f"{where} must be {describe_schema(schema)}, got {got}"


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
