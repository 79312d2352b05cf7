"""Specification of the tool schema generator and the argument validator."""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Optional

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.errors import ToolError
from dagctx.tools import Tool, get_context_tools, get_graph_tools
from dagctx.tools.schema import FunctionSchema, function_schema, parse_docstring
from dagctx.tools.validation import describe_schema, validate_arguments


def _one_parameter(annotation: Any, name: str = "x") -> FunctionSchema:
    """The schema of a tool taking one required parameter `name` annotated `annotation`."""

    def tool(**kwargs: Any) -> str:
        return ""

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    tool.__signature__ = inspect.Signature([inspect.Parameter(name, kind)])  # type: ignore[attr-defined]
    tool.__annotations__ = {name: annotation}
    return function_schema(tool)


def type_schema(annotation: Any, name: str = "x") -> dict[str, Any]:
    """The published schema of a parameter annotated `annotation`."""
    schema: dict[str, Any] = _one_parameter(annotation, name).parameters["properties"][name]
    return schema


class Opaque:
    """A class pydantic has no schema for."""


def documented(
    ctx: object,
    path: str,
    count: int,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    options: dict[str, int] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    legacy: Optional[int] = None,  # noqa: UP045 -- Optional[...] spelling is part of the spec
) -> str:
    """Do something useful.

    A second paragraph
    spread over two lines.

    Args:
        ctx: The bound object; never shown to a model.
        path: Where to look.
        count (int): How many, which
            continues here.
        ratio: A fraction.
        flag: Whether to.
        tags: Labels.
        options: Named numbers.
        mode: Speed.
        legacy: Old setting.

    Returns:
        Nothing interesting.
    """
    return ""


