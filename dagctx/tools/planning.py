"""Planning tools: a todo checklist the model keeps in ``ctx.state["todos"]``.

The checklist is a list of ``{"item": str, "done": bool}``. Every change writes a new
list with `ctx.state.set`, never mutating the list in place, so a forked context edits
its own copy and the parent sees the change only when the child is merged.
"""

from __future__ import annotations

from typing import Any

from dagctx.context import Context
from dagctx.tools.base import ContextTool, Refusal

__all__ = ["add_todo", "complete_todo", "get_planning_tools", "get_todo"]

TODOS_KEY = "todos"


def _todos(ctx: Context) -> list[dict[str, Any]]:
    return [dict(todo) for todo in ctx.state.get(TODOS_KEY) or []]


def add_todo(ctx: Context, item: str) -> str:
    """Add a todo item to the planning checklist.

    Args:
        item: The todo item text to add.
    """
    text = item.strip()
    if not text:
        return Refusal("Cannot add an empty todo; give the item text.")
    todos = _todos(ctx)
    todos.append({"item": text, "done": False})
    ctx.state.set(TODOS_KEY, todos)
    return f"Added todo {len(todos) - 1}: {text}"


def complete_todo(ctx: Context, index: int) -> str:
    """Mark a todo item as completed by its index.

    Args:
        index: The 0-based index of the todo item to mark done.
    """
    todos = _todos(ctx)
    if not 0 <= index < len(todos):
        return Refusal(f"Invalid index {index}. Have {len(todos)} todos.")
    if todos[index]["done"]:
        return f"Todo {index} was already done: {todos[index]['item']}"
    todos[index]["done"] = True
    ctx.state.set(TODOS_KEY, todos)
    return f"Completed todo {index}: {todos[index]['item']}"


def get_todo(ctx: Context) -> str:
    """Retrieve the current todo checklist.

    Returns one line per todo, "0. [x] done item" or "1. [ ] open item", or "No todos.".
    """
    todos = _todos(ctx)
    if not todos:
        return "No todos."
    return "\n".join(
        f"{i}. [{'x' if todo['done'] else ' '}] {todo['item']}" for i, todo in enumerate(todos)
    )


def get_planning_tools() -> list[ContextTool]:
    """Fresh, unbound ``add_todo``, ``complete_todo`` and ``get_todo`` tools."""
    return [ContextTool(add_todo), ContextTool(complete_todo), ContextTool(get_todo)]
