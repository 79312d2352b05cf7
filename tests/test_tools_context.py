"""Specification of the context-tool factories and of binding tools to a Context."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from dagctx.context import Context
from dagctx.tools import (
    Tool,
    ToolError,
    get_context_tools,
    get_file_tools,
    get_knowledge_tools,
    get_planning_tools,
)

Factory = Callable[[], list[Any]]


class TestFactories:
    def test_context_tools_are_the_seven_in_seed_order(self) -> None:
        assert [t.name for t in get_context_tools()] == [
            "add_todo",
            "complete_todo",
            "get_todo",
            "get_knowledge",
            "grep_knowledge",
            "search_knowledge",
            "read_file",
        ]

    @pytest.mark.parametrize(
        ("factory", "names"),
        [
            (get_planning_tools, ["add_todo", "complete_todo", "get_todo"]),
            (get_knowledge_tools, ["get_knowledge", "grep_knowledge", "search_knowledge"]),
            (get_file_tools, ["read_file"]),
        ],
    )
    def test_group_factories(self, factory: Factory, names: list[str]) -> None:
        tools = factory()
        assert [t.name for t in tools] == names
        assert all(isinstance(t, Tool) for t in tools)

    @pytest.mark.parametrize(
        "factory", [get_context_tools, get_planning_tools, get_knowledge_tools, get_file_tools]
    )
    def test_each_call_returns_fresh_unbound_instances(self, factory: Factory) -> None:
        first, second = factory(), factory()
        assert all(a is not b for a, b in zip(first, second, strict=True))
        first[0].bind(Context("t"))
        assert second[0].target is None


class TestSchemas:
    @pytest.mark.parametrize("tool", get_context_tools(), ids=lambda t: t.name)
    def test_openai_format_without_ctx(self, tool: Tool[Any]) -> None:
        schema = tool.schema
        assert schema == tool.to_schema()
        assert schema["type"] == "function"
        function = schema["function"]
        assert function["name"] == tool.name and function["description"]
        assert "ctx" not in function["parameters"]["properties"]
        jsonschema.Draft202012Validator.check_schema(function["parameters"])

    def test_parameters_as_the_seed_documents(self) -> None:
        params = {t.name: t.parameters for t in get_context_tools()}
        assert params["add_todo"]["properties"]["item"]["type"] == "string"
        assert params["complete_todo"]["properties"]["index"]["type"] == "integer"
        assert params["get_todo"]["properties"] == {}
        assert params["grep_knowledge"]["required"] == ["name", "pattern"]
        search = params["search_knowledge"]
        assert search["required"] == ["query"]
        assert search["properties"]["top_k"] == {
            "type": "integer",
            "description": "Maximum number of results to return.",
            "default": 5,
        }
        assert params["read_file"]["required"] == ["path"]


class TestBinding:
    @pytest.mark.parametrize("tool", get_context_tools(), ids=lambda t: t.name)
    def test_unbound_execute_raises(self, tool: Tool[Any]) -> None:
        with pytest.raises(ToolError, match="not bound"):
            asyncio.run(tool.execute())

    def test_bind_returns_the_tool(self) -> None:
        ctx = Context("t")
        for tool in get_context_tools():
            assert tool.bind(ctx) is tool and tool.target is ctx

    @pytest.mark.parametrize("target", [None, "ctx", {"state": {}}])
    def test_non_context_is_refused(self, target: object) -> None:
        with pytest.raises(ToolError):
            get_planning_tools()[0].bind(target)
