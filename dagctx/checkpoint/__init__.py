"""Checkpoints of a task context and the stores that keep them.

One interface, :class:`BaseCheckpointStore` (:mod:`.base`, with the :class:`Checkpoint`
value), and its backends as siblings that pass the same test suite:
:class:`CheckpointStore` in memory (:mod:`.memory`) and :class:`SQLiteCheckpointStore` in a
SQLite file (:mod:`.sqlite`). This package knows nothing of sessions or graphs.
"""

from dagctx.checkpoint.base import BaseCheckpointStore, Checkpoint
from dagctx.checkpoint.memory import CheckpointStore
from dagctx.checkpoint.sqlite import CHECKPOINT_SCHEMA, SQLiteCheckpointStore
from dagctx.errors import CheckpointError

__all__ = [
    "CHECKPOINT_SCHEMA",
    "BaseCheckpointStore",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "SQLiteCheckpointStore",
]
