"""Specification of the planning tools (add_todo, complete_todo, get_todo) on a real Context."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dagctx.context import Context
from dagctx.tools import Tool, get_planning_tools

# The example of seeds/001 verbatim; only its imports are adapted to dagctx.
SEED_EXAMPLE = """
import asyncio
from dagctx.context import Context
from dagctx.tools import get_planning_tools

async def main():
    ctx = Context("task-1")

    # Get and bind tools
    tools = get_planning_tools()
    for tool in tools:
        tool.bind(ctx)

    # Use the tools
    add_tool = tools[0]      # add_todo
    complete_tool = tools[1]  # complete_todo
    get_tool = tools[2]       # get_todo

    await add_tool.execute(item="Research algorithms")
    await add_tool.execute(item="Write implementation")
    await complete_tool.execute(index=0)

    result = await get_tool.execute()
    print(result)
    # 0. [x] Research algorithms
    # 1. [ ] Write implementation

asyncio.run(main())
"""


def test_seed_example_prints_the_checklist(capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(SEED_EXAMPLE, "seed_001_example", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == "0. [x] Research algorithms\n1. [ ] Write implementation\n"


def bound(ctx: Context) -> dict[str, Tool[Any]]:
    return {tool.name: tool.bind(ctx) for tool in get_planning_tools()}


def run(tool: Tool[Any], **kwargs: Any) -> str:
    return asyncio.run(tool.execute(**kwargs))


class TestAddTodo:
    def test_appends_open_item_to_state(self) -> None:
        ctx = Context("t")
        tools = bound(ctx)
        assert run(tools["add_todo"], item="Write tests") == "Added todo 0: Write tests"
        run(tools["add_todo"], item="Ship")
        assert ctx.state["todos"] == [
            {"item": "Write tests", "done": False},
            {"item": "Ship", "done": False},
        ]

    def test_empty_item_is_a_message_and_changes_nothing(self) -> None:
        ctx = Context("t")
        assert "empty" in run(bound(ctx)["add_todo"], item="   ")
        assert "todos" not in ctx.state

    def test_wrong_argument_type_is_a_message(self) -> None:
        ctx = Context("t")
        message = run(bound(ctx)["add_todo"], item=3)
        assert "argument 'item' must be a string, got integer 3" in message
        assert "todos" not in ctx.state


class TestCompleteTodo:
    def test_marks_done(self) -> None:
        ctx = Context("t")
        tools = bound(ctx)
        run(tools["add_todo"], item="a")
        assert run(tools["complete_todo"], index=0) == "Completed todo 0: a"
        assert ctx.state["todos"] == [{"item": "a", "done": True}]

    @pytest.mark.parametrize("index", [5, 2, -1])
    def test_invalid_index_is_a_message(self, index: int) -> None:
        ctx = Context("t")
        tools = bound(ctx)
        run(tools["add_todo"], item="a")
        run(tools["add_todo"], item="b")
        assert run(tools["complete_todo"], index=index) == f"Invalid index {index}. Have 2 todos."
        assert [t["done"] for t in ctx.state["todos"]] == [False, False]

    def test_completing_twice_says_so(self) -> None:
        ctx = Context("t")
        tools = bound(ctx)
        run(tools["add_todo"], item="a")
        run(tools["complete_todo"], index=0)
        assert run(tools["complete_todo"], index=0) == "Todo 0 was already done: a"

    def test_index_must_be_an_integer(self) -> None:
        ctx = Context("t")
        message = run(bound(ctx)["complete_todo"], index="0")
        assert "argument 'index' must be an integer" in message


class TestGetTodo:
    def test_empty(self) -> None:
        assert run(bound(Context("t"))["get_todo"]) == "No todos."

    def test_renders_numbered_checklist(self) -> None:
        ctx = Context("t")
        tools = bound(ctx)
        for item in ("one", "two", "three"):
            run(tools["add_todo"], item=item)
        run(tools["complete_todo"], index=1)
        assert run(tools["get_todo"]) == "0. [ ] one\n1. [x] two\n2. [ ] three"


class TestForkedContexts:
    def test_child_edits_its_own_copy_until_merged(self) -> None:
        parent = Context("parent")
        run(bound(parent)["add_todo"], item="shared")
        child = parent.fork("child")
        child_tools = bound(child)
        run(child_tools["complete_todo"], index=0)
        run(child_tools["add_todo"], item="child only")
        assert run(bound(parent)["get_todo"]) == "0. [ ] shared"
        assert run(child_tools["get_todo"]) == "0. [x] shared\n1. [ ] child only"
        parent.merge(child)
        assert run(bound(parent)["get_todo"]) == "0. [x] shared\n1. [ ] child only"
