"""The coordination store: work claims that agents (processes) sharing a tree can all see.

A *claim* is one agent's intent over some paths (absolute; a directory covers everything
below it) in ``read`` or ``write`` mode. Claims live in an SQLite file — by default
``<session root>/.dagctx/coordination.db`` — opened by :mod:`dagctx._sqlite` (WAL journal,
busy timeout, ``synchronous=FULL``, the ``coordination_schema`` row in ``dagctx_meta``),
so readers never block and concurrent writers wait their turn instead of failing. Every
write is one ``BEGIN IMMEDIATE`` transaction.

Liveness: a claim carries its owner's ``ttl`` (the owner's ``stale_after``) and is live
until ``ttl`` seconds after its last heartbeat. An expired claim is no longer listed,
cannot be renewed by a heartbeat, and is deleted by the next write of any agent.
Deadlines (``expires_at``) are on the host's monotonic clock (:func:`now`,
``CLOCK_MONOTONIC``, one clock for every process of one boot), so a step of the wall clock
(NTP, a manual change) neither purges live claims nor keeps dead ones. The file records the
boot its deadlines belong to (table ``claims_clock``); opened in another boot, its claims
are dropped (their owners are gone); a file that records none (written by a dagctx that
kept wall-clock deadlines) has its deadlines moved onto the monotonic clock, each keeping
the time it had left. ``created_at`` stays wall-clock time, for people.

Identity: a store remembers which file it opened (device and inode). Before each read
or write it checks that the path still names that file; a store deleted (``git clean``)
or replaced meanwhile is opened again at the path (created if missing) and the live
claims the old file held are copied over, so agents that opened the new file and agents
that held the old one see each other again instead of splitting into groups.

Two live claims of different agents *conflict* when a path of one overlaps a path of the
other and at least one of them writes. :class:`WorkBoard` is one session's view of the
store: its agent identity, and a snapshot (heartbeat + listing) taken at most once per
tick.

:class:`BaseCoordinationStore` is the interface :class:`CoordinationStore` (SQLite, one
machine) and :class:`~dagctx.runtime.coordination_pg.PostgresCoordinationStore`
(PostgreSQL, many machines) share; :func:`open_coordination_store` picks one.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self, TypeVar

from dagctx import _postgres, _sqlite
from dagctx._validate import is_number
from dagctx.errors import CoordinationError

MODES = ("read", "write")
DEFAULT_STALE_AFTER = 60.0
DEFAULT_BUSY_TIMEOUT = 10.0
SCHEMA_VERSION = 1
T = TypeVar("T")

_TABLES = """
CREATE TABLE IF NOT EXISTS claims (
    claim_id   TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    agent_name TEXT,
    pid        INTEGER NOT NULL,
    intent     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    files      TEXT NOT NULL,
    created_at REAL NOT NULL,
    ttl        REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_by_agent ON claims (agent_id);
CREATE INDEX IF NOT EXISTS claims_by_expiry ON claims (expires_at);
CREATE TABLE IF NOT EXISTS claims_clock (boot TEXT NOT NULL);
"""
_LAYOUT = _sqlite.Layout(
    component="coordination",
    version=SCHEMA_VERSION,
    tables=_TABLES,
    noun="coordination store",
    elsewhere="give the coordination store another path",
    error=CoordinationError,
    # Stores written before dagctx_meta kept their version in PRAGMA user_version.
    adopts=frozenset({"claims", "claims_by_agent", "claims_by_expiry"}),
)
_COLUMNS = "claim_id, agent_id, agent_name, pid, intent, mode, files, created_at, expires_at"


def now() -> float:
    """The clock of claim deadlines: seconds on the host's monotonic clock, which every
    process of one boot shares and no wall-clock step moves."""
    return time.monotonic()


def boot_id() -> str:
    """This boot's identity (Linux: ``/proc/sys/kernel/random/boot_id``; elsewhere the
    wall-clock time of boot, to the minute)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return f"boot-{round((time.time() - time.monotonic()) / 60)}"


