"""Scan a directory tree into the session: directories become groups, files text nodes.

The scan honours ``.gitignore`` files (the root's and nested ones, with git's matching
rules via ``pathspec``), and always skips ``.git``, the session's own ``.dagctx``, virtual
environments (any directory holding ``pyvenv.cfg``) and binary files (a NUL byte in the
first 8 KB). Entries are visited in sorted order, so the same tree gives the same graph.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pathspec import GitIgnoreSpec

from dagctx.errors import PathError
from dagctx.nodes.base import Node, NodeState, TickFrequency
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode

if TYPE_CHECKING:
    from dagctx.session import Session

ALWAYS_SKIPPED = frozenset({".git", ".dagctx", ".hg", ".svn", "__pycache__"})
# Placeholders of files the scan leaves out (binary, unreadable or vanished meanwhile).
_NOT_TEXT = ("[binary file", "[file unreadable", "[file deleted]")


@dataclass(slots=True)
class IgnoreRules:
    """The ``.gitignore`` rules in force in one directory (its own and its parents')."""

    specs: list[tuple[str, GitIgnoreSpec]] = field(default_factory=list)

    def extended(self, directory: Path, relative: str) -> IgnoreRules:
        gitignore = directory / ".gitignore"
        if not gitignore.is_file():
            return self
        try:
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        return IgnoreRules([*self.specs, (relative, GitIgnoreSpec.from_lines(lines))])

    def ignores(self, relative: str, is_dir: bool) -> bool:
        """Whether the root-relative posix path is ignored."""
        for base, spec in self.specs:
            inner = relative[len(base) + 1 :] if base else relative
            if spec.match_file(inner + "/" if is_dir else inner):
                return True
        return False


def is_skipped_dir(path: Path, name: str) -> bool:
    """Directories never scanned: VCS metadata, dagctx's own folder, virtual envs."""
    return name in ALWAYS_SKIPPED or (path / "pyvenv.cfg").exists()


def iter_files(root: Path, start: Path | None = None) -> Iterator[tuple[str, bool]]:
    """Yield (root-relative posix path, is_dir) for every scanned entry under ``start``,
    directories before their contents, in sorted order."""
    base = start or root
    rules = IgnoreRules()
    rel_base = "" if base == root else base.relative_to(root).as_posix()
    # Collect ignore rules of the directories above ``base`` (inside the root).
    parts = [] if not rel_base else rel_base.split("/")
    current, rel = root, ""
    rules = rules.extended(current, rel)
    for part in parts:
        current, rel = current / part, f"{rel}/{part}" if rel else part
        rules = rules.extended(current, rel)
    stack: list[tuple[Path, str, IgnoreRules]] = [(base, rel_base, rules)]
    while stack:
        directory, rel_dir, dir_rules = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            rel_path = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.is_symlink() or dir_rules.ignores(rel_path, is_dir):
                continue
            if is_dir:
                if not is_skipped_dir(Path(entry.path), entry.name):
                    subdirs.append((Path(entry.path), rel_path))
            elif entry.is_file(follow_symlinks=False):
                yield rel_path, False
        for path, rel_path in reversed(subdirs):
            stack.append((path, rel_path, dir_rules.extended(path, rel_path)))
        for _path, rel_path in subdirs:
            yield rel_path, True


def scan_tree(
    session: Session,
    path: str | os.PathLike[str] = ".",
    *,
    progress: Callable[[int], None] | None = None,
) -> GroupNode:
    """Add the tree under ``path`` to ``session``; return the group of its top directory.

    Directory groups are at DETAILS (so files show under them) and files at DETAILS; text
    nodes are not recomputed on tick (``TickFrequency.never()``): changes reach them
    through :meth:`Session.file_changed` (which ``dagctx watch`` calls on file events).
    ``progress`` is called with the number of files added so far.

    Raises:
        PathError: ``path`` is outside the root or not a directory.
    """
    absolute, relative = session.resolve_path(path)
    if not absolute.is_dir():
        raise PathError(f"{os.fspath(path)!r} is not a directory")
    top_rel = "" if relative == "." else relative
    # One batch: each directory group is notified once at the end, not once per file,
    # and gets its children in one change ("linked 12 children"), not one per child.
    graph = session.graph
    with graph.batch():
        top = session.group(title=(top_rel or absolute.name) + "/", state=NodeState.DETAILS)
        groups: dict[str, GroupNode] = {top_rel: top}
        members: dict[str, list[Node]] = {top_rel: []}
        files = 0
        never = TickFrequency.never()
        for rel_path, is_dir in iter_files(session.root, absolute):
            where = rel_path.rpartition("/")[0] if "/" in rel_path else ""
            if is_dir:
                group = session.group(title=rel_path + "/", state=NodeState.DETAILS)
                groups[rel_path], members[rel_path] = group, []
                members[where].append(group)
                continue
            # The node's own read tells binary and unreadable files (which are skipped).
            node = TextNode(rel_path, root=session.root, frequency=never)
            if node.placeholder is not None and node.placeholder.startswith(_NOT_TEXT):
                continue
            session.add(node)
            members[where].append(node)
            files += 1
            if progress is not None:
                progress(files)
        for where, kids in members.items():
            if kids:
                graph.extend(groups[where], kids)
    return top
