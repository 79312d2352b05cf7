"""What background work and file watchers hand to a session between ticks.

Background tasks never change nodes: they put a callable here (``Session.queue_result``)
and the session applies it in the thread that runs the next tick, at its step 1 (or in an
explicit ``wait``). File changes are gathered as root-relative paths
(``Session.file_changed``) and re-read at that step too, each path once however many
times it was reported. Both are thread-safe. Once closed, the intake drops what it holds
and ignores what arrives later (nothing would ever apply it).

Must not import the rest of :mod:`dagctx.session`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable


class Intake:
    """Queued background results (applied first in, first out) and changed paths."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: deque[Callable[[], None]] = deque()
        self._paths: set[str] = set()
        self._closed = False

    def put(self, apply: Callable[[], None]) -> None:
        """Queue ``apply`` for the next tick (dropped once the intake is closed)."""
        with self._lock:
            if not self._closed:
                self._results.append(apply)

    def add_path(self, relative: str) -> None:
        """Note that the file at root-relative ``relative`` changed."""
        with self._lock:
            if not self._closed:
                self._paths.add(relative)

    def next_result(self) -> Callable[[], None] | None:
        """The oldest queued result, removed from the queue; None when there is none."""
        with self._lock:
            return self._results.popleft() if self._results else None

    def take_paths(self) -> list[str]:
        """The changed paths noted so far, sorted, and forget them."""
        with self._lock:
            paths, self._paths = self._paths, set()
        return sorted(paths)

    def close(self) -> None:
        """Drop every queued result and path; later ones are ignored. Idempotent."""
        with self._lock:
            self._closed = True
            self._results.clear()
            self._paths.clear()
