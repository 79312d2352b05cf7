"""Conversation verbs: topics and their messages, with tool calls paired to their results.

``topic(title)`` opens a :class:`~dagctx.nodes.topic.TopicNode`; ``message(role, content,
topic=...)`` appends a :class:`~dagctx.nodes.message.MessageNode` to it (by default to the
most recently opened topic that is still active); ``close_topic(topic)`` closes it. A
``tool_result`` is paired with the ``tool_call`` of the same ``tool_call_id`` when it is
added, so the projection keeps or drops the two together. Every check runs before
anything changes: a refused message leaves the graph as it was.
"""

from __future__ import annotations

from dagctx.errors import (
    NoActiveTopicError,
    NodeClosedError,
    NodeTypeError,
    ToolCallIdError,
)
from dagctx.graph import NodeRef
from dagctx.nodes.base import NodeState
from dagctx.nodes.message import MessageNode, check_message_fields
from dagctx.nodes.topic import TopicNode
from dagctx.session.core import SessionCore


class ConversationVerbs(SessionCore):
    """``topic``, ``message`` and ``close_topic`` of a :class:`~dagctx.session.Session`."""

    def topic(
        self,
        title: str,
        *,
        state: NodeState | str | None = None,
        priority: int | None = None,
        parent: NodeRef | None = None,
    ) -> TopicNode:
        """Open a new, active topic (as a root, or as the last child of ``parent``).

        Raises:
            NodeFieldError: an empty title; GraphError for a bad state, priority or
                parent.
        """
        self._check_open()
        node = TopicNode(title, state=state, priority=priority)
        self.add(node, parent=parent)
        return node

    def message(
        self,
        role: str,
        content: str,
        *,
        topic: NodeRef | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        state: NodeState | str | None = None,
        priority: int | None = None,
    ) -> MessageNode:
        """Append a message to ``topic`` (default: the latest active topic); return it.

        A ``tool_result`` is paired with the earlier ``tool_call`` of the same
        ``tool_call_id``.

        Raises:
            NodeFieldError: a bad role, content, name or tool_call_id (see
                :func:`~dagctx.nodes.message.check_message_fields`).
            NodeClosedError / NodeTypeError: a closed topic, or a node that is not a
                topic. NoActiveTopicError: no active topic.
            ToolCallIdError: a tool_call whose id is taken; a tool_result with no
                unanswered tool_call of its id.
            NodeNotFoundError: ``topic`` names no node.
        """
        self._check_open()
        check_message_fields(role, content, tool_call_id, name)
        target = self._target_topic(topic)
        call = self._tool_call(tool_call_id) if tool_call_id is not None else None
        if role == "tool_call" and call is not None:
            raise ToolCallIdError(
                f"tool_call_id {tool_call_id!r} is already used by #{call.id}",
                tool_call_id=tool_call_id,
            )
        if role == "tool_result":
            if call is None:
                raise ToolCallIdError(
                    f"no tool_call with tool_call_id {tool_call_id!r} to answer",
                    tool_call_id=tool_call_id,
                )
            if call.peer is not None:
                raise ToolCallIdError(
                    f"tool_call {tool_call_id!r} (#{call.id}) already has its result #{call.peer}",
                    tool_call_id=tool_call_id,
                )
        node = MessageNode(
            role, content, tool_call_id=tool_call_id, name=name, state=state, priority=priority
        )
        self.add(node, parent=target)
        if role == "tool_result" and call is not None:
            node.peer, call.peer = call.id, node.id
        return node

    def close_topic(self, topic: NodeRef) -> TopicNode:
        """Close ``topic`` (no new messages); closing a closed topic changes nothing.

        Raises:
            NodeNotFoundError: unknown id; NodeTypeError: the node is not a topic.
        """
        node = self._as_topic(topic)
        node.close()
        return node

    # -- lookups ----------------------------------------------------------------------

    def _as_topic(self, ref: NodeRef) -> TopicNode:
        node = self.get(ref)
        if not isinstance(node, TopicNode):
            raise NodeTypeError(
                f"#{node.id} is a {node.type_name} node, not a topic",
                node_id=node.id,
                expected="topic",
            )
        return node

    def _target_topic(self, ref: NodeRef | None) -> TopicNode:
        if ref is None:
            latest = None
            for node in self.graph:
                if isinstance(node, TopicNode) and node.active:
                    latest = node
            if latest is None:
                raise NoActiveTopicError(
                    "no active topic: open one with topic(title) or pass topic="
                )
            return latest
        topic = self._as_topic(ref)
        if not topic.active:
            raise NodeClosedError(
                f"topic {topic.title!r} (#{topic.id}) is closed; open a new one", node_id=topic.id
            )
        return topic

    def _tool_call(self, tool_call_id: str) -> MessageNode | None:
        """The tool_call message with this id, if the graph holds one."""
        for node in self.graph:
            if (
                isinstance(node, MessageNode)
                and node.role == "tool_call"
                and node.tool_call_id == tool_call_id
            ):
                return node
        return None
