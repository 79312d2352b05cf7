"""LockNode: an exclusive lock between processes on a path under the session root.

The OS-level lock is a :class:`filelock.FileLock` (``flock`` on Unix, so the kernel frees
the lock of a process that dies) on a lock file under the session's ``.dagctx/locks/``
folder, named after the locked path (:func:`lock_file_for`). :class:`LockHandle` wraps one
such lock so that it can be acquired on a worker thread and released from any thread,
including while the acquisition still waits.

``Session.lock`` (:mod:`dagctx.session.jobs`) acquires in the background and queues
:meth:`LockNode.apply_outcome`, which the next tick applies: status pending → acquired,
timeout or error. ``Session.release`` and ``Session.close`` release the OS lock at once
and mark the node ``released``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from filelock import FileLock, Timeout

from dagctx._validate import is_finite
from dagctx.errors import LockError
from dagctx.nodes.base import Node, NodeState

LockStatus = Literal["pending", "acquired", "timeout", "released", "error"]
LOCK_STATUSES: frozenset[str] = frozenset({"pending", "acquired", "timeout", "released", "error"})
DEFAULT_TIMEOUT = 30.0
LOCKS_DIR = Path(".dagctx") / "locks"
POLL_SECONDS = 0.01
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
    keeps the lock.
    """

    def __init__(self, lock_file: Path, poll: float = POLL_SECONDS) -> None:
        self.lock_file = lock_file
        self._poll = poll
        self._file_lock = FileLock(lock_file, thread_local=False)
        self._mutex = threading.Lock()
        self._state: Literal["waiting", "held", "released"] = "waiting"

    @property
    def held(self) -> bool:
        return self._state == "held"

    def acquire(self, timeout: float) -> LockOutcome:
        """Block until the lock is held, ``timeout`` seconds pass, or it is released."""
        started = time.monotonic()
        try:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True)
            self._file_lock.acquire(
                timeout=timeout, poll_interval=self._poll, cancel_check=self._given_up
            )
        except Timeout:
            status: LockStatus = "released" if self._given_up() else "timeout"
            return LockOutcome(status, time.monotonic() - started, time.time())
        except (OSError, RuntimeError) as exc:
            message = f"cannot lock {str(self.lock_file)!r}: {exc}"
            return LockOutcome("error", time.monotonic() - started, time.time(), message)
        with self._mutex:
            if self._state == "released":
                self._file_lock.release()
                return LockOutcome("released", time.monotonic() - started, time.time())
            self._state = "held"
        return LockOutcome("acquired", time.monotonic() - started, time.time())

    def release(self) -> bool:
        """Let the lock go (or stop waiting for it); return whether an OS lock was held."""
        with self._mutex:
            was, self._state = self._state, "released"
            if was == "held":
                self._file_lock.release()
                return True
        return False

    def _given_up(self) -> bool:
        return self._state == "released"


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
        **node_fields: Any,
    ) -> None:
        """Describe a lock; nothing is locked until ``Session.lock`` submits it.

        Raises:
            LockError: ``path`` is not a string or ``timeout`` is malformed.
        """
        super().__init__(**node_fields)
        if not isinstance(path, str) or not path:
            raise LockError(f"lock path must be a non-empty string, got {path!r}", value=path)
        self.path = path
        self.lock_file = os.fspath(lock_file)
        self.timeout = check_lock_timeout(timeout)
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
        return "released"

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            return f"- {self.label()}: {self.status}"
        if state == NodeState.SUMMARY:
            return f"- {self.label()}: {self._outcome()} (#{self.id})"
        lines = [
            f"### {self.label()} (#{self.id})",
            f"status: {self._outcome()}",
            f"session pid: {self.pid}; exclusive between processes (OS file lock)",
        ]
        if state == NodeState.ALL:
            lines += [
                f"lock file: {self.lock_file}",
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
        node = cls(data["path"], lock_file=data["lock_file"], timeout=data.get("timeout", 30.0))
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
