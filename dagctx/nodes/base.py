"""The node base class, node states, tick frequencies and change traces.

A :class:`Node` owns its content and knows how to render it at each :class:`NodeState`.
It does not own structure: parents and children live in the :class:`~dagctx.graph.ContextGraph`
the node belongs to (which keeps a node's parent ids in the node's ``_parent_ids`` slot,
written only by the graph's adjacency (graph/_adjacency.py): a slot costs less than a
dict entry; likewise its ``_entry`` slot holds the index of its first entry in the last
projection layout built of it, written only by :class:`~dagctx.projection.layout.Layout`).
Every change to what a node renders goes through :meth:`Node.mark_changed`, which bumps
:attr:`Node.version` by one and lets the graph record a :class:`Trace` and notify the
ancestors, so caches keyed by ``(id, version, state)`` are always valid. The one render
that may also depend on where the node is, :meth:`Node.render_section` of a type that
declares itself :attr:`~Node.placed`, is followed by the graph instead: it lists the
placed nodes whose parents change (:meth:`~dagctx.graph.ContextGraph.take_moved`).

Subclasses set ``type_name`` (which registers them for :meth:`Node.from_dict`), implement
:meth:`render_state`, :meth:`data_dict` and :meth:`from_data`, and, if their content comes
from outside, :meth:`recompute` (returning whether the content changed: early cutoff).
A type whose nodes a session holds by the thousand (file nodes) may also be saved as one
block of columns (:meth:`Node.to_columns`, :meth:`Node.from_columns`): each field is
checked once per column, not once per node.

Fields that nearly every node leaves at their default (an own priority, tags, the paused
mode; a text node's redaction marks and flags) are :class:`Extra` attributes: they live in one
:class:`NodeExtras` record per node, made when one of them first takes another value and
dropped when all are back at their defaults, so a node that has none pays one slot for
all of them.
"""

from __future__ import annotations

import enum
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, overload

from dagctx._validate import is_finite, is_int
from dagctx.errors import GraphError, NodeFieldError
from dagctx.nodes.registry import register_node_type, resolve_node_type

if TYPE_CHECKING:
    from dagctx.graph import ContextGraph


class NodeState(enum.IntEnum):
    """How much of a node the projection shows, in increasing detail."""

    HIDDEN = 0
    COLLAPSED = 1
    SUMMARY = 2
    DETAILS = 3
    ALL = 4

    @classmethod
    def parse(cls, value: NodeState | str | int) -> NodeState:
        """Return the state named or numbered by ``value``.

        Raises:
            NodeFieldError: ``value`` names no state.
        """
        if isinstance(value, NodeState):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        if is_int(value) and 0 <= value <= 4:
            return cls(value)
        names = ", ".join(cls.__members__)
        raise NodeFieldError(
            f"unknown node state {value!r}; expected one of {names}", field="state", value=value
        )


@dataclass(frozen=True, slots=True)
class TickFrequency:
    """When a running node is recomputed: every turn, every ``seconds``, or never."""

    kind: Literal["turn", "period", "never"]
    seconds: float = 0.0

    @classmethod
    def turn(cls) -> TickFrequency:
        """Recompute at every tick."""
        return cls("turn")

    @classmethod
    def period(cls, seconds: float) -> TickFrequency:
        """Recompute at a tick when at least ``seconds`` passed since the last recompute.

        Raises:
            NodeFieldError: ``seconds`` is not a positive, finite number.
        """
        if not is_finite(seconds) or seconds <= 0:
            raise NodeFieldError(
                f"period must be a positive number of seconds, got {seconds!r}",
                field="frequency",
                value=seconds,
            )
        return cls("period", float(seconds))

    @classmethod
    def never(cls) -> TickFrequency:
        """Never recompute on tick (content changes only through explicit calls)."""
        return cls("never")

    def is_due(self, now: float, last_run: float | None) -> bool:
        """Whether a node last recomputed at ``last_run`` is due at time ``now``."""
        if self.kind == "turn":
            return True
        if self.kind == "never":
            return False
        return last_run is None or now - last_run >= self.seconds

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TickFrequency:
        kind = data.get("kind")
        if kind == "period":
            return cls.period(data.get("seconds", 0.0))
        if kind in ("turn", "never"):
            return cls(kind)
        raise NodeFieldError(f"unknown tick frequency {data!r}", field="frequency", value=data)


_V = TypeVar("_V")

