"""One way to reach a dagctx PostgreSQL store: which target is meant, connections,
the schema, and errors.

The stores of :mod:`dagctx.checkpoint`, :mod:`dagctx.runtime.coordination`, the lock
service of :mod:`dagctx.nodes.lock` and the session store keep their data in SQLite by
default; a ``postgresql://`` (or ``postgres://``) URL, given explicitly or in the
environment variable ``DAGCTX_STORE``, puts it in a PostgreSQL database instead
(:func:`store_url`).

- **Connections** (:class:`Link`): one psycopg 3 connection per store, in autocommit
  mode, guarded by a lock so threads may share it; :meth:`Link.transaction` runs a block
  as one transaction. A connection that broke (the server restarted, the network
  dropped) is replaced by a new one at the next call: the call that saw the break raises
  (its outcome may be unknown), the next one reconnects.
- **Schema**: ``dagctx_meta(key, value)`` holds one row ``<component>_schema`` per
  component, as in the SQLite files; :func:`install` creates a component's tables under
  a transaction-scoped advisory lock (so agents starting together do not race on
  ``CREATE TABLE``) and refuses a database that records another version.
- **Messages** never show a password: :func:`redact`.
- psycopg is imported on first use (:func:`driver`), so a SQLite-only run never loads it.

Imports nothing of dagctx: the caller names the exception class it raises.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg

ENV = "DAGCTX_STORE"
"""The environment variable naming the store when no target is given."""
SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 10
_INSTALL_LOCK = 0x64616763  # the advisory lock key serializing schema installs ("dagc")
_META = "CREATE TABLE IF NOT EXISTS dagctx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def driver() -> Any:
    """The psycopg module, imported on first use (it takes a good part of a second to
    import, which a SQLite-only run should not pay)."""
    import psycopg

    return psycopg


def is_url(target: object) -> bool:
    """Whether ``target`` is a PostgreSQL URL (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def store_url(target: object = None) -> str | None:
    """The PostgreSQL URL meant by ``target`` (or, when it is None, by ``DAGCTX_STORE``);
    None means the SQLite default."""
    if target is None:
        target = os.environ.get(ENV) or None
    return target if isinstance(target, str) and is_url(target) else None


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


def broken(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection itself failed (not the statement)."""
    pg = driver()
    return isinstance(exc, pg.OperationalError | pg.InterfaceError)


class Link:
    """A store's connection to the database, reopened after a break.

    ``error`` builds the exception raised for any database failure (called with a
    message and the keyword ``value``, the redacted URL); ``prepare`` runs on every new
    connection (installing the schema).
    """

    def __init__(
        self,
        url: str,
        error: Callable[..., Exception],
        *,
        noun: str,
        prepare: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self.url = urlunsplit(urlsplit(url)._replace(fragment=""))  # a #name is ours
        self.where = redact(self.url)
        self._error = error
        self._noun = noun
        self._prepare = prepare
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        with self._lock:
            self._connection()

    def _connection(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise self._error(f"{self._noun} on {self.where} is closed", value=self.where)
        if self._conn is None or self._conn.closed:
            pg = driver()
            try:
                conn = pg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            except pg.Error as exc:
                raise self._error(
                    f"cannot connect to the {self._noun} on {self.where}: {exc}", value=self.where
                ) from exc
            try:
                if self._prepare is not None:
                    self._prepare(conn)
            except pg.Error as exc:
                conn.close()
                raise self._error(
                    f"cannot prepare the {self._noun} on {self.where}: {exc}", value=self.where
                ) from exc
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    @contextmanager
    def transaction(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        """Run the block as one transaction on the (re)opened connection; a database
        failure raises the store's error naming ``action``, and the transaction is rolled
        back (a broken connection is dropped, to be reopened by the next call)."""
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction():
                    yield conn
            except driver().Error as exc:
                if broken(exc):
                    self._drop()
                raise self._error(
                    f"cannot {action} ({self.where}): {exc}", value=self.where
                ) from exc

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the connection; later calls raise the store's error. Idempotent."""
        with self._lock:
            self._closed = True
            self._drop()


def install(
    conn: psycopg.Connection[Any],
    component: str,
    version: int,
    tables: str,
    error: Callable[..., Exception],
    where: str,
) -> None:
    """Create ``dagctx_meta`` and the component's ``tables`` (statements separated by
    ``;``) and record its version, in one transaction.

    Raises:
        error: the database records another version of the component's schema.
    """
    key = f"{component}_schema"
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INSTALL_LOCK,))
        conn.execute(_META)
        row = conn.execute("SELECT value FROM dagctx_meta WHERE key = %s", (key,)).fetchone()
        if row is not None and row[0] != str(version):
            raise error(
                f"{where} holds {component} schema {row[0]}; this dagctx reads and writes"
                f" {component} schema {version}",
                value=row[0],
            )
        for statement in filter(str.strip, tables.split(";")):
            conn.execute(statement.encode())  # our own constant SQL
        conn.execute(
            "INSERT INTO dagctx_meta (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (key, str(version)),
        )


__all__ = [
    "ENV",
    "SCHEMES",
    "Link",
    "broken",
    "driver",
    "install",
    "is_url",
    "redact",
    "store_url",
]