def agent_label(name: str | None, agent_id: str) -> str:
    """How an agent is shown: ``name (id)``, or the id alone."""
    return f"{name} ({agent_id})" if name else agent_id


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent's identity in the store: ``pid-random`` plus an optional display name."""

    id: str
    name: str | None = None
    pid: int = 0

    @classmethod
    def new(cls, name: str | None = None) -> Agent:
        """A fresh identity for this process (unique even for several sessions per pid).

        Raises:
            CoordinationError: ``name`` is not a string or None.
        """
        if name is not None and not isinstance(name, str):
            raise CoordinationError(
                f"agent name must be a string or None, got {name!r}", value=name
            )
        pid = os.getpid()
        return cls(f"{pid}-{secrets.token_hex(4)}", name or None, pid)

    def label(self) -> str:
        return agent_label(self.name, self.id)


@dataclass(frozen=True, slots=True)
class Claim:
    """A live claim as stored: who, what for, which paths, in which mode, until when
    (``created_at``: wall-clock time; ``expires_at``: on the store's clock, the
    :func:`now` clock for :class:`CoordinationStore`, the database server's epoch
    seconds for PostgreSQL)."""

    claim_id: str
    agent_id: str
    agent_name: str | None
    pid: int
    intent: str
    mode: str
    files: tuple[str, ...]
    created_at: float
    expires_at: float

    def agent_label(self) -> str:
        return agent_label(self.agent_name, self.agent_id)


@dataclass(frozen=True, slots=True)
class Conflict:
    """An overlap between one of our claims and another agent's claim.

    ``path`` is ours, ``other_path`` theirs (equal, or one a directory holding the other);
    ``kind`` is ``"<our mode>/<their mode>"``, e.g. ``"write/write"``.
    """

    path: str
    other_path: str
    kind: str
    claim_id: str
    agent_id: str
    agent_name: str | None
    intent: str

    def agent_label(self) -> str:
        return agent_label(self.agent_name, self.agent_id)


def paths_overlap(a: str, b: str) -> bool:
    """Whether two absolute posix paths are equal or one is a directory holding the other."""
    if a == b:
        return True
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    return longer.startswith(shorter.rstrip("/") + "/")


def find_conflicts(own: Claim, claims: Iterable[Claim]) -> tuple[Conflict, ...]:
    """Overlaps of ``own`` with other agents' claims where at least one side writes,
    sorted by path, then agent, then claim."""
    found = []
    for other in claims:
        if other.agent_id == own.agent_id or "write" not in (own.mode, other.mode):
            continue
        for path in own.files:
            for other_path in other.files:
                if paths_overlap(path, other_path):
                    found.append(
                        Conflict(
                            path,
                            other_path,
                            f"{own.mode}/{other.mode}",
                            other.claim_id,
                            other.agent_id,
                            other.agent_name,
                            other.intent,
                        )
                    )
    return tuple(sorted(found, key=lambda c: (c.path, c.agent_id, c.claim_id, c.other_path)))


def check_claim_fields(intent: object, files: Sequence[object], mode: object) -> None:
    """Raises CoordinationError naming a bad intent, file or mode."""
    if not isinstance(intent, str) or not intent.strip():
        raise CoordinationError(
            f"a work intent must be a non-empty string, got {intent!r}", value=intent
        )
    if mode not in MODES:
        raise CoordinationError(
            f"unknown claim mode {mode!r}; expected 'read' or 'write'", value=mode
        )
    for path in files:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise CoordinationError(f"claimed paths must be absolute, got {path!r}", value=path)


def check_ttl(ttl: object) -> float:
    """Return ``ttl`` as a float. Raises CoordinationError unless it is a positive number."""
    if not is_number(ttl) or not 0 < ttl < float("inf"):
        raise CoordinationError(
            f"stale_after must be a positive number of seconds, got {ttl!r}", value=ttl
        )
    return float(ttl)


