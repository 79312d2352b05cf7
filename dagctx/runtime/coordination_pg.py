"""The coordination store on PostgreSQL: work claims every agent on every machine sees.

A sibling of the SQLite :class:`~dagctx.runtime.coordination.CoordinationStore` behind the
same :class:`~dagctx.runtime.coordination.BaseCoordinationStore` interface, so
:class:`~dagctx.runtime.coordination.WorkBoard` and the work verbs work on either.

- **Keys**: agents on different machines work in their own checkouts of one repository,
  so a claim is stored under a *repository id* and *repository-relative* paths, never
  absolute ones: :func:`repository_identity` takes the id from git (the repository's
  first commit, the same in every clone) and the base from the checkout's top level; a
  directory that is no git work tree is its own base and is known by its name. Paths
  read back are joined to this checkout's base, so an agent sees other machines' claims
  on its own files.
- **Leases by the database clock**: ``expires_at`` is ``now() + ttl`` of the server,
  renewed by heartbeats and compared with the server's ``now()``, so the agents' clocks
  (however far apart) never decide whether a claim is live. A :class:`Claim` read back
  carries its deadline in seconds since the epoch of the server's clock.
- **Pushed changes**: every write notifies channel ``dagctx_claims`` (payload: the
  repository id) in its transaction; :meth:`PostgresCoordinationStore.wait_for_change`
  blocks on a listening connection until another agent's write commits.

Every write is one transaction that also deletes the repository's expired claims. The
connection is reopened after a break (:class:`dagctx._postgres.Link`).

Must not import sessions or nodes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagctx import _postgres
from dagctx.errors import CoordinationError
from dagctx.runtime.coordination import (
    BaseCoordinationStore,
    Claim,
    check_claim_fields,
    check_ttl,
)

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 1
CHANNEL = "dagctx_claims"
_TABLES = """
CREATE TABLE IF NOT EXISTS dagctx_claims (
    repo_id    TEXT NOT NULL,
    claim_id   TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    agent_name TEXT,
    pid        INTEGER NOT NULL,
    intent     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    files      TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    ttl        DOUBLE PRECISION NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo_id, claim_id)
);
CREATE INDEX IF NOT EXISTS dagctx_claims_by_agent ON dagctx_claims (repo_id, agent_id)
"""
_COLUMNS = "claim_id, agent_id, agent_name, pid, intent, mode, files, created_at"
_EXPIRES = "EXTRACT(EPOCH FROM expires_at)"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


@functools.lru_cache(maxsize=256)
def repository_identity(root: Path) -> tuple[str, Path]:
    """``(repository id, base directory)`` of the checkout holding ``root`` (asked of git
    once per directory and process).

    In a git work tree: ``git:<first commit>`` (the oldest root commit, the same in every
    clone) and the work tree's top level; a git work tree without commits falls back to
    ``git-remote:<origin url>`` when it has an origin. Otherwise ``dir:<name of root>``
    and ``root`` itself.
    """
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is not None:
        roots = _git(Path(top), "rev-list", "--max-parents=0", "HEAD")
        if roots is not None:
            return f"git:{sorted(roots.split())[0]}", Path(top).resolve()
        origin = _git(Path(top), "remote", "get-url", "origin")
        if origin is not None:
            return f"git-remote:{origin}", Path(top).resolve()
    return f"dir:{root.name}", root


def _prepare(conn: psycopg.Connection[Any]) -> None:
    where = _postgres.redact(conn.info.dsn)
    _postgres.install(conn, "coordination", SCHEMA_VERSION, _TABLES, CoordinationError, where)


class PostgresCoordinationStore(BaseCoordinationStore):
    """Claims of one repository in the PostgreSQL database at ``url``.

    Args:
        url: a ``postgresql://`` URL.
        root: a directory of this agent's checkout (the session root).
        repo_id: the repository id; by default :func:`repository_identity`'s (agents
            whose checkouts are no git work trees should pass the same id).

    Raises:
        CoordinationError: the server cannot be reached, or the database holds another
            coordination schema version.
    """

    def __init__(self, url: str, *, root: str | os.PathLike[str], repo_id: str | None = None):
        found_id, base = repository_identity(Path(root).resolve())
        self.repo_id = found_id if repo_id is None else repo_id
        if not isinstance(self.repo_id, str) or not self.repo_id or "\x00" in self.repo_id:
            raise CoordinationError(f"a bad repository id {repo_id!r}", value=repo_id)
        self.base = base
        self._link = _postgres.Link(
            url, CoordinationError, noun="coordination store", prepare=_prepare
        )
        self._listen_lock = threading.Lock()
        self._listener: psycopg.Connection[Any] | None = None

    @property
    def location(self) -> str:
        return self._link.where

    # -- paths ------------------------------------------------------------------------

    def _relative(self, path: str) -> str:
        try:
            relative = Path(path).relative_to(self.base).as_posix()
        except ValueError:
            raise CoordinationError(
                f"claimed path {path!r} is outside the repository {str(self.base)!r}",
                value=path,
            ) from None
        return "" if relative == "." else relative

    def _absolute(self, relative: str) -> str:
        return (self.base / relative).as_posix() if relative else self.base.as_posix()

    def _claim(self, row: tuple[Any, ...]) -> Claim:
        cid, aid, name, pid, intent, mode, files, created, expires = row
        paths = tuple(self._absolute(rel) for rel in json.loads(files))
        return Claim(cid, aid, name, pid, intent, mode, paths, created, float(expires))

    # -- writes -----------------------------------------------------------------------

    def _write(self, action: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._link.transaction(action) as conn:
            conn.execute(
                "DELETE FROM dagctx_claims WHERE repo_id = %s AND expires_at <= now()",
                (self.repo_id,),
            )
            cursor = conn.execute(sql.encode(), params)
            rows = cursor.fetchall() if cursor.description is not None else []
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.repo_id))
        return rows

    def put(self, claim: Claim, *, ttl: float) -> None:
        check_claim_fields(claim.intent, claim.files, claim.mode)
        check_ttl(ttl)
        files = json.dumps([self._relative(path) for path in claim.files])
        self._write(
            "store a claim",
            f"INSERT INTO dagctx_claims (repo_id, {_COLUMNS}, ttl, expires_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " now() + %s * INTERVAL '1 second')"
            " ON CONFLICT (repo_id, claim_id) DO UPDATE SET agent_id = EXCLUDED.agent_id,"
            " agent_name = EXCLUDED.agent_name, pid = EXCLUDED.pid, intent = EXCLUDED.intent,"
            " mode = EXCLUDED.mode, files = EXCLUDED.files, created_at = EXCLUDED.created_at,"
            " ttl = EXCLUDED.ttl, expires_at = EXCLUDED.expires_at",
            (
                self.repo_id, claim.claim_id, claim.agent_id, claim.agent_name, claim.pid,
                claim.intent, claim.mode, files, claim.created_at, ttl, ttl,
            ),
        )  # fmt: skip

    def release(self, claim_id: str) -> bool:
        rows = self._write(
            "release a claim",
            "DELETE FROM dagctx_claims WHERE repo_id = %s AND claim_id = %s RETURNING 1",
            (self.repo_id, claim_id),
        )
        return bool(rows)

    def release_agent(self, agent_id: str) -> int:
        rows = self._write(
            "release an agent's claims",
            "DELETE FROM dagctx_claims WHERE repo_id = %s AND agent_id = %s RETURNING 1",
            (self.repo_id, agent_id),
        )
        return len(rows)

    def heartbeat(self, agent_id: str) -> frozenset[str]:
        rows = self._write(
            "renew claims",
            "UPDATE dagctx_claims SET expires_at = now() + ttl * INTERVAL '1 second'"
            " WHERE repo_id = %s AND agent_id = %s AND expires_at > now() RETURNING claim_id",
            (self.repo_id, agent_id),
        )
        return frozenset(row[0] for row in rows)

    # -- reads ------------------------------------------------------------------------

    def active(self) -> list[Claim]:
        with self._link.transaction("list claims") as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, {_EXPIRES} FROM dagctx_claims"
                " WHERE repo_id = %s AND expires_at > now() ORDER BY created_at, claim_id",
                (self.repo_id,),
            ).fetchall()
        return [self._claim(row) for row in rows]

    def wait_for_change(self, timeout: float) -> bool:
        """Block until a write of any agent to this repository's claims commits (True) or
        ``timeout`` seconds pass (False). The first call starts listening; a change
        committed before it is not reported. A broken listening connection is reopened
        and reported as a change (one may have been missed)."""
        deadline = time.monotonic() + timeout
        with self._listen_lock:
            pg = _postgres.driver()
            try:
                if self._listener is None or self._listener.closed:
                    first = self._listener is None
                    self._listener = pg.connect(
                        self._link.url, autocommit=True, connect_timeout=_postgres.CONNECT_TIMEOUT
                    )
                    self._listener.execute(f"LISTEN {CHANNEL}".encode())
                    if not first:
                        return True
                while (left := deadline - time.monotonic()) > 0:
                    for note in self._listener.notifies(timeout=left, stop_after=1):
                        if note.payload == self.repo_id:
                            return True
                return False
            except pg.Error as exc:
                if self._listener is not None:
                    self._listener.close()
                raise CoordinationError(
                    f"cannot listen for claims on {self.location}: {exc}", value=self.location
                ) from exc

    def close(self) -> None:
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
        self._link.close()


__all__ = ["CHANNEL", "PostgresCoordinationStore", "repository_identity"]
