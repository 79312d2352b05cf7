"""Tools a model can call to manage its own context.

`Tool` turns a typed, documented function into a JSON-Schema-described tool
(`Tool.to_schema()` gives the OpenAI function format). The seven context tools act on a
task `Context` through ``ctx.state``:

- planning (`get_planning_tools`): ``add_todo``, ``complete_todo``, ``get_todo``
- knowledge (`get_knowledge_tools`): ``get_knowledge``, ``grep_knowledge``,
  ``search_knowledge``
- files (`get_file_tools`): ``read_file``

Every factory returns fresh, unbound instances; ``tool.bind(ctx)`` returns the tool.
"""

from __future__ import annotations

from dagctx.errors import ToolError
from dagctx.tools.base import ContextTool, Tool
from dagctx.tools.files import get_file_tools
from dagctx.tools.knowledge import get_knowledge_tools
from dagctx.tools.planning import get_planning_tools

__all__ = [
    "ContextTool",
    "Tool",
    "ToolError",
    "get_context_tools",
    "get_file_tools",
    "get_knowledge_tools",
    "get_planning_tools",
]


def get_context_tools() -> list[ContextTool]:
    """Fresh, unbound instances of all seven context tools: planning, knowledge, file."""
    return [*get_planning_tools(), *get_knowledge_tools(), *get_file_tools()]