class TestTypeSchema:
    @pytest.mark.parametrize(
        ("annotation", "schema"),
        [
            (str, {"type": "string"}),
            (int, {"type": "integer"}),
            (float, {"type": "number"}),
            (bool, {"type": "boolean"}),
            (list, {"type": "array"}),
            (list[int], {"type": "array", "items": {"type": "integer"}}),
            (dict, {"type": "object"}),
            (dict[str, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
            (int | None, {"type": ["integer", "null"]}),
            (Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
            (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
            (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
            (Literal["a", 1], {"enum": ["a", 1]}),
            (Any, {}),
            (
                list[int] | None,
                {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
            ),
        ],
    )
    def test_maps_annotations(self, annotation: Any, schema: dict[str, Any]) -> None:
        assert type_schema(annotation) == schema

    @pytest.mark.parametrize("annotation", [bytes, set[int], dict[int, str], tuple[int, int]])
    def test_unsupported_annotation_raises_naming_it(self, annotation: Any) -> None:
        with pytest.raises(ToolError, match="p"):
            type_schema(annotation, "p")


class TestFunctionSchema:
    def test_full_signature(self) -> None:
        schema = function_schema(documented, exclude={"ctx"})
        description, params = schema.description, schema.parameters
        assert description == "Do something useful.\n\nA second paragraph spread over two lines."
        assert list(params["properties"]) == [
            "path",
            "count",
            "ratio",
            "flag",
            "tags",
            "options",
            "mode",
            "legacy",
        ]
        assert params["required"] == ["path", "count"]
        assert params["additionalProperties"] is False
        props = params["properties"]
        assert props["path"] == {"type": "string", "description": "Where to look."}
        assert props["count"]["description"] == "How many, which continues here."
        assert props["ratio"] == {"type": "number", "description": "A fraction.", "default": 0.5}
        assert props["mode"] == {
            "type": "string",
            "enum": ["fast", "slow"],
            "description": "Speed.",
            "default": "fast",
        }
        assert props["legacy"]["type"] == ["integer", "null"]

    def test_excluded_parameter_is_absent_everywhere(self) -> None:
        params = function_schema(documented, exclude={"ctx"}).parameters
        assert "ctx" not in params["properties"] and "ctx" not in params["required"]

    def test_excluded_annotation_need_not_resolve(self) -> None:
        def tool(session: UndefinedSession, n: int) -> str:  # type: ignore[name-defined]  # noqa: F821
            """T."""
            return ""

        params = function_schema(tool, exclude={"session"}).parameters
        assert params["properties"] == {"n": {"type": "integer"}}

    def test_schema_is_valid_json_schema(self) -> None:
        params = function_schema(documented, exclude={"ctx"}).parameters
        jsonschema.Draft202012Validator.check_schema(params)

    def test_var_args_are_refused(self) -> None:
        def tool(ctx: object, *items: str) -> str:
            return ""

        with pytest.raises(ToolError, match="items"):
            function_schema(tool, exclude={"ctx"})

    def test_missing_annotation_is_refused(self) -> None:
        def tool(ctx: object, n) -> str:  # type: ignore[no-untyped-def]
            return ""

        with pytest.raises(ToolError, match=r"'n'.*annotation"):
            function_schema(tool, exclude={"ctx"})

    def test_non_json_default_is_omitted(self) -> None:
        marker = object()

        def tool(ctx: object, x: Any = marker) -> str:
            return ""

        params = function_schema(tool, exclude={"ctx"}).parameters
        assert params["properties"]["x"] == {} and params["required"] == []


class TestParseDocstring:
    def test_empty(self) -> None:
        doc = parse_docstring(None)
        assert (doc.summary, doc.args) == ("", {})

    def test_sections_after_args_end_them(self) -> None:
        doc = parse_docstring("S.\n\nArgs:\n    a: first.\n\nRaises:\n    ValueError: never.\n")
        assert doc.args == {"a": "first."}


class TestValidation:
    schema = function_schema(documented, exclude={"ctx"})

    def check(self, **arguments: Any) -> str | None:
        return validate_arguments("documented", self.schema, arguments)

    def test_valid_arguments_pass(self) -> None:
        assert self.check(path="a", count=2, tags=["x"], options={"k": 1}, mode="slow") is None
        assert self.check(path="a", count=2, ratio=1, legacy=None) is None

    def test_missing_argument_names_it_and_its_type(self) -> None:
        message = self.check(path="a")
        assert (
            message
            == "Invalid arguments for documented: missing required argument 'count' (an integer)."
        )

    def test_wrong_type_names_argument_expected_and_got(self) -> None:
        message = self.check(path="a", count="5")
        assert message is not None
        assert "argument 'count' must be an integer, got string \"5\"" in message

    def test_bool_is_not_an_integer(self) -> None:
        assert "must be an integer, got boolean true" in (self.check(path="a", count=True) or "")

    def test_nested_item_is_located(self) -> None:
        message = self.check(path="a", count=1, tags=["ok", 3])
        assert "argument 'tags'[1] must be a string, got integer 3" in (message or "")

    def test_enum_lists_choices(self) -> None:
        message = self.check(path="a", count=1, mode="medium")
        assert 'must be one of "fast", "slow", got string "medium"' in (message or "")

    def test_unknown_argument_lists_accepted_ones(self) -> None:
        message = self.check(path="a", count=1, colour="red")
        assert "unknown argument 'colour'" in (message or "")
        assert "'path'" in (message or "")

    def test_all_problems_reported_at_once(self) -> None:
        message = self.check(count=None, extra=1) or ""
        assert "'path'" in message and "'count'" in message and "'extra'" in message

    def test_describe(self) -> None:
        assert describe_schema({"type": "array", "items": {"type": "string"}}) == (
            "an array of strings"
        )
        assert describe_schema({"type": ["integer", "null"]}) == "an integer or null"


class TestPydanticModel:
    """What the pydantic model behind a tool must add to pydantic's own behaviour."""

    @pytest.mark.parametrize(
        ("annotation", "value"),
        [
            (Literal[0], False),
            (Literal[1, 2], True),
            (list[Literal[1]], [True]),
            (dict[str, Literal[0, 1]] | None, {"k": False}),
            (Literal[True], 1),
            (Literal["a", 1], True),
        ],
    )
    def test_number_literals_refuse_booleans_and_back(self, annotation: Any, value: Any) -> None:
        message = validate_arguments("t", _one_parameter(annotation), {"x": value})
        assert message is not None and "must be" in message
        assert not jsonschema.Draft202012Validator(
            {"properties": {"x": type_schema(annotation)}}
        ).is_valid({"x": value})

    @pytest.mark.parametrize(
        ("annotation", "value"), [(Literal[1, 2], 2), (Literal[True], True), (Literal[0], 0.0)]
    )
    def test_number_literals_accept_their_values(self, annotation: Any, value: Any) -> None:
        assert validate_arguments("t", _one_parameter(annotation), {"x": value}) is None

    @pytest.mark.parametrize("name", ["json", "copy", "model_config", "model_dump", "_private"])
    def test_any_parameter_name_works(self, name: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            schema = _one_parameter(int, name)
        assert list(schema.parameters["properties"]) == [name]
        assert validate_arguments("t", schema, {name: 3}) is None
        assert f"argument '{name}' must be an integer" in (
            validate_arguments("t", schema, {name: "3"}) or ""
        )

    @pytest.mark.parametrize("annotation", [Opaque, datetime, Callable[[int], str]])
    def test_types_pydantic_cannot_publish_are_refused(self, annotation: Any) -> None:
        with pytest.raises(ToolError, match="no JSON Schema"):
            _one_parameter(annotation)

    def test_refusal_carries_the_annotation(self) -> None:
        with pytest.raises(ToolError) as caught:
            _one_parameter(set[int])
        assert caught.value.value == set[int]

    def test_each_call_returns_its_own_parameters(self) -> None:
        first = function_schema(documented, exclude={"ctx"})
        first.parameters["properties"].clear()
        second = function_schema(documented, exclude={"ctx"})
        assert "path" in second.parameters["properties"]
        assert second.arguments is first.arguments

    @pytest.mark.parametrize(
        "tool", [*get_context_tools(), *get_graph_tools()], ids=lambda t: t.name
    )
    def test_every_tool_publishes_valid_json_schema_without_titles(self, tool: Tool[Any]) -> None:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert '"title":' not in json.dumps(tool.parameters)
        assert tool.parameters["additionalProperties"] is False


# ---------------------------------------------------------------- properties

_scalars: st.SearchStrategy[Any] = st.sampled_from([str, int, float, bool])
_literals = st.one_of(
    st.lists(st.text(max_size=4), min_size=1, max_size=3, unique=True),
    st.lists(st.integers(-5, 5), min_size=1, max_size=3, unique=True),
).map(lambda values: Literal[tuple(values)])  # type: ignore[valid-type]
_annotations: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_scalars, _literals),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # noqa: UP045
    ),
    max_leaves=4,
)
_finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not f.is_integer()  # 1.0 is an integer to JSON Schema, a float to dagctx
)
_json: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _finite_floats, st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _values_of(annotation: Any) -> st.SearchStrategy[Any]:
    """Values that conform to `annotation`, for the acceptance property."""
    if annotation is float:
        return _finite_floats
    if annotation in (str, int, bool):
        return st.from_type(annotation)
    args = getattr(annotation, "__args__", ())
    origin = getattr(annotation, "__origin__", None)
    if origin is list:
        return st.lists(_values_of(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), _values_of(args[1]), max_size=3)
    if origin is Literal:
        return st.sampled_from(args)
    return st.one_of(st.none(), *(_values_of(a) for a in args if a is not type(None)))


class TestSchemaProperties:
    @settings(max_examples=200, deadline=None)
    @given(_annotations)
    def test_every_generated_schema_is_valid_json_schema(self, annotation: Any) -> None:
        jsonschema.Draft202012Validator.check_schema(type_schema(annotation))

    @settings(max_examples=300, deadline=None)
    @given(_annotations, _json)
    def test_validator_agrees_with_jsonschema(self, annotation: Any, value: Any) -> None:
        schema = {"type": "object", "properties": {"x": type_schema(annotation)}}
        ours = validate_arguments("t", _one_parameter(annotation), {"x": value}) is None
        theirs = jsonschema.Draft202012Validator(schema).is_valid({"x": value})
        assert ours == theirs

    @settings(max_examples=200, deadline=None)
    @given(st.data(), _annotations)
    def test_conforming_values_are_accepted(self, data: st.DataObject, annotation: Any) -> None:
        value = data.draw(_values_of(annotation))
        assert validate_arguments("t", _one_parameter(annotation), {"x": value}) is None
