"""FocusNode: what the agent is working on, as the session's focus.

One per session (a root, made by :meth:`Session.focus`). Its text is shown at the top
of the prompt and ranks the other nodes (:mod:`dagctx.projection.relevance`); cleared,
it is hidden and says so to the ranking (an empty focus). The text is quoted
(:mod:`dagctx._quote`): fenced, or escaped onto the heading's line when collapsed. Must
not import the session, the graph or the projection.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dagctx._quote import fence, inline
from dagctx.nodes.base import Node, NodeState


class FocusNode(Node):
    """The session's focus text (None: cleared)."""

    type_name: ClassVar[str] = "focus"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 85

    __slots__ = ("text",)

    def __init__(self, text: str | None = None, **fields: Any) -> None:
        super().__init__(**fields)
        self.text = text

    def set_text(self, text: str | None) -> None:
        """Set (or with None clear) the focus; a change of text is a change (a trace)."""
        if text == self.text:
            return
        self.text = text
        self.state = NodeState.DETAILS if text is not None else NodeState.HIDDEN
        self.mark_changed(f"set to {text!r}" if text is not None else "cleared")

    def focus_text(self) -> str | None:
        return self.text or ""

    def label(self) -> str:
        return "focus"

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            first = inline((self.text or "(none)").split("\n", 1)[0][:80])
            return f"## Focus (#{self.id}): {first}"
        return f"## Focus (#{self.id})\n{fence(self.text) if self.text else '(none)'}"

    def data_dict(self) -> dict[str, Any]:
        return {"text": self.text}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> FocusNode:
        text = data.get("text")
        return cls(text if isinstance(text, str) else None)
