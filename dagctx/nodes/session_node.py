"""SessionNode: the session's own metadata — turn, token usage, node counts, recent actions.

The node is recomputed at every tick (before the projection is built) from the session it
is attached to: the turn being built, the tokens of the previous turn's projection and
their running total over the turns it observed, node counts by type, the graph's depth
and the last few changes. It is volatile, so the projection renders it in the tail,
after the cache-stable body. Its refresh is recorded as a derived change: it restates the
session, so it is not listed among the "changes since last turn".

The session reference is a weak reference and is not serialized: a node rebuilt by
:meth:`~dagctx.nodes.base.Node.from_dict` is detached and renders the figures it was saved
with until a session attaches it again. Counting nodes and measuring depth cost O(nodes)
per turn.
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dagctx.nodes.base import Node, NodeState, TickFrequency

if TYPE_CHECKING:
    from dagctx.graph import ContextGraph
    from dagctx.projection import Projection

RECENT_ACTIONS = 10  # kept in the stats; DETAILS shows the last RECENT_SHOWN
RECENT_SHOWN = 5
_TRACE_SCAN = 500  # how far back to look for non-derived traces (the trace log keeps them)


@dataclass(frozen=True, slots=True)
class SessionStats:
    """A snapshot of a session's figures, as a SessionNode renders them."""

    turn: int = 0
    budget: int = 0
    encoding: str = ""
    last_tokens: int = 0
    total_tokens: int = 0
    turns_counted: int = 0
    nodes: int = 0
    depth: int = 0
    counts: tuple[tuple[str, int], ...] = ()
    recent: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["counts"] = [list(pair) for pair in self.counts]
        data["recent"] = list(self.recent)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionStats:
        values = dict(data)
        values["counts"] = tuple((str(k), int(v)) for k, v in values.get("counts", ()))
        values["recent"] = tuple(str(r) for r in values.get("recent", ()))
        return cls(**values)


class SessionView(Protocol):
    """What a SessionNode reads of its session (a :class:`~dagctx.session.Session`)."""

    @property
    def turn(self) -> int: ...
    @property
    def budget(self) -> int: ...
    @property
    def encoding(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def graph(self) -> ContextGraph: ...
    @property
    def last_projection(self) -> Projection | None: ...


def graph_depth(graph: ContextGraph) -> int:
    """The number of nodes on the longest root-to-leaf path (0 for an empty graph)."""
    depth: dict[str, int] = {}
    roots = [r.id for r in graph.roots()]
    for root in roots:
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            nid, children_done = stack.pop()
            if children_done:
                depth[nid] = 1 + max((depth[c] for c in graph.child_ids(nid)), default=0)
            elif nid not in depth:
                stack.append((nid, True))
                stack.extend((c, False) for c in graph.child_ids(nid) if c not in depth)
    return max((depth[r] for r in roots), default=0)


def recent_actions(graph: ContextGraph, limit: int = RECENT_ACTIONS) -> tuple[str, ...]:
    """The last ``limit`` direct (non-derived) changes, oldest first, one line each."""
    found: list[str] = []
    for trace in reversed(graph.traces[-_TRACE_SCAN:]):
        if not trace.derived:
            found.append(f"#{trace.node_id}: {trace.description}")
            if len(found) == limit:
                break
    return tuple(reversed(found))


class SessionNode(Node):
    """Session metadata, recomputed every turn from the attached session."""

    type_name: ClassVar[str] = "session"
    default_state: ClassVar[NodeState] = NodeState.COLLAPSED
    default_priority: ClassVar[int] = 90
    default_frequency: ClassVar[TickFrequency] = TickFrequency.turn()
    volatile: ClassVar[bool] = True

    __slots__ = ("_counted_turn", "_session", "stats")

    def __init__(self, session: SessionView | None = None, **node_fields: Any) -> None:
        super().__init__(**node_fields)
        self._session: weakref.ref[SessionView] | None = None
        self._counted_turn: int | None = None
        self.stats = SessionStats()
        if session is not None:
            self.attach(session)
            self.stats = self._measure(session)

    @property
    def session(self) -> SessionView | None:
        """The attached session, or None for a detached node."""
        return self._session() if self._session is not None else None

    def attach(self, session: SessionView) -> None:
        """Follow ``session`` from now on (the figures refresh at its next tick)."""
        self._session = weakref.ref(session)

    def recompute(self) -> bool:
        """Refresh the figures from the attached session; return whether they changed."""
        session = self.session
        if session is None or session.closed:
            return False
        stats = self._measure(session)
        if stats == self.stats:
            return False
        self.stats = stats
        self.mark_changed(f"turn {stats.turn}", derived=True)
        return True

    def _measure(self, session: SessionView) -> SessionStats:
        total, counted = self.stats.total_tokens, self.stats.turns_counted
        last = session.last_projection
        if last is not None and self._counted_turn != session.turn:
            # The previous turn's projection, counted once whatever the number of recomputes.
            self._counted_turn = session.turn
            total, counted = total + last.tokens, counted + 1
        graph = session.graph
        counts = Counter(node.type_name for node in graph)
        return SessionStats(
            turn=session.turn + 1,
            budget=session.budget,
            encoding=session.encoding,
            last_tokens=last.tokens if last is not None else 0,
            total_tokens=total,
            turns_counted=counted,
            nodes=len(graph),
            depth=graph_depth(graph),
            counts=tuple(sorted(counts.items())),
            recent=recent_actions(graph),
        )

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return "session"

    def render_state(self, state: NodeState) -> str:
        s = self.stats
        if state == NodeState.COLLAPSED:
            return (
                f"[session #{self.id}: turn {s.turn}, {s.last_tokens:,} tokens last turn,"
                f" {s.nodes} nodes]"
            )
        lines = [
            f"## Session (#{self.id})",
            f"turn {s.turn}; last turn {s.last_tokens:,} tokens; total {s.total_tokens:,}"
            f" tokens over {s.turns_counted} turn{'s' * (s.turns_counted != 1)}; {s.nodes} nodes,"
            f" depth {s.depth}",
        ]
        if state == NodeState.SUMMARY:
            return "\n".join(lines)
        counts = ", ".join(f"{name} {n}" for name, n in s.counts) or "none"
        lines.append(f"nodes by type: {counts}")
        if state >= NodeState.ALL:
            lines.append(f"budget {s.budget:,} tokens; encoding {s.encoding}")
        shown = s.recent if state >= NodeState.ALL else s.recent[-RECENT_SHOWN:]
        if shown:
            lines.append("recent actions:")
            lines.extend(f"- {action}" for action in shown)
        return "\n".join(lines)

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {"stats": self.stats.to_dict()}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> SessionNode:
        node = cls()
        node.stats = SessionStats.from_dict(data.get("stats") or {})
        return node
