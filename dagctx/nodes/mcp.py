"""MCPServerNode and MCPToolNode: an MCP server's connection state and its tools.

These nodes hold what the model should see about a server: its status (connecting,
connected, error, disconnected), who it is, why it failed (with the tail of its stderr),
and one :class:`MCPToolNode` child per tool it offers. They own no connection: the live
MCP session is run by :mod:`dagctx.mcp` on the session's background loop, which hands
results to :meth:`MCPServerNode.set_status` and :meth:`MCPServerNode.sync_tools`.

A tool list is compared by name: new tools become children, tools whose definition
changed update in place (their version bumps), vanished tools are removed; each of these
leaves a trace.

Everything a server says is quoted (:mod:`dagctx._quote`): names, titles, errors and
parameter descriptions on one line, tool descriptions and stderr inside fences, so a
server cannot write a line that reads as a dagctx section heading.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from dagctx._lines import split_lines
from dagctx._quote import fence, inline
from dagctx.errors import NodeFieldError
from dagctx.nodes.base import Node, NodeState

Status = Literal["connecting", "connected", "error", "disconnected"]
STATUSES: tuple[Status, ...] = ("connecting", "connected", "error", "disconnected")
STDERR_TAIL_LINES = 20


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool definition as the server lists it (plain JSON-able data)."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "title": self.title,
            "input_schema": dict(self.input_schema or {}),
            "output_schema": None if self.output_schema is None else dict(self.output_schema),
            "annotations": None if self.annotations is None else dict(self.annotations),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        return cls(
            name=str(data["name"]),
            description=data.get("description") or "",
            title=data.get("title"),
            input_schema=data.get("input_schema") or {},
            output_schema=data.get("output_schema"),
            annotations=data.get("annotations"),
        )


def _schema_type(schema: Mapping[str, Any]) -> str:
    """A short type name for a JSON schema (``integer``, ``string | null``, ``array of string``)."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return f"= {json.dumps(schema['const'])}"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_schema_type(s) for s in schema[key] if isinstance(s, Mapping))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_schema_type(schema['items'])}"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(kind) if kind else "any"


