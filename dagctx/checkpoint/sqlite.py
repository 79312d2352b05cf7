"""SQLiteCheckpointStore: the checkpoints of a task in a SQLite file.

A sibling of the in-memory :class:`~dagctx.checkpoint.CheckpointStore` behind the same
:class:`~dagctx.checkpoint.BaseCheckpointStore` interface (import it from
:mod:`dagctx.checkpoint`, which re-exports it). For any number of processes using one file
(opened by :mod:`dagctx._sqlite`: WAL journal, busy timeout, ``synchronous=FULL``, the
``checkpoint_schema`` row in ``dagctx_meta``): each ``save`` is one ``BEGIN IMMEDIATE``
transaction, so two writers never receive the same version; versions continue across
process restarts; and once ``save`` has returned, the checkpoint survives a kill of the
process at any later instant. Values are stored as strict JSON (:mod:`dagctx._json`). The
store guards its connection with a lock, so threads may share one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from dagctx import _sqlite
from dagctx._json import decode_json, encode_json
from dagctx._validate import is_int
from dagctx.checkpoint.base import BaseCheckpointStore, Checkpoint
from dagctx.errors import CheckpointError

CHECKPOINT_SCHEMA = 1
"""Version of the SQLite layout written by :class:`SQLiteCheckpointStore`."""

_LAYOUT = _sqlite.Layout(
    component="checkpoint",
    version=CHECKPOINT_SCHEMA,
    tables="""
CREATE TABLE IF NOT EXISTS context_checkpoints (
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    created_at TEXT NOT NULL,
    state_values TEXT NOT NULL,
    token_usage TEXT NOT NULL,
    metadata TEXT NOT NULL,
    PRIMARY KEY (task_id, version)
)""",
    noun="checkpoint file",
    elsewhere="keep the checkpoints in another file",
    error=CheckpointError,
)

_COLUMNS = "task_id, version, created_at, state_values, token_usage, metadata"


class SQLiteCheckpointStore(BaseCheckpointStore):
    """Checkpoints of one task in a SQLite file, durable across processes and crashes.

    One row per checkpoint in table ``context_checkpoints`` (key ``task_id, version``),
    values, token usage and metadata as JSON. Values must survive a JSON round trip
    unchanged: ``None``, bools, ints, finite floats, strings, lists and dicts with string
    keys; anything else (tuples, sets, NaN, objects) raises :class:`CheckpointError`
    naming where it sits, and nothing is stored. Several stores (of one or more tasks, in
    one or more processes) may share a file; ``timeout`` is how long a writer waits for
    another one's lock. The parent directory is created if needed. Call :meth:`close` (or
    use ``with``) when done.

    Raises (constructor):
        CheckpointError: ``task_id`` is empty, the file cannot be opened, is not a SQLite
            database, is the database of another application (it is left untouched), or
            was written by another checkpoint schema version.
    """

    def __init__(
        self, path: str | os.PathLike[str], task_id: str, *, timeout: float = 30.0
    ) -> None:
        super().__init__(task_id)
        try:
            task_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CheckpointError(
                f"task_id {task_id!r} cannot be stored as UTF-8 text", value=task_id
            ) from exc
        self._path = Path(path)
        self._where = repr(str(self._path))
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = _sqlite.open_store(
            self._path, _LAYOUT, timeout=timeout, threads=True
        )

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    @contextmanager
    def _connection(self, action: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and the open connection; turn SQLite errors into CheckpointError."""
        with self._lock:
            if self._conn is None:
                raise CheckpointError(
                    f"checkpoint store on {self._where} is closed", value=self._path
                )
            try:
                yield self._conn
            except (sqlite3.Error, UnicodeDecodeError) as exc:  # bad text bytes in a row too
                raise CheckpointError(
                    f"cannot {action} task {self._task_id!r} in {self._where}: {exc}",
                    value=self._path,
                ) from exc

    def _rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self._connection("read checkpoints of") as conn:
            return conn.execute(sql, (self._task_id, *params)).fetchall()

    @property
    def version(self) -> int:
        rows = self._rows(
            "SELECT COALESCE(MAX(version), 0) FROM context_checkpoints WHERE task_id = ?"
        )
        return self._checked_version(rows[0][0])

    @property
    def latest(self) -> Checkpoint | None:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM context_checkpoints WHERE task_id = ?"
            " ORDER BY version DESC LIMIT 1"
        )
        return self._decode(rows[0]) if rows else None

    def get(self, version: int) -> Checkpoint:
        rows = (
            self._rows(
                f"SELECT {_COLUMNS} FROM context_checkpoints WHERE task_id = ? AND version = ?",
                version,
            )
            if is_int(version)
            else []
        )
        if not rows:
            raise self._missing(version)
        return self._decode(rows[0], version)

    def list_versions(self) -> list[int]:
        rows = self._rows(
            "SELECT version FROM context_checkpoints WHERE task_id = ? ORDER BY version"
        )
        return [self._checked_version(row[0]) for row in rows]

    def _checked_version(self, value: object) -> int:
        """A version read from the file; a damaged file may hold anything there."""
        if not is_int(value):
            raise CheckpointError(
                f"{self._where} is corrupt: task {self._task_id!r} has a version {value!r}",
                value=value,
            )
        return value

    def _append(
        self,
        values: dict[str, Any],
        token_usage: dict[str, int],
        metadata: dict[str, Any],
        created_at: datetime,
    ) -> Checkpoint:
        encoded_values = encode_json(values, "values")
        encoded_metadata = encode_json(metadata, "metadata")
        with self._connection("save a checkpoint of") as conn, _sqlite.transaction(conn):
            (version,) = conn.execute(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM context_checkpoints WHERE task_id = ?",
                (self._task_id,),
            ).fetchone()
            conn.execute(
                f"INSERT INTO context_checkpoints ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self._task_id,
                    version,
                    created_at.isoformat(),
                    encoded_values,
                    json.dumps(token_usage),
                    encoded_metadata,
                ),
            )
        return Checkpoint(
            task_id=self._task_id,
            version=int(version),
            values=json.loads(encoded_values),
            token_usage=dict(token_usage),
            metadata=json.loads(encoded_metadata),
            created_at=created_at,
        )

    def _decode(self, row: tuple[Any, ...], wanted: int | None = None) -> Checkpoint:
        task_id, version, created_at, values, token_usage, metadata = row
        try:
            # A damaged file can hand back another row than the index promised.
            if task_id != self._task_id or (wanted is not None and version != wanted):
                raise ValueError(f"the row read is task {task_id!r} version {version!r}")
            data = {
                "task_id": task_id,
                "version": version,
                "values": decode_json(values),
                "token_usage": decode_json(token_usage),
                "metadata": decode_json(metadata),
                "created_at": created_at,
            }
            return Checkpoint.from_dict(data)
        except (ValueError, TypeError, CheckpointError) as exc:
            raise CheckpointError(
                f"checkpoint version {version!r} of task {task_id!r} in {self._where} is"
                f" corrupt: {exc}",
                value=version,
            ) from exc

    def close(self) -> None:
        """Close the connection; later calls raise :class:`CheckpointError`. Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        count = "closed" if self._conn is None else f"checkpoints={len(self)}"
        return f"SQLiteCheckpointStore(path={self._where}, task_id={self._task_id!r}, {count})"


__all__ = ["CHECKPOINT_SCHEMA", "SQLiteCheckpointStore"]
