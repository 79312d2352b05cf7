"""PostgresLockHandle: a LockNode's lock held as a PostgreSQL advisory lock.

The sibling of the ``flock``-based :class:`~dagctx.nodes.lock.LockHandle` for agents on
several machines, with the same surface (``acquire`` on a worker thread, ``release``
from any thread, ``lost`` each tick, ``held``). The lock is a session-level advisory lock
(``pg_advisory_lock``) on a connection of its own, keyed by :func:`advisory_key` of the
repository id and the repository-relative path (or lock name), so every checkout of one
repository, on any machine, computes the same key. The server releases it when the
holder's connection ends, so a crashed (even SIGKILLed) holder never keeps it; a waiter
blocks in the server (``lock_timeout`` bounds the wait) and gets the lock as soon as it
is free. A held lock whose connection broke (the server restarted, the network failed)
is reported by :meth:`PostgresLockHandle.lost`, so its node shows ``lost``: the server
already let another agent take it, and this one never claims to hold it still.

Must not import sessions.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from dagctx import _postgres
from dagctx.nodes.lock import LockOutcome, LockStatus

if TYPE_CHECKING:
    import psycopg


def advisory_key(repo_id: str, name: str) -> int:
    """The signed 64-bit advisory-lock key of lock ``name`` in repository ``repo_id``."""
    digest = hashlib.blake2b(f"{repo_id}\n{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresLockHandle:
    """One advisory lock on the server at ``url`` (see the module docstring)."""

    def __init__(self, url: str, key: int) -> None:
        self.url = url
        self.where = _postgres.redact(url)
        self.key = key
        self._conn: psycopg.Connection[Any] | None = None
        self._mutex = threading.Lock()
        self._state: Literal["waiting", "held", "released"] = "waiting"

    @property
    def held(self) -> bool:
        return self._state == "held"

    def acquire(self, timeout: float) -> LockOutcome:
        """Block until the lock is held, ``timeout`` seconds pass, or it is released."""
        pg = _postgres.driver()
        started = time.monotonic()

        def outcome(status: LockStatus, error: str | None = None) -> LockOutcome:
            return LockOutcome(status, time.monotonic() - started, time.time(), error)

        try:
            conn = pg.connect(self.url, autocommit=True, connect_timeout=_postgres.CONNECT_TIMEOUT)
        except pg.Error as exc:
            return outcome("error", f"cannot reach the lock service {self.where}: {exc}")
        with self._mutex:
            if self._given_up():
                conn.close()
                return outcome("released")
            self._conn = conn
        got, error = False, None
        try:
            if timeout <= 0:
                got = bool(
                    conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]
                )
            else:
                ms = max(1, round(timeout * 1000))
                conn.execute(f"SET lock_timeout = {ms}".encode())
                conn.execute("SELECT pg_advisory_lock(%s)", (self.key,))
                got = True
        except pg.errors.LockNotAvailable:
            got = False
        except pg.errors.QueryCanceled:
            got = False  # release() cancelled the wait
        except pg.Error as exc:
            error = f"lock service {self.where} failed: {exc}"
        with self._mutex:
            if self._given_up() or not got:
                self._conn = None
                conn.close()  # ends the session: the server lets go whatever it held
                if self._given_up():
                    return outcome("released")
                return outcome("error", error) if error else outcome("timeout")
            self._state = "held"
        return outcome("acquired")

    def _given_up(self) -> bool:
        return self._state == "released"

    def lost(self) -> str | None:
        """Why a held lock is lost (its connection to the server broke: the server has
        released it), or None while the connection answers."""
        with self._mutex:
            conn = self._conn
            if self._state != "held" or conn is None:
                return None
            try:
                conn.execute("SELECT 1")
            except _postgres.driver().Error as exc:
                return f"its connection to the lock service {self.where} was lost ({exc})"
        return None

    def release(self) -> bool:
        """Let the lock go (or stop waiting for it); return whether it was held."""
        with self._mutex:
            was, self._state = self._state, "released"
            conn = self._conn
            if was == "held":
                self._conn = None
        if conn is None:
            return False
        if was == "waiting":
            try:
                conn.cancel_safe(timeout=5)
            except _postgres.driver().Error:
                pass  # the wait ends with the lock timeout anyway
            return False
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except _postgres.driver().Error:
            pass  # a broken connection: the server released the lock already
        finally:
            conn.close()
        return was == "held"


__all__ = ["PostgresLockHandle", "advisory_key"]
