"""Linux inotify through ctypes: one non-blocking instance, its watches and its events.

The kernel queues an inotify event inside the system call that caused it (the ``write``,
``rename``, ``chmod`` ...), before that call returns, so a non-blocking read of the
instance returns every event of every change that completed before the read began: no
thread and no barrier are needed to know that nothing is still on its way. Events come in
the order they happened; a full queue (``fs.inotify.max_queued_events``) drops events and
reports :data:`IN_Q_OVERFLOW` instead.

:func:`open_inotify` raises :class:`InotifyUnavailable` where there is no inotify (not
Linux, no C library) and :class:`OSError` when the kernel refuses an instance (the
process's file descriptors or ``fs.inotify.max_user_instances`` used up).

An instance that is never closed is closed when it is garbage collected: instances are
few (``fs.inotify.max_user_instances``, 128 by default, for all of a user's processes).
ctypes is imported on first use (it costs milliseconds at import).

Must not import anything of dagctx.
"""

from __future__ import annotations

import os
import struct
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000

#: What a directory watch asks for: any change to an entry's content, metadata or name,
#: and the directory itself going away or moving; a path that is a symlink or not a
#: directory is refused (ENOTDIR).
DIRECTORY_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
#: Events that say a watch no longer follows the directory at its path.
SELF_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of NUL-padded name)
_READ_SIZE = 1 << 16


class InotifyUnavailable(OSError):
    """This platform has no inotify."""


@dataclass(frozen=True, slots=True)
class Event:
    """One inotify event: the watch it came from (-1 for an overflow), what happened, and
    the entry's name inside the watched directory (``b""`` for the directory itself)."""

    wd: int
    mask: int
    name: bytes


class Inotify:
    """An inotify instance opened non-blocking and close-on-exec; see :func:`open_inotify`."""

    __slots__ = ("__weakref__", "_add", "_closer", "_errno", "_fd", "_rm")

    def __init__(
        self,
        fd: int,
        add: Callable[[int, bytes, int], int],
        rm: Callable[[int, int], int],
        errno: Callable[[], int],
    ) -> None:
        self._fd = fd
        self._add, self._rm, self._errno = add, rm, errno
        self._closer = weakref.finalize(self, os.close, fd)

    def add_watch(self, path: str, mask: int = DIRECTORY_MASK) -> int:
        """Watch ``path``; return its watch descriptor, the same one again for an inode
        already watched.

        Raises:
            OSError: the kernel refused (ENOENT, ENOTDIR: not a directory or, with the
                default mask, a symlink; EACCES; ENOSPC: the watch limit).
        """
        wd = self._add(self._fd, os.fsencode(path), mask)
        if wd < 0:
            errno = self._errno()
            raise OSError(errno, os.strerror(errno), path)
        return int(wd)

    def remove_watch(self, wd: int) -> None:
        """End watch ``wd`` (nothing happens when it has ended already)."""
        self._rm(self._fd, wd)

    def read(self) -> Iterator[Event]:
        """Every event queued now, oldest first (none when the queue is empty)."""
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                yield Event(wd, mask, data[offset : offset + size].rstrip(b"\0"))
                offset += size

    def close(self) -> None:
        """Close the instance (every watch ends with it). Idempotent."""
        self._fd = -1
        self._closer()


def open_inotify() -> Inotify:
    """A new non-blocking inotify instance.

    Raises:
        InotifyUnavailable: no inotify on this platform.
        OSError: the kernel refused an instance (EMFILE: descriptors or instances used up).
    """
    if not sys.platform.startswith("linux"):
        raise InotifyUnavailable(f"no inotify on {sys.platform}")
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add, rm = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
    except (OSError, AttributeError) as exc:
        raise InotifyUnavailable(f"no inotify in this C library: {exc}") from None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    rm.argtypes, rm.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return Inotify(fd, add, rm, ctypes.get_errno)
