"""Specification of the generic `Tool`: binding, schema, validation before the call.

`Tool` is generic over what it binds; these tests bind a small counter object of their
own, the way graph tools will bind a `Session`.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

import pytest

from dagctx.errors import DagctxError, ToolError
from dagctx.tools import Tool


class Counter:
    def __init__(self) -> None:
        self.value = 0


def bump(ctx: Counter, by: int = 1, label: str | None = None) -> str:
    """Increase the counter.

    Args:
        by: How much to add.
        label: Optional note echoed back.
    """
    ctx.value += by
    return f"{label or 'value'}={ctx.value}"


async def slow_bump(ctx: Counter, by: int) -> str:
    """Increase the counter after yielding to the event loop."""
    await asyncio.sleep(0)
    ctx.value += by
    return str(ctx.value)


class CounterTool(Tool[Counter]):
    target_parameter: ClassVar[str] = "counter"

    def check_target(self, target: object) -> None:
        super().check_target(target)
        if not isinstance(target, Counter):
            raise ToolError(f"{self.name} binds a Counter, got {type(target).__name__}")


def reset(counter: Counter, to: Literal[0, 10] = 0) -> str:
    """Reset the counter."""
    counter.value = to
    return "reset"


class TestBinding:
    def test_bind_returns_the_tool(self) -> None:
        tool = Tool(bump)
        counter = Counter()
        assert tool.bind(counter) is tool
        assert tool.target is counter

    def test_unbound_execute_raises_tool_error(self) -> None:
        with pytest.raises(ToolError, match=r"'bump' is not bound.*bind\(ctx\)") as caught:
            asyncio.run(Tool(bump).execute(by=1))
        assert caught.value.tool == "bump"
        assert issubclass(ToolError, DagctxError)

    def test_rebinding_switches_target(self) -> None:
        first, second = Counter(), Counter()
        tool = Tool(bump).bind(first)
        tool.bind(second)
        asyncio.run(tool.execute(by=5))
        assert (first.value, second.value) == (0, 5)

    def test_none_is_refused(self) -> None:
        with pytest.raises(ToolError, match="None"):
            Tool(bump).bind(None)

    def test_subclass_narrows_target_and_parameter_name(self) -> None:
        tool = CounterTool(reset)
        with pytest.raises(ToolError, match="binds a Counter, got str"):
            tool.bind("not a counter")  # type: ignore[arg-type]
        counter = Counter()
        counter.value = 3
        assert asyncio.run(tool.bind(counter).execute(to=10)) == "reset"
        assert counter.value == 10
        assert "counter" not in tool.parameters["properties"]

    def test_function_without_target_parameter_is_refused(self) -> None:
        def orphan(n: int) -> str:
            return ""

        with pytest.raises(ToolError, match=r"'ctx' as its first parameter, got \(n\)"):
            Tool(orphan)


class TestSchema:
    def test_openai_function_format_without_ctx(self) -> None:
        schema = Tool(bump).to_schema()
        assert schema == {
            "type": "function",
            "function": {
                "name": "bump",
                "description": "Increase the counter.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "by": {"type": "integer", "description": "How much to add.", "default": 1},
                        "label": {
                            "type": ["string", "null"],
                            "description": "Optional note echoed back.",
                            "default": None,
                        },
                    },
                    "required": [],
                    "additionalProperties": False,
                },
            },
        }

    def test_schema_property_equals_to_schema_and_is_a_copy(self) -> None:
        tool = Tool(bump)
        schema = tool.schema
        assert schema == tool.to_schema()
        schema["function"]["parameters"]["properties"].clear()
        assert "by" in tool.parameters["properties"]

    def test_name_and_description_overrides(self) -> None:
        tool = Tool(bump, name="increment", description="Add to it.")
        assert (tool.schema["function"]["name"], tool.description) == ("increment", "Add to it.")


class TestExecute:
    def test_sync_and_async_functions(self) -> None:
        counter = Counter()
        assert asyncio.run(Tool(bump).bind(counter).execute(by=2, label="n")) == "n=2"
        assert asyncio.run(Tool(slow_bump).bind(counter).execute(by=3)) == "5"

    def test_defaults_apply(self) -> None:
        counter = Counter()
        assert asyncio.run(Tool(bump).bind(counter).execute()) == "value=1"

    def test_wrong_type_is_a_message_and_nothing_runs(self) -> None:
        counter = Counter()
        result = asyncio.run(Tool(bump).bind(counter).execute(by="2"))
        assert result == (
            "Invalid arguments for bump: argument 'by' must be an integer, got string \"2\"."
        )
        assert counter.value == 0

    def test_missing_argument_is_a_message(self) -> None:
        counter = Counter()
        result = asyncio.run(Tool(slow_bump).bind(counter).execute())
        assert "missing required argument 'by' (an integer)" in result
        assert counter.value == 0

    def test_unknown_argument_is_a_message(self) -> None:
        result = asyncio.run(Tool(bump).bind(Counter()).execute(ctx=Counter()))
        assert "unknown argument 'ctx'" in result

    def test_repr_shows_binding(self) -> None:
        tool = Tool(bump)
        assert repr(tool) == "<Tool bump (unbound)>"
        assert repr(tool.bind(Counter())) == "<Tool bump (bound)>"


def scale(ctx: Counter, factor: float) -> str:
    """Report the type of the factor it received."""
    return type(factor).__name__


class TestCheckArguments:
    def test_is_the_message_execute_returns(self) -> None:
        tool = Tool(bump).bind(Counter())
        message = tool.check_arguments({"by": "2", "colour": 1})
        assert message is not None
        assert asyncio.run(tool.execute(by="2", colour=1)) == message
        assert tool.check_arguments({"by": 2}) is None

    def test_arguments_reach_the_function_unconverted(self) -> None:
        assert asyncio.run(Tool(scale).bind(Counter()).execute(factor=2)) == "int"
