"""`Tool`: a function a model can call, described by a JSON Schema and bound to a target.

A tool wraps a plain (sync or async) function whose first parameter receives the object
the tool acts on — a `Context` for the context tools, a `Session` for the graph tools.
That parameter (``ctx`` by default, see `Tool.target_parameter`) never appears in the
schema; the remaining parameters become a pydantic model, which gives both the schema and
the argument validation (`dagctx.tools.schema`, `dagctx.tools.validation`).

Two kinds of failure are kept apart:

- mistakes of the model (a wrong or missing argument, an index out of range, a file
  outside the working directory) come back from `Tool.execute` as a message string the
  model can read and act on: a `Refusal`, a ``str`` that marks the call as not carried
  out (the MCP server reports it with ``isError: true``);
- mistakes of the program (executing an unbound tool, binding the wrong kind of object)
  raise `ToolError`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, Self, TypeVar

from dagctx.context import Context
from dagctx.errors import ToolError
from dagctx.tools.schema import FunctionSchema, JsonSchema, function_schema
from dagctx.tools.validation import validate_arguments

__all__ = ["ContextTool", "Refusal", "Tool", "ToolFunction", "line_range_refusal"]

T = TypeVar("T")
ToolFunction = Callable[..., str | Awaitable[str]]


class Refusal(str):
    """A tool's message for a call it did not carry out (a bad argument, a refused path,
    an unknown node id, a command that timed out): the text says what to do instead.
    It is a ``str``, so a caller that only reads the text sees no difference."""

    __slots__ = ()


def line_range_refusal(start_line: int | None, end_line: int | None) -> Refusal | None:
    """The message for a bad line range of a tool's ``start_line`` / ``end_line`` (1-based,
    inclusive, either omitted), or None when the range is one a file can have."""
    if start_line is not None and start_line < 1:
        return Refusal(f"start_line must be 1 or more, got {start_line}.")
    if end_line is not None and end_line < (start_line or 1):
        return Refusal(f"end_line must be at least start_line ({start_line or 1}), got {end_line}.")
    return None


class Tool(Generic[T]):
    """A callable tool: `name`, `description`, `parameters` schema, `execute`.

    Args:
        fn: The implementation; its first parameter is named `target_parameter` and
            receives the bound object, the rest are the model-facing arguments. It
            returns a string (or an awaitable of one).
        name: Tool name shown to the model; defaults to ``fn.__name__``.
        description: Defaults to the summary of ``fn``'s docstring.

    Raises:
        ToolError: `fn` does not take `target_parameter` first, or a parameter cannot be
            described in JSON Schema.
    """

    target_parameter: ClassVar[str] = "ctx"

    def __init__(
        self, fn: ToolFunction, *, name: str | None = None, description: str | None = None
    ) -> None:
        params = list(inspect.signature(fn).parameters)
        if not params or params[0] != self.target_parameter:
            raise ToolError(
                f"tool function {fn.__name__} must take {self.target_parameter!r} as its "
                f"first parameter, got ({', '.join(params)})",
                tool=name or fn.__name__,
                value=fn,
            )
        self._schema: FunctionSchema = function_schema(fn, exclude={self.target_parameter})
        self.name: str = name or fn.__name__
        self.description: str = description if description is not None else self._schema.description
        self.parameters: JsonSchema = self._schema.parameters
        self._fn = fn
        self._target: T | None = None

    def __repr__(self) -> str:
        state = "bound" if self._target is not None else "unbound"
        return f"<{type(self).__name__} {self.name} ({state})>"

    @property
    def target(self) -> T | None:
        """The object the tool is bound to, or ``None``."""
        return self._target

    def bind(self, target: T) -> Self:
        """Bind the tool to `target` (replacing any earlier binding) and return the tool.

        Raises:
            ToolError: `target` is not something this kind of tool can act on.
        """
        self.check_target(target)
        self._target = target
        return self

    def check_target(self, target: object) -> None:
        """Raise `ToolError` unless `target` can be bound; subclasses narrow this."""
        if target is None:
            raise ToolError(f"cannot bind tool {self.name!r} to None", tool=self.name)

    @property
    def schema(self) -> JsonSchema:
        """The OpenAI function schema; same as `to_schema()`."""
        return self.to_schema()

    def to_schema(self) -> JsonSchema:
        """``{"type": "function", "function": {name, description, parameters}}``.

        Returns a fresh copy each time, so callers may modify it.
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
            },
        }

    def check_arguments(self, arguments: dict[str, Any]) -> str | None:
        """The message `execute` would return instead of running for `arguments`, or ``None``.

        Checks names and types only (missing, unknown, wrong type); what the tool itself
        refuses (an index out of range) is up to the tool.
        """
        return validate_arguments(self.name, self._schema, arguments)

    async def execute(self, **kwargs: Any) -> str:
        """Validate `kwargs` against the schema and run the tool on its target.

        Returns the tool's result, or — when an argument is missing, unknown or of the
        wrong type — a `Refusal` naming the argument and the expected type; the tool
        does not run then.

        Raises:
            ToolError: The tool is not bound.
        """
        if self._target is None:
            raise ToolError(
                f"tool {self.name!r} is not bound; call tool.bind({self.target_parameter}) "
                "before execute()",
                tool=self.name,
            )
        problem = self.check_arguments(kwargs)
        if problem is not None:
            return Refusal(problem)
        result = self._fn(self._target, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


class ContextTool(Tool[Context]):
    """A tool acting on a task `Context`; it reads and writes ``ctx.state`` only."""

    target_parameter: ClassVar[str] = "ctx"

    def check_target(self, target: object) -> None:
        """Raise `ToolError` unless `target` is a `Context`."""
        super().check_target(target)
        if not isinstance(target, Context):
            raise ToolError(
                f"tool {self.name!r} binds a Context, got {type(target).__name__}",
                tool=self.name,
                value=target,
            )
