"""MessageNode: one conversation message — user, assistant, tool_call or tool_result.

A message's content does not change after it is added. A ``tool_call`` and the
``tool_result`` that answers it (same ``tool_call_id``) are *companions*: each names the
other in :meth:`MessageNode.companions`, so the projection shows both or neither — a
model never sees a call without its result. The session pairs them when the result is
added (:meth:`~dagctx.session.conversation.ConversationVerbs.message`); the pairing is
serialized with the node. A paired message whose companion has left the graph is never
shown again (it could only be shown alone).

The content (a tool result's too) is quoted (:mod:`dagctx._quote`): fenced in full, the
first line escaped onto its line when collapsed; the tool name and call id are escaped,
so no message can forge a section heading or another message.

Messages default to priority 70; among equal priorities the projection degrades the
older message first, so under budget pressure old messages collapse before recent ones.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dagctx._quote import fence, inline
from dagctx.errors import NodeFieldError
from dagctx.nodes.base import Node, NodeState

ROLES = ("user", "assistant", "tool_call", "tool_result")
TOOL_ROLES = ("tool_call", "tool_result")
PREVIEW_CHARS = 80  # a COLLAPSED message shows its first line up to this many characters
SUMMARY_LINES = 3  # a SUMMARY message shows this many lines
SUMMARY_LINE_CHARS = 200


def check_message_fields(role: object, content: object, tool_call_id: object, name: object) -> str:
    """Validate a message's fields; return the role.

    Raises:
        NodeFieldError: an unknown role, non-string content or name, a tool message without a
            ``tool_call_id``, or a user/assistant message with one.
    """
    if not isinstance(role, str) or role not in ROLES:
        raise NodeFieldError(
            f"unknown message role {role!r}; expected one of {', '.join(ROLES)}",
            field="role",
            value=role,
        )
    if not isinstance(content, str):
        raise NodeFieldError(
            f"message content must be a string, got {type(content).__name__}",
            field="content",
            value=content,
        )
    if name is not None and not isinstance(name, str):
        raise NodeFieldError(
            f"message name must be a string or None, got {name!r}", field="name", value=name
        )
    if role in TOOL_ROLES:
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise NodeFieldError(
                f"a {role} message needs a non-empty tool_call_id, got {tool_call_id!r}",
                field="tool_call_id",
                value=tool_call_id,
            )
    elif tool_call_id is not None:
        raise NodeFieldError(
            f"a {role} message takes no tool_call_id, got {tool_call_id!r}",
            field="tool_call_id",
            value=tool_call_id,
        )
    return role


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


class MessageNode(Node):
    """One message of a conversation (usually a child of a :class:`TopicNode`).

    Attributes:
        role: ``user``, ``assistant``, ``tool_call`` or ``tool_result``.
        content: the message text (for a tool call, its arguments).
        tool_call_id: links a tool call and its result (tool roles only).
        name: the tool's name (optional).
        peer: id of the companion message (the call's result or the result's call).
    """

    type_name: ClassVar[str] = "message"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 70

    __slots__ = ("content", "name", "peer", "role", "tool_call_id")

    def __init__(
        self,
        role: str,
        content: str,
        *,
        tool_call_id: str | None = None,
        name: str | None = None,
        **node_fields: Any,
    ) -> None:
        self.role = check_message_fields(role, content, tool_call_id, name)
        super().__init__(**node_fields)
        self.content = content
        self.tool_call_id = tool_call_id
        self.name = name
        self.peer: str | None = None

    def companions(self) -> tuple[str, ...]:
        """The paired call or result, which the projection keeps or drops with this one."""
        return (self.peer,) if self.peer is not None else ()

    def focus_text(self) -> str | None:
        """A user message's content, as the focus it offers (the projection takes it
        when no focus is in effect or when it names a file or directory:
        :meth:`~dagctx.projection.relevance.Relevance.offer_focus`)."""
        return self.content if self.role == "user" else None

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        first = self.content.split("\n", 1)[0]
        return f"{self.role}: {_clip(first, 40)}" if first else self.role

    def _header(self) -> str:
        parts = [f"**{self.role}**"]
        if self.name:
            parts.append(inline(self.name))
        if self.tool_call_id:
            parts.append(f"[{inline(self.tool_call_id)}]")
        return " ".join(parts) + f" (#{self.id})"

    def render_state(self, state: NodeState) -> str:
        lines = self.content.split("\n") if self.content else []
        if state == NodeState.COLLAPSED:
            first = inline(_clip(lines[0], PREVIEW_CHARS)) if lines else "(empty)"
            extra = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
            return f"- {self._header()}: {first}{extra}"
        if state == NodeState.SUMMARY:
            shown = [_clip(line, SUMMARY_LINE_CHARS) for line in lines[:SUMMARY_LINES]]
            rest = len(lines) - len(shown)
            more = [f"[… {rest} more lines]"] if rest > 0 else []
            body = fence("\n".join(shown)) if shown else "(empty)"
            return "\n".join([f"{self._header()}:", body, *more])
        body = fence(self.content) if self.content else "(empty)"
        if state == NodeState.DETAILS:
            return f"{self._header()}\n{body}"
        return f"{self._header()}\n{self._metadata(len(lines))}\n{body}"

    def _metadata(self, n_lines: int) -> str:
        lines = f"{n_lines} line{'s' * (n_lines != 1)}"
        return f"({lines}, {len(self.content)} chars)"

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "content": self.content,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "peer": self.peer,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MessageNode:
        node = cls(
            data["role"],
            data["content"],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )
        node.peer = data.get("peer")
        return node
