"""Capability verbs: store typed capability results in the session's DAG, one node per
type and key.

``capability(context, key)`` adds a :class:`~dagctx.nodes.capability.CapabilityNode`, or,
when the session already holds one for the same ``CONTEXT_TYPE`` and key, updates that
node in place (version + 1 and a trace only when the data differs: early cutoff).
``find_capability(context_type, key)`` returns that node.
"""

from __future__ import annotations

from dagctx._validate import is_int
from dagctx.capability import StoredContext
from dagctx.errors import NodeFieldError
from dagctx.graph import NodeRef
from dagctx.nodes.base import NodeState
from dagctx.nodes.capability import CapabilityNode, hold
from dagctx.session.core import SessionCore


class CapabilityVerbs(SessionCore):
    """``capability`` and ``find_capability`` of a :class:`~dagctx.session.Session`."""

    def capability(
        self,
        context: StoredContext,
        key: str,
        parent: NodeRef | None = None,
        *,
        state: NodeState | str | None = None,
        priority: int | None = None,
    ) -> CapabilityNode:
        """Store ``context`` under ``key``; return its node.

        A new type/key adds a node (a root, or the last child of ``parent``). A type/key
        the session holds updates that node instead (see
        :meth:`CapabilityNode.update`); a ``parent`` is then linked to it if it is not
        yet, and ``state`` / ``priority``, when given, are set on it.

        Raises:
            CapabilityTypeError: ``context`` is not a CapabilityContext or RawContext, or
                does not survive its JSON dump; CapabilityError: an empty key;
            NodeNotFoundError: unknown parent; CycleError: linking would close a cycle;
            GraphError: a bad state or priority. Nothing changes on error.
        """
        self._check_open()
        held = hold(context, key)
        if parent is not None:
            self.get(parent)  # fail before changing anything
        node = self.find_capability(held.context_type, key)
        if node is None:
            node = CapabilityNode(held.context, key, state=state, priority=priority)
            self.add(node, parent=parent)
            return node
        new_state = None if state is None else NodeState.parse(state)
        if priority is not None and not is_int(priority):
            raise NodeFieldError(
                f"priority must be an int, got {priority!r}", field="priority", value=priority
            )
        if parent is not None:
            self.graph.link(parent, node)  # a no-op when already linked
        node.adopt(held)
        if new_state is not None:
            node.set_state(new_state)
        if priority is not None:
            node.priority = priority
        return node

    def find_capability(self, context_type: str, key: str) -> CapabilityNode | None:
        """The session's node for ``context_type`` / ``key`` (the earliest created, should
        several have been added directly), or None."""
        wanted = (context_type, key)
        for node in self.graph:
            if isinstance(node, CapabilityNode) and (node.context_type, node.key) == wanted:
                return node
        return None
