"""The focus verb: ``focus(text)`` says what the agent works on.

The focus is a :class:`~dagctx.nodes.focus.FocusNode` (a root, one per session) that the
projection ranks every node against (:mod:`dagctx.projection.relevance`). Like a
background result it is applied at the next tick, as a change the changes section
lists. A user message focuses the session as well, whichever came last counting, when no
focus is in effect or when it names a file or directory of the workspace (a word of one of
its paths): "what next?" leaves the task's focus, and the workspace ranked by it, as
they were (:meth:`~dagctx.projection.relevance.Relevance.offer_focus`).
"""

from __future__ import annotations

from dagctx.errors import NodeFieldError
from dagctx.nodes.focus import FocusNode
from dagctx.session.core import SessionCore


class FocusVerbs(SessionCore):
    """``focus`` of a :class:`~dagctx.session.Session`."""

    # the session's FocusNode as last found or made: used while it is in the session's
    # graph (a restore or a load may have taken it out or put another in its place)
    _focus_node: FocusNode | None = None

    def focus(self, text: str | None) -> None:
        """Focus the projection on ``text`` (None clears the focus) from the next tick.

        Raises:
            NodeFieldError: ``text`` is neither a string nor None.
        """
        self._check_open()
        if text is not None and not isinstance(text, str):
            raise NodeFieldError(
                f"focus must be a string or None, got {text!r}", field="focus", value=text
            )
        self.queue_result(lambda: self._apply_focus(text))

    def _apply_focus(self, text: str | None) -> None:
        """Set the text of the session's FocusNode (found by a scan of the graph when the
        one kept is not in it), or add one for ``text`` when there is none."""
        node = self._focus_node
        if node is None or node.graph is not self.graph:
            node = next((n for n in self.graph if isinstance(n, FocusNode)), None)
        if node is not None:
            node.set_text(text)
        elif text is not None:
            node = FocusNode(text)
            self.add(node)
        self._focus_node = node
