"""The checkpoint value and the interface every checkpoint store implements.

A :class:`Checkpoint` is an immutable value: the state values, token usage and metadata of
one task at one version. Stores implement one interface, :class:`BaseCheckpointStore`;
the backends are siblings and pass the same test suite:

- :class:`CheckpointStore` keeps checkpoints in memory (deep copies in and out, so no caller
  can change a stored checkpoint);
- :class:`SQLiteCheckpointStore` keeps them in a SQLite file, one row per checkpoint, the
  values as JSON.

Invariants every store keeps:

- versions are 1-based and monotonic per task: ``save`` returns version ``n + 1`` where
  ``n`` is the highest version stored for the task, and stored checkpoints never change;
- a ``save`` that raises stores nothing.

The backends are :mod:`dagctx.checkpoint.memory` and :mod:`dagctx.checkpoint.sqlite`
(durability across processes and crashes is documented there).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from dagctx._validate import is_int
from dagctx.errors import CheckpointError

_FIELDS = ("task_id", "version", "values", "token_usage", "metadata", "created_at")
_REQUIRED_FIELDS = frozenset(_FIELDS) - {"metadata"}


# -- validation shared by checkpoints and stores ---------------------------------------------


def _check_task_id(task_id: object) -> str:
    if not isinstance(task_id, str) or not task_id:
        raise CheckpointError(f"task_id must be a non-empty string, got {task_id!r}", value=task_id)
    return task_id


def _check_str_keys(mapping: object, name: str) -> dict[str, Any]:
    if not isinstance(mapping, Mapping):
        raise CheckpointError(
            f"{name} must be a mapping, got {type(mapping).__name__}", value=mapping
        )
    for key in mapping:
        if not isinstance(key, str):
            raise CheckpointError(f"{name} keys must be strings, got {key!r}", value=key)
    return dict(mapping)


def _check_token_usage(usage: object) -> dict[str, int]:
    checked = _check_str_keys(usage, "token_usage")
    for key, count in checked.items():
        if not is_int(count) or count < 0:
            raise CheckpointError(
                f"token_usage[{key!r}] must be a non-negative int, got {count!r}", value=count
            )
    return checked


def _deep_copy(value: dict[str, Any], name: str) -> dict[str, Any]:
    """Deep-copy ``value`` key by key, so that an error names the key that cannot be copied."""
    copied: dict[str, Any] = {}
    for key, item in value.items():
        try:
            copied[key] = copy.deepcopy(item)
        except Exception as exc:  # deepcopy raises whatever the object's protocol raises
            raise CheckpointError(
                f"{name}[{key!r}] cannot be copied into a checkpoint: "
                f"{type(item).__name__} ({exc})",
                value=item,
            ) from exc
    return copied


# -- the value type ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Immutable snapshot of a task's state values and token usage at one version.

    Construction checks every field and raises :class:`CheckpointError` naming the bad
    value: ``task_id`` a non-empty string, ``version`` an int ≥ 1, ``values`` and
    ``metadata`` dicts with string keys, ``token_usage`` a dict of non-negative ints,
    ``created_at`` a timezone-aware datetime. The dicts are held as given; stores hand
    out private copies.
    """

    task_id: str
    version: int
    values: dict[str, Any]
    token_usage: dict[str, int]
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        _check_task_id(self.task_id)
        if not is_int(self.version):
            raise CheckpointError(
                f"version must be an int, got {self.version!r}", value=self.version
            )
        if self.version < 1:
            raise CheckpointError(f"version must be >= 1, got {self.version}", value=self.version)
        for name in ("values", "metadata"):
            value = getattr(self, name)
            if not isinstance(value, dict):
                raise CheckpointError(
                    f"{name} must be a dict, got {type(value).__name__}", value=value
                )
            _check_str_keys(value, name)
        if not isinstance(self.token_usage, dict):
            raise CheckpointError(
                f"token_usage must be a dict, got {type(self.token_usage).__name__}",
                value=self.token_usage,
            )
        _check_token_usage(self.token_usage)
        if not isinstance(self.created_at, datetime):
            raise CheckpointError(
                f"created_at must be a datetime, got {self.created_at!r}", value=self.created_at
            )
        if self.created_at.utcoffset() is None:
            raise CheckpointError(
                f"created_at must be timezone-aware (UTC), got {self.created_at.isoformat()}",
                value=self.created_at,
            )

    def __hash__(self) -> int:
        # Equal checkpoints share these three fields, so hashing them alone is consistent.
        return hash((self.task_id, self.version, self.created_at))

    def to_dict(self) -> dict[str, Any]:
        """Return the checkpoint as a new dict (deep copies), ``created_at`` as ISO-8601.

        Keys: ``task_id``, ``version``, ``values``, ``token_usage``, ``metadata``,
        ``created_at``. ``Checkpoint.from_dict(cp.to_dict()) == cp``.
        """
        return {
            "task_id": self.task_id,
            "version": self.version,
            "values": _deep_copy(self.values, "values"),
            "token_usage": dict(self.token_usage),
            "metadata": _deep_copy(self.metadata, "metadata"),
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Build a checkpoint from the output of :meth:`to_dict` (values are deep-copied).

        ``created_at`` may be an ISO-8601 string with a UTC offset (``Z`` allowed) or an
        aware datetime; ``metadata`` may be absent.

        Raises:
            CheckpointError: ``data`` is not a mapping, lacks a key, has an unknown key, or
                holds a value of the wrong type or an unparsable date.
        """
        if not isinstance(data, Mapping):
            raise CheckpointError(
                f"checkpoint data must be a mapping, got {type(data).__name__}", value=data
            )
        missing = sorted(_REQUIRED_FIELDS - data.keys())
        if missing:
            raise CheckpointError(f"checkpoint data lacks {', '.join(missing)}", value=missing)
        unknown = sorted(str(key) for key in data.keys() - set(_FIELDS))
        if unknown:
            raise CheckpointError(
                f"checkpoint data has unknown keys {', '.join(unknown)}", value=unknown
            )
        values = _check_str_keys(data["values"], "values")
        metadata = _check_str_keys(data.get("metadata", {}), "metadata")
        return cls(
            task_id=data["task_id"],
            version=data["version"],
            values=_deep_copy(values, "values"),
            token_usage=_check_token_usage(data["token_usage"]),
            metadata=_deep_copy(metadata, "metadata"),
            created_at=_parse_created_at(data["created_at"]),
        )


def _parse_created_at(raw: object) -> datetime:
    if isinstance(raw, datetime):
        return raw
    if not isinstance(raw, str):
        raise CheckpointError(f"created_at must be an ISO-8601 string, got {raw!r}", value=raw)
    try:
        return datetime.fromisoformat(raw)
    except ValueError as exc:
        raise CheckpointError(f"created_at is not an ISO-8601 date: {raw!r}", value=raw) from exc


def _copy_checkpoint(cp: Checkpoint) -> Checkpoint:
    return Checkpoint(
        task_id=cp.task_id,
        version=cp.version,
        values=_deep_copy(cp.values, "values"),
        token_usage=dict(cp.token_usage),
        metadata=_deep_copy(cp.metadata, "metadata"),
        created_at=cp.created_at,
    )


# -- the store interface -----------------------------------------------------------------------


class BaseCheckpointStore(ABC):
    """The interface of every checkpoint store: versioned checkpoints of one task.

    Subclasses implement :meth:`_append` (assign the next version and store atomically),
    :meth:`get`, :meth:`list_versions`, :attr:`version` and :attr:`latest`.
    """

    def __init__(self, task_id: str) -> None:
        """Raises: CheckpointError: ``task_id`` is not a non-empty string."""
        self._task_id = _check_task_id(task_id)

    @property
    def task_id(self) -> str:
        """The task whose checkpoints this store keeps."""
        return self._task_id

    @property
    @abstractmethod
    def version(self) -> int:
        """The highest version stored (0 when empty); equals the number of checkpoints."""

    @property
    @abstractmethod
    def latest(self) -> Checkpoint | None:
        """The checkpoint with the highest version, or ``None`` when the store is empty."""

    @abstractmethod
    def get(self, version: int) -> Checkpoint:
        """Return the checkpoint ``version`` (1-based).

        Raises:
            CheckpointError: no checkpoint has that version.
        """

    @abstractmethod
    def list_versions(self) -> list[int]:
        """Return every stored version, ascending."""

    @abstractmethod
    def _append(
        self,
        values: dict[str, Any],
        token_usage: dict[str, int],
        metadata: dict[str, Any],
        created_at: datetime,
    ) -> Checkpoint:
        """Store a checkpoint under the next version, atomically, and return it."""

    def save(
        self,
        values: Mapping[str, Any],
        token_usage: Mapping[str, int],
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> Checkpoint:
        """Store a new checkpoint of ``values`` and ``token_usage`` and return it.

        The store keeps its own copy: later changes to the arguments (nested ones
        included) or to the returned checkpoint do not reach the stored one.

        Raises:
            CheckpointError: a key is not a string, a count is not a non-negative int, a
                value cannot be stored by this backend; nothing is stored then.
        """
        checked_values = _check_str_keys(values, "values")
        checked_usage = _check_token_usage(token_usage)
        checked_metadata = _check_str_keys({} if metadata is None else metadata, "metadata")
        return self._append(checked_values, checked_usage, checked_metadata, datetime.now(UTC))

    def _missing(self, version: object) -> CheckpointError:
        known = self.list_versions()
        have = f"versions 1..{known[-1]}" if known else "no checkpoints"
        return CheckpointError(
            f"task {self._task_id!r} has no checkpoint version {version!r} ({have})",
            value=version,
        )

    def close(self) -> None:  # noqa: B027 - an optional hook, not an abstract method
        """Release the backend's resources; the in-memory store has none."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.list_versions())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(task_id={self._task_id!r}, checkpoints={len(self)})"


def _is_version(version: object) -> bool:
    return is_int(version)


__all__ = ["BaseCheckpointStore", "Checkpoint", "CheckpointError"]
