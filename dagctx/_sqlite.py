"""One way to open a dagctx SQLite file: journal, durability, foreign files, schema versions.

Every SQLite file dagctx writes (the session file, the checkpoint store, the coordination
store; several of them may share one file) is opened and prepared here, with one policy:

- **WAL journal and a busy timeout**: readers never block the writer, and a writer waits
  up to the timeout for another one's lock instead of failing at once. Writes are
  ``BEGIN IMMEDIATE`` transactions (:func:`transaction`).
- **Durability**: ``synchronous=FULL``, so a write transaction that has committed
  survives a kill of the process or a power loss at any later instant.
- **Foreign files**: a file that holds tables but no ``dagctx_meta`` table belongs to
  another application; it is refused before anything is written to it (the journal
  set-up writes to the file too, so the check runs first).
- **Damage or trouble**: :func:`is_damage` tells a file that is damaged (corrupt, not a
  database) from one that could not be read for a reason that is not the file's fault
  (the disk is full, an I/O error, a lock held past the timeout), which a caller must
  leave exactly as it is.
- **Schema versions**: ``dagctx_meta(key, value)`` holds one row ``<component>_schema``
  per component using the file (``session_schema``, ``checkpoint_schema``,
  ``coordination_schema``). A file whose row names another version is refused, naming
  both versions, and nothing is written; except an earlier version the layout
  ``upgrades``: such a file is used as it is, and :func:`install` (the first write)
  adds the tables it lacks and records the layout's version.

A component describes its tables in a :class:`Layout`; :func:`open_store` gives a
prepared connection, and :func:`connect`, :func:`check`, :func:`make_durable`,
:func:`install` and :func:`transaction` are its steps for a caller (the session file)
that installs its tables in the same transaction as its first rows.

Imports nothing of dagctx: the component names the exception class it raises.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

_META = "CREATE TABLE IF NOT EXISTS dagctx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


@dataclass(frozen=True, slots=True)
class Layout:
    """What one component keeps in a dagctx SQLite file, and how it reports trouble.

    ``tables``: ``CREATE ... IF NOT EXISTS`` statements separated by ``;``.
    ``noun``: what the file is called in messages (``"checkpoint file"``).
    ``elsewhere``: what to do instead when the file belongs to another application.
    ``error``: the exception class (or factory) raised with the message and, as the
    keyword ``value``, the offending value (the file's path, its foreign tables, the
    schema version it records).
    ``adopts``: the tables of a file written by an earlier dagctx that marked this
    component's version with ``PRAGMA user_version`` instead of ``dagctx_meta``; a file
    holding only these tables, at that version, is this component's (not foreign).
    ``upgrades``: earlier versions whose files this layout reads as they are (its
    tables are theirs plus new ones) and upgrades at the first write.
    """

    component: str
    version: int
    tables: str
    noun: str
    elsewhere: str
    error: Callable[..., Exception]
    adopts: frozenset[str] = field(default_factory=frozenset)
    upgrades: frozenset[int] = field(default_factory=frozenset)

    @property
    def key(self) -> str:
        """The component's row in ``dagctx_meta``."""
        return f"{self.component}_schema"

    @property
    def readable(self) -> frozenset[str]:
        """The versions (as ``dagctx_meta`` records them) of the files this layout uses."""
        return frozenset(map(str, {self.version, *self.upgrades}))


def connect(
    path: Path,
    layout: Layout,
    *,
    timeout: float,
    create: bool = True,
    action: str = "open",
    threads: bool = False,
) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (transactions are explicit); nothing is written yet.

    ``create`` makes the file (and its parent directories) if missing; ``threads`` lets
    other threads use the connection (the caller serializes them).

    Raises:
        layout.error: the file cannot be opened (a missing file without ``create``, a
            directory, a NUL byte, a name too long, a symlink loop).
    """
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"{path.resolve().as_uri()}?mode={'rwc' if create else 'rw'}"
        return sqlite3.connect(
            uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=not threads
        )
    # OSError: a name too long; ValueError: a NUL byte; RuntimeError: a symlink loop.
    except (OSError, ValueError, RuntimeError, sqlite3.Error) as exc:
        raise layout.error(
            f"cannot {action} {layout.noun} {str(path)!r}: {exc}", value=path
        ) from exc


def stored_version(conn: sqlite3.Connection, layout: Layout) -> str | None:
    """The component's schema version as the file records it; None if it records none."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'dagctx_meta'").fetchall():
        return None
    row = conn.execute("SELECT value FROM dagctx_meta WHERE key = ?", (layout.key,)).fetchone()
    return None if row is None else str(row[0])


