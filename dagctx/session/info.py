"""The session-metadata verbs: ``session_node()`` adds the session's own SessionNode;
``file_watch()`` says how the session learns that the files of its running file nodes
changed (OS notifications or polling, and why).

The node (:class:`~dagctx.nodes.session_node.SessionNode`) is recomputed every tick and
rendered in the projection's volatile tail; a session has at most one attached to it.
"""

from __future__ import annotations

from dagctx.nodes.base import NodeState
from dagctx.nodes.session_node import SessionNode
from dagctx.session.core import SessionCore
from dagctx.session.parts.files import FileWatchInfo


class SessionInfoVerbs(SessionCore):
    """``session_node`` and ``file_watch`` of a :class:`~dagctx.session.Session`."""

    def file_watch(self) -> FileWatchInfo:
        """How the running file nodes (``text``, ``markdown``) learn of changes, as a
        :class:`~dagctx.session.FileWatchInfo`: mode ``"notify"`` (OS notifications;
        ``polled_files`` of them stat-checked at every tick anyway) or ``"polling"``
        (notifications are not available: every one is stat-checked at every tick), with
        the reason anything is polled. Known once the session has ticked."""
        return self._files.info()

    def session_node(self, *, state: NodeState | str | None = None) -> SessionNode:
        """Return the session's SessionNode, adding it (as a root) on the first call.

        A detached SessionNode already in the graph (from a loaded session) is attached
        to this session and returned. ``state`` applies only when the node is created.

        Raises:
            GraphError: a bad state.
        """
        self._check_open()
        for node in self.graph:
            if isinstance(node, SessionNode):
                if node.session is not self:
                    node.attach(self)
                return node
        created = SessionNode(self, state=state)
        self.add(created)
        return created
