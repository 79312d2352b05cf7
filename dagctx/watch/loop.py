"""Watch a session's directory tree with watchfiles and tick once per batch of changes.

:class:`WatchVerbs` gives :class:`~dagctx.session.Session` its ``watch()`` method: an
async generator of :class:`~dagctx.session.TickResult`. watchfiles (``awatch``, driven by
OS notifications: no polling loop here) gathers events into batches: a batch ends after
:data:`DEFAULT_STEP_MS` without a new event, or :data:`DEFAULT_DEBOUNCE_MS` after it began.
Each batch, merged with any that queued up while the previous tick ran, is planned by a
:class:`~dagctx.watch.tracker.TreeTracker` and applied inside one tick; a batch that changes
nothing makes no tick. :class:`TreeWatcher` is the watcher alone (batches, no ticks), for a
caller that ticks on its own terms (``dagctx mcp`` ticks in a worker thread, one request
at a time). What an event does to the nodes is :mod:`dagctx.watch.tracker`'s
business; rendering and writing files is :mod:`dagctx.cli.watch`'s.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

from dagctx._validate import is_int
from dagctx.errors import ArgumentError, WatchError
from dagctx.watch.steering import NO_STEERING, Steering
from dagctx.watch.tracker import TreeTracker

if TYPE_CHECKING:
    from dagctx.session import Session, TickResult
    from dagctx.watch.tracker import FileChange

#: Longest time (ms) one batch of events may gather before it is handed over.
DEFAULT_DEBOUNCE_MS = 1_600
#: Quiet time (ms) that ends a batch: a burst of writes with shorter gaps is one batch
#: (a save of three writes, a checkout); it is also most of a save's latency.
DEFAULT_STEP_MS = 30


#: Seconds between two restarts of a watcher that failed on a name that is not UTF-8.
RESTART_DELAY = 0.3
#: Seconds after such a restart when the tree is surveyed again (the new watcher does not
#: report what changed while it was starting).
RESURVEY_AGAIN = 2.0


class _Resurvey:
    """Queued when the watcher dropped a batch (a name it could not decode): the next
    tick compares the whole tree with the disk instead."""


_RESURVEY = _Resurvey()
_Item: TypeAlias = "set[FileChange] | BaseException | _Resurvey | None"


def _undecodable_name(exc: BaseException) -> bool:
    """Whether ``exc`` is watchfiles failing on a file name that is not UTF-8 (its Rust
    side cannot hand such a name to Python; anyio wraps the error in a group)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_undecodable_name(inner) for inner in exc.exceptions)
    return type(exc).__name__ == "WatchfilesRustInternalError" and "decode path" in str(exc)


async def _pump(
    directory: Path,
    tracker: TreeTracker,
    batches: asyncio.Queue[_Item],
    stop: asyncio.Event,
    debounce_ms: int,
    step_ms: int,
) -> None:
    """Feed awatch's batches into ``batches``; end with None, or with the error.

    watchfiles fails on a file name that is not UTF-8 (an event on one, or, with OS
    notifications, merely a directory with one in the tree). Then the batch is lost:
    :data:`_RESURVEY` is queued (now, and :data:`RESURVEY_AGAIN` seconds later, for what
    changed while the watcher restarted) and the watcher restarts, polling from then on
    (the polling watcher starts on such a tree and fails only on events on such names).
    """
    from watchfiles import awatch  # here: `import dagctx` stays light

    polling = False
    while True:
        try:
            async for changes in awatch(
                directory,
                watch_filter=tracker.watch_filter,
                debounce=debounce_ms,
                step=step_ms,
                stop_event=stop,
                force_polling=polling or None,
                ignore_permission_denied=True,  # the scan reports what it cannot read
            ):
                batches.put_nowait(changes)
        except Exception as exc:
            if not _undecodable_name(exc):
                batches.put_nowait(exc)
                return
            batches.put_nowait(_RESURVEY)
            # What changes while the new watcher starts is not reported: look again later.
            asyncio.get_running_loop().call_later(RESURVEY_AGAIN, batches.put_nowait, _RESURVEY)
            polling = True
            await asyncio.sleep(RESTART_DELAY)
        else:
            batches.put_nowait(None)
            return


def _interrupted(pump: asyncio.Task[None]) -> None:
    """Take the KeyboardInterrupt (or SystemExit) that ended ``pump``: ``dagctx watch``'s
    Ctrl-C raises it wherever the main thread is during the first scan, also inside this
    task while awatch starts, and it leaves the event loop with it anyway; not taken,
    asyncio would print "Task exception was never retrieved" and its traceback on exit.
    (The pump hands every other error to the queue.)"""
    if not pump.cancelled():
        pump.exception()


