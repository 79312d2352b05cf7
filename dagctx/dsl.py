"""The session verbs as free functions on the current session.

Inside ``with Session(...) as s:`` these act on ``s``, matching the source document's
examples (``v = text("src/auth.py"); g = group(v)``). Outside such a block they raise
:class:`~dagctx.errors.DagctxError`. Each function takes the same arguments as the
:class:`~dagctx.session.Session` method of the same name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dagctx.graph import NodeRef
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.group import GroupNode
from dagctx.nodes.lock import LockNode
from dagctx.nodes.markdown import MarkdownNode
from dagctx.nodes.message import MessageNode
from dagctx.nodes.shell import ShellNode
from dagctx.nodes.text import TextNode
from dagctx.nodes.topic import TopicNode
from dagctx.projection import Projection
from dagctx.session import TickResult, current_session


def text(path: str | os.PathLike[str], **options: Any) -> TextNode:
    """Add a text node for ``path`` (see :meth:`Session.text`)."""
    return current_session().text(path, **options)


def group(*children: NodeRef, **options: Any) -> GroupNode:
    """Add a group holding ``children`` (see :meth:`Session.group`)."""
    return current_session().group(*children, **options)


def link(parent: NodeRef, child: NodeRef, **options: Any) -> None:
    """Link ``child`` under ``parent``."""
    current_session().link(parent, child, **options)


def unlink(parent: NodeRef, child: NodeRef) -> None:
    """Remove the edge ``parent → child``."""
    current_session().unlink(parent, child)


def checkpoint(name: str) -> None:
    """Save the current structure under ``name``."""
    current_session().checkpoint(name)


def restore(name: str) -> list[str]:
    """Restore the structure saved under ``name``; return ids of nodes created since."""
    return current_session().restore(name)


def markdown(path: str | os.PathLike[str], **options: Any) -> MarkdownNode:
    """Add a markdown document, one child per heading section."""
    return current_session().markdown(path, **options)


def topic(title: str, **options: Any) -> TopicNode:
    """Open a conversation topic."""
    return current_session().topic(title, **options)


def message(role: str, content: str, **options: Any) -> MessageNode:
    """Append a message to a topic (default: the latest active one)."""
    return current_session().message(role, content, **options)


def artifact(content: str, **options: Any) -> ArtifactNode:
    """Add a code / output / error artifact."""
    return current_session().artifact(content, **options)


def shell(cmd: str, args: Sequence[str] = (), **options: Any) -> ShellNode:
    """Start a command in the background; its result is applied at a later tick."""
    return current_session().shell(cmd, args, **options)


def lock(path: str | os.PathLike[str], **options: Any) -> LockNode:
    """Request an exclusive lock on a path; the outcome is applied at a later tick."""
    return current_session().lock(path, **options)


def tick() -> TickResult:
    """Tick the current session."""
    return current_session().tick()


def project(budget: int | None = None) -> Projection:
    """Project the current session."""
    return current_session().project(budget)


__all__ = [
    "artifact",
    "checkpoint",
    "group",
    "link",
    "lock",
    "markdown",
    "message",
    "project",
    "restore",
    "shell",
    "text",
    "tick",
    "topic",
    "unlink",
]