#: Node times within this many seconds of the last one taken are that one (one float
#: for the thousands of nodes a scan makes in a second, not 24 bytes each).
TIME_GRAIN = 0.001
_last_time = [0.0]


def _now() -> float:
    """``time.time()``, or the float this gave last when that is less than
    :data:`TIME_GRAIN` older."""
    now = time.time()
    last = _last_time[0]
    if 0.0 <= now - last < TIME_GRAIN:
        return last
    _last_time[0] = now
    return now


class NodeExtras:
    """The :class:`Extra` fields of one node (see the module docstring). A node type
    with extras of its own subclasses it, adding their slots and defaults to
    :attr:`DEFAULTS`, and names it in :attr:`Node.extras_type`."""

    __slots__ = ("_priority", "_tags", "mode")
    _priority: int | None
    _tags: set[str] | None
    mode: Literal["running", "paused"]
    #: Each field's default, by slot name: a record whose fields all hold theirs is
    #: dropped (compared by identity: None, False, 0, the interned "running").
    DEFAULTS: ClassVar[dict[str, Any]] = {"_priority": None, "_tags": None, "mode": "running"}

    def __init__(self) -> None:
        for name, value in self.DEFAULTS.items():
            setattr(self, name, value)

    def is_default(self) -> bool:
        """Whether every field holds its default."""
        return all(getattr(self, name) is value for name, value in self.DEFAULTS.items())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.DEFAULTS)

    __hash__ = None  # type: ignore[assignment]


class Extra(Generic[_V]):
    """A node attribute kept in the node's :class:`NodeExtras` record (``node._extras``)
    under the same name: its default while the node has no record; setting another value
    makes the record, setting the default back drops it once all its fields are."""

    __slots__ = ("default", "name")

    def __init__(self, default: _V) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, node: None, owner: type[Any]) -> Extra[_V]: ...
    @overload
    def __get__(self, node: Node, owner: type[Any]) -> _V: ...
    def __get__(self, node: Node | None, owner: type[Any]) -> Any:
        if node is None:
            return self
        extras = node._extras
        return self.default if extras is None else getattr(extras, self.name)

    def __set__(self, node: Node, value: _V) -> None:
        extras = node._extras
        if value is self.default:
            if extras is not None:
                setattr(extras, self.name, value)
                if extras.is_default():
                    node._extras = None
            return
        if extras is None:
            extras = node._extras = node.extras_type()
        setattr(extras, self.name, value)


@dataclass(frozen=True, slots=True)
class Trace:
    """One recorded change of one node: the version step and why it happened."""

    node_id: str
    old_version: int
    new_version: int
    description: str
    at: float
    #: True for a change derived from a descendant's change (a group's summary going
    #: stale); the projection's "changes since last turn" lists only direct changes.
    derived: bool = False


