"""Map file-system events to node changes for one directory tree of a session.

A :class:`TreeTracker` knows the directory groups and whole-file text nodes that
:func:`~dagctx.watch.scan.scan_tree` made for one tree. It turns a batch of events into one
change set (:meth:`TreeTracker.plan`, which reads the disk but changes no node), applied
inside one tick (:meth:`TreeTracker.apply`). What a path became is read from the disk
when the batch is planned, so an event only says "look at this path again":

- a new file gets a :class:`~dagctx.nodes.text.TextNode` under its directory group (missing
  directory groups are created; a new directory is scanned whole, since its first files
  can be written before the OS watches it);
- a modified file is re-read (:meth:`Session.file_changed`; same content, no new version);
  a re-survey (and a resume, :meth:`TreeTracker.apply_resume`) re-reads only the files
  whose stat key changed (:meth:`~dagctx.nodes.text.TextNode.changed_on_disk`);
- a deleted file's node shows ``[file deleted]`` for one tick and is removed at the next
  (:meth:`TreeTracker.reap`);
- a delete and a create with identical content in one batch is a rename: the node keeps
  its id and moves to its new path and directory group;
- a changed ``.gitignore`` (or a new virtual environment) re-surveys its directory, adding
  files it no longer ignores and dropping those it now ignores; a changed
  ``.git/info/exclude`` re-surveys the tree;
- a changed git index (when it lies inside the tree) is read again: a file that became
  tracked although a rule ignores it is taken in, one no longer tracked and ignored is
  dropped.

What is taken in is decided by the scan's own :class:`~dagctx.watch.ignore.TreeFilter`
(git's rules and tracked files, ``.git``, ``.dagctx``, virtual environments, the paths
passed as ``ignore`` with their ``.<name>.*.tmp`` siblings, the temporary files of an
atomic write, and the ``steering``'s include and exclude patterns); binary files are left
out. The ``steering``'s priority and state rules are given to every file node it adds (a
new file) or renames and, at the first tick, to the files of a tree it adopts (a resumed
session); see :meth:`~dagctx.watch.steering.Steering.apply`.

The watching itself (watchfiles, batching, ticking) is :mod:`dagctx.watch.loop`.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dagctx._fs import display_path
from dagctx.errors import PathError
from dagctx.nodes.base import Node, NodeState, TickFrequency
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import StatKey, TextNode, lstat_key
from dagctx.watch.scan import NOT_TEXT, scan_tree
from dagctx.watch.steering import NO_STEERING, Steering

if TYPE_CHECKING:
    from watchfiles import Change

    from dagctx.session import Session

    FileChange = tuple[Change, str]

#: What a TextNode shows, and the trace it records, for a file that is gone.
DELETED_PLACEHOLDER = "[file deleted]"
_DELETED = "file deleted"


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _name(rel: str) -> str:
    return rel.rpartition("/")[2]


def _under(rel: str, directory: str) -> bool:
    """Whether ``rel`` is ``directory`` or inside it ("" is the root)."""
    return not directory or rel == directory or rel.startswith(directory + "/")


def _ancestors(rel: str, top: str) -> list[str]:
    """The directories between ``top`` (excluded) and ``rel`` (excluded), shallowest first."""
    found = []
    parent = _parent(rel)
    while parent and parent != top:
        found.append(parent)
        parent = _parent(parent)
    return found[::-1]


def _disk_key(lstat: os.stat_result) -> StatKey | None:
    """The stat key of a file from its ``os.lstat`` result; None for a symlink (a
    regular file when listed, replaced since), whose key is taken by its path."""
    return None if stat.S_ISLNK(lstat.st_mode) else lstat_key(lstat)


def _content_key(node: TextNode) -> tuple[str | None, str | None, bytes]:
    return node.placeholder, node.notice, node.content_digest()


def _shared_tail(a: str, b: str) -> int:
    """How many trailing path components ``a`` and ``b`` share (rename pairing)."""
    count = 0
    for x, y in zip(reversed(a.split("/")), reversed(b.split("/")), strict=False):
        if x != y:
            break
        count += 1
    return count


@dataclass(slots=True)
class ChangeSet:
    """What one batch of events does to the tracked tree (decided from the disk)."""

    touched: set[str] = field(default_factory=set)  # paths whose text nodes re-read
    created: dict[str, TextNode] = field(default_factory=dict)  # new files, read
    deleted: set[str] = field(default_factory=set)  # tracked files gone from disk
    dropped: set[str] = field(default_factory=set)  # tracked files now ignored
    new_dirs: set[str] = field(default_factory=set)
    gone_dirs: set[str] = field(default_factory=set)  # tracked directories gone
    dropped_dirs: set[str] = field(default_factory=set)  # tracked directories now ignored
    moves: list[tuple[str, str]] = field(default_factory=list)  # (old, new) renames

    def __bool__(self) -> bool:
        """Whether applying it could change anything (else no tick is needed)."""
        parts = (self.touched, self.created, self.deleted, self.dropped, self.new_dirs,
                 self.gone_dirs, self.dropped_dirs, self.moves)  # fmt: skip
        return any(parts)


class TreeTracker:
    """The directory groups and file nodes of one tree in a session, kept in step with
    file events.

    Args:
        session: the session holding the tree.
        path: the tree's top directory (root-relative or absolute, under the root).
        ignore: extra files never tracked (e.g. the projection file being written into
            the tree), with their atomic-write siblings ``.<name>.*.tmp``.
        steering: include / exclude patterns and priority / state rules
            (:class:`~dagctx.watch.steering.Steering`; default: none).

    Raises:
        PathError: ``path`` is outside the session root or not a directory.
    """

    def __init__(
        self,
        session: Session,
        path: str | os.PathLike[str] = ".",
        *,
        ignore: Iterable[str | os.PathLike[str]] = (),
        steering: Steering = NO_STEERING,
    ) -> None:
        absolute, relative = session.resolve_path(path)
        if not absolute.is_dir():
            raise PathError(f"{os.fspath(path)!r} is not a directory", path=path)
        self.session = session
        self.directory = absolute
        self.top = "" if relative == "." else relative
        self.files: dict[str, TextNode] = {}
        self.dirs: dict[str, GroupNode] = {}
        self._gone: set[str] = set()
        self._gone_dirs: set[str] = set()
        #: What the tree takes in: the scan's decisions and the watcher's are this object's.
        self.filter = steering.tree_filter(session.root, top=self.top, ignore=ignore)
        self.steering = steering

    # -- loading ----------------------------------------------------------------------

    def load(self, progress: Callable[[int], None] | None = None) -> bool:
        """Bring the tree into the session: adopt its groups if the session has them
        (a loaded session, an earlier scan) and queue a re-survey for the next tick, or
        scan it now. ``progress`` gets the number of files scanned so far.

        Files an earlier tick already showed deleted are removed at the next tick (a
        session saved by ``dagctx watch --once`` resumes between those two ticks); the
        steering's rules are applied to the adopted files at that tick too (a file a
        rule of an earlier run steered and none does now gets its defaults back).
        Returns whether the tree was scanned (False: adopted and queued for re-survey).
        """
        title = (self.top or self.directory.name) + "/"
        for node in self.session.graph.roots():
            if isinstance(node, GroupNode) and node.title == title:
                self._adopt(node)
                # The trace log keeps the last tick's traces (the session holds a cursor).
                last = {t.node_id: t.description for t in self.session.graph.traces}
                gone = {node_id for node_id, what in last.items() if what == _DELETED}
                self._gone = {r for r, n in self.files.items() if n.id in gone} if gone else set()
                self.session.queue_result(self.reap)
                self.session.queue_result(self.apply_resume)
                self.session.queue_result(self._steer_adopted)
                return False
        top = scan_tree(
            self.session,
            self.directory,
            progress=progress,
            keep=self.filter,
            steering=self.steering,
        )
        self._adopt(top)
        return True

    def _steer_adopted(self) -> None:
        self.steering.apply_all(self.files)

    def _adopt(self, top: GroupNode) -> None:
        """Index the directory groups and whole-file nodes below ``top`` (by their paths)."""
        self.files.clear()
        self.dirs = {self.top: top}
        stack = [self.top]
        while stack:
            rel = stack.pop()
            for child in self.dirs[rel].children:
                if isinstance(child, TextNode):
                    path = child.path
                    if (
                        path.rpartition("/")[0] == rel
                        and child.start_line is None
                        and child.end_line is None
                    ):
                        self.files[path] = child
                elif isinstance(child, GroupNode) and (child.title or "").endswith("/"):
                    sub = (child.title or "")[:-1]
                    if sub and _parent(sub) == rel and sub not in self.dirs:
                        self.dirs[sub] = child
                        stack.append(sub)

    # -- events ---------------------------------------------------------------------

    def watch_filter(self, change: Change, path: str) -> bool:
        """The ``watch_filter`` for :func:`watchfiles.awatch`: keep events on tracked
        paths and on paths :attr:`filter` keeps (see :class:`TreeFilter`); drop the rest."""
        rel = self.filter.relative(path)
        if rel is not None and (
            rel in self.files or rel in self.dirs or self.session.text_nodes(rel)
        ):
            return True
        return self.filter(change, path)

    # -- turning events into a change set ---------------------------------------------

    def plan(self, changes: Iterable[FileChange], resurvey: bool = False) -> ChangeSet:
        """Decide, from the disk as it is now, what a batch of events changes (reads
        files, changes no node: :meth:`apply` does that, inside the next tick);
        ``resurvey`` compares the whole tree with the disk (events were lost)."""
        keep = self.filter
        rels: set[str] = set()
        surveys: set[str] = {self.top} if resurvey else set()
        index_changed = False
        for _, path in changes:
            if keep.index_path is not None and Path(path) == keep.index_path:
                index_changed = True
            elif keep.exclude_path is not None and Path(path) == keep.exclude_path:
                surveys.add(self.top)
            elif (rel := keep.relative(path)) is not None:
                rels.add(rel)
                if _name(rel) in (".gitignore", "pyvenv.cfg"):
                    surveys.add(_parent(rel))
        if surveys:  # the rules changed: forget what was derived from them
            keep.reload_rules()
        plan = ChangeSet()
        for rel in sorted(rels):
            self._classify(rel, plan, surveys)
        if index_changed:
            self._retrack(keep.reload_index(), plan, surveys)
        for rel in sorted(surveys):
            if not any(_under(rel, s) and rel != s for s in surveys):
                self._survey(rel, plan)
        self._pair_renames(plan)
        return plan

    def _classify(self, rel: str, plan: ChangeSet, surveys: set[str]) -> None:
        absolute = self.session.root / rel
        if self.session.text_nodes(rel):
            plan.touched.add(rel)
        try:
            mode: int | None = os.lstat(absolute).st_mode
        except OSError:
            mode = None
        if mode is None or stat.S_ISLNK(mode):
            if rel in self.files:
                plan.deleted.add(rel)
            elif rel in self.dirs:
                surveys.add(rel)
        elif stat.S_ISDIR(mode):
            if rel not in self.dirs and self.filter.keeps_dir(rel):
                surveys.add(rel)
        elif stat.S_ISREG(mode) and rel not in self.files and self.filter.keeps_file(rel):
            self._add_candidate(rel, plan)

    def _retrack(self, changed: set[str], plan: ChangeSet, surveys: set[str]) -> None:
        """Take in or drop the files whose tracked state changed, where that changes
        whether the tree keeps them (a directory no longer kept is re-surveyed)."""
        for rel in sorted(changed):
            if not _under(rel, self.top) or rel == self.top:
                continue
            on_disk = os.path.isfile(self.session.root / rel)
            wanted = on_disk and self.filter.keeps_file(rel)
            if wanted and rel not in self.files:
                self._add_candidate(rel, plan)
            elif not wanted and on_disk and rel in self.files:
                dropped_dir = next(
                    (d for d in _ancestors(rel, self.top) if not self.filter.keeps_dir(d)), None
                )
                if dropped_dir is None:
                    plan.dropped.add(rel)
                else:
                    surveys.add(dropped_dir)

    def _add_candidate(self, rel: str, plan: ChangeSet) -> None:
        if rel in plan.created or rel in self.files:
            return
        node = TextNode(
            rel,
            root=self.session.root,
            frequency=TickFrequency.never(),
            include_secrets=self.session.include_secrets,
            **self.steering.node_fields(rel),
        )
        if node.placeholder is None or not node.placeholder.startswith(NOT_TEXT):
            plan.created[rel] = node

    def _survey(self, rel_dir: str, plan: ChangeSet) -> None:
        """Compare a directory on disk with its tracked nodes (everything below it)."""
        dirs: set[str] = set()
        # each file of the tree and its stat key from its lstat (None: to be stat-ed by
        # its path, see _disk_key), taken by the walk (which yields the dirs)
        files: dict[str, StatKey | None] = {}
        absolute = self.session.root / rel_dir
        if absolute.is_dir() and not absolute.is_symlink() and self.filter.keeps_dir(rel_dir):
            dirs.add(rel_dir)
            dirs.update(rel for rel, _ in self.filter.walk(absolute, files, _disk_key))
        new_dirs = dirs - self.dirs.keys()
        if self.filter.include:  # as the scan: no group for a directory without files
            new_dirs &= {d for f in files for d in _ancestors(f, "")}
        plan.new_dirs.update(new_dirs)
        tracked = self.files
        for rel in files:  # every file of the tree at a resume: one lstat each
            if rel not in tracked:
                self._add_candidate(rel, plan)
        plan.touched.update(self.session._differing(files, tracked))
        for rel in [r for r in self.files.keys() - files if _under(r, rel_dir)]:
            on_disk = (self.session.root / rel).is_file()
            (plan.dropped if on_disk else plan.deleted).add(rel)
        for rel in [d for d in self.dirs.keys() - dirs if _under(d, rel_dir)]:
            if rel != self.top:
                on_disk = (self.session.root / rel).is_dir()
                (plan.dropped_dirs if on_disk else plan.gone_dirs).add(rel)

    def _pair_renames(self, plan: ChangeSet) -> None:
        """A deleted file and a created one with identical content are a rename; with
        several candidates, the one sharing the longest path tail wins."""
        if not plan.deleted or not plan.created:
            return
        by_content: dict[tuple[str | None, str | None, bytes], list[str]] = {}
        for rel in sorted(plan.deleted):
            node = self.files[rel]
            if node.placeholder is None:
                by_content.setdefault(_content_key(node), []).append(rel)
        for new in sorted(plan.created):
            olds = by_content.get(_content_key(plan.created[new]))
            if olds:
                old = max(olds, key=lambda o: _shared_tail(o, new))
                olds.remove(old)
                plan.deleted.discard(old)
                plan.touched.discard(old)
                del plan.created[new]
                plan.moves.append((old, new))

    # -- applying a change set (inside a tick) ----------------------------------------

    def apply_survey(self, rel_dir: str) -> None:
        """Re-survey a directory against the disk. Call it inside a tick (queue it)."""
        plan = ChangeSet()
        self._survey(rel_dir, plan)
        self._pair_renames(plan)
        self.apply(plan)

    def apply_resume(self) -> None:
        """Compare the whole tree with the disk after a resume (call it inside a tick):
        what was created, edited, deleted or renamed while nobody watched becomes this
        tick's changes, each with its usual trace, and the tree's top group records one
        more saying so (``changed while not watched: …``); unchanged files are not read."""
        plan = ChangeSet()
        self._survey(self.top, plan)
        self.session._files_compared(self.files.keys())
        self._pair_renames(plan)
        touched, plan.touched = plan.touched, set()
        self.apply(plan)
        edited = 0
        for rel in sorted(touched):
            edited += any([node.recompute(edit=False) for node in self.session.text_nodes(rel)])
        kinds = (
            (edited, "edited"),
            (len(plan.created), "created"),
            (len(plan.deleted), "deleted"),
            (len(plan.moves), "renamed"),
        )
        done = [f"{n} {what}" for n, what in kinds if n]
        if done:
            noun = "file" if sum(n for n, _ in kinds) == 1 else "files"
            self.dirs[self.top].mark_changed(f"{noun} changed while not watched: {', '.join(done)}")

    def apply(self, plan: ChangeSet) -> None:
        """Change the session's nodes as ``plan`` says (see the module docstring)."""
        session = self.session
        for rel in sorted(plan.new_dirs):
            self._ensure_dir(rel)
        for old, new in plan.moves:
            self._move(old, new)
        for rel in sorted(plan.created):
            self._add_file(plan.created[rel])
        for rel in sorted(plan.dropped):
            self.session.remove(self.files.pop(rel))
        for rel in sorted(plan.dropped_dirs, reverse=True):
            self.session.remove(self.dirs.pop(rel))
        for rel in plan.touched | plan.deleted:
            with suppress(PathError):  # a path that now resolves outside the root
                session.file_changed(rel)
        for rel in sorted(plan.deleted - self._gone):
            node = self.files.get(rel)  # None: removed by a reap earlier in this tick
            if node is not None and node.placeholder == DELETED_PLACEHOLDER:
                node.mark_changed(_DELETED)  # it went while nobody watched: say so now
        self._gone |= plan.deleted
        self._gone_dirs |= plan.gone_dirs
        self._drop_empty_gone_dirs()

    def pending_removals(self) -> bool:
        """Whether nodes shown as deleted wait for the next tick to be removed."""
        return bool(self._gone or self._gone_dirs)

    def reap(self) -> None:
        """Remove the nodes of files shown as deleted at the last tick (unless the file
        came back) and the emptied groups of deleted directories."""
        for rel in sorted(self._gone):
            node = self.files.get(rel)
            if node is not None and not (self.session.root / rel).is_file():
                del self.files[rel]
                if node.graph is self.session.graph:
                    self.session.remove(node)
        self._gone.clear()
        self._drop_empty_gone_dirs()

    def _drop_empty_gone_dirs(self) -> None:
        for rel in sorted(self._gone_dirs, reverse=True):  # deepest first
            group = self.dirs.get(rel)
            if group is None or (self.session.root / rel).is_dir():
                self._gone_dirs.discard(rel)
            elif not group.children:
                self._gone_dirs.discard(rel)
                del self.dirs[rel]
                self.session.remove(group)

    def _ensure_dir(self, rel: str) -> GroupNode:
        group = self.dirs.get(rel)
        if group is None:
            parent = self._ensure_dir(_parent(rel))
            group = GroupNode(rel + "/", state=NodeState.DETAILS)
            self.session.add(group)
            self.session.link(parent, group, index=self._position(parent, _name(rel), True))
            self.dirs[rel] = group
            self._gone_dirs.discard(rel)
        return group

    def _position(self, group: GroupNode, name: str, is_dir: bool) -> int:
        """Where a new entry goes among a group's children: files sorted by name, then
        directories sorted by name (the scan's order)."""
        children = group.children
        for index, child in enumerate(children):
            if isinstance(child, GroupNode) and self.dirs.get((child.title or "")[:-1]) is child:
                if not is_dir or _name((child.title or "")[:-1]) > name:
                    return index
            elif isinstance(child, TextNode) and not is_dir and _name(child.path) > name:
                return index
        return len(children)

    def _add_file(self, node: TextNode) -> None:
        group = self._ensure_dir(_parent(node.path))
        self.session.add(node)
        self.session.link(group, node, index=self._position(group, _name(node.path), False))
        self.files[node.path] = node
        node.mark_changed("file created")

    def _move(self, old: str, new: str) -> None:
        """Give every plain text node of ``old`` the path ``new``, keeping ids and
        parents; the tracked node also moves to the directory group of ``new``. Nodes of
        other types (a markdown document with section children) stay and show the old
        path deleted."""
        tracked = self.files.pop(old)
        self._gone.discard(old)
        old_group = self.dirs.get(_parent(old))
        new_group = self._ensure_dir(_parent(new))
        for node in self.session.text_nodes(old):
            if type(node) is not TextNode:
                self.session.file_changed(old)
                continue
            links: list[tuple[Node, int]] = [
                (p, p.children.index(node))
                for p in node.parents
                if not (node is tracked and p is old_group)
            ]
            self.session.remove(node)
            node.path = new
            node.media_type = mimetypes.guess_type(new)[0] or "text/plain"
            self.session.add(node)
            for parent, index in links:
                self.session.link(parent, node, index=index)
            node.mark_changed(f"renamed from {display_path(old)}")
        self.session.link(new_group, tracked, index=self._position(new_group, _name(new), False))
        self.files[new] = tracked
        self.steering.apply(tracked)
