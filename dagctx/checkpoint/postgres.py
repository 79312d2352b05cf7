"""PostgresCheckpointStore: the checkpoints of a task in a PostgreSQL database.

A sibling of :class:`~dagctx.checkpoint.SQLiteCheckpointStore` behind the same
:class:`~dagctx.checkpoint.BaseCheckpointStore` interface, for agents on several machines
(import it from :mod:`dagctx.checkpoint`). One row per checkpoint in table
``dagctx_checkpoints`` (key ``task_id, version``), values as strict JSON text
(:mod:`dagctx._json`), exactly as the SQLite store keeps them. Each ``save`` is one
transaction that first takes a transaction-scoped advisory lock on the task, so
concurrent writers (any process, any machine) get consecutive versions and never the
same one; a checkpoint is durable once ``save`` returned (the server's commit). A
connection that broke is reopened by the next call (:class:`dagctx._postgres.Link`).

Must not import sessions or graphs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dagctx import _postgres
from dagctx._json import decode_json, encode_json
from dagctx.checkpoint.base import BaseCheckpointStore, Checkpoint
from dagctx.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

_SCHEMA = 1
_TABLES = """
CREATE TABLE IF NOT EXISTS dagctx_checkpoints (
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    created_at TEXT NOT NULL,
    state_values TEXT NOT NULL,
    token_usage TEXT NOT NULL,
    metadata TEXT NOT NULL,
    PRIMARY KEY (task_id, version)
)"""
_COLUMNS = "task_id, version, created_at, state_values, token_usage, metadata"
_TASK_LOCKS = 0x63707400  # first key of the per-task advisory locks ("cpt")


def _prepare(conn: psycopg.Connection[Any]) -> None:
    where = _postgres.redact(conn.info.dsn)
    _postgres.install(conn, "checkpoint", _SCHEMA, _TABLES, CheckpointError, where)


class PostgresCheckpointStore(BaseCheckpointStore):
    """Checkpoints of one task in the PostgreSQL database at ``url``.

    Values must survive a JSON round trip unchanged (as for the SQLite store); a
    ``task_id`` holding a NUL character cannot be stored as PostgreSQL text and is
    refused. Call :meth:`close` (or use ``with``) when done.

    Raises (constructor):
        CheckpointError: a bad ``task_id``, the server cannot be reached, or the database
            holds another checkpoint schema version.
    """

    def __init__(self, url: str, task_id: str) -> None:
        super().__init__(task_id)
        if "\x00" in task_id:
            raise CheckpointError(f"task_id {task_id!r} holds a NUL character", value=task_id)
        try:
            task_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CheckpointError(
                f"task_id {task_id!r} cannot be stored as UTF-8 text", value=task_id
            ) from exc
        self._link = _postgres.Link(url, CheckpointError, noun="checkpoint store", prepare=_prepare)

    @property
    def url(self) -> str:
        """The database URL, without its password."""
        return self._link.where

    def _rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        action = f"read checkpoints of task {self._task_id!r}"
        with self._link.transaction(action) as conn:
            return conn.execute(sql, (self._task_id, *params)).fetchall()

    @property
    def version(self) -> int:
        rows = self._rows(
            "SELECT COALESCE(MAX(version), 0) FROM dagctx_checkpoints WHERE task_id = %s"
        )
        return int(rows[0][0])

    @property
    def latest(self) -> Checkpoint | None:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM dagctx_checkpoints WHERE task_id = %s"
            " ORDER BY version DESC LIMIT 1"
        )
        return self._decode(rows[0]) if rows else None

    def get(self, version: int) -> Checkpoint:
        valid = isinstance(version, int) and not isinstance(version, bool)
        rows = (
            self._rows(
                f"SELECT {_COLUMNS} FROM dagctx_checkpoints WHERE task_id = %s AND version = %s",
                version,
            )
            if valid and -(2**31) <= version < 2**31
            else []
        )
        if not rows:
            raise self._missing(version)
        return self._decode(rows[0])

    def list_versions(self) -> list[int]:
        rows = self._rows(
            "SELECT version FROM dagctx_checkpoints WHERE task_id = %s ORDER BY version"
        )
        return [int(row[0]) for row in rows]

    def _append(
        self,
        values: dict[str, Any],
        token_usage: dict[str, int],
        metadata: dict[str, Any],
        created_at: datetime,
    ) -> Checkpoint:
        encoded_values = encode_json(values, "values")
        encoded_metadata = encode_json(metadata, "metadata")
        action = f"save a checkpoint of task {self._task_id!r}"
        with self._link.transaction(action) as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_TASK_LOCKS, self._task_id)
            )
            row = conn.execute(
                f"INSERT INTO dagctx_checkpoints ({_COLUMNS})"
                " SELECT %s, COALESCE(MAX(version), 0) + 1, %s, %s, %s, %s"
                " FROM dagctx_checkpoints WHERE task_id = %s RETURNING version",
                (
                    self._task_id,
                    created_at.isoformat(),
                    encoded_values,
                    json.dumps(token_usage),
                    encoded_metadata,
                    self._task_id,
                ),
            ).fetchone()
        assert row is not None  # INSERT ... SELECT of an aggregate inserts one row
        return Checkpoint(
            task_id=self._task_id,
            version=int(row[0]),
            values=json.loads(encoded_values),
            token_usage=dict(token_usage),
            metadata=json.loads(encoded_metadata),
            created_at=created_at,
        )

    def _decode(self, row: tuple[Any, ...]) -> Checkpoint:
        task_id, version, created_at, values, token_usage, metadata = row
        try:
            return Checkpoint.from_dict(
                {
                    "task_id": task_id,
                    "version": version,
                    "values": decode_json(values),
                    "token_usage": decode_json(token_usage),
                    "metadata": decode_json(metadata),
                    "created_at": created_at,
                }
            )
        except (ValueError, TypeError, CheckpointError) as exc:
            raise CheckpointError(
                f"checkpoint version {version!r} of task {task_id!r} in {self.url} is"
                f" corrupt: {exc}",
                value=version,
            ) from exc

    def close(self) -> None:
        """Close the connection; later calls raise :class:`CheckpointError`. Idempotent."""
        self._link.close()

    def __repr__(self) -> str:
        count = "closed" if self._link.closed else f"checkpoints={len(self)}"
        return f"PostgresCheckpointStore(url={self.url!r}, task_id={self._task_id!r}, {count})"


__all__ = ["PostgresCheckpointStore"]