class Node:
    """Base class of every context node.

    Attributes:
        id: stable, readable id unique in its graph (``text_3``); assigned by the graph.
        version: starts at 0; +1 for every change of what the node renders.
        state: the requested :class:`NodeState` (the projection may degrade it).
        mode: ``"running"`` (recomputed when its frequency is due) or ``"paused"``.
        frequency: the node's :class:`TickFrequency`.
        priority: higher survives budget pressure longer; ``None`` uses the type default.
        tags: free-form labels.
        created_at / updated_at: wall-clock seconds, to :data:`TIME_GRAIN` (nodes made or
            changed within it of each other share one float).
        seq: the graph's logical clock at the last change (recency, deterministic).
    """

    type_name: ClassVar[str] = "node"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 50
    default_frequency: ClassVar[TickFrequency] = TickFrequency.never()
    #: Volatile nodes change nearly every turn; the projection renders them last.
    volatile: ClassVar[bool] = False
    #: States at which the projection walks into the node's children.
    expands_at: ClassVar[frozenset[NodeState]] = frozenset({NodeState.DETAILS, NodeState.ALL})
    #: Whether :meth:`render_section` depends on the node's parents (the graph then
    #: lists the node when they change: :meth:`~dagctx.graph.ContextGraph.take_moved`).
    placed: ClassVar[bool] = False

    #: The record of the type's :class:`Extra` fields.
    extras_type: ClassVar[type[NodeExtras]] = NodeExtras

    __slots__ = (
        "__weakref__",
        "_entry",
        "_extras",
        "_parent_ids",
        "created_at",
        "frequency",
        "graph",
        "id",
        "last_run",
        "seq",
        "state",
        "updated_at",
        "version",
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type_name" in cls.__dict__:
            register_node_type(cls.type_name, cls)

    def __init__(
        self,
        *,
        id: str | None = None,
        state: NodeState | str | None = None,
        priority: int | None = None,
        frequency: TickFrequency | None = None,
        tags: Iterable[str] = (),
        mode: Literal["running", "paused"] = "running",
    ) -> None:
        if priority is not None and not is_int(priority):
            raise NodeFieldError(
                f"priority must be an int, got {priority!r}", field="priority", value=priority
            )
        if mode not in ("running", "paused"):
            raise NodeFieldError(
                f"mode must be 'running' or 'paused', got {mode!r}", field="mode", value=mode
            )
        self._extras: NodeExtras | None = None
        self._entry = -1  # a projection layout's (see the module docstring)
        self._parent_ids: tuple[str, ...] = ()  # the graph's (see the module docstring)
        self.id: str = id or ""
        self.version = 0
        self.state = self.default_state if state is None else NodeState.parse(state)
        self.mode = _MODES[mode]  # the interned value: "running" is the Extra's default
        self.frequency = frequency or self.default_frequency
        self._priority = priority
        self._tags: set[str] | None = set(tags) or None  # most nodes have none: no set
        self.created_at = self.updated_at = _now()
        self.graph: ContextGraph | None = None
        self.last_run: float | None = None
        self.seq = 0

    _priority: Extra[int | None] = Extra(None)
    _tags: Extra[set[str] | None] = Extra(None)
    mode: Extra[Literal["running", "paused"]] = Extra("running")  # paused: rare

    # -- identity and structure -------------------------------------------------------

    @property
    def priority(self) -> int:
        """The node's priority: its own if set, else the type default."""
        extras = self._extras  # read here, not through Extra: the degrade order reads
        own = None if extras is None else extras._priority  # it for every node
        return self.default_priority if own is None else own

    @priority.setter
    def priority(self, value: int | None) -> None:
        if value is not None and not is_int(value):
            raise NodeFieldError(
                f"priority must be an int or None, got {value!r}", field="priority", value=value
            )
        if value != self._priority:
            self._priority = value
            self.mark_changed(f"priority: {value}")

    @property
    def tags(self) -> set[str]:
        """The node's labels (a mutable set)."""
        if self._tags is None:
            self._tags = set()
        return self._tags

    @tags.setter
    def tags(self, value: Iterable[str]) -> None:
        self._tags = set(value) or None  # no set while there are none

    def has_tag(self, tag: str) -> bool:
        """Whether the node carries ``tag`` (without giving it a set of tags, as reading
        :attr:`tags` does)."""
        return self._tags is not None and tag in self._tags

    @property
    def parents(self) -> list[Node]:
        """The node's parents (empty outside a graph)."""
        return self.graph.parents(self) if self.graph is not None else []

    @property
    def children(self) -> list[Node]:
        """The node's children in order (empty outside a graph)."""
        return self.graph.children(self) if self.graph is not None else []

    def label(self) -> str:
        """A short human-readable name (a path, a title) used in references and tables."""
        return self.id

    def safety_note(self) -> str | None:
        """What the node holds back from the prompt for safety (a withheld secret-bearing
        file, redacted secrets), for :meth:`Projection.explain`; None when nothing."""
        return None

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.id or '(unattached)'} v{self.version} {self.state.name}>"
        )

    # -- change -----------------------------------------------------------------------

    def mark_changed(self, description: str, *, derived: bool = False) -> Trace:
        """Record a change: version + 1, a :class:`Trace`, and notification of all ancestors.

        Inside a graph batch (a tick) the ancestors are notified once when the batch ends.
        ``derived`` marks a change caused by a descendant's change.
        """
        old = self.version
        self.version = old + 1
        self.updated_at = _now()
        if type(description) is str:  # one string for the many equal descriptions a
            description = sys.intern(description)  # trace log holds ("linked 10 children")
        trace = Trace(self.id, old, self.version, description, self.updated_at, derived)
        if self.graph is not None:
            self.graph.record_change(self, trace)
        return trace

    def notify_parents(self, description: str) -> None:
        """Notify every ancestor of a change of this node (each exactly once)."""
        if self.graph is not None:
            self.graph.notify_ancestors(self, description)

    def on_child_changed(self, child: Node, description: str) -> None:
        """Called once per change (or per tick batch) when a descendant changed.

        ``child`` is the direct child through which the change arrived. The default does
        nothing; containers override it (a group's summary goes stale).
        """

    def set_state(self, state: NodeState | str) -> None:
        """Request a rendering state; a change of state is a change (version + 1).

        Raises:
            NodeFieldError: ``state`` names no state.
        """
        new = NodeState.parse(state)
        if new != self.state:
            old, self.state = self.state, new
            self.mark_changed(f"state: {old.name} → {new.name}")

    def run(self, frequency: TickFrequency | None = None) -> None:
        """Put the node in running mode, optionally with a new frequency."""
        self.mode = "running"
        if frequency is not None:
            self.frequency = frequency
        if self.graph is not None:
            self.graph.schedule_changed(self)

    def pause(self) -> None:
        """Stop recomputing the node on tick (its content stays as it is)."""
        self.mode = "paused"
        if self.graph is not None:
            self.graph.schedule_changed(self)

    def watch_path(self) -> str | None:
        """The absolute path of the one file :meth:`recompute` reads, for a session to
        learn of its changes from the OS instead of recomputing the node every tick
        (:mod:`dagctx.session.parts.files`); None (the default): recomputed when due."""
        return None

    def recompute(self) -> bool:
        """Refresh the content from its source; return whether it changed.

        Implementations call :meth:`mark_changed` only when the content really differs
        (early cutoff). The base node has no source and returns ``False``.
        """
        return False

    # -- rendering --------------------------------------------------------------------

    def render(self, state: NodeState | None = None) -> str:
        """Return the node's own text at ``state`` (default: its requested state).

        HIDDEN renders as the empty string. Children are not included: the projection
        walks them itself.
        """
        state = self.state if state is None else state
        if state == NodeState.HIDDEN:
            return ""
        return self.render_state(state)

    def render_state(self, state: NodeState) -> str:
        """Render the node at a visible ``state``; subclasses override."""
        return f"{self.type_name} {self.id}"

    def render_section(self, state: NodeState) -> str:
        """The node's section in a projection at a visible ``state``: :meth:`render_state`
        unless the node's place says part of it already (a file listed under the heading
        of its directory, :class:`~dagctx.nodes.text.TextNode`); a type whose section
        depends on its parents declares itself :attr:`placed`."""
        return self.render_state(state)

    def least_chars(self, state: NodeState) -> int | None:
        """A lower bound on the length of :meth:`render` at ``state`` known without
        rendering (for a node whose render would first have to read its content), or
        None (the default): render it to measure."""
        return None

    def companions(self) -> tuple[str, ...]:
        """Ids of nodes the projection must keep or drop together with this one (a tool
        call and its result). The default has none."""
        return ()

    def min_state(self) -> NodeState:
        """The lowest visible state the projection may degrade this node to."""
        return NodeState.COLLAPSED

    def focus_text(self) -> str | None:
        """The focus this node sets when it is the newest node that sets one (a user
        message, the session's focus; ``""`` clears it), or None: it sets none."""
        return None

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        """The type-specific part of :meth:`to_dict` (JSON-serialisable)."""
        return {}

    def snapshot(self) -> dict[str, Any] | None:
        """What the node read from outside, for :meth:`from_snapshot` to restore it
        without reading again (JSON values); None (the default) when it has nothing to
        offer, and it is rebuilt by :meth:`from_data`."""
        return None

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], snapshot: dict[str, Any]) -> Node:
        """Rebuild a node from :meth:`data_dict` output and its :meth:`snapshot`; the
        default ignores the snapshot (:meth:`from_data`)."""
        return cls.from_data(data)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Node:
        """Build a node of this type from :meth:`data_dict` output."""
        return cls()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict that :meth:`Node.from_dict` turns back into this node."""
        return {
            "type": self.type_name,
            "id": self.id,
            "version": self.version,
            "state": self.state.name,
            "mode": self.mode,
            "frequency": self.frequency.to_dict(),
            "priority": self._priority,
            "tags": sorted(self._tags or ()),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "data": self.data_dict(),
        }

    #: True for a type whose :meth:`from_data` refuses every value its rendering could
    #: fail on (so :meth:`from_dict` need not render it at every state to check).
    data_checked: ClassVar[bool] = False
    #: The type's own columns in :meth:`to_columns` (the keys of :meth:`data_dict` and of
    #: :meth:`snapshot`, in that order), for a type whose nodes with a snapshot can be
    #: saved as one block of columns; empty (the default): saved one by one.
    column_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def to_columns(cls, saved: Sequence[tuple[Node, dict[str, Any]]]) -> dict[str, list[Any]]:
        """Nodes of this type with their :meth:`snapshot` as columns: one list per field,
        the common ones (:data:`COMMON_COLUMNS`, as :meth:`to_dict` writes them) then
        :attr:`column_keys` (:meth:`data_dict` then the snapshot); :meth:`from_columns`
        rebuilds them."""
        columns: dict[str, list[Any]] = {key: [] for key in (*COMMON_COLUMNS, *cls.column_keys)}
        common = [columns[key] for key in COMMON_COLUMNS]
        own = [columns[key] for key in cls.column_keys]
        for node, snapshot in saved:
            raw = node.to_dict()
            for column, key in zip(common, COMMON_COLUMNS, strict=True):
                column.append(raw[key])
            fields = {**raw["data"], **snapshot}
            for column, key in zip(own, cls.column_keys, strict=True):
                column.append(fields[key])
        return columns

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> list[Node]:
        """Rebuild the nodes :meth:`to_columns` saved, in order, without reading anything
        (each restored as :meth:`from_snapshot` would): the common fields are checked as
        :meth:`from_dict` checks them, one column at a time, and a type's own fields by
        :meth:`_restore_columns`.

        Raises:
            GraphError: the type saves no columns, a column is missing, is not a list or
                has another length than the others, or holds a bad value (named).
        """
        if not cls.column_keys:
            raise GraphError(f"{cls.type_name} nodes are not saved as columns", value=cls.type_name)
        ids = _column(columns, "id", None)
        count = len(ids)
        get = {key: _column(columns, key, count) for key in COMMON_COLUMNS[1:]}
        check_column(ids, "id", lambda v: type(v) is str, rule="a string", whole=_is_string)
        check_column(
            get["version"],
            "version",
            lambda v: type(v) is int and v >= 0,
            rule="an int >= 0",
            whole=all_counts,
        )
        saved_states = get["state"]
        states = (
            list(map(_STATE_NAMES.get, saved_states))
            if _is_string(saved_states)
            else [_STATE_NAMES.get(v) if type(v) is str else None for v in saved_states]
        )
        check_column(
            states, "state", _is_not_none, saved_states, "a state name", whole=_has_no_none
        )
        modes = get["mode"]
        check_column(
            modes,
            "mode",
            lambda v: type(v) is str and v in _MODES,
            rule="running or paused",
            whole=_all_modes,
        )
        frequencies = _frequencies(get["frequency"])
        check_column(
            get["priority"],
            "priority",
            lambda v: v is None or type(v) is int,
            rule="an int",
            whole=_int_or_none,
        )
        check_column(get["tags"], "tags", _strings, rule="a list of strings", whole=_all_strings)
        for key in ("created_at", "updated_at"):
            check_column(get[key], key, _finite, rule="a finite number", whole=_all_finite)
        nodes: list[Node] = []
        # equal times (nodes made within TIME_GRAIN) share one float again
        times: dict[float, float] = {}
        created_at, updated_at = (
            list(map(times.setdefault, get[key], map(float, get[key])))
            for key in ("created_at", "updated_at")
        )
        new = cls.__new__
        for nid, version, state, mode, frequency, priority, tags, created, updated in zip(
            ids, get["version"], states, modes, frequencies, get["priority"],
            get["tags"], created_at, updated_at, strict=True,
        ):  # fmt: skip
            node = new(cls)
            node._extras, node._parent_ids, node._entry = None, (), -1
            node.id, node.version, node.state = nid, version, state
            if mode != "running":  # else the default: no extras record
                node.mode = _MODES[mode]
            node.frequency = frequency
            if priority is not None:
                node._priority = priority
            if tags:
                node._tags = set(tags)
            node.created_at, node.updated_at = created, updated
            node.graph, node.last_run, node.seq = None, None, 0
            nodes.append(node)
        own = {key: _column(columns, key, count) for key in cls.column_keys}
        cls._restore_columns(nodes, own)
        return nodes

    @classmethod
    def _restore_columns(cls, nodes: list[Node], columns: dict[str, list[Any]]) -> None:
        """Give ``nodes`` (made by :meth:`from_columns`, common fields set) their type's
        fields from ``columns`` (:attr:`column_keys`, each as long as ``nodes``), checking
        every value; a type with :attr:`column_keys` overrides it.

        Raises:
            GraphError: a bad value, named.
        """
        raise GraphError(f"{cls.type_name} nodes are not saved as columns", value=cls.type_name)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Node:
        """Rebuild a node from :meth:`to_dict` output, dispatching on its ``type``.

        The common fields are checked (id, version, state, mode, frequency, priority,
        tags, times), and the rebuilt node must render at every state and serialize back
        to JSON (unless its type's :meth:`from_data` checks every field:
        :attr:`data_checked`), so malformed type data is refused here rather than when
        it is projected.
        With a ``"snapshot"`` (:meth:`snapshot` output, saved beside the type data) the
        node is rebuilt by :meth:`from_snapshot` instead, which must check the type and
        range of every field it takes (of the data and of the snapshot), so that it
        renders; it is not rendered here, since what it shows comes from outside and is
        read when first used.

        Raises:
            GraphError: the type is unknown or the data is malformed (a type's own error,
                such as ShellError for an unknown status, may come instead).
        """
        if not isinstance(data, dict):
            raise GraphError(f"node data must be a dict, got {type(data).__name__}", value=data)
        cls = resolve_node_type(data.get("type"))
        try:
            raw = data.get("data") or {}
            if not isinstance(raw, dict):
                raise TypeError(f"'data' must be a dict, got {raw!r}")
            snapshot = data.get("snapshot")
            if snapshot is None:
                node = cls.from_data(raw)
            else:
                node = cls.from_snapshot(raw, _checked(snapshot, dict, "snapshot"))
            node.id = _checked(data["id"], str, "id")
            node.version = _checked(data["version"], int, "version")
            node.state = NodeState.parse(data["state"])
            mode = data.get("mode", "running")
            if mode not in _MODES:
                raise ValueError(f"mode must be 'running' or 'paused', got {mode!r}")
            node.mode = _MODES[mode]
            frequency = data.get("frequency") or {"kind": "never"}
            node.frequency = TickFrequency.from_dict(_checked(frequency, dict, "frequency"))
            node._priority = _checked(data.get("priority"), int | None, "priority")
            tags = _checked(data.get("tags", []), list, "tags")
            node.tags = {_checked(tag, str, "a tag") for tag in tags}
            for name in ("created_at", "updated_at"):
                at = _checked(data.get(name, getattr(node, name)), int | float, name)
                setattr(node, name, float(at))
            if node.updated_at == node.created_at:  # one float for both, as a new node has
                node.updated_at = node.created_at
            if snapshot is None and not cls.data_checked:
                _check_usable(node)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise GraphError(f"malformed {cls.type_name} node data: {exc!r}", value=data) from exc
        return node


COMMON_COLUMNS = (
    "id", "version", "state", "mode", "frequency", "priority", "tags", "created_at",
    "updated_at",
)  # fmt: skip
"""The columns every type's :meth:`Node.to_columns` starts with (keys of :meth:`Node.to_dict`)."""
_STATE_NAMES = {state.name: state for state in NodeState}
#: The modes by name: a saved mode is replaced by this module's string (one object for
#: every node, not one decoded string per node).
_MODES: dict[str, Literal["running", "paused"]] = {"running": "running", "paused": "paused"}
_MISSING = object()


