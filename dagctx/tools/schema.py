"""JSON Schema for a tool, generated from its function's signature and docstring.

The generator understands ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``dict``,
``dict[str, X]``, ``X | None`` / ``Optional[X]``, other unions, ``Literal[...]`` and
``Any``. A parameter is required exactly when it has no default. Descriptions come from
the Google-style docstring: its summary describes the tool and its ``Args:`` section
describes each parameter.

Any other annotation raises `ToolError` when the tool is defined, never when a model calls
it. The same schema feeds the OpenAI function format, argument validation
(`dagctx.tools.validation`) and the MCP server.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from dagctx.errors import ToolError

__all__ = ["Docstring", "function_schema", "parse_docstring", "type_schema"]

JsonSchema = dict[str, Any]

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """A docstring split into its summary and its per-argument descriptions."""

    summary: str
    args: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into summary and ``Args:`` descriptions.

    The summary is the text before the first section header, with paragraphs kept and
    lines inside a paragraph joined. An argument's description may continue on more
    deeply indented lines.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    for line in lines:
        header = _SECTION.match(line.strip()) if not line.startswith(" ") else None
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            summary.append(line.strip())
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line.strip())
            if match and (current is None or indent <= arg_indent):
                current, arg_indent = match.group(1).lstrip("*"), indent
                args[current] = match.group(2).strip()
            elif current is not None:
                args[current] = f"{args[current]} {line.strip()}".strip()
    paragraphs = "\n".join(summary).split("\n\n")
    text = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    return Docstring(text, args)


def type_schema(annotation: Any, where: str = "parameter") -> JsonSchema:
    """The JSON Schema for one Python annotation.

    Raises:
        ToolError: The annotation has no JSON Schema equivalent here; `where` names the
            parameter in the message.
    """
    if annotation is Any:
        return {}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation is type(None):
        return {"type": "null"}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is list or origin is list:
        schema: JsonSchema = {"type": "array"}
        if args:
            schema["items"] = type_schema(args[0], where)
        return schema
    if annotation is dict or origin is dict:
        if args and args[0] is not str:
            raise ToolError(f"{where}: JSON object keys are strings, got {annotation!r}")
        schema = {"type": "object"}
        if args:
            schema["additionalProperties"] = type_schema(args[1], where)
        return schema
    if origin is typing.Literal:
        return _literal_schema(args, where)
    if origin is typing.Union or origin is types.UnionType:
        return _union_schema([type_schema(arg, where) for arg in args])
    raise ToolError(
        f"{where}: annotation {annotation!r} has no JSON Schema; use str, int, float, bool, "
        "list[X], dict[str, X], Literal[...], X | None or Any"
    )


def _literal_schema(values: tuple[Any, ...], where: str) -> JsonSchema:
    kinds = {_SIMPLE.get(type(v)) for v in values}
    if None in kinds:
        raise ToolError(f"{where}: Literal values must be str, int, float or bool: {values!r}")
    schema: JsonSchema = {"enum": list(values)}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(members: list[JsonSchema]) -> JsonSchema:
    if any(not m for m in members):  # Any absorbs the rest
        return {}
    if all(set(m) == {"type"} for m in members):
        return {"type": [m["type"] for m in members]}
    return {"anyOf": members}


def function_schema(
    fn: Callable[..., Any], *, exclude: Collection[str] = ()
) -> tuple[str, JsonSchema]:
    """The description and the parameters schema of `fn`.

    Parameters named in `exclude` (the bound object, e.g. ``ctx``) are left out. Defaults
    that are plain JSON values are recorded as ``"default"``. The result is an object
    schema with ``required`` (parameters without a default, in signature order) and
    ``additionalProperties: false``.

    Raises:
        ToolError: A parameter is ``*args`` / ``**kwargs``, lacks an annotation, or has
            one `type_schema` cannot express.
    """
    name = getattr(fn, "__name__", repr(fn))
    doc = parse_docstring(inspect.getdoc(fn))
    hints = _annotations(fn, exclude)
    properties: dict[str, JsonSchema] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in exclude:
            continue
        where = f"parameter {param.name!r} of {name}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"{where}: *args and **kwargs cannot be described to a model")
        if param.name not in hints:
            raise ToolError(f"{where} has no type annotation")
        schema = type_schema(hints[param.name], where)
        if param.name in doc.args:
            schema["description"] = doc.args[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif _is_json_value(param.default):
            schema["default"] = param.default
        properties[param.name] = schema
    parameters: JsonSchema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return doc.summary, parameters


def _annotations(fn: Callable[..., Any], exclude: Collection[str]) -> dict[str, Any]:
    """Evaluated annotations of `fn`'s parameters, except the excluded ones.

    Excluded parameters are skipped before evaluation, so the bound object's type may be
    imported under ``TYPE_CHECKING`` only.
    """
    hints: dict[str, Any] = {}
    for param, annotation in inspect.get_annotations(fn).items():
        if param in exclude or param == "return":
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, getattr(fn, "__globals__", {}))
            except Exception as exc:
                raise ToolError(
                    f"cannot resolve annotation {annotation!r} of parameter {param!r} "
                    f"of {getattr(fn, '__name__', fn)}: {exc}"
                ) from exc
        hints[param] = annotation
    return hints


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())
    return False
