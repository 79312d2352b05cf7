"""TopicNode: a conversation segment whose children are its messages, in order.

At DETAILS and ALL the projection renders the topic's header and walks its messages; at
SUMMARY the topic shows one line per recent message instead, and at COLLAPSED only its
header. Both depend on the children, so a change below bumps the topic's version (a
derived change, as for groups). A topic is ``active`` until it is closed; a closed topic
takes no new messages.

Under budget pressure an active topic stays expanded (:meth:`TopicNode.min_state`): its
oldest messages collapse and are left out first. A closed topic is history: its default
priority drops below the messages' and it may fold into its summary like any container.
The title is escaped onto its heading's line (:func:`dagctx._quote.inline`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from dagctx._quote import inline
from dagctx.errors import NodeFieldError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.message import ROLES, MessageNode

STATUSES = ("active", "closed")
SUMMARY_MESSAGES = 20  # a SUMMARY topic lists this many of its latest messages
CLOSED_PRIORITY = 65  # a closed topic's default priority: below messages (70)


class TopicNode(Node):
    """A titled conversation segment holding :class:`MessageNode` children."""

    type_name: ClassVar[str] = "topic"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 75
    expands_at: ClassVar[frozenset[NodeState]] = frozenset({NodeState.DETAILS, NodeState.ALL})

    __slots__ = ("status", "title")

    def __init__(self, title: str, *, status: str = "active", **node_fields: Any) -> None:
        if not isinstance(title, str) or not title.strip():
            raise NodeFieldError(
                f"a topic needs a non-empty title, got {title!r}", field="title", value=title
            )
        if status not in STATUSES:
            raise NodeFieldError(
                f"unknown topic status {status!r}; expected active or closed",
                field="status",
                value=status,
            )
        super().__init__(**node_fields)
        self.title = title
        self.status = status

    @property
    def active(self) -> bool:
        return self.status == "active"

    def close(self) -> bool:
        """Close the topic; return False (and change nothing) if it was closed already.

        A closed topic without a priority of its own drops to :data:`CLOSED_PRIORITY`
        (below messages), so under budget pressure finished conversation folds first.
        """
        if self.status == "closed":
            return False
        self.status = "closed"
        if self._priority is None:
            self._priority = CLOSED_PRIORITY  # part of this change, not one of its own
        self.mark_changed("topic closed")
        return True

    def messages(self) -> list[MessageNode]:
        """The topic's message children, in order."""
        return [c for c in self.children if isinstance(c, MessageNode)]

    def min_state(self) -> NodeState:
        """An active topic stays expanded while the projection degrades: its old messages
        collapse and are left out before the topic folds into one summary. A closed topic
        is history and may fold like any container."""
        return NodeState.DETAILS if self.active else NodeState.COLLAPSED

    def on_child_changed(self, child: Node, description: str) -> None:
        """SUMMARY and COLLAPSED show the children, so a change below is a (derived)
        change of the topic."""
        self.mark_changed(f"below: {description}", derived=True)

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return self.title

    def _header(self, detail: str) -> str:
        return f"## Topic: {inline(self.title)} (#{self.id}, {self.status}{detail})"

    def render_state(self, state: NodeState) -> str:
        messages = self.messages()
        n = len(messages)
        count = f", {n} message{'s' * (n != 1)}"
        if state == NodeState.COLLAPSED:
            return self._header(f"{count}, collapsed")
        if state == NodeState.SUMMARY:
            recent = messages[-SUMMARY_MESSAGES:]
            lines = [m.render(NodeState.COLLAPSED).split("\n", 1)[0] for m in recent]
            earlier = [f"- … {n - len(recent)} earlier messages"] if n > len(recent) else []
            return "\n".join([self._header(f"{count}, summary"), *earlier, *lines])
        if state == NodeState.DETAILS:
            return self._header("")
        roles = Counter(m.role for m in messages)
        by_role = ", ".join(f"{roles[r]} {r}" for r in ROLES if roles[r])
        return self._header(f"{count}" + (f": {by_role}" if by_role else ""))

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {"title": self.title, "status": self.status}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> TopicNode:
        return cls(data["title"], status=data.get("status", "active"))
