"""Tools a model can call to manage its own context.

`Tool` turns a typed, documented function into a JSON-Schema-described tool
(`Tool.to_schema()` gives the OpenAI function format). The seven context tools act on a
task `Context` through ``ctx.state``:

- planning (`get_planning_tools`): ``add_todo``, ``complete_todo``, ``get_todo``
- knowledge (`get_knowledge_tools`): ``get_knowledge``, ``grep_knowledge``,
  ``search_knowledge``
- files (`get_file_tools`): ``read_file``

The graph tools (`get_graph_tools`) act on a `Session` instead (``tool.bind(session)``):
``list_nodes``, ``open_file``, ``set_node_state``, ``hide_node``, ``run_shell``,
``checkpoint``, ``restore``, ``set_budget``, ``show_projection_stats``.

Every factory returns fresh, unbound instances; ``tool.bind(ctx)`` returns the tool.
Schemas and argument checks come from :mod:`.schema` and :mod:`.validation` (pydantic).
Tools reach the graph only through the public verbs of ``Session``; must not import the
command line or the watcher.
"""

from __future__ import annotations

from dagctx.errors import ToolError
from dagctx.tools.base import ContextTool, Tool
from dagctx.tools.files import get_file_tools
from dagctx.tools.graph import SessionTool, get_graph_tools
from dagctx.tools.knowledge import get_knowledge_tools
from dagctx.tools.planning import get_planning_tools

__all__ = [
    "ContextTool",
    "SessionTool",
    "Tool",
    "ToolError",
    "get_context_tools",
    "get_file_tools",
    "get_graph_tools",
    "get_knowledge_tools",
    "get_planning_tools",
]


def get_context_tools() -> list[ContextTool]:
    """Fresh, unbound instances of all seven context tools: planning, knowledge, file."""
    return [*get_planning_tools(), *get_knowledge_tools(), *get_file_tools()]
