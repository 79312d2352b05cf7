"""LockNode: an exclusive lock between processes on a path under the session root.

The OS-level lock is an ``flock`` (so the kernel frees the lock of a process that dies)
on a lock file under the session's ``.dagctx/locks/`` folder, named after the locked path
(:func:`lock_file_for`). :class:`LockHandle` holds one such lock so that it can be
acquired on a worker thread and released from any thread, including while the
acquisition still waits.

An ``flock`` belongs to a file, not to a path: once the lock file is deleted (``git clean
-fdx`` taking ``.dagctx/locks`` away) or replaced, another process creates a new file and
locks it while this one still holds the old one. So a lock won on a file the path no
longer names is never reported acquired (the wait goes on with the new file), and each
tick checks every held lock (:meth:`LockHandle.lost`): one whose file vanished or changed
inode lets its OS lock go and its node shows ``lost``, saying why.

``Session.lock`` (:mod:`dagctx.session.jobs`) acquires in the background and queues
:meth:`LockNode.apply_outcome`, which the next tick applies: status pending → acquired,
timeout or error. ``Session.release`` and ``Session.close`` release the OS lock at once
and mark the node ``released``.

POSIX only (``fcntl.flock``, ``O_NOFOLLOW``). With a PostgreSQL store the session uses
:class:`~dagctx.nodes.lock_pg.PostgresLockHandle` instead (same surface, an advisory
lock), and the node's ``service`` says which one holds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from dagctx._fs import STATE_DIR, make_state_dir
from dagctx._validate import is_finite
from dagctx.errors import LockError
from dagctx.nodes.base import Node, NodeState

LockStatus = Literal["pending", "acquired", "timeout", "released", "error", "lost"]
LockService = Literal["file", "postgresql"]
_SERVICES = {
    "file": "exclusive between processes (OS file lock)",
    "postgresql": "exclusive between agents on every machine (PostgreSQL advisory lock)",
}
LOCK_STATUSES: frozenset[str] = frozenset(
    {"pending", "acquired", "timeout", "released", "error", "lost"}
)
DEFAULT_TIMEOUT = 30.0
LOCKS_DIR = Path(".dagctx") / "locks"
POLL_SECONDS = 0.01
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def lock_file_for(root: Path, relative: str) -> Path:
    """The lock file guarding the root-relative ``relative`` path.

    Readable (the path with unsafe characters replaced) and unique (a digest of the exact
    path), so two different paths never share a lock file and every process computes the
    same file for the same path.
    """
    readable = _UNSAFE.sub("_", relative).strip("._")[:80] or "root"
    digest = hashlib.sha256(relative.encode("utf-8")).hexdigest()[:12]
    return root / LOCKS_DIR / f"{readable}-{digest}.lock"


def check_lock_timeout(timeout: object) -> float:
    """Return ``timeout`` as a float if it is a finite number of seconds >= 0.

    Raises:
        LockError: naming the value otherwise.
    """
    if not is_finite(timeout) or timeout < 0:
        raise LockError(
            f"lock timeout must be a finite number of seconds >= 0, got {timeout!r}", value=timeout
        )
    return float(timeout)


@dataclass(frozen=True, slots=True)
class LockOutcome:
    """How an acquisition ended: ``acquired``, ``timeout``, ``error`` (with a message) or
    ``released`` (given up because the lock was released while it waited)."""

    status: LockStatus
    waited: float
    at: float
    error: str | None = None


class LockHandle:
    """One OS-level exclusive lock: acquired on a worker thread, released from any thread.

    A release while :meth:`acquire` still waits makes the wait give up (and, if the OS
    lock was won in the same instant, lets it go at once), so a released handle never
    keeps the lock. With ``root``, the lock file's folder is made by
    :func:`dagctx._fs.make_state_dir` (a real directory inside the root, never a symlink).

    The lock belongs to one file, not to a path: a lock won on a file that the path no
    longer names (deleted or replaced while this handle waited) is let go and the wait
    starts again on the file the path names now; :meth:`lost` says whether a held lock's
    file is still the one at the path.
    """

    def __init__(self, lock_file: Path, poll: float = POLL_SECONDS, *, root: Path | None = None):
        self.lock_file = lock_file
        self._poll = poll
        self._root = root
        self._fd: int | None = None
        self._mutex = threading.Lock()
        self._state: Literal["waiting", "held", "released"] = "waiting"

    @property
    def held(self) -> bool:
        return self._state == "held"

    def acquire(self, timeout: float) -> LockOutcome:
        """Block until the lock is held, ``timeout`` seconds pass, or it is released."""
        started = time.monotonic()
        try:
            fd = self._wait_for_lock(started + timeout)
        except OSError as exc:
            message = f"cannot lock {str(self.lock_file)!r}: {exc}"
            return LockOutcome("error", time.monotonic() - started, time.time(), message)
        if fd is None:
            status: LockStatus = "released" if self._given_up() else "timeout"
            return LockOutcome(status, time.monotonic() - started, time.time())
        with self._mutex:
            if self._state == "released":
                os.close(fd)  # closing the descriptor lets the flock go
                return LockOutcome("released", time.monotonic() - started, time.time())
            self._fd, self._state = fd, "held"
        return LockOutcome("acquired", time.monotonic() - started, time.time())

    def _wait_for_lock(self, deadline: float) -> int | None:
        """The descriptor of the locked file, or None (the deadline passed, or given up)."""
        if self._root is not None:
            make_state_dir(self._root / STATE_DIR, LOCKS_DIR.name)
        else:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_file, _LOCK_FLAGS, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if self._given_up() or time.monotonic() >= deadline:
                        os.close(fd)
                        return None
                    time.sleep(self._poll)
                    continue
                if _names_file(self.lock_file, fd):
                    return fd
                # Won on a file the path no longer names: wait on the one it names now.
                os.close(fd)
                fd = os.open(self.lock_file, _LOCK_FLAGS, 0o644)
        except BaseException:
            with suppress(OSError):
                os.close(fd)
            raise

    def lost(self) -> str | None:
        """Why a held lock is lost (its file was deleted, or the path names another
        file now: another process can lock that one), or None while it is sound."""
        fd = self._fd
        if self._state != "held" or fd is None:
            return None
        try:
            at_path = os.stat(self.lock_file, follow_symlinks=False)
        except FileNotFoundError:
            return f"its lock file {str(self.lock_file)!r} was deleted"
        except OSError:
            return None  # cannot look (permissions): no evidence that it is lost
        mine = os.fstat(fd)
        if (at_path.st_dev, at_path.st_ino) != (mine.st_dev, mine.st_ino):
            return f"its lock file {str(self.lock_file)!r} was replaced"
        return None

    def release(self) -> bool:
        """Let the lock go (or stop waiting for it); return whether an OS lock was held."""
        with self._mutex:
            was, self._state = self._state, "released"
            fd, self._fd = self._fd, None
        if was == "held" and fd is not None:
            os.close(fd)
            return True
        return False

    def _given_up(self) -> bool:
        return self._state == "released"


def _names_file(path: Path, fd: int) -> bool:
    """Whether ``path`` (not followed) names the open file ``fd``."""
    try:
        at_path = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (at_path.st_dev, at_path.st_ino) == (mine.st_dev, mine.st_ino)


class LockNode(Node):
    """An exclusive lock on ``path`` (root-relative) held, or wanted, by this session."""

    type_name: ClassVar[str] = "lock"
    default_state: ClassVar[NodeState] = NodeState.COLLAPSED
    default_priority: ClassVar[int] = 65

    __slots__ = (
        "acquired_at",
        "error",
        "lock_file",
        "path",
        "pid",
        "released_at",
        "requested_at",
        "service",
        "status",
        "timeout",
        "waited",
    )

    def __init__(
        self,
        path: str,
        *,
        lock_file: str | os.PathLike[str],
        timeout: float = DEFAULT_TIMEOUT,
        service: LockService = "file",
        **node_fields: Any,
    ) -> None:
        """Describe a lock; nothing is locked until ``Session.lock`` submits it.

        ``service`` is what holds the lock: ``"file"`` (an OS file lock, ``lock_file``
        the file) or ``"postgresql"`` (an advisory lock, :mod:`dagctx.nodes.lock_pg`;
        ``lock_file`` then names the server and the key).

        Raises:
            LockError: ``path`` is not a string, ``timeout`` is malformed, or ``service``
                is unknown.
        """
        super().__init__(**node_fields)
        if not isinstance(path, str) or not path:
            raise LockError(f"lock path must be a non-empty string, got {path!r}", value=path)
        self.path = path
        self.lock_file = os.fspath(lock_file)
        self.timeout = check_lock_timeout(timeout)
        if service not in ("file", "postgresql"):
            raise LockError(f"unknown lock service {service!r}", value=service)
        self.service: LockService = service
        self.status: LockStatus = "pending"
        self.pid = os.getpid()
        self.requested_at = time.time()
        self.acquired_at: float | None = None
        self.released_at: float | None = None
        self.waited: float | None = None
        self.error: str | None = None

    @property
    def held(self) -> bool:
        """Whether the node shows the lock as held by this session."""
        return self.status == "acquired"

    # -- results ----------------------------------------------------------------------

    def apply_outcome(self, outcome: LockOutcome) -> None:
        """Adopt how the acquisition ended (applied at tick). Ignored unless pending."""
        if self.status != "pending":
            return
        self.status, self.waited, self.error = outcome.status, outcome.waited, outcome.error
        if outcome.status == "acquired":
            self.acquired_at = outcome.at
        elif outcome.status == "released":
            self.released_at = outcome.at
        self.mark_changed(self._outcome())

    def mark_lost(self, reason: str) -> None:
        """The OS lock was found lost (``reason``: its file vanished or was replaced) and
        let go: status ``lost``. Only an acquired node changes."""
        if self.status != "acquired":
            return
        self.status, self.error, self.released_at = "lost", reason, time.time()
        self.mark_changed(f"lost: {reason}")

    def mark_released(self, *, was_held: bool) -> None:
        """The lock was let go (``was_held``) or its wait given up: status ``released``.
        Only a pending or acquired node changes."""
        if self.status not in ("pending", "acquired"):
            return
        self.status, self.released_at = "released", time.time()
        self.mark_changed("released" if was_held else "released before it was held")

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return f"lock {self.path}"

    def _outcome(self) -> str:
        if self.status == "pending":
            return f"pending (waiting up to {_seconds(self.timeout)})"
        if self.status == "acquired":
            return f"acquired (after {_seconds(self.waited or 0.0)})"
        if self.status == "timeout":
            return f"timeout (held elsewhere for more than {_seconds(self.timeout)})"
        if self.status == "error":
            return f"error ({self.error})"
        if self.status == "lost":
            return f"lost ({self.error}; another process may hold it now)"
        return "released"

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            return f"- {self.label()}: {self.status}"
        if state == NodeState.SUMMARY:
            return f"- {self.label()}: {self._outcome()} (#{self.id})"
        lines = [
            f"### {self.label()} (#{self.id})",
            f"status: {self._outcome()}",
            f"session pid: {self.pid}; " + _SERVICES[self.service],
        ]
        if state == NodeState.ALL:
            lines += [
                ("lock file: " if self.service == "file" else "lock: ") + self.lock_file,
                f"timeout: {_seconds(self.timeout)}",
                f"requested: {_timestamp(self.requested_at)}",
            ]
            if self.acquired_at is not None:
                lines.append(f"acquired: {_timestamp(self.acquired_at)}")
            if self.released_at is not None:
                lines.append(f"released: {_timestamp(self.released_at)}")
        return "\n".join(lines)

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lock_file": self.lock_file,
            "timeout": self.timeout,
            "service": self.service,
            "status": self.status,
            "pid": self.pid,
            "requested_at": self.requested_at,
            "acquired_at": self.acquired_at,
            "released_at": self.released_at,
            "waited": self.waited,
            "error": self.error,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> LockNode:
        """Rebuild a node. The OS lock is not part of the data: a restored ``acquired``
        node describes a lock some session held, not one this process holds."""
        node = cls(
            data["path"],
            lock_file=data["lock_file"],
            timeout=data.get("timeout", 30.0),
            service=data.get("service", "file"),
        )
        status = data.get("status", "pending")
        if status not in LOCK_STATUSES:
            raise LockError(f"unknown lock status {status!r}", value=status)
        node.status = status
        node.pid = int(data.get("pid", node.pid))
        node.requested_at = float(data.get("requested_at", node.requested_at))
        for name in ("acquired_at", "released_at", "waited", "error"):
            setattr(node, name, data.get(name))
        return node


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 0.1 else f"{value:.1f} s"


def _timestamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
