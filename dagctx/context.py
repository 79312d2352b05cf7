"""Task contexts: configuration, hierarchical state, fork/merge and token accounting.

A :class:`Context` belongs to one task. It holds an immutable :class:`ContextConfig`, a
:class:`ContextState` (key → value, with a parent chain), cumulative token usage counters
and a checkpoint store. A sub-task gets a child context from :meth:`Context.fork`; when it
is done, :meth:`Context.merge` folds its work back into the parent.

Invariants:

- state reads walk the parent chain, writes and deletes touch only the local level, so a
  child never changes its parent's state before it is merged;
- a child's token counters start as a copy of its parent's at fork time; merging adds the
  child's net usage (current − snapshot at fork) to the parent, once;
- every operation that raises leaves the context, its state and its store as they were.

Presets of :func:`make_config` (other fields keep their defaults; overrides win):

=============  ==============  =================  =================  ================
mode           history_rounds  summary_threshold  offload_threshold  enable_retrieval
=============  ==============  =================  =================  ================
``pilot``      100             100                100                False
``copilot``    20              10                 50                 False
``navigator``  10              5                  20                 True
=============  ==============  =================  =================  ================

``pilot`` automates least (long history, summaries and offloading only late), ``copilot``
is the default configuration (and the default mode of :func:`make_config`), ``navigator``
automates most (retrieval on, summarizes and offloads early).

Contexts are not thread-safe.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator, KeysView, Mapping, MutableMapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dagctx._validate import is_int
from dagctx.checkpoint import BaseCheckpointStore, Checkpoint, CheckpointStore
from dagctx.errors import CheckpointError, ContextError, ContextKeyError

_MISSING: Any = object()


class AutomationMode(StrEnum):
    """How much of context management runs without the user: least to most."""

    PILOT = "pilot"
    COPILOT = "copilot"
    NAVIGATOR = "navigator"


class ContextConfig(BaseModel):
    """Immutable configuration of a task context (shared by reference with its children).

    ``mode`` accepts an :class:`AutomationMode` or its name in any case (``"Navigator"``).
    Counts are strict ints (no bools, floats or strings): ``history_rounds``,
    ``summary_threshold`` and ``offload_threshold`` ≥ 1 with ``summary_threshold ≤
    offload_threshold``; ``token_budget`` is ``None`` or ≥ 1. ``extra`` is a free-form
    dict for the caller (copied at construction; treat it as read-only). Bad values raise
    pydantic's ``ValidationError``; :func:`make_config` turns them into :class:`ContextError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: AutomationMode = AutomationMode.COPILOT
    history_rounds: int = Field(default=20, ge=1, strict=True)
    summary_threshold: int = Field(default=10, ge=1, strict=True)
    offload_threshold: int = Field(default=50, ge=1, strict=True)
    enable_retrieval: bool = Field(default=False, strict=True)
    token_budget: int | None = Field(default=None, ge=1, strict=True)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_by_name(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _summary_before_offload(self) -> ContextConfig:
        if self.summary_threshold > self.offload_threshold:
            raise ValueError(
                f"summary_threshold ({self.summary_threshold}) must not exceed"
                f" offload_threshold ({self.offload_threshold})"
            )
        return self


_PRESETS: dict[AutomationMode, dict[str, Any]] = {
    AutomationMode.PILOT: {
        "history_rounds": 100,
        "summary_threshold": 100,
        "offload_threshold": 100,
        "enable_retrieval": False,
    },
    AutomationMode.COPILOT: {},
    AutomationMode.NAVIGATOR: {
        "history_rounds": 10,
        "summary_threshold": 5,
        "offload_threshold": 20,
        "enable_retrieval": True,
    },
}


def make_config(
    mode: AutomationMode | str = AutomationMode.COPILOT, /, **overrides: Any
) -> ContextConfig:
    """Return the preset configuration of ``mode`` (see the module table) with ``overrides``.

    Raises:
        ContextError: ``mode`` is not a mode, an override names no field, or a value is out
            of range; the message names the offending value.
    """
    try:
        chosen = AutomationMode(mode.lower() if isinstance(mode, str) else mode)
    except ValueError:
        known = ", ".join(m.value for m in AutomationMode)
        raise ContextError(
            f"unknown automation mode {mode!r}; choose one of {known}", value=mode
        ) from None
    settings = [name for name in ContextConfig.model_fields if name != "mode"]
    unknown = sorted(set(overrides) - set(settings))
    if unknown:
        raise ContextError(
            f"make_config has no setting {', '.join(unknown)}; settings: {', '.join(settings)}",
            value=unknown,
        )
    try:
        return ContextConfig(mode=chosen, **{**_PRESETS[chosen], **overrides})
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors())
        raise ContextError(
            f"invalid {chosen.value} configuration: {problems}", value=overrides
        ) from exc


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if where:
        return f"{where}={error['input']!r}: {message}"
    return message


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise ContextError(f"state keys must be strings, got {key!r}", value=key)
    return key


