"""The trace log of a context graph: every recorded change, at an absolute position, with
bounded retention.

:class:`TraceLog` numbers traces from 0 in the order they are recorded and never reuses a
position: ``len(log)`` is the position the next trace gets, ``log[i]`` the trace at
position ``i`` and ``log[i:]`` the traces from position ``i`` on. Old traces are dropped;
:attr:`TraceLog.start` is the position of the oldest one kept.

What is kept, and why (the retention rule, applied at appends):

- every trace at or after the position of a live :class:`TraceCursor`: a cursor is a
  reader that must see every change after it (a session's "changes since the last tick"
  and the last tick's own changes). A cursor is held weakly: a reader that is gone no
  longer keeps traces. A cursor with a ``limit`` keeps at most that many traces behind
  the end: a live structure checkpoint reads the changes since it was taken only while
  they are fewer than its nodes (past that, comparing every node costs no more);
- the last :data:`RECENT` traces whatever the cursors, for readers that look back a bounded
  way (a session node's recent actions, the watcher's "shown deleted at the last tick"
  after a resume);
- nothing else. Between two trims at most as many traces again are kept, so memory stays
  proportional to ``RECENT`` plus what the cursors hold, however long the session runs.

Readers that only need a position to save work (the projector's plans, a live structure
checkpoint past its limit) check it against :attr:`TraceLog.start`: traces dropped under
them make them recompute in full, which is correct, only slower.

Each log has an identity (:attr:`TraceLog.log_id`, fresh per log): a session file records
the identity and the span of the traces it holds, so a save can append only what is new
when the file holds this log's traces (see :mod:`dagctx.session.file`).

Part of :mod:`dagctx.graph`; imports only :mod:`dagctx.nodes.base` and :mod:`dagctx.errors`.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Iterable, Iterator
from typing import overload

from dagctx._validate import is_int
from dagctx.errors import GraphLoadError, TracesDroppedError
from dagctx.nodes.base import Trace

RECENT = 500
"""Traces kept whatever the cursors (a session node scans this far back)."""


class TraceCursor:
    """A reader's position in a :class:`TraceLog`: traces from :attr:`position` on are kept.

    Move it forward with :meth:`TraceLog.take` (or by setting :attr:`position`); drop the
    last reference to it (or call :meth:`TraceLog.release`) when the reader goes away.
    """

    __slots__ = ("__weakref__", "limit", "position")

    def __init__(self, position: int, limit: int | None = None) -> None:
        self.position = position
        #: None, or how many traces behind the end the cursor keeps at most (a reader
        #: that can do without its traces, only slower, past that many).
        self.limit = limit

    def __repr__(self) -> str:
        return f"<TraceCursor at {self.position}>"


class TraceLog:
    """Recorded traces by absolute position, with bounded retention (module docstring)."""

    __slots__ = ("_cursors", "_items", "_next_trim", "_start", "log_id")

    def __init__(self) -> None:
        self._items: list[Trace] = []  # never rebound: ContextGraph appends to it directly
        self._start = 0
        self._cursors: weakref.WeakSet[TraceCursor] = weakref.WeakSet()
        self._next_trim = 2 * RECENT
        self.log_id = uuid.uuid4().hex

    # -- reading ----------------------------------------------------------------------

    @property
    def start(self) -> int:
        """Position of the oldest trace kept (``len(self)`` when none is kept)."""
        return self._start

    def __len__(self) -> int:
        """The position the next trace gets: how many traces were ever recorded."""
        return self._start + len(self._items)

    def __iter__(self) -> Iterator[Trace]:
        """The kept traces, oldest first."""
        return iter(self._items)

    @overload
    def __getitem__(self, index: int) -> Trace: ...
    @overload
    def __getitem__(self, index: slice) -> list[Trace]: ...
    def __getitem__(self, index: int | slice) -> Trace | list[Trace]:
        """The trace at absolute position ``index`` (negative: from the end), or the kept
        traces of a slice of positions (positions dropped already are left out, as a list
        slice leaves out positions past its end).

        Raises:
            IndexError: the position is past the end or its trace was dropped.
        """
        if isinstance(index, slice):
            begin, stop, step = index.indices(len(self))
            begin, stop = max(begin - self._start, 0), max(stop - self._start, 0)
            return self._items[begin:stop:step]
        at = index + len(self) if index < 0 else index
        if not self._start <= at < len(self):
            raise IndexError(f"no trace at position {index} (kept: {self._start}..{len(self)})")
        return self._items[at - self._start]

    def since(self, position: int) -> list[Trace]:
        """Every trace from ``position`` on.

        Raises:
            TracesDroppedError: traces after ``position`` were dropped already.
        """
        if position < self._start:
            raise _dropped(position, self._start)
        return self._items[position - self._start :]

    # -- cursors ----------------------------------------------------------------------

    def cursor(self, position: int | None = None, *, limit: int | None = None) -> TraceCursor:
        """A new cursor at ``position`` (default: the end); traces from there on are kept
        (with a ``limit``: at most the last ``limit`` traces).

        Raises:
            TracesDroppedError: ``position`` is before :attr:`start`.
        """
        at = len(self) if position is None else position
        if at < self._start:
            raise _dropped(at, self._start)
        cursor = TraceCursor(at, limit)
        self._cursors.add(cursor)
        return cursor

    def take(self, cursor: TraceCursor) -> list[Trace]:
        """The traces from ``cursor`` on; moves ``cursor`` to the end."""
        found = self.since(cursor.position)
        cursor.position = len(self)
        return found

    def release(self, cursor: TraceCursor) -> None:
        """Stop keeping traces for ``cursor``."""
        self._cursors.discard(cursor)

    # -- writing ----------------------------------------------------------------------

    def append(self, trace: Trace) -> None:
        """Record ``trace`` at position ``len(self)``; may drop old traces (retention).

        :meth:`ContextGraph.record_change` does the same inline (a hot path).
        """
        items = self._items
        items.append(trace)
        if len(items) >= self._next_trim:
            self.trim()

    def trim(self) -> int:
        """Drop the traces no cursor and no recent window needs; return how many.

        Runs at appends once enough traces piled up since the last trim (amortized O(1)
        per append); call it directly to trim now.
        """
        end = len(self)
        keep_from = max(end - RECENT, self._start)
        for cursor in self._cursors:
            held = cursor.position
            if cursor.limit is not None:
                held = max(held, end - cursor.limit)
            keep_from = min(keep_from, max(held, self._start))
        dropped = keep_from - self._start
        if dropped:
            del self._items[:dropped]
            self._start = keep_from
        self._next_trim = len(self._items) + max(RECENT, len(self._items))
        return dropped

    def load(self, traces: Iterable[Trace], start: int) -> None:
        """Replace the kept traces with ``traces``, the first at position ``start``.

        Cursors before ``start`` move to it. The log gets a new :attr:`log_id`: what it
        holds now is not the history it recorded.

        Raises:
            GraphLoadError: ``start`` is not a non-negative int.
        """
        if not is_int(start) or start < 0:
            raise GraphLoadError(f"bad trace start {start!r}", value=start)
        self._items[:] = traces  # the same list: the graph appends to it directly
        self._start = start
        self.log_id = uuid.uuid4().hex
        for cursor in self._cursors:
            cursor.position = max(cursor.position, start)
        self._next_trim = len(self._items) + max(RECENT, len(self._items))

    def __repr__(self) -> str:
        return f"<TraceLog {self._start}..{len(self)}>"


def _dropped(position: int, start: int) -> TracesDroppedError:
    return TracesDroppedError(
        f"traces from position {position} were dropped; the log keeps {start} on",
        position=position,
        start=start,
    )


__all__ = ["RECENT", "TraceCursor", "TraceLog"]