def _adopt_clock(db: sqlite3.Connection) -> None:
    """Make the file's deadlines this boot's :func:`now` deadlines (inside a transaction).

    A file of this boot is left alone; one of another boot loses its claims (their owners
    are gone); one with no boot recorded (a store of a dagctx that kept wall-clock
    deadlines, or a new one) has its deadlines moved onto the monotonic clock, each
    keeping the time it had left.
    """
    boot = boot_id()
    found = db.execute("SELECT boot FROM claims_clock").fetchall()
    if found == [(boot,)]:
        return
    if found:
        db.execute("DELETE FROM claims")
    else:
        db.execute("UPDATE claims SET expires_at = expires_at - ? + ?", (time.time(), now()))
    db.execute("DELETE FROM claims_clock")
    db.execute("INSERT INTO claims_clock (boot) VALUES (?)", (boot,))


class BaseCoordinationStore(ABC):
    """The interface of every coordination store: :class:`CoordinationStore` (an SQLite
    file, one machine) and
    :class:`~dagctx.runtime.coordination_pg.PostgresCoordinationStore` (a PostgreSQL
    database, many machines). Every method raises :class:`CoordinationError` when the
    store fails."""

    @property
    @abstractmethod
    def location(self) -> object:
        """Where the claims are kept (a path, or a URL without its password)."""

    @abstractmethod
    def put(self, claim: Claim, *, ttl: float) -> None:
        """Store ``claim`` (replacing a claim of the same id), live for ``ttl`` seconds.

        Raises:
            CoordinationError: a bad intent, mode, path or ttl, or the store failed.
        """

    @abstractmethod
    def release(self, claim_id: str) -> bool:
        """Delete a claim; return whether it was there (live or expired but not purged)."""

    @abstractmethod
    def release_agent(self, agent_id: str) -> int:
        """Delete every claim of an agent; return how many there were."""

    @abstractmethod
    def heartbeat(self, agent_id: str) -> frozenset[str]:
        """Renew every live claim of an agent for its ttl; return their ids."""

    @abstractmethod
    def active(self) -> list[Claim]:
        """Every live claim of every agent, oldest first."""

    @abstractmethod
    def wait_for_change(self, timeout: float) -> bool:
        """Block until another agent's write commits (True) or ``timeout`` passes (False)."""

    @abstractmethod
    def close(self) -> None:
        """Close the store (idempotent); later calls raise CoordinationError."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CoordinationStore(BaseCoordinationStore):
    """Claims in an SQLite file shared by every agent that opens the same path.

    Args:
        path: the database file (its folder is created if needed).
        busy_timeout: seconds a writer waits for another writer before failing.

    Raises:
        CoordinationError: the file cannot be created or opened as a store, is the SQLite
            database of another application (left untouched), or holds another
            coordination schema version.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._db = self._open()

    # -- the file -----------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """Open the file at :attr:`path` as a store, note its identity, and drop claims
        written in another boot. Raises CoordinationError."""
        db = _sqlite.open_store(self.path, _LAYOUT, timeout=self._busy_timeout, threads=True)
        try:
            info = os.stat(self.path)
            with _sqlite.transaction(db):
                _adopt_clock(db)
        except (OSError, sqlite3.Error) as exc:
            db.close()
            raise CoordinationError(
                f"coordination store {str(self.path)!r}: {exc}", value=self.path
            ) from exc
        self._identity = (info.st_dev, info.st_ino)
        return db

    def _replaced(self) -> bool:
        """Whether the path no longer names the file this store opened."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return True
        return (info.st_dev, info.st_ino) != self._identity

    def _follow_replacement(self) -> None:
        """If the file was deleted or replaced, open the one at the path now and copy the
        old file's live claims into it (the caller holds ``_lock``)."""
        old = self._connection()
        if not self._replaced():
            return
        try:
            rows = old.execute(
                f"SELECT {_COLUMNS}, ttl FROM claims WHERE expires_at > ?", (now(),)
            ).fetchall()
        except sqlite3.Error:
            rows = []  # the old file is unreadable too: its owners re-claim at renewal
        new = self._open()
        try:
            with _sqlite.transaction(new) as db:
                db.executemany(
                    f"INSERT OR IGNORE INTO claims ({_COLUMNS}, ttl) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    rows,
                )
        except sqlite3.Error as exc:
            new.close()
            raise CoordinationError(
                f"coordination store {str(self.path)!r}: {exc}", value=self.path
            ) from exc
        old.close()
        self._db = new

    # -- transactions -----------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise CoordinationError(
                f"coordination store {str(self.path)!r} is closed", value=self.path
            )
        return self._db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One immediate write transaction (on the file at the path now), committed on
        success, rolled back on error."""
        with self._lock:
            self._follow_replacement()
            with _sqlite.transaction(self._connection()) as db:
                yield db

    def _run_write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one write transaction that also purges expired claims."""
        try:
            with self._write() as db:
                db.execute("DELETE FROM claims WHERE expires_at <= ?", (now(),))
                return work(db)
        except sqlite3.Error as exc:
            raise CoordinationError(
                f"coordination store {str(self.path)!r}: {exc}", value=self.path
            ) from exc

    # -- writes -----------------------------------------------------------------------

    def put(self, claim: Claim, *, ttl: float) -> None:
        """Store ``claim`` (replacing a claim of the same id), live for ``ttl`` seconds.

        Raises:
            CoordinationError: a bad intent, mode, path or ttl, or the store failed.
        """
        check_claim_fields(claim.intent, claim.files, claim.mode)
        check_ttl(ttl)
        row = (
            claim.claim_id, claim.agent_id, claim.agent_name, claim.pid, claim.intent,
            claim.mode, json.dumps(claim.files), claim.created_at, claim.expires_at, ttl,
        )  # fmt: skip
        self._run_write(
            lambda db: db.execute(
                f"INSERT OR REPLACE INTO claims ({_COLUMNS}, ttl) VALUES (?,?,?,?,?,?,?,?,?,?)",
                row,
            )
        )

    def release(self, claim_id: str) -> bool:
        """Delete a claim; return whether it was there (live or expired but not purged)."""
        deleted = self._run_write(
            lambda db: db.execute("DELETE FROM claims WHERE claim_id = ?", (claim_id,)).rowcount
        )
        return deleted > 0

    def release_agent(self, agent_id: str) -> int:
        """Delete every claim of an agent; return how many there were."""
        return self._run_write(
            lambda db: db.execute("DELETE FROM claims WHERE agent_id = ?", (agent_id,)).rowcount
        )

    def heartbeat(self, agent_id: str) -> frozenset[str]:
        """Renew every live claim of an agent for its ttl; return their ids.

        Expired claims are not renewed (they are gone once any agent writes).
        """
        at = now()

        def renew(db: sqlite3.Connection) -> frozenset[str]:
            db.execute(
                "UPDATE claims SET expires_at = ? + ttl WHERE agent_id = ? AND expires_at > ?",
                (at, agent_id, at),
            )
            rows = db.execute(
                "SELECT claim_id FROM claims WHERE agent_id = ? AND expires_at > ?",
                (agent_id, at),
            )
            return frozenset(row[0] for row in rows)

        return self._run_write(renew)

    # -- reads ------------------------------------------------------------------------

    @property
    def location(self) -> Path:
        return self.path

    def wait_for_change(self, timeout: float) -> bool:
        """Poll the file's ``PRAGMA data_version`` (which another connection's commit
        changes) every 20 ms until it changes (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout

        def version() -> int:
            with self._lock:
                try:
                    return int(self._connection().execute("PRAGMA data_version").fetchone()[0])
                except sqlite3.Error as exc:
                    raise CoordinationError(
                        f"coordination store {str(self.path)!r}: {exc}", value=self.path
                    ) from exc

        start = version()
        while time.monotonic() < deadline:
            time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
            if version() != start:
                return True
        return False

    def active(self) -> list[Claim]:
        """Every live claim of every agent, oldest first.

        Raises:
            CoordinationError: the store failed.
        """
        with self._lock:
            try:
                self._follow_replacement()
                rows = (
                    self._connection()
                    .execute(
                        f"SELECT {_COLUMNS} FROM claims WHERE expires_at > ?"
                        " ORDER BY created_at, claim_id",
                        (now(),),
                    )
                    .fetchall()
                )
            except sqlite3.Error as exc:
                raise CoordinationError(
                    f"coordination store {str(self.path)!r}: {exc}", value=self.path
                ) from exc
        return [
            Claim(cid, aid, name, pid, intent, mode, tuple(json.loads(files)), created, expires)
            for cid, aid, name, pid, intent, mode, files, created, expires in rows
        ]

    def close(self) -> None:
        """Close the connection (idempotent); later calls raise CoordinationError."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class WorkBoard:
    """One session's side of the store: its agent, its ttl, and a per-tick snapshot.

    ``tick_of`` returns a value that differs from one tick to the next (the session's
    turn): the first :meth:`snapshot` of a tick heartbeats the agent's claims and lists
    every live claim; later calls in the same tick reuse that list. Our own writes drop
    it, and explicit verbs between ticks read with :meth:`live_claims`, which is never
    cached (between ticks the turn already has the value the next tick will see).
    """

    def __init__(
        self,
        store: BaseCoordinationStore,
        agent: Agent,
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        tick_of: Callable[[], int] = lambda: 0,
    ) -> None:
        self.store = store
        self.agent = agent
        self.stale_after = check_ttl(stale_after)
        self._tick_of = tick_of
        self._cached: tuple[int, tuple[Claim, ...]] | None = None

    def snapshot(self) -> tuple[Claim, ...]:
        """This tick's live claims; the first call of a tick heartbeats ours first.

        Raises:
            CoordinationError: the store failed.
        """
        key = self._tick_of()
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        self.store.heartbeat(self.agent.id)
        claims = tuple(self.store.active())
        self._cached = (key, claims)
        return claims

    def live_claims(self) -> tuple[Claim, ...]:
        """Every live claim now (read afresh, not cached). Raises CoordinationError."""
        return tuple(self.store.active())

    def new_claim(
        self, intent: str, files: Sequence[str], mode: str, claim_id: str | None = None
    ) -> Claim:
        """A claim of this board's agent (not stored yet; see :meth:`put`).

        Raises:
            CoordinationError: an empty intent, a bad mode or a relative path.
        """
        check_claim_fields(intent, files, mode)
        return Claim(
            claim_id or uuid.uuid4().hex, self.agent.id, self.agent.name, self.agent.pid,
            intent, mode, tuple(dict.fromkeys(files)), time.time(), now() + self.stale_after,
        )  # fmt: skip

    def put(self, claim: Claim) -> None:
        """Store (or renew) one of our claims. Raises CoordinationError."""
        self.store.put(claim, ttl=self.stale_after)
        self._cached = None

    def release(self, claim_id: str) -> None:
        """Delete one of our claims. Raises CoordinationError."""
        self.store.release(claim_id)
        self._cached = None

    def close(self) -> None:
        """Release every claim of the agent and close the store."""
        try:
            self.store.release_agent(self.agent.id)
        finally:
            self.store.close()


def open_coordination_store(
    target: str | os.PathLike[str], *, root: str | os.PathLike[str]
) -> BaseCoordinationStore:
    """The coordination store at ``target``: a ``postgresql://`` URL gives a
    :class:`~dagctx.runtime.coordination_pg.PostgresCoordinationStore` for the repository
    holding ``root``, a path the SQLite :class:`CoordinationStore` (a relative path is
    taken from ``root``).

    Raises:
        CoordinationError: the store cannot be opened.
    """
    if _postgres.is_url(target):
        from dagctx.runtime.coordination_pg import PostgresCoordinationStore

        return PostgresCoordinationStore(os.fspath(target), root=root)
    return CoordinationStore(Path(root) / os.fspath(target))
