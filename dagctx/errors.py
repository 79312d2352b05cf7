"""The exception hierarchy of dagctx.

Every error dagctx raises on purpose derives from :class:`DagctxError`, and its message
names the offending value and, where there is one, what to do about it. An operation that
raises leaves every piece of state (graph, context, store) as it was before the call.

Every error also carries the offending value as a field: ``value`` on all of them, and a
named field where the value has a clear role (``NodeNotFoundError.node_id``,
``CycleError.parent`` / ``.child``, ``PathError.path``, ...). Fields are keyword-only
constructor arguments after the message; their defaults let an error with no single
offending value be raised with the message alone. Errors pickle with their fields.

The hierarchy (a built-in in brackets is a second base, so ``except ValueError`` and
friends catch the error too)::

    DagctxError                                 .value
    ├── GraphError                              a graph operation was refused
    │   ├── CycleError                          .parent, .child
    │   ├── NodeNotFoundError [KeyError]        .node_id
    │   ├── NodeFieldError                      .field
    │   ├── TracesDroppedError [IndexError]     .position, .start
    │   └── GraphLoadError
    ├── BudgetError [ValueError]
    ├── EncodingError                           .encoding
    ├── PathError                               .path
    ├── ArgumentError [ValueError]              .name
    │   └── SettingsError                       .source
    ├── SessionError                            a session verb was refused
    │   ├── NoSessionError
    │   ├── SessionClosedError                  .root
    │   ├── BlockingCallError [RuntimeError]
    │   ├── NodeTypeError [TypeError]           .node_id, .expected
    │   ├── NodeClosedError                     .node_id
    │   ├── ForeignWorkError                    .node_id
    │   ├── NoActiveTopicError
    │   └── ToolCallIdError [ValueError]        .tool_call_id
    ├── WatchError
    ├── ContextError                            a task-context operation was refused
    │   ├── ContextKeyError [KeyError]          .key
    │   ├── StateError [ValueError]
    │   ├── CapabilityError [ValueError]
    │   └── CapabilityTypeError [TypeError]
    ├── CheckpointError
    │   ├── SessionConflictError                another writer saved the file meanwhile
    │   └── SessionFileUnavailableError         a transient failure (disk full, I/O, busy)
    ├── ToolError                               .tool
    ├── ShellError
    ├── LockError
    ├── CoordinationError
    ├── KnowledgeError [ValueError]
    │   └── ArtifactNotFoundError [KeyError]    .name
    ├── MCPClientError                          .server, .stderr_tail
    ├── MCPServerNotFoundError [KeyError]       .name
    ├── MCPToolNotFoundError [KeyError]         .server, .tool
    └── MCPStateError                           .server, .status
"""

from __future__ import annotations


class DagctxError(Exception):
    """Base class of every error dagctx raises on purpose; ``value`` is the offending value
    (None when the error has no single one)."""

    def __init__(self, message: str = "", *, value: object = None) -> None:
        super().__init__(message)
        self.value = value


class _MessageStr:
    """Mixin for the ``KeyError`` subclasses: ``str(err)`` is the message, not its repr."""

    args: tuple[object, ...]

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


# -- the graph --------------------------------------------------------------------------


class GraphError(DagctxError):
    """A graph operation was refused (bad structure, duplicate id, self-link, ...)."""


class CycleError(GraphError):
    """A link would close a cycle in the context DAG; ``parent`` and ``child`` are the ids
    of the refused link (the same id twice for a self-link)."""

    def __init__(self, message: str = "", *, parent: str = "", child: str = "") -> None:
        super().__init__(message, value=(parent, child))
        self.parent = parent
        self.child = child


class TracesDroppedError(GraphError, IndexError):
    """Traces a reader asked for were dropped by the trace log's retention; ``position``
    is the position asked for, ``start`` the oldest position the log keeps."""

    def __init__(self, message: str = "", *, position: int = 0, start: int = 0) -> None:
        super().__init__(message, value=position)
        self.position = position
        self.start = start


class GraphLoadError(GraphError):
    """:meth:`ContextGraph.load` was given data that breaks an invariant of the graph;
    ``value`` is the offending value (an id, an edge, the roots, ...)."""


class NodeNotFoundError(_MessageStr, GraphError, KeyError):
    """An id names no node of the graph; ``node_id`` is that id (or the foreign node)."""

    def __init__(self, message: str = "", *, node_id: object = None) -> None:
        super().__init__(message, value=node_id)
        self.node_id = node_id