def schema_mismatch(layout: Layout, where: str, found: str) -> Exception:
    """The error for a file written by another version of the component's layout."""
    return layout.error(
        f"{where} holds {layout.component} schema {found}; this dagctx reads and writes"
        f" {layout.component} schema {layout.version}",
        value=found,
    )


def check(conn: sqlite3.Connection, layout: Layout, where: str) -> None:
    """Refuse a file of another application or of another version of the layout.

    Raises:
        layout.error: either of those (the file is left untouched).
        sqlite3.Error: the file is not a SQLite database.
    """
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if tables and "dagctx_meta" not in tables and not _adopted(conn, layout, tables):
        raise layout.error(
            f"{where} is a SQLite database of something else; {layout.elsewhere}",
            value=sorted(tables),
        )
    found = stored_version(conn, layout)
    if found is not None and found not in layout.readable:
        raise schema_mismatch(layout, where, found)


def _adopted(conn: sqlite3.Connection, layout: Layout, tables: set[str]) -> bool:
    own = {name for name in tables if not name.startswith("sqlite_")}
    if not layout.adopts or not own <= layout.adopts:
        return False
    return bool(conn.execute("PRAGMA user_version").fetchone()[0] == layout.version)


_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_BUSY_PAUSE = 0.005  # seconds between tries of a journal switch another process holds up


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file itself is damaged (corrupt, or not a database).

    Every other failure (``SQLITE_FULL``, ``SQLITE_IOERR``, ``SQLITE_BUSY``, a file that
    cannot be opened, ...) is trouble around the file, and the file may be good.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _DAMAGE_CODES


def make_durable(conn: sqlite3.Connection, timeout: float) -> None:
    """WAL journal, and a committed transaction survives any later crash or power loss.

    Switching a new file to WAL takes its exclusive lock, and SQLite answers "database is
    locked" at once, without waiting out the busy timeout, when several processes open
    the same new file together (one switching it while another reads it); the switch is
    tried again until ``timeout`` seconds have passed. A file already in WAL is left as
    it is (reading the mode takes no exclusive lock).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            break
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if code not in _BUSY_CODES or time.monotonic() >= deadline:
                raise
            time.sleep(_BUSY_PAUSE)
    conn.execute("PRAGMA synchronous=FULL")


def install(conn: sqlite3.Connection, layout: Layout) -> None:
    """Create the component's tables (those an upgraded file lacks) and record its
    version (run inside a transaction, after :func:`check`)."""
    conn.execute(_META)
    for statement in filter(str.strip, layout.tables.split(";")):
        conn.execute(statement)
    conn.execute(
        "INSERT OR REPLACE INTO dagctx_meta (key, value) VALUES (?, ?)",
        (layout.key, str(layout.version)),
    )


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block as one write transaction: committed on success, rolled back otherwise.

    The write lock is taken at the start, waiting up to the connection's timeout.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # some errors roll back on their own
            conn.execute("ROLLBACK")
        raise


def open_store(
    path: Path, layout: Layout, *, timeout: float, threads: bool = False
) -> sqlite3.Connection:
    """Open ``path`` (created if missing) for the component: refuse a foreign file or
    another layout version, then set up the journal and install the tables.

    Raises:
        layout.error: the file cannot be opened, is not a SQLite database, belongs to
            another application, or holds another version of the layout.
    """
    conn = connect(path, layout, timeout=timeout, threads=threads)
    where = repr(str(path))
    try:
        check(conn, layout, where)  # before the journal set-up, which writes to the file
        make_durable(conn, timeout)
        with transaction(conn):
            check(conn, layout, where)  # again, under the write lock
            install(conn, layout)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        conn.close()
        raise layout.error(f"cannot open {layout.noun} {where}: {exc}", value=path) from exc
    except BaseException:
        conn.close()
        raise
    return conn


__all__ = [
    "Layout",
    "check",
    "connect",
    "install",
    "is_damage",
    "make_durable",
    "open_store",
    "schema_mismatch",
    "stored_version",
    "transaction",
]