def _column(columns: Mapping[str, Any], key: str, count: int | None) -> list[Any]:
    """``columns[key]``, a list of ``count`` values (any length when None).

    Raises:
        GraphError: missing, not a list, or of another length.
    """
    column = columns.get(key) if isinstance(columns, Mapping) else None
    if type(column) is not list or (count is not None and len(column) != count):
        length = len(column) if type(column) is list else None
        raise GraphError(
            f"saved node column {key!r} must be a list of {count} values, got"
            f" {type(column).__name__} of {length}",
            value=column,
        )
    return column


def column_error(key: str, value: Any, rule: str) -> GraphError:
    """The error for a bad saved value of a node field (what it must be, what it is)."""
    return GraphError(f"bad saved node field {key!r}: must be {rule}, got {value!r}", value=value)


def check_column(
    column: list[Any],
    key: str,
    ok: Callable[[Any], bool],
    shown: list[Any] | None = None,
    rule: str = "a valid value",
    *,
    whole: Callable[[list[Any]], bool] | None = None,
) -> None:
    """Raise :func:`column_error` naming the first value of ``column`` (of field ``key``)
    that ``ok`` refuses (``shown``: the values as saved, when ``column`` holds them
    converted); ``rule`` says what a value must be. ``whole``: a test of the column at
    once (C loops over it: :func:`of_types`, :func:`all_counts`) that is true only when
    ``ok`` takes every value; ``ok`` is asked value by value when it is false."""
    if whole is not None and whole(column):
        return
    if all(map(ok, column)):
        return
    at = next(i for i, value in enumerate(column) if not ok(value))
    raise column_error(key, (column if shown is None else shown)[at], rule)


