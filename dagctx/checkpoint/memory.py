"""CheckpointStore: the checkpoints of a task, kept in memory (not thread-safe)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dagctx.checkpoint.base import (
    BaseCheckpointStore,
    Checkpoint,
    _copy_checkpoint,
    _deep_copy,
    _is_version,
)


class CheckpointStore(BaseCheckpointStore):
    """Checkpoints of one task, kept in memory for the life of the process.

    Any deep-copyable value can be stored. ``save`` stores a deep copy; ``get`` and
    ``latest`` return fresh deep copies, equal to (not identical with) what ``save``
    returned.
    """

    def __init__(self, task_id: str) -> None:
        """Raises: CheckpointError: ``task_id`` is not a non-empty string."""
        super().__init__(task_id)
        self._checkpoints: list[Checkpoint] = []

    @property
    def version(self) -> int:
        return len(self._checkpoints)

    @property
    def latest(self) -> Checkpoint | None:
        return _copy_checkpoint(self._checkpoints[-1]) if self._checkpoints else None

    def get(self, version: int) -> Checkpoint:
        if not _is_version(version) or not 1 <= version <= len(self._checkpoints):
            raise self._missing(version)
        return _copy_checkpoint(self._checkpoints[version - 1])

    def list_versions(self) -> list[int]:
        return list(range(1, len(self._checkpoints) + 1))

    def __len__(self) -> int:
        return len(self._checkpoints)

    def _append(
        self,
        values: dict[str, Any],
        token_usage: dict[str, int],
        metadata: dict[str, Any],
        created_at: datetime,
    ) -> Checkpoint:
        stored = Checkpoint(
            task_id=self._task_id,
            version=len(self._checkpoints) + 1,
            values=_deep_copy(values, "values"),
            token_usage=token_usage,
            metadata=_deep_copy(metadata, "metadata"),
            created_at=created_at,
        )
        self._checkpoints.append(stored)
        return _copy_checkpoint(stored)


__all__ = ["CheckpointStore"]