async def _next_batch(batches: asyncio.Queue[_Item]) -> tuple[set[FileChange], bool] | None:
    """The next batch, merged with every batch already waiting (one tick for all), and
    whether the whole tree must be re-surveyed (a batch was lost); None once the watcher
    stopped.

    Raises:
        WatchError: the watcher failed (e.g. the OS limit of watched directories).
    """
    merged: set[FileChange] = set()
    resurvey = False
    item = await batches.get()
    while True:
        if item is None or isinstance(item, BaseException):
            if merged or resurvey:  # apply what came first; the end comes with the next call
                batches.put_nowait(item)
                return merged, resurvey
            if item is None:
                return None
            raise WatchError(
                f"cannot watch files: {item} (on Linux, raise fs.inotify.max_user_watches"
                " or set WATCHFILES_FORCE_POLLING=1)",
                value=item,
            ) from item
        if isinstance(item, _Resurvey):
            resurvey = True
        else:
            merged |= item
        if batches.empty():
            return merged, resurvey
        item = batches.get_nowait()


class TreeWatcher:
    """watchfiles on the directory of a :class:`TreeTracker`, as an async context manager:
    the watcher starts on entry (events from then on are kept, so scan the tree inside
    the block and none is lost) and stops on exit; :meth:`next` returns the next batch.

    Args:
        tracker: the tree (its directory and filter) to watch.
        debounce_ms: longest time one batch may gather.
        step_ms: quiet time that ends a batch.
    """

    def __init__(
        self,
        tracker: TreeTracker,
        *,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        step_ms: int = DEFAULT_STEP_MS,
    ) -> None:
        self._tracker = tracker
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._batches: asyncio.Queue[_Item] = asyncio.Queue()
        self._stop = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    async def __aenter__(self) -> TreeWatcher:
        tracker = self._tracker
        self._pump = asyncio.create_task(
            _pump(
                tracker.directory,
                tracker,
                self._batches,
                self._stop,
                self._debounce_ms,
                self._step_ms,
            )
        )
        self._pump.add_done_callback(_interrupted)
        await asyncio.sleep(0)  # the watcher starts before the caller scans
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._pump is not None:
            self._pump.cancel()
            with suppress(asyncio.CancelledError):
                await self._pump

    async def next(self) -> tuple[set[FileChange], bool] | None:
        """The next batch of events, merged with every batch already waiting, and whether
        the whole tree must be re-surveyed (a batch was lost); None once the watcher
        stopped.

        Raises:
            WatchError: the watcher failed (e.g. the OS limit of watched directories).
        """
        return await _next_batch(self._batches)


class WatchVerbs:
    """The ``watch`` verb of :class:`~dagctx.session.Session` (a mixin)."""

    async def watch(
        self,
        path: str | os.PathLike[str] = ".",
        *,
        progress: Callable[[int], None] | None = None,
        ignore: Iterable[str | os.PathLike[str]] = (),
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        step_ms: int = DEFAULT_STEP_MS,
        steering: Steering = NO_STEERING,
    ) -> AsyncGenerator[TickResult, None]:
        """Watch the tree under ``path`` and tick once per batch of file changes.

        The tree is scanned first (``progress`` gets the file count) unless the session
        holds it already, in which case it is re-surveyed against the disk. Yields the
        :class:`~dagctx.session.TickResult` of the tick after that, then one per batch:
        events that arrive within ``step_ms`` of each other (for at most ``debounce_ms``),
        and any batches that queued up during a tick, make one tick. A resumed session
        whose first tick took back the projection saved with it
        (:mod:`dagctx.session.resume`) builds the plan of the next projection once that
        result is handed over, before waiting for events. Runs until the consumer stops
        iterating; close it with :func:`contextlib.aclosing` to stop the
        watcher at once. ``ignore`` names files never tracked, ``steering`` the include /
        exclude patterns and the priority / state rules of the tree's files (see
        :class:`TreeTracker`).

        Raises:
            PathError: ``path`` is outside the root or not a directory.
            ArgumentError: ``debounce_ms`` or ``step_ms`` is not a positive int.
            WatchError: the OS refused to watch the tree.
        """
        for name, value in (("debounce_ms", debounce_ms), ("step_ms", step_ms)):
            if not is_int(value) or value <= 0:
                raise ArgumentError(
                    f"{name} must be a positive int of milliseconds, got {value!r}",
                    name=name,
                    value=value,
                )
        session = cast("Session", self)
        tracker = TreeTracker(session, path, ignore=ignore, steering=steering)
        async with TreeWatcher(tracker, debounce_ms=debounce_ms, step_ms=step_ms) as watcher:
            tracker.load(progress)
            while True:
                result = await session.atick()
                if tracker.pending_removals():
                    session.queue_result(tracker.reap)
                yield result
                session._plan_ahead()  # after a resume that took back its projection
                plan = None
                while not plan:  # a batch that changes nothing makes no tick
                    batch = await watcher.next()
                    if batch is None:
                        return
                    plan = tracker.plan(*batch)
                session.queue_result(partial(tracker.apply, plan))