def of_types(*types: type) -> Callable[[list[Any]], bool]:
    """A ``whole`` test for :func:`check_column`: every value is of one of ``types``
    exactly (a bool is not an int)."""
    allowed = frozenset(types)
    return lambda column: set(map(type, column)) <= allowed


def all_counts(column: list[Any]) -> bool:
    """A ``whole`` test for :func:`check_column`: every value is an int >= 0."""
    return set(map(type, column)) <= _INT and min(column, default=0) >= 0


_INT = frozenset({int})
_is_string = of_types(str)


def _is_not_none(value: Any) -> bool:
    return value is not None


def _has_no_none(column: list[Any]) -> bool:
    """A ``whole`` test for :func:`check_column`: no value is None."""
    return None not in column


def _all_modes(column: list[Any]) -> bool:
    """A ``whole`` test for :func:`check_column`: every value is a mode's name."""
    return _is_string(column) and set(column) <= _MODES.keys()


_int_or_none = of_types(int, type(None))


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _all_strings(column: list[Any]) -> bool:
    return set(map(type, column)) <= _LIST and _is_string(list(chain.from_iterable(column)))


_LIST = frozenset({list})


def _finite(value: Any) -> bool:
    return (type(value) is int) or (type(value) is float and math.isfinite(value))


def _all_finite(column: list[Any]) -> bool:
    return set(map(type, column)) <= _FLOAT and all(map(math.isfinite, column))