class ContextState(MutableMapping[str, Any]):
    """Key → value state with an optional parent chain: reads inherit, writes isolate.

    Reads (``get``, ``[]``, ``in``, iteration, ``len``, ``to_dict``) see the whole chain,
    the nearest level winning. Writes (``set``, ``[]=``, ``update``) and removals
    (``delete``, ``del``, ``pop``, ``popitem``, ``clear``) touch only this level, so
    removing a local key uncovers the parent's value again. Iteration order is
    deterministic: local keys in insertion order, then the parent's order without the keys
    already seen. Keys are strings. Values are stored by reference (snapshots copy them).
    Equality compares the flattened view with any mapping.
    """

    def __init__(
        self, data: Mapping[str, Any] | None = None, *, parent: ContextState | None = None
    ) -> None:
        """Raises: ContextError: ``parent`` is not a ContextState, or a key is not a string."""
        if parent is not None and not isinstance(parent, ContextState):
            raise ContextError(
                f"parent must be a ContextState, got {type(parent).__name__}", value=parent
            )
        self._parent = parent
        self._data: dict[str, Any] = {}
        if data is not None:
            self.update(data)

    @property
    def parent(self) -> ContextState | None:
        """The state this one inherits from, if any."""
        return self._parent

    def _lookup(self, key: str) -> Any:
        level: ContextState | None = self
        while level is not None:
            if key in level._data:
                return level._data[key]
            level = level._parent
        return _MISSING

    def get(self, key: str, default: Any = None) -> Any:
        """Return the nearest value of ``key`` along the chain, else ``default``."""
        value = self._lookup(key) if isinstance(key, str) else _MISSING
        return default if value is _MISSING else value

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` on this level (the parent's value, if any, is shadowed, not changed).

        Raises: ContextError: ``key`` is not a string.
        """
        self._data[_check_key(key)] = value

    def delete(self, key: str) -> None:
        """Remove the local value of ``key``; a parent's value becomes visible again.

        Raises: ContextKeyError: ``key`` is not set on this level.
        """
        if key not in self._data:
            raise ContextKeyError(self._not_local(key), key=key)
        del self._data[key]

    def _not_local(self, key: object) -> str:
        if key in self:
            return f"state key {key!r} is inherited from the parent; only local keys can be removed"
        return f"state key {key!r} is not set"

    def __getitem__(self, key: str) -> Any:
        value = self._lookup(key) if isinstance(key, str) else _MISSING
        if value is _MISSING:
            raise ContextKeyError(f"state key {key!r} is not set", key=key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        self.delete(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup(key) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        level: ContextState | None = self
        while level is not None:
            for key in level._data:
                if key not in seen:
                    seen.add(key)
                    yield key
            level = level._parent

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def keys(self) -> KeysView[str]:
        """Return a live view of the visible keys: a set (``keys() == {"a", "b"}``,
        ``keys() & other``) that iterates in the state's deterministic order."""
        return KeysView(self)

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        """Remove the local ``key`` and return its value.

        If ``key`` is not local, return ``default`` when given (an inherited value stays).

        Raises: ContextKeyError: ``key`` is not local and no default was given.
        """
        if key in self._data:
            return self._data.pop(key)
        if default is _MISSING:
            raise ContextKeyError(self._not_local(key), key=key)
        return default

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the most recently inserted local item.

        Raises: ContextKeyError: this level holds no data.
        """
        if not self._data:
            raise ContextKeyError("state has no local keys to pop")
        return self._data.popitem()

    def clear(self) -> None:
        """Remove every local key; inherited values stay visible."""
        self._data.clear()

    def update(  # type: ignore[override]
        self, other: Mapping[str, Any] | ContextState | None = None, /, **kwargs: Any
    ) -> None:
        """Set every item of ``other`` then of ``kwargs`` on this level.

        From a :class:`ContextState`, only its local data is taken. All keys are checked
        before anything is written.

        Raises: ContextError: ``other`` is not a mapping, or a key is not a string.
        """
        if other is None:
            items: dict[Any, Any] = {}
        elif isinstance(other, ContextState):
            items = other.local_dict()
        elif isinstance(other, Mapping):
            items = dict(other)
        else:
            raise ContextError(f"update needs a mapping, got {type(other).__name__}", value=other)
        items.update(kwargs)
        for key in items:
            _check_key(key)
        self._data.update(items)

    def local_dict(self) -> dict[str, Any]:
        """Return this level's own data (a new dict, values by reference)."""
        return dict(self._data)

    def to_dict(self) -> dict[str, Any]:
        """Return the flattened view (a new dict in iteration order, nearest level winning)."""
        return {key: self._lookup(key) for key in self}

    def __repr__(self) -> str:
        inherited = [key for key in self if key not in self._data]
        depth = 0
        level = self._parent
        while level is not None:
            depth, level = depth + 1, level._parent
        text = reprlib.Repr()
        text.maxdict = text.maxlist = 8
        text.maxstring = text.maxother = 40
        parts = [text.repr(self._data)]
        if depth:
            parts.append(f"inherited={text.repr(inherited)}")
            parts.append(f"depth={depth}")
        return f"ContextState({', '.join(parts)})"


def _check_task_id(task_id: object) -> str:
    if not isinstance(task_id, str) or not task_id:
        raise ContextError(f"task_id must be a non-empty string, got {task_id!r}", value=task_id)
    return task_id


class Context:
    """The context of one task: config, hierarchical state, token usage, checkpoints.

    ``Context(task_id, parent=p)`` is what ``p.fork(task_id)`` does: the child is
    registered in ``p.children``, shares ``p.config`` (unless ``config`` is given), reads
    ``p.state`` through its own state's parent chain, and starts with a copy of
    ``p.token_usage``. Without ``store``, checkpoints go to a new in-memory
    :class:`CheckpointStore`; a given store (in memory or SQLite) must belong to
    ``task_id``.

    Raises (constructor):
        ContextError: ``task_id`` is empty or not a string, ``config``, ``parent``,
            ``state`` or ``store`` has the wrong type, or the store belongs to another task.
    """

    def __init__(
        self,
        task_id: str,
        *,
        config: ContextConfig | None = None,
        parent: Context | None = None,
        state: ContextState | None = None,
        store: BaseCheckpointStore | None = None,
    ) -> None:
        self._task_id = _check_task_id(task_id)
        for name, value, kind in (
            ("config", config, ContextConfig),
            ("parent", parent, Context),
            ("state", state, ContextState),
            ("store", store, BaseCheckpointStore),
        ):
            if value is not None and not isinstance(value, kind):
                raise ContextError(
                    f"{name} must be a {kind.__name__}, got {type(value).__name__}", value=value
                )
        if store is not None and store.task_id != task_id:
            raise ContextError(
                f"store keeps checkpoints of task {store.task_id!r}, not of {task_id!r}",
                value=store,
            )
        if config is None:
            config = parent.config if parent is not None else ContextConfig()
        if state is None:
            state = ContextState(parent=parent.state if parent is not None else None)
        self._config = config
        self._parent = parent
        self._state = state
        self._store = store if store is not None else CheckpointStore(task_id)
        self._children: list[Context] = []
        self._merged = False
        self._usage_at_fork: dict[str, int] = {}
        self._token_usage: dict[str, int] = {}
        if parent is not None:
            self._usage_at_fork = dict(parent._token_usage)
            self._token_usage = dict(parent._token_usage)
            parent._children.append(self)

    @property
    def task_id(self) -> str:
        """The task identifier."""
        return self._task_id

    @property
    def config(self) -> ContextConfig:
        """The immutable configuration."""
        return self._config

    @property
    def parent(self) -> Context | None:
        """The context this one was forked from, if any (kept after the merge)."""
        return self._parent

    @property
    def state(self) -> ContextState:
        """The hierarchical state."""
        return self._state

    @property
    def children(self) -> list[Context]:
        """The forked children not merged yet, in fork order (a new list)."""
        return list(self._children)

    @property
    def token_usage(self) -> dict[str, int]:
        """Cumulative token counters by metric name (a new dict)."""
        return dict(self._token_usage)

    @property
    def checkpoints(self) -> BaseCheckpointStore:
        """The store that :meth:`snapshot` writes to."""
        return self._store

    def add_tokens(self, usage: Mapping[str, int]) -> None:
        """Add each count of ``usage`` to the counter of the same name.

        Raises:
            ContextError: ``usage`` is not a mapping, a name is not a non-empty string, or
                a count is not a non-negative int (bools are refused); nothing is added.
        """
        if not isinstance(usage, Mapping):
            raise ContextError(
                f"token usage must be a mapping, got {type(usage).__name__}", value=usage
            )
        for name, count in usage.items():
            if not isinstance(name, str) or not name:
                raise ContextError(
                    f"token metric names must be non-empty strings, got {name!r}", value=name
                )
            if not is_int(count) or count < 0:
                raise ContextError(
                    f"token count {name!r} must be a non-negative int, got {count!r}", value=count
                )
        for name, count in usage.items():
            self._token_usage[name] = self._token_usage.get(name, 0) + count

    def fork(self, task_id: str, *, store: BaseCheckpointStore | None = None) -> Context:
        """Return a child context for the sub-task ``task_id`` (see the class docstring).

        Raises: ContextError: as the constructor.
        """
        return Context(task_id, parent=self, store=store)

    def merge(self, child: Context) -> None:
        """Fold ``child`` back in: its local state, then its net token usage.

        The child's local entries overwrite this context's local ones; each of its counters
        adds ``current − value at fork``. The child then leaves :attr:`children` (it stays
        readable). Children of the child that were never merged are not carried over.

        Raises:
            ContextError: ``child`` is not a Context, not a child of this context, or was
                already merged.
        """
        if not isinstance(child, Context):
            raise ContextError(f"merge needs a Context, got {type(child).__name__}", value=child)
        if child._parent is not self:
            raise ContextError(
                f"context {child.task_id!r} is not a child of {self._task_id!r}; merge it"
                " into its own parent",
                value=child,
            )
        if child._merged:
            raise ContextError(
                f"context {child.task_id!r} was already merged into {self._task_id!r}", value=child
            )
        self._state.update(child._state.local_dict())
        for name, count in child._token_usage.items():
            delta = count - child._usage_at_fork.get(name, 0)
            self._token_usage[name] = self._token_usage.get(name, 0) + delta
        self._children = [c for c in self._children if c is not child]
        child._merged = True

    def snapshot(self, *, metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Save the flattened state and the token usage to :attr:`checkpoints`; return it.

        The checkpoint holds deep copies: later changes to the live state, nested values
        included, do not reach it.

        Raises:
            CheckpointError: the store cannot hold a value (e.g. a SQLite store and a value
                JSON cannot hold); nothing is saved.
        """
        return self._store.save(self._state.to_dict(), self._token_usage, metadata=metadata)

    @classmethod
    def restore(
        cls,
        checkpoint: Checkpoint,
        *,
        config: ContextConfig | None = None,
        store: BaseCheckpointStore | None = None,
    ) -> Context:
        """Rebuild a root context (no parent) from ``checkpoint``.

        The new context has the checkpoint's task id, a deep copy of its values as local
        state, its token usage, ``config`` (default ``ContextConfig()``) and ``store``
        (default a new in-memory store; pass the original store to continue its versions).

        Raises:
            CheckpointError: ``checkpoint`` is not a Checkpoint.
            ContextError: ``config`` or ``store`` is unsuitable (see the constructor).
        """
        if not isinstance(checkpoint, Checkpoint):
            raise CheckpointError(
                f"restore needs a Checkpoint, got {type(checkpoint).__name__}; use"
                " Checkpoint.from_dict for serialized data",
                value=checkpoint,
            )
        values = checkpoint.to_dict()["values"]  # a deep copy
        context = cls(checkpoint.task_id, config=config, state=ContextState(values), store=store)
        context._token_usage = dict(checkpoint.token_usage)
        return context

    def __repr__(self) -> str:
        return (
            f"Context(task_id={self._task_id!r}, mode={self._config.mode.value},"
            f" state_keys={len(self._state)}, children={len(self._children)},"
            f" token_usage={self._token_usage})"
        )


__all__ = [
    "AutomationMode",
    "Context",
    "ContextConfig",
    "ContextError",
    "ContextKeyError",
    "ContextState",
    "make_config",
]