class NodeFieldError(GraphError):
    """A node was given a field value it cannot hold (an unknown role, kind or status, a
    non-string content, a bad priority, ...); ``field`` names the field, ``value`` holds
    the value. Deliberately not a ``ValueError``: a node's ``from_dict`` wraps
    ``ValueError`` as malformed data, and these errors keep their own message."""

    def __init__(self, message: str = "", *, field: str = "", value: object = None) -> None:
        super().__init__(message, value=value)
        self.field = field


# -- arguments, budgets, encodings, paths ------------------------------------------------


class BudgetError(DagctxError, ValueError):
    """A token budget is not a positive integer; ``value`` is the budget given."""


class EncodingError(DagctxError):
    """A tiktoken encoding cannot be loaded here; ``encoding`` is its name."""

    def __init__(self, message: str = "", *, encoding: object = None) -> None:
        super().__init__(message, value=encoding)
        self.encoding = encoding


class PathError(DagctxError):
    """A path is outside the session root or cannot be used; ``path`` is the path as
    given. ``value`` is the path too, unless another argument is what is wrong (a line
    range of the file, say)."""

    def __init__(self, message: str = "", *, path: object = None, value: object = None) -> None:
        super().__init__(message, value=path if value is None else value)
        self.path = path


class ArgumentError(DagctxError, ValueError):
    """A public call got an argument it cannot use (a wrong type, a non-positive timeout,
    a missing choice between two options); ``name`` is the parameter, ``value`` what was
    passed."""

    def __init__(self, message: str = "", *, name: str = "", value: object = None) -> None:
        super().__init__(message, value=value)
        self.name = name


class SettingsError(ArgumentError):
    """A setting of the command line or of a config file cannot be used (a malformed
    ``GLOB=N``, an unknown state or key, a file that is not valid TOML); ``source`` says
    where it came from (``--priority``, ``.dagctx/config.toml: priority."src/**"``,
    ``pyproject.toml:3``), ``name`` is the setting, ``value`` the offending value."""

    def __init__(
        self, message: str = "", *, source: str = "", name: str = "", value: object = None
    ) -> None:
        super().__init__(message, name=name, value=value)
        self.source = source


# -- sessions ---------------------------------------------------------------------------


class SessionError(DagctxError):
    """A session verb was refused because of the session's state or the node it names."""


class NoSessionError(SessionError):
    """A verb of the current session was called with no session open."""


class SessionClosedError(SessionError):
    """A verb was called on a closed session; ``root`` is the session's root directory."""

    def __init__(self, message: str = "", *, root: object = None) -> None:
        super().__init__(message, value=root)
        self.root = root


class BlockingCallError(SessionError, RuntimeError):
    """A blocking session call was made on the session's own event loop, where it would
    wait for itself (the message names the async twin to await instead), or a tick was
    asked for inside a tick of the same session."""


class NodeTypeError(SessionError, TypeError):
    """A verb was given a node of the wrong type; ``node_id`` is the node, ``expected``
    the type name the verb needs."""

    def __init__(self, message: str = "", *, node_id: str = "", expected: str = "") -> None:
        super().__init__(message, value=node_id)
        self.node_id = node_id
        self.expected = expected


class NodeClosedError(SessionError):
    """A verb was asked to extend a node that is finished (a done work node, a closed
    topic); ``node_id`` is that node."""

    def __init__(self, message: str = "", *, node_id: str = "") -> None:
        super().__init__(message, value=node_id)
        self.node_id = node_id


class ForeignWorkError(SessionError):
    """A work node is not a claim of this session's agent (loaded or foreign);
    ``node_id`` is that node."""

    def __init__(self, message: str = "", *, node_id: str = "") -> None:
        super().__init__(message, value=node_id)
        self.node_id = node_id


class NoActiveTopicError(SessionError):
    """A message was added with no topic given and no active topic to put it under."""


class ToolCallIdError(SessionError, ValueError):
    """A tool_call_id is used twice, or a tool result answers an id no tool call has;
    ``tool_call_id`` is that id."""

    def __init__(self, message: str = "", *, tool_call_id: object = None) -> None:
        super().__init__(message, value=tool_call_id)
        self.tool_call_id = tool_call_id


class WatchError(DagctxError):
    """The file watcher stopped watching a tree (for example the inotify watch limit is
    reached); ``value`` is the watcher's own error."""


# -- task contexts, agent state, capability contexts -------------------------------------


class ContextError(DagctxError):
    """A task-context operation was refused; ``value`` is the offending value."""


class ContextKeyError(_MessageStr, ContextError, KeyError):
    """A key is not visible in a ContextState (or not local, for a removal); ``key`` is
    that key (None when popping from a state with no local keys)."""

    def __init__(self, message: str = "", *, key: object = None) -> None:
        super().__init__(message, value=key)
        self.key = key