def describe_parameters(schema: Mapping[str, Any] | None) -> list[str]:
    """One line per top-level parameter of an input schema: name, type, required, default,
    description."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set((schema or {}).get("required") or ())
    lines = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        facts = [_schema_type(prop), "required" if name in required else "optional"]
        if "default" in prop:
            facts.append(f"default {json.dumps(prop['default'])}")
        text = f"  - {inline(str(name))}: {inline(', '.join(facts))}"
        if prop.get("description"):
            text += f" — {inline(str(prop['description']))}"
        lines.append(text)
    return lines


class MCPToolNode(Node):
    """One tool of an MCP server.

    COLLAPSED shows the name; SUMMARY adds the first line of the description; DETAILS the
    whole description (fenced) and one line per parameter; ALL the full input (and output)
    schema.
    """

    type_name: ClassVar[str] = "mcp_tool"
    default_state: ClassVar[NodeState] = NodeState.COLLAPSED
    default_priority: ClassVar[int] = 45

    __slots__ = ("server", "spec")

    def __init__(self, server: str, spec: ToolSpec, **node_fields: Any) -> None:
        if not isinstance(spec, ToolSpec) or not spec.name:
            raise NodeFieldError(
                f"an MCP tool needs a ToolSpec with a name, got {spec!r}", field="spec", value=spec
            )
        super().__init__(**node_fields)
        self.server = server
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    def label(self) -> str:
        return inline(f"{self.server}.{self.spec.name}")

    def update(self, spec: ToolSpec) -> list[str]:
        """Adopt a new definition of the same tool; return what changed (the version bumps
        once if anything did)."""
        old = self.spec
        changed = [
            aspect
            for aspect, a, b in (
                ("title", old.title, spec.title),
                ("description", old.description, spec.description),
                ("parameters", old.input_schema, spec.input_schema),
                ("output schema", old.output_schema, spec.output_schema),
                ("annotations", old.annotations, spec.annotations),
            )
            if _canonical(a) != _canonical(b)
        ]
        if changed:
            self.spec = spec
            self.mark_changed(f"tool {spec.name} updated: {', '.join(changed)}")
        return changed

    def render_state(self, state: NodeState) -> str:
        spec = self.spec
        name = inline(spec.name)
        if state == NodeState.COLLAPSED:
            return f"- {name} (#{self.id})"
        first = inline(spec.description.strip().split("\n", 1)[0])
        if state == NodeState.SUMMARY:
            return f"- {name}: {first or '(no description)'} (#{self.id})"
        title = f" — {inline(spec.title)}" if spec.title else ""
        lines = [f"#### {inline(self.server)}.{name}{title} (#{self.id})"]
        if spec.description.strip():
            lines.append(fence(spec.description.strip()))
        if state == NodeState.DETAILS:
            params = describe_parameters(spec.input_schema)
            lines += ["parameters:", *params] if params else ["parameters: none"]
            return "\n".join(lines)
        lines += ["input schema:", _json_block(spec.input_schema or {})]
        if spec.output_schema is not None:
            lines += ["output schema:", _json_block(spec.output_schema)]
        if spec.annotations:
            lines += ["annotations:", _json_block(spec.annotations)]
        return "\n".join(lines)

    def data_dict(self) -> dict[str, Any]:
        return {"server": self.server, "spec": self.spec.to_dict()}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MCPToolNode:
        return cls(str(data["server"]), ToolSpec.from_dict(data["spec"]))


class MCPServerNode(Node):
    """An MCP server: name, how it is reached, status, and its tools as children.

    COLLAPSED is one line (name, status, tool count); SUMMARY adds the tool names and, on
    error, the stderr tail; DETAILS adds who the server is and how it was started (the
    projection then walks into the tools); ALL adds the protocol version and environment
    variable names. Environment variable *values* are never stored or rendered: they
    often hold secrets.
    """

    type_name: ClassVar[str] = "mcp_server"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 55

    __slots__ = (
        "command",
        "cwd",
        "env_keys",
        "error",
        "info",
        "name",
        "status",
        "stderr_tail",
        "url",
    )

    def __init__(
        self,
        name: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env_keys: Sequence[str] = (),
        cwd: str | None = None,
        **node_fields: Any,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise NodeFieldError(
                f"an MCP server needs a non-empty name, got {name!r}", field="name", value=name
            )
        super().__init__(**node_fields)
        self.name = name
        self.command = list(command) if command is not None else None
        self.url = url
        self.env_keys = sorted(env_keys)
        self.cwd = cwd
        self.status: Status = "connecting"
        self.error: str | None = None
        self.stderr_tail = ""
        self.info: dict[str, str] = {}

    # -- state changes ----------------------------------------------------------------

    def set_status(
        self,
        status: Status,
        *,
        error: str | None = None,
        stderr_tail: str = "",
        info: Mapping[str, str] | None = None,
    ) -> bool:
        """Set the connection status (and, for ``error``, the message and stderr tail);
        return whether anything changed (the version bumps once then).

        Raises:
            NodeFieldError: an unknown status.
        """
        if status not in STATUSES:
            raise NodeFieldError(
                f"unknown MCP server status {status!r}; expected one of {STATUSES}",
                field="status",
                value=status,
            )
        new_info = dict(info) if info is not None else self.info
        new = (status, error, stderr_tail, new_info)
        if new == (self.status, self.error, self.stderr_tail, self.info):
            return False
        old = self.status
        self.status, self.error, self.stderr_tail, self.info = new
        what = f"status: {old} → {status}" if old != status else f"status: {status} (updated)"
        self.mark_changed(f"{what}: {error}" if error else what)
        return True

    def retarget(
        self,
        *,
        command: Sequence[str] | None,
        url: str | None,
        env_keys: Sequence[str] = (),
        cwd: str | None = None,
    ) -> bool:
        """Point the node at a (new) command or URL before a reconnect; return whether
        anything changed (the version bumps then)."""
        new = (list(command) if command is not None else None, url, sorted(env_keys), cwd)
        if new == (self.command, self.url, self.env_keys, self.cwd):
            return False
        self.command, self.url, self.env_keys, self.cwd = new
        self.mark_changed(f"MCP server {self.name} now reached at {self._where()}")
        return True

    def tools(self) -> list[MCPToolNode]:
        """The tool children, in order."""
        return [c for c in self.children if isinstance(c, MCPToolNode) and c.server == self.name]

    def sync_tools(self, specs: Sequence[ToolSpec]) -> list[str]:
        """Make the tool children match ``specs``: add new tools, update changed ones,
        remove vanished ones. Return one description per change (empty: nothing changed).

        Outside a graph nothing happens.
        """
        graph = self.graph
        if graph is None:
            return []
        current = {tool.name: tool for tool in self.tools()}
        wanted = {spec.name: spec for spec in specs}
        changes: list[str] = []
        for name, old in current.items():
            if name not in wanted:
                graph.remove(old)
                changes.append(f"removed {name}")
        for name, spec in wanted.items():
            tool = current.get(name)
            if tool is None:
                graph.add(child := MCPToolNode(self.name, spec))
                graph.link(self, child)
                changes.append(f"added {name}")
            elif aspects := tool.update(spec):
                changes.append(f"updated {name} ({', '.join(aspects)})")
        if changes:
            self.mark_changed(f"tools of {self.name}: {'; '.join(changes)}")
        return changes

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return f"MCP server {self.name}"

    def _where(self) -> str:
        if self.url is not None:
            return f"streamable HTTP {self.url}"
        return "stdio: " + " ".join(self.command or [])

    def _headline(self) -> str:
        return f"## MCP server {inline(self.name)} (#{self.id}): {self.status}"

    def _error_lines(self, with_tail: bool) -> list[str]:
        lines = [f"error: {inline(self.error)}"] if self.error else []
        if with_tail and self.stderr_tail:
            tail = split_lines(self.stderr_tail)[-STDERR_TAIL_LINES:]
            which = "last line" if len(tail) == 1 else f"last {len(tail)} lines"
            lines += [f"stderr ({which}):", fence("\n".join(tail))]
        return lines

    def render_state(self, state: NodeState) -> str:
        tools = self.tools()
        if state == NodeState.COLLAPSED:
            name = inline(self.name)
            line = f"- MCP server {name} (#{self.id}): {self.status}, {len(tools)} tools"
            return f"{line}; error: {inline(self.error)}" if self.error else line
        lines = [self._headline()]
        if state == NodeState.SUMMARY:
            names = inline(", ".join(t.name for t in tools)) or "none"
            return "\n".join([*lines, f"tools: {names}", *self._error_lines(True)])
        who = " ".join(v for v in (self.info.get("name"), self.info.get("version")) if v)
        lines.append(inline(f"server: {who or 'unknown'} · {self._where()}"))
        if self.info.get("instructions"):
            lines.append(f"instructions: {inline(self.info['instructions'])}")
        lines += self._error_lines(True)
        if state == NodeState.ALL:
            lines.append(inline(f"protocol: {self.info.get('protocol_version') or 'unknown'}"))
            if self.cwd:
                lines.append(f"cwd: {inline(self.cwd)}")
            if self.env_keys:
                keys = inline(", ".join(self.env_keys))
                lines.append(f"environment: {keys} (values not shown)")
        lines.append(f"tools ({len(tools)}):" if tools else "tools: none")
        return "\n".join(lines)

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": self.command,
            "url": self.url,
            "env_keys": self.env_keys,
            "cwd": self.cwd,
            "status": self.status,
            "error": self.error,
            "stderr_tail": self.stderr_tail,
            "info": self.info,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MCPServerNode:
        """Rebuild the node. A saved ``connected`` or ``connecting`` status comes back as
        ``disconnected``: the live session did not survive; reconnect to use it again."""
        node = cls(
            data["name"],
            command=data.get("command"),
            url=data.get("url"),
            env_keys=data.get("env_keys") or (),
            cwd=data.get("cwd"),
        )
        status = data.get("status", "disconnected")
        node.status = "disconnected" if status in ("connected", "connecting") else status
        if node.status not in STATUSES:
            raise NodeFieldError(
                f"unknown MCP server status {status!r}", field="status", value=status
            )
        node.error = data.get("error")
        node.stderr_tail = data.get("stderr_tail") or ""
        node.info = {str(k): str(v) for k, v in (data.get("info") or {}).items()}
        return node


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _json_block(value: Any) -> str:
    return fence(json.dumps(value, indent=2, sort_keys=True, default=str), "json")
