"""FileWatch: which running file nodes' files changed, told by the OS instead of polled.

The session's graph hands this part every running node that reads a file
(:meth:`~dagctx.nodes.base.Node.watch_path` not None: text and markdown nodes) instead of
putting it in the set it recomputes every tick (:attr:`ContextGraph.watcher`). The part
watches, with inotify (:mod:`dagctx._inotify`), the directory of each such file and every
directory between it and the session root, and :meth:`FileWatch.due` gives the tick only
the nodes it has to look at: those whose file had an event, those new since the last
tick, and those it polls. A tick with 10,000 untouched running file nodes reads one empty
event queue.

Guarantee: a change that completed before :meth:`FileWatch.due` was called is seen by the
nodes it returns. inotify queues an event inside the system call that made the change, so
reading the queue at the start of the tick (non-blocking, no thread) collects every event
of such a change; a node new since the last tick is stat-checked after its directory's
watch was added, which covers what changed between its first read and its watch. A
directory's watch follows its inode, so an entry event on a directory naming a watched
subdirectory (a rename, a delete, a create), or the directory itself deleted or moved,
watches that part of the tree again by path and stat-checks every node in it; a full
event queue (overflow) does that for everything.

Polling instead, each such node stat-checked at every tick as before:
- everywhere when inotify is missing (not Linux) or refuses an instance (descriptors or
  ``fs.inotify.max_user_instances`` used up);
- for the files of a directory that cannot be watched (the watch limit
  ``fs.inotify.max_user_watches`` or :attr:`FileWatch.max_watches` reached, a symlink, no
  permission) or is on a network or FUSE filesystem (:data:`REMOTE_FILESYSTEMS`: inotify
  does not report changes made by other machines or by the FUSE server), and for the
  directories below it;
- for a file that is a symlink or has other hard links (a change made through another
  name is not reported in this directory).
The first fallback is logged once, as a warning; :meth:`FileWatch.info` reports the mode
and the reason.
Not seen: changes written through ``mmap``, and through a hard link made (in another
directory) after the file was first watched.

Must not import :mod:`dagctx.session` beyond its parts.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from dagctx import _inotify
from dagctx.nodes.base import Node
from dagctx.nodes.text import TextNode

logger = logging.getLogger(__name__)

#: Filesystem types (``/proc/self/mountinfo``) whose changes inotify does not all report:
#: network filesystems (changes made by other machines), FUSE (made by its server;
#: ``fuse.<name>`` types too), and the kernel's own (files that change without events).
REMOTE_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "ceph", "afs", "lustre",
     "glusterfs", "gfs2", "ocfs2", "davfs", "fuse", "fuseblk", "proc", "sysfs"}
)  # fmt: skip
_ENTRY = _inotify.IN_CREATE | _inotify.IN_DELETE | _inotify.IN_MOVED_FROM | _inotify.IN_MOVED_TO


@dataclass(frozen=True, slots=True)
class FileWatchInfo:
    """How a session learns that files of its running file nodes changed.

    ``mode`` is ``"notify"`` (OS notifications, with ``polled_files`` files polled
    anyway) or ``"polling"`` (every file stat-checked at every tick); ``reason`` says why
    anything is polled (None when nothing is)."""

    mode: Literal["notify", "polling"]
    watched_dirs: int
    watched_files: int
    polled_files: int
    reason: str | None


class _Dir:
    """A directory on the way from the root to tracked files: its watch and what it holds."""

    __slots__ = ("files", "fs", "name", "parent", "path", "state", "subdirs", "wd")

    def __init__(self, path: str, name: str, parent: _Dir | None) -> None:
        self.path, self.name, self.parent = path, name, parent
        self.subdirs: dict[str, _Dir] = {}
        self.files: dict[str, dict[str, TextNode]] = {}  # entry name → nodes by id
        self.wd: int | None = None
        self.fs: str | None = None  # its filesystem type, once looked up
        #: new (to watch at the next tick), watched, missing (its parent's events tell
        #: when it comes back) or polled (cannot be watched: its files are polled)
        self.state: Literal["new", "watched", "missing", "polled"] = "new"

    def walk(self) -> Iterator[_Dir]:
        """This directory and every one below it, parents first."""
        stack = [self]
        while stack:
            d = stack.pop()
            yield d
            stack.extend(d.subdirs.values())


class FileWatch:
    """The running file nodes of a session and the OS watches that report their changes
    (see the module docstring). Opens its inotify instance at the first :meth:`due` that
    has nodes to follow (a user has few instances: ``fs.inotify.max_user_instances``).

    Args:
        root: the session root; files outside it are polled.
        max_watches: watch at most this many directories (None: as many as the kernel
            allows); the directories beyond are polled.
    """

    def __init__(self, root: str | os.PathLike[str], *, max_watches: int | None = None) -> None:
        self.root = os.fspath(root)
        self._prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        self.max_watches = max_watches
        self._top = _Dir(self.root, "", None)
        self._dirs: dict[str, _Dir] = {self.root: self._top}
        self._wds: dict[int, _Dir] = {}
        self._nodes: dict[str, tuple[TextNode, _Dir | None, str]] = {}
        self._new: dict[str, TextNode] = {}  # stat-check at the next tick (after the watch)
        self._changed: dict[str, TextNode] = {}  # had an event: read at the next due tick
        self._polled: dict[str, TextNode] = {}  # stat-check at every due tick
        self._unwatched: dict[str, _Dir] = {self.root: self._top}  # state "new", to watch
        self._inotify: _inotify.Inotify | None = None
        self._mounts: dict[str, str] = {}  # mount point → filesystem type
        self._polling = False  # no inotify at all: every node is polled
        self._reason: str | None = None  # why notifications are not available (warned)
        self._aside: str | None = None  # why a file is polled anyway (a symlink, ...)
        self._warned = False
        self._closed = False

    # -- nodes ------------------------------------------------------------------------

    def track(self, node: Node, running: bool) -> None:
        """Follow ``node`` (``running``) or stop following it (paused, its frequency
        ``never``, removed). The graph calls this (:attr:`ContextGraph.watcher`)."""
        if not running:
            self._forget(node.id)
            return
        if node.id in self._nodes or not isinstance(node, TextNode):
            return
        path = os.path.normpath(node.watch_path() or "")
        directory, name = os.path.split(path)
        d = self._dir(directory)
        self._nodes[node.id] = (node, d, name)
        if d is None:
            self._aside = self._aside or f"{node.path} is outside the session root"
        if (
            self._polling
            or d is None
            or d.state == "polled"
            or (d.state == "watched" and self._plural(node))
        ):
            self._polled[node.id] = node
            return
        d.files.setdefault(name, {})[node.id] = node
        self._new[node.id] = node

    def _forget(self, node_id: str) -> None:
        entry = self._nodes.pop(node_id, None)
        if entry is None:
            return
        _, d, name = entry
        if d is not None:
            peers = d.files.get(name, {})
            peers.pop(node_id, None)
            if not peers:
                d.files.pop(name, None)
        for table in (self._new, self._changed, self._polled):
            table.pop(node_id, None)

    def _dir(self, path: str) -> _Dir | None:
        """The record of directory ``path`` (made, with its ancestors, when new); None
        when it is not the root or below it."""
        found = self._dirs.get(path)
        if found is not None:
            return found
        parent_path, name = os.path.split(path)
        if not name or parent_path == path or not path.startswith(self._prefix):
            return None
        parent = self._dir(parent_path)
        if parent is None:
            return None
        d = _Dir(path, name, parent)
        parent.subdirs[name] = d
        self._dirs[path] = d
        if parent.state == "polled":
            d.state = "polled"
        else:
            self._unwatched[path] = d
        return d

    # -- the tick ---------------------------------------------------------------------

    def due(self, now: float) -> tuple[list[TextNode], list[TextNode]]:
        """The nodes the tick at ``now`` must look at, each whose frequency is due:
        (nodes to stat-check: new since the last tick or polled; nodes whose file had an
        event, to read again). Collects every event queued so far first (see the module
        docstring); a node whose frequency is not due keeps its event for a later tick.
        """
        if self._closed or not self._nodes:  # no instance for a session without file nodes
            return [], []
        self._open()
        if self._inotify is not None:
            self._drain(self._inotify)
            self._watch_unwatched(self._inotify)
        changed = [n for n in list(self._changed.values()) if n.frequency.is_due(now, n.last_run)]
        for node in changed:
            del self._changed[node.id]
        new = [n for n in list(self._new.values()) if n.frequency.is_due(now, n.last_run)]
        for node in new:
            del self._new[node.id]
        read = {n.id for n in changed}
        checks = [n for n in new if n.id not in read]  # not stat-checked and read
        checks += [n for n in list(self._polled.values()) if n.frequency.is_due(now, n.last_run)]
        return checks, changed

    def _open(self) -> None:
        if self._inotify is not None or self._polling:
            return
        try:
            self._inotify = _inotify.open_inotify()
            self._mounts = mount_types()
        except OSError as exc:
            self._polling = True
            self._polled.update((nid, entry[0]) for nid, entry in self._nodes.items())
            self._fall_back(f"no OS notifications: {exc.strerror or exc}", everything=True)

    def _watch_unwatched(self, inotify: _inotify.Inotify) -> None:
        """Add the watches of new directories, parents first, and stat-check their files
        (a change between a node's first read and its watch is seen by the check)."""
        pending = sorted(self._unwatched.values(), key=lambda d: d.path.count(os.sep))
        self._unwatched.clear()
        for d in pending:
            if d.state != "new":
                continue
            parent = d.parent
            if parent is not None and parent.state in ("polled", "missing"):
                self._settle(d, "polled" if parent.state == "polled" else "missing")
                continue
            kind = self._fs(d)
            if kind in REMOTE_FILESYSTEMS or kind.startswith("fuse."):
                self._fall_back(f"{d.path} is on a {kind} filesystem (changes made elsewhere"
                                " are not reported)")  # fmt: skip
                self._settle(d, "polled")
                continue
            if self.max_watches is not None and len(self._wds) >= self.max_watches:
                self._fall_back(f"the limit of {self.max_watches} watched directories is reached")
                self._settle(d, "polled")
                continue
            try:
                wd = inotify.add_watch(d.path)
            except OSError as exc:
                if exc.errno == errno.ENOENT:  # the parent's create event brings it back
                    self._settle(d, "missing")
                elif exc.errno == errno.ENOTDIR:  # a symlink (not followed) or a file
                    self._aside = self._aside or f"{d.path} is not a directory (a symlink?)"
                    self._settle(d, "polled")
                else:
                    limit = "the inotify watch limit (fs.inotify.max_user_watches) is reached"
                    self._fall_back(limit if exc.errno == errno.ENOSPC else f"cannot watch {exc}")
                    self._settle(d, "polled")
                continue
            other = self._wds.get(wd)
            if other is not None and other is not d:  # one directory by two paths (a bind mount)
                self._aside = self._aside or f"{d.path} is {other.path} by another path"
                self._settle(d, "polled")
                continue
            d.wd, d.state = wd, "watched"
            self._wds[wd] = d
            self._settle(d, "watched")

    def _fs(self, d: _Dir) -> str:
        """The filesystem type of ``d`` (its mount's, else its parent's)."""
        if d.fs is None:
            kind = self._mounts.get(d.path)
            if kind is None and d.parent is not None:
                kind = self._fs(d.parent)
            path = d.path
            while kind is None and path != os.path.dirname(path):  # the root's mount
                path = os.path.dirname(path)
                kind = self._mounts.get(path)
            d.fs = kind or ""
        return d.fs

    def _settle(self, d: _Dir, state: Literal["watched", "missing", "polled"]) -> None:
        """Put ``d`` in ``state`` and its files where that state checks them."""
        d.state = state
        for peers in d.files.values():
            for nid, node in peers.items():
                if state == "polled" or (state == "watched" and self._plural(node)):
                    self._polled[nid] = node
                    self._new.pop(nid, None)
                    self._changed.pop(nid, None)
                elif nid not in self._polled:
                    self._new[nid] = node

    def _plural(self, node: TextNode) -> bool:
        """Whether ``node``'s file is a symlink or has other hard links (its changes can
        come through a name this directory does not hold)."""
        try:
            st = os.lstat(os.path.join(str(node.root), node.path))
        except (OSError, ValueError):
            return False
        if stat.S_ISLNK(st.st_mode) or st.st_nlink > 1:
            self._aside = self._aside or f"{node.path} is a symlink or has other hard links"
            return True
        return False

    def _drain(self, inotify: _inotify.Inotify) -> None:
        """Read every queued event: a file's event marks its nodes changed; an entry
        event naming a tracked subdirectory, or a directory gone or moved, watches that
        part of the tree again; an overflow, all of it."""
        for event in inotify.read():
            if event.mask & _inotify.IN_Q_OVERFLOW:
                self._rewatch(self._top)
                continue
            d = self._wds.get(event.wd)
            if d is None:
                continue
            if not event.name:
                if event.mask & _inotify.SELF_GONE:
                    self._rewatch(d)
                continue
            name = os.fsdecode(event.name)
            sub = d.subdirs.get(name)
            if sub is not None and event.mask & _ENTRY:
                self._rewatch(sub)
            peers = d.files.get(name)
            if peers:
                new_entry = event.mask & (_inotify.IN_CREATE | _inotify.IN_MOVED_TO)
                for nid, node in list(peers.items()):
                    if nid in self._polled:
                        continue
                    if new_entry and self._plural(node):  # replaced by a symlink
                        self._polled[nid] = node
                        self._changed.pop(nid, None)
                    else:
                        self._changed[nid] = node

    def _rewatch(self, top: _Dir) -> None:
        """Watch ``top`` and the directories below it again by path at this tick (and
        stat-check their files then)."""
        for d in top.walk():
            if d.state == "polled":
                continue
            if d.wd is not None:
                del self._wds[d.wd]
                if self._inotify is not None:  # a moved directory keeps no watch of ours
                    self._inotify.remove_watch(d.wd)
                d.wd = None
            d.state = "new"
            self._unwatched[d.path] = d

    def _fall_back(self, reason: str, *, everything: bool = False) -> None:
        """Record why notifications are not available (for everything or for some
        directories); the first time, log it as a warning."""
        if not self._warned:
            self._warned = True
            scope = "every file node is" if everything else "some file nodes are"
            logger.warning("dagctx: %s polled at every tick instead of watched: %s", scope, reason)
        if self._reason is None or everything:
            self._reason = reason

    # -- reporting and closing --------------------------------------------------------

    def info(self) -> FileWatchInfo:
        """How file changes are learned now (see :class:`FileWatchInfo`)."""
        polled = len(self._polled)
        return FileWatchInfo(
            mode="polling" if self._polling else "notify",
            watched_dirs=len(self._wds),
            watched_files=len(self._nodes) - polled,
            polled_files=polled,
            reason=(self._reason or self._aside) if polled else None,
        )

    def close(self) -> None:
        """Close the inotify instance (its watches end with it); later ticks get no
        nodes from this part. Idempotent."""
        self._closed = True
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None


def mount_types(table: str = "/proc/self/mountinfo") -> dict[str, str]:
    """Mount point → filesystem type, from ``table`` (a later mount on the same point
    hides an earlier one); empty when it cannot be read."""
    try:
        with open(table, "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    types: dict[str, str] = {}
    for line in lines:
        mount, dash, rest = line.partition(b" - ")
        fields, kind = mount.split(), rest.split()
        if dash and len(fields) >= 5 and kind:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])
            types[os.fsdecode(point)] = os.fsdecode(kind[0])
    return types