class StateError(ContextError, ValueError):
    """An agent-state helper was given a state or argument it cannot use; ``value`` is
    that state or argument."""


class CapabilityError(ContextError, ValueError):
    """A capability-context operation was refused: a missing context, a violated step
    constraint, malformed stored data or a bad argument; ``value`` is the offending
    value."""


class CapabilityTypeError(ContextError, TypeError):
    """A capability context class, or a value stored as one, breaks the contract;
    ``value`` is that class or value."""


# -- stores, tools, processes, knowledge -------------------------------------------------


class CheckpointError(DagctxError):
    """A checkpoint is unknown, malformed or cannot be stored; ``value`` is the offending
    name, value or file."""


class SessionConflictError(CheckpointError):
    """A save was refused: another session (in this process or another) saved the file
    since this session loaded or saved it, and its data would be overwritten; ``value``
    is the file."""


class SessionFileUnavailableError(CheckpointError):
    """A session file could not be read or written for a reason that is not the file's
    fault (the disk is full, an I/O error, a lock held too long); the file was left as it
    was. ``value`` is the file."""


class ToolError(DagctxError):
    """A tool was used wrongly by the program (not by the model); ``tool`` is the tool's
    name when there is one, ``value`` the offending value."""

    def __init__(self, message: str = "", *, tool: str | None = None, value: object = None) -> None:
        super().__init__(message, value=value)
        self.tool = tool


class ShellError(DagctxError):
    """A shell command was asked for with bad arguments; ``value`` is the bad argument."""


class LockError(DagctxError):
    """A lock was asked for with bad arguments; ``value`` is the bad argument."""


class CoordinationError(DagctxError):
    """The coordination store cannot be opened or written, or a claim is malformed;
    ``value`` is the store path or the malformed value."""


class KnowledgeError(DagctxError, ValueError):
    """A workspace or knowledge-store operation was refused (bad name, version, setting);
    ``value`` is the offending value."""


class ArtifactNotFoundError(_MessageStr, KnowledgeError, KeyError):
    """A name matches no artifact of the workspace; ``name`` is that name."""

    def __init__(self, message: str = "", *, name: object = None) -> None:
        super().__init__(message, value=name)
        self.name = name


# -- MCP --------------------------------------------------------------------------------


class MCPClientError(DagctxError):
    """An MCP server could not be started, reached, or asked (the message says which and
    why); ``server`` is its name, ``stderr_tail`` the last lines it wrote to stderr, if
    any."""

    def __init__(self, message: str = "", stderr_tail: str = "", *, server: str = "") -> None:
        super().__init__(message, value=server)
        self.server = server
        self.stderr_tail = stderr_tail


class MCPServerNotFoundError(_MessageStr, DagctxError, KeyError):
    """A name matches no MCP server of the session; ``name`` is that name."""

    def __init__(self, message: str = "", *, name: object = None) -> None:
        super().__init__(message, value=name)
        self.name = name


class MCPToolNotFoundError(_MessageStr, DagctxError, KeyError):
    """A connected MCP server has no tool of that name; ``server`` and ``tool`` are the
    names asked for."""

    def __init__(self, message: str = "", *, server: str = "", tool: object = None) -> None:
        super().__init__(message, value=tool)
        self.server = server
        self.tool = tool


class MCPStateError(DagctxError):
    """An MCP server is not in the state a verb needs (not connected, or connected
    already); ``server`` is its name, ``status`` its status then."""

    def __init__(self, message: str = "", *, server: str = "", status: str = "") -> None:
        super().__init__(message, value=server)
        self.server = server
        self.status = status


__all__ = [
    "ArgumentError",
    "ArtifactNotFoundError",
    "BlockingCallError",
    "BudgetError",
    "CapabilityError",
    "CapabilityTypeError",
    "CheckpointError",
    "ContextError",
    "ContextKeyError",
    "CoordinationError",
    "CycleError",
    "DagctxError",
    "EncodingError",
    "ForeignWorkError",
    "GraphError",
    "GraphLoadError",
    "KnowledgeError",
    "LockError",
    "MCPClientError",
    "MCPServerNotFoundError",
    "MCPStateError",
    "MCPToolNotFoundError",
    "NoActiveTopicError",
    "NoSessionError",
    "NodeClosedError",
    "NodeFieldError",
    "NodeNotFoundError",
    "NodeTypeError",
    "PathError",
    "SessionClosedError",
    "SessionConflictError",
    "SessionError",
    "SessionFileUnavailableError",
    "SettingsError",
    "ShellError",
    "StateError",
    "ToolCallIdError",
    "ToolError",
    "TracesDroppedError",
    "WatchError",
]