_FLOAT = frozenset({float})


def _frequencies(column: list[Any]) -> list[TickFrequency]:
    """The tick frequencies of a ``frequency`` column (:meth:`TickFrequency.to_dict`
    values), one object per distinct value.

    Raises:
        GraphError: a value that is not a frequency.
    """
    objects = dict(zip(map(id, column), column, strict=True))
    if len(objects) * 4 < len(column):  # a few objects, each many times: each read once
        read = dict(zip(objects, _frequencies(list(objects.values())), strict=True))
        return list(map(read.__getitem__, map(id, column)))
    made: dict[tuple[Any, Any], TickFrequency] = {}
    out = []
    for value in column:
        kind = value.get("kind") if type(value) is dict else _MISSING
        seconds = value.get("seconds", 0.0) if type(value) is dict else _MISSING
        key = (kind, seconds)
        frequency = made.get(key) if type(seconds) in (int, float) and type(kind) is str else None
        if frequency is None:
            if kind is _MISSING:
                raise column_error("frequency", value, "a frequency")
            try:
                frequency = TickFrequency.from_dict(value)
            except NodeFieldError as exc:
                raise column_error("frequency", value, "a frequency") from exc
            if type(seconds) in (int, float) and type(kind) is str:
                made[key] = frequency
        out.append(frequency)
    return out


def _checked(value: Any, kind: Any, name: str) -> Any:
    """``value`` if it is of ``kind`` (never a bool where a number is asked, never NaN or
    an infinity); TypeError or ValueError naming ``name`` otherwise."""
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise TypeError(f"{name} must be {kind}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if name == "version" and value < 0:
        raise ValueError(f"version must be >= 0, got {value!r}")
    return value


def _check_usable(node: Node) -> None:
    """Render ``node`` at every state and dump it to strict JSON, as a session will.

    Type data that slipped past a type's ``from_data`` makes its own rendering code fail
    with whatever error that code meets; it is reported as a ValueError here.
    """
    try:
        texts = [node.render(state) for state in NodeState] + [node.label()]
        if not all(isinstance(text, str) for text in texts):
            raise TypeError(f"renders and label must be strings, got {texts!r}")
        json.dumps(node.to_dict(), allow_nan=False)
    except GraphError:
        raise
    except Exception as exc:  # per-type code on bad data: any error means "malformed"
        raise ValueError(f"{node.type_name} node cannot be rendered or saved: {exc!r}") from exc
