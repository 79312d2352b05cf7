"""Artifact verbs: add code, output or error text produced during the work, and update it.

``artifact(content, kind=..., language=..., title=...)`` adds an
:class:`~dagctx.nodes.artifact.ArtifactNode`; ``update_artifact(node, content)`` replaces
its content, bumping its version only when the content differs.
"""

from __future__ import annotations

from dagctx.errors import NodeTypeError
from dagctx.graph import NodeRef
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import NodeState
from dagctx.session.core import SessionCore


class ArtifactVerbs(SessionCore):
    """``artifact`` and ``update_artifact`` of a :class:`~dagctx.session.Session`."""

    def artifact(
        self,
        content: str,
        kind: str = "code",
        language: str | None = None,
        title: str | None = None,
        parent: NodeRef | None = None,
        *,
        state: NodeState | str | None = None,
        priority: int | None = None,
    ) -> ArtifactNode:
        """Add an artifact (as a root, or as the last child of ``parent``); return it.

        Raises:
            NodeFieldError: an unknown kind (``code``, ``output``, ``error``) or a field
                of the wrong type; NodeNotFoundError: unknown parent.
        """
        self._check_open()
        node = ArtifactNode(
            content, kind=kind, language=language, title=title, state=state, priority=priority
        )
        self.add(node, parent=parent)
        return node

    def update_artifact(self, node: NodeRef, content: str) -> bool:
        """Replace an artifact's content; return whether it changed (version + 1 only then).

        Raises:
            NodeNotFoundError: unknown id; NodeTypeError: not an artifact;
                NodeFieldError: content is not a string.
        """
        self._check_open()
        target = self.get(node)
        if not isinstance(target, ArtifactNode):
            raise NodeTypeError(
                f"#{target.id} is a {target.type_name} node, not an artifact",
                node_id=target.id,
                expected="artifact",
            )
        return target.update(content)
