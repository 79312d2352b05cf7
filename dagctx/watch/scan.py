"""Scan a directory tree into the session: directories become groups, files text nodes.

What the scan takes in is a :class:`~dagctx.watch.ignore.TreeFilter`'s decision (git's
ignore rules and tracked files; ``.git``, ``.dagctx``, virtual environments and symbolic
links skipped); it also skips binary files (a NUL byte in the first 8 KB). What cannot be
read is reported, not skipped in silence: a file that cannot be read is a node showing
``[file unreadable: <why>]``, and the group of a directory that cannot be listed shows
``[directory unreadable: <why>; ...]``. Entries are visited in sorted order, so the same
tree gives the same graph. A :class:`~dagctx.watch.steering.Steering` narrows what is taken
in (include / exclude patterns) and gives the matching files their priority and state; with
include patterns, a directory holding no file taken in (at any depth) gets no group.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from dagctx.errors import PathError
from dagctx.nodes.base import Node, NodeState, TickFrequency
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode
from dagctx.watch.ignore import TreeFilter
from dagctx.watch.steering import NO_STEERING, Steering

if TYPE_CHECKING:
    from dagctx.session import Session

# Placeholders of files the scan leaves out (binary, or vanished meanwhile). A file that
# cannot be read is kept: its placeholder names it and says why.
NOT_TEXT = ("[binary file", "[file deleted]")


def unreadable_notice(reason: str) -> str:
    """What the group of a directory that cannot be listed shows under its header."""
    return f"[directory unreadable: {reason}; its files are not shown]"


def scan_tree(
    session: Session,
    path: str | os.PathLike[str] = ".",
    *,
    progress: Callable[[int], None] | None = None,
    keep: TreeFilter | None = None,
    steering: Steering = NO_STEERING,
) -> GroupNode:
    """Add the tree under ``path`` to ``session``; return the group of its top directory.

    Directory groups are at DETAILS (so files show under them) and files at DETAILS; text
    nodes are not recomputed on tick (``TickFrequency.never()``): changes reach them
    through :meth:`Session.file_changed` (which ``dagctx watch`` calls on file events).
    ``progress`` is called with the number of files added so far. ``keep`` decides which
    paths are taken in (default: a :class:`~dagctx.watch.ignore.TreeFilter` for the tree,
    which reads the git index once, with ``steering``'s include and exclude patterns).
    Each file's node gets the priority and state ``steering``'s rules name for its path.

    Raises:
        PathError: ``path`` is outside the root or not a directory.
    """
    absolute, relative = session.resolve_path(path)
    if not absolute.is_dir():
        raise PathError(f"{os.fspath(path)!r} is not a directory", path=path)
    top_rel = "" if relative == "." else relative
    if keep is None:
        keep = steering.tree_filter(session.root, top=top_rel)
    # One batch: each directory group is notified once at the end, not once per file,
    # and gets its children in one change ("linked 12 children"), not one per child.
    graph = session.graph
    with graph.batch():
        top = session.group(title=(top_rel or absolute.name) + "/", state=NodeState.DETAILS)
        groups: dict[str, GroupNode] = {top_rel: top}
        members: dict[str, list[Node]] = {top_rel: []}
        files = 0
        never = TickFrequency.never()
        secrets = session.include_secrets
        for rel_path, is_dir in keep.walk(absolute):
            where = rel_path.rpartition("/")[0] if "/" in rel_path else ""
            if is_dir:
                group = session.group(title=rel_path + "/", state=NodeState.DETAILS)
                groups[rel_path], members[rel_path] = group, []
                members[where].append(group)
                continue
            # The node's own read tells binary and unreadable files (which are skipped).
            node = TextNode(
                rel_path,
                root=session.root,
                frequency=never,
                include_secrets=secrets,
                **steering.node_fields(rel_path),
            )
            if node.placeholder is not None and node.placeholder.startswith(NOT_TEXT):
                continue
            session.add(node)
            members[where].append(node)
            files += 1
            if progress is not None:
                progress(files)
        if keep.include:
            _drop_empty_groups(session, groups, members, top_rel)
        for where, kids in members.items():
            if kids:
                graph.extend(groups[where], kids)
        for where, reason in keep.unreadable.items():
            if where in groups:
                groups[where].notice = unreadable_notice(reason)
    return top


def _drop_empty_groups(
    session: Session, groups: dict[str, GroupNode], members: dict[str, list[Node]], top: str
) -> None:
    """Remove the groups (not yet linked) of the directories below ``top`` that hold no
    file, deepest first, so that a directory holding only such directories goes too."""
    for where in sorted(members, key=lambda rel: rel.count("/"), reverse=True):
        if where != top and not members[where]:
            group = groups.pop(where)
            session.remove(group)
            members[where.rpartition("/")[0] if "/" in where else ""].remove(group)
            del members[where]
