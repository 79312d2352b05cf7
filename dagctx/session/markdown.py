"""The ``markdown`` verb of :class:`~dagctx.session.Session`."""

from __future__ import annotations

import os

from dagctx.errors import PathError
from dagctx.graph import NodeRef
from dagctx.nodes.base import NodeState, TickFrequency
from dagctx.nodes.markdown import MarkdownNode
from dagctx.session.core import SessionCore


class MarkdownVerbs(SessionCore):
    """The ``markdown`` verb of :class:`~dagctx.session.Session` (a mixin)."""

    def markdown(
        self,
        path: str | os.PathLike[str],
        *,
        state: NodeState | str | None = None,
        priority: int | None = None,
        frequency: TickFrequency | None = None,
        parent: NodeRef | None = None,
    ) -> MarkdownNode:
        """Add a :class:`MarkdownNode` for a markdown file under the root, with one child
        per heading section; return it. The file is re-read at each tick (by default)
        and when :meth:`file_changed` names it.

        Raises:
            PathError: the path is outside the root, missing, or not a regular file.
            NodeNotFoundError: ``parent`` is not in the graph.
        """
        absolute, relative = self.resolve_path(path)
        if not absolute.exists():
            raise PathError(f"no such file {os.fspath(path)!r} under {str(self.root)!r}", path=path)
        if not absolute.is_file():
            raise PathError(f"{os.fspath(path)!r} is not a regular file", path=path)
        if parent is not None:
            self.graph.get(parent)
        node = MarkdownNode(
            relative,
            root=self.root,
            state=state,
            priority=priority,
            frequency=frequency,
            include_secrets=self.include_secrets,
        )
        self.add(node, parent=parent)
        node.sync_sections()
        return node
