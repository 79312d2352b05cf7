"""The session verbs as free functions on the current session.

Inside ``with Session(...) as s:`` these act on ``s``, matching the source document's
examples (``v = text("src/auth.py"); g = group(v)``). Outside such a block they raise
:class:`~dagctx.errors.DagctxError`.
"""

from __future__ import annotations

import os
from typing import Any

from dagctx.graph import NodeRef
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode
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


def tick() -> TickResult:
    """Tick the current session."""
    return current_session().tick()


def project(budget: int | None = None) -> Projection:
    """Project the current session."""
    return current_session().project(budget)


__all__ = ["checkpoint", "group", "link", "project", "restore", "text", "tick", "unlink"]
