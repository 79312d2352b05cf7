"""Checkpoints of a task context and the stores that keep them.

One interface, :class:`BaseCheckpointStore` (:mod:`.base`, with the :class:`Checkpoint`
value), and its backends as siblings that pass the same test suite:
:class:`CheckpointStore` in memory (:mod:`.memory`), :class:`SQLiteCheckpointStore` in a
SQLite file (:mod:`.sqlite`) and :class:`PostgresCheckpointStore` in a PostgreSQL
database (:mod:`.postgres`); :func:`open_checkpoint_store` picks one from a target. This
package knows nothing of sessions or graphs.
"""

import os

from dagctx import _postgres
from dagctx.checkpoint.base import BaseCheckpointStore, Checkpoint
from dagctx.checkpoint.memory import CheckpointStore
from dagctx.checkpoint.postgres import PostgresCheckpointStore
from dagctx.checkpoint.sqlite import CHECKPOINT_SCHEMA, SQLiteCheckpointStore
from dagctx.errors import CheckpointError


def open_checkpoint_store(
    task_id: str, target: str | os.PathLike[str] | None = None
) -> BaseCheckpointStore:
    """The checkpoint store of ``task_id`` at ``target``: a ``postgresql://`` URL gives a
    :class:`PostgresCheckpointStore`, a path a :class:`SQLiteCheckpointStore`; None takes
    the URL in ``DAGCTX_STORE`` and, without one, keeps checkpoints in memory.

    Raises:
        CheckpointError: a bad ``task_id``, or the store cannot be opened.
    """
    url = _postgres.store_url(target)
    if url is not None:
        return PostgresCheckpointStore(url, task_id)
    if target is None:
        return CheckpointStore(task_id)
    return SQLiteCheckpointStore(target, task_id)


__all__ = [
    "CHECKPOINT_SCHEMA",
    "BaseCheckpointStore",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "PostgresCheckpointStore",
    "SQLiteCheckpointStore",
    "open_checkpoint_store",
]
