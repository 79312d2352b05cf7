"""A tool's JSON Schema and argument validator, both from one pydantic model of its signature.

`function_schema` turns every parameter of a tool function (except the bound object, e.g.
``ctx``) into a field of a pydantic model that validates strictly and forbids unknown
arguments: ``"5"`` is not an ``int``, ``True`` is not an ``int`` and ``1`` is not
``Literal[True]`` (as in JSON, although Python's ``bool`` subclasses ``int``); an ``int``
is a valid ``float``. A parameter is required exactly when it has no default.

The published schema is that model's JSON Schema in the OpenAI function shape: no
``title``, ``required`` always present, ``additionalProperties: false``, a union of plain
types as a list of types (``{"type": ["integer", "null"]}``), a one-value ``Literal`` as a
one-value ``enum``, defaults that are plain JSON values as ``"default"``. Descriptions
come from the Google-style docstring — its summary describes the tool and its ``Args:``
section each parameter; pydantic does not read docstrings, so `parse_docstring` does.

Supported annotations are ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``dict``,
``dict[str, X]``, ``X | None`` / ``Optional[X]``, other unions, ``Literal[...]`` of
strings, numbers and booleans, and ``Any`` (pydantic also publishes ``Sequence[X]`` and
``Mapping[str, X]`` as an array and an object): the schema vocabulary ``type``, ``items``,
``additionalProperties``, ``enum`` and ``anyOf`` that `dagctx.tools.validation` describes
to a model. Anything else raises `ToolError` when the tool is defined, never when a model
calls it. The schema feeds the OpenAI function format and the MCP server.

Imports only `dagctx.errors` from dagctx; nothing here knows about contexts or sessions.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import pydantic
from pydantic_core import PydanticCustomError

from dagctx._lines import split_lines
from dagctx.errors import ToolError

__all__ = ["Docstring", "FunctionSchema", "function_schema", "parse_docstring"]

JsonSchema = dict[str, Any]

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
# The keywords a published value schema may use, in the order they are written out.
_KEYWORDS = ("type", "items", "additionalProperties", "enum", "anyOf", "description", "default")
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
_SUPPORTED = "use str, int, float, bool, list[X], dict[str, X], Literal[...], X | None or Any"
_CONFIG = pydantic.ConfigDict(strict=True, extra="forbid")
_CACHED = 256


@dataclass(frozen=True, slots=True)
class Docstring:
    """A docstring split into its summary and its per-argument descriptions."""

    summary: str
    args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a tool function shows a model, and the validator for what the model sends.

    Attributes:
        description: The docstring's summary.
        parameters: The object schema of the arguments (OpenAI function ``parameters``).
        arguments: Validates a dict of arguments against the pydantic model behind
            `parameters`; `dagctx.tools.validation` turns its errors into sentences.
    """

    description: str
    parameters: JsonSchema
    arguments: pydantic.TypeAdapter[pydantic.BaseModel]


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into summary and ``Args:`` descriptions.

    The summary is the text before the first section header, with paragraphs kept and
    lines inside a paragraph joined. An argument's description may continue on more
    deeply indented lines.
    """
    lines = split_lines(inspect.cleandoc(doc or ""))
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


def function_schema(fn: Callable[..., Any], *, exclude: Collection[str] = ()) -> FunctionSchema:
    """The description, the parameters schema and the argument validator of `fn`.

    Parameters named in `exclude` (the bound object, e.g. ``ctx``) are left out; their
    annotations are never evaluated, so they may name types imported under
    ``TYPE_CHECKING`` only. Building the pydantic model takes about a millisecond, so
    the result for the last `_CACHED` functions is kept (a function's signature and
    docstring are read once); each call returns its own copy of ``parameters``.

    Raises:
        ToolError: A parameter is ``*args`` / ``**kwargs``, lacks an annotation, or has
            one outside the supported vocabulary.
    """
    built = _build(fn, frozenset(exclude))
    return replace(built, parameters=copy.deepcopy(built.parameters))


@functools.lru_cache(maxsize=_CACHED)
def _build(fn: Callable[..., Any], exclude: frozenset[str]) -> FunctionSchema:
    name = getattr(fn, "__name__", repr(fn))
    doc = parse_docstring(inspect.getdoc(fn))
    hints = _annotations(fn, exclude)
    fields: dict[str, Any] = {}
    for position, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.name in exclude:
            continue
        where = f"parameter {param.name!r} of {name}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(
                f"{where}: *args and **kwargs cannot be described to a model",
                tool=name,
                value=param,
            )
        if param.name not in hints:
            raise ToolError(f"{where} has no type annotation", tool=name, value=param)
        default: dict[str, Any] = {}
        if param.default is not param.empty:
            # A default the schema cannot show still makes the argument optional.
            key = "default" if _is_json_value(param.default) else "default_factory"
            default[key] = param.default if key == "default" else lambda d=param.default: d
        # Field names are positional so a parameter may be called anything (``json``,
        # ``model_x``, ``_x``); the alias is the name the model sees and sends.
        info = pydantic.Field(alias=param.name, description=doc.args.get(param.name), **default)
        fields[f"p{position}"] = (_json_annotation(hints[param.name], where), info)
    try:
        model = pydantic.create_model(f"{name}_arguments", __config__=_CONFIG, **fields)
        raw = model.model_json_schema()
    except pydantic.PydanticUserError as exc:
        reason = (split_lines(str(exc)) or [""])[0]
        raise ToolError(
            f"the parameters of {name} have no JSON Schema ({reason}); {_SUPPORTED}",
            tool=name,
            value=fn,
        ) from exc
    properties = {
        pname: _published(schema, hints[pname], f"parameter {pname!r} of {name}: {hints[pname]!r}")
        for pname, schema in raw["properties"].items()
    }
    parameters: JsonSchema = {
        "type": "object",
        "properties": properties,
        "required": raw.get("required", []),
        "additionalProperties": False,
    }
    return FunctionSchema(doc.summary, parameters, pydantic.TypeAdapter(model))


def _published(schema: JsonSchema, annotation: Any, where: str) -> JsonSchema:
    """pydantic's schema of one value, in the vocabulary dagctx publishes.

    Raises:
        ToolError: The schema needs a keyword or type outside that vocabulary.
    """
    schema = {k: v for k, v in schema.items() if k != "title"}
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    for key in ("items", "additionalProperties"):
        inner = schema.pop(key, True)
        if isinstance(inner, dict) and inner:
            inner = _published(inner, annotation, where)
        if isinstance(inner, dict) and inner:  # {} / true: any value, nothing to say
            schema[key] = inner
    if "anyOf" in schema:
        members = [_published(m, annotation, where) for m in schema.pop("anyOf")]
        plain = all(set(m) == {"type"} and isinstance(m["type"], str) for m in members)
        if all(members):  # an empty member (Any) absorbs the rest
            schema.update({"type": [m["type"] for m in members]} if plain else {"anyOf": members})
    unknown = set(schema) - set(_KEYWORDS)
    kinds = schema.get("type", [])
    if unknown or not _JSON_TYPES.issuperset(kinds if isinstance(kinds, list) else [kinds]):
        raise ToolError(f"{where} has no JSON Schema here; {_SUPPORTED}", value=annotation)
    return {key: schema[key] for key in _KEYWORDS if key in schema}


def _json_annotation(annotation: Any, where: str) -> Any:
    """`annotation` as pydantic should validate it for JSON arguments.

    A ``Literal`` of numbers or booleans refuses the other kind before pydantic's own
    check, which lets ``True`` match ``Literal[1]`` (JSON does not); unions, lists and
    dicts are rebuilt around their rewritten arguments.

    Raises:
        ToolError: A dict with non-string keys, or a Literal of other values.
    """
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        if not all(isinstance(v, str | int | float) for v in args):
            raise ToolError(
                f"{where}: Literal values must be str, int, float or bool: {args!r}",
                value=annotation,
            )
        if any(isinstance(v, int | float) for v in args):
            check = pydantic.BeforeValidator(functools.partial(_same_json_number, args))
            return Annotated[annotation, check]
        return annotation
    if origin is dict and args and args[0] is not str:
        raise ToolError(
            f"{where}: JSON object keys are strings, got {annotation!r}", value=annotation
        )
    if origin is None or not args:
        return annotation
    rewritten = tuple(_json_annotation(arg, where) for arg in args)
    if rewritten == args:
        return annotation
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[rewritten]  # noqa: UP007 -- built from a tuple at runtime
    return origin[rewritten]


def _same_json_number(options: tuple[Any, ...], value: Any) -> Any:
    """`value`, unless it is a number or boolean equal only to an option of the other kind."""
    if isinstance(value, int | float) and not any(
        value == o and isinstance(value, bool) == isinstance(o, bool) for o in options
    ):
        raise PydanticCustomError("literal_error", "Input should be one of the Literal values")
    return value


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
                    f"of {getattr(fn, '__name__', fn)}: {exc}",
                    value=annotation,
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
