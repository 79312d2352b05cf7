"""The session's background event loop: anyio's blocking portal on a thread of its own.

Shell commands, lock waits and MCP client sessions run on this loop while the caller's
code does other things; they never touch nodes but queue results in the
:class:`~dagctx.session.parts.intake.Intake`, which the next tick applies. Synchronous
verbs that need a coroutine (the ``*_sync`` MCP verbs; ``Session.tick`` for a group's
custom summarizer only: the rest of a tick runs in the thread that calls it) run it here
and wait for its result.

The loop runs an anyio :class:`~anyio.from_thread.BlockingPortal` (asyncio backend) on a
daemon thread of its own, started on first use, so a session that starts no background
work has no thread, and a program that exits without closing its session
is not kept waiting for the loop (anyio's ``start_blocking_portal`` runs it on an executor
thread, which interpreter shutdown joins: a session left open hung the exit).
:meth:`BackgroundRunner.close` cancels what still runs on the loop, ends the loop (tasks
started outside the portal, such as MCP connection tasks, are cancelled then too) and
joins its thread.

Must not import the rest of :mod:`dagctx.session`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from dagctx.errors import BlockingCallError, SessionClosedError

T = TypeVar("T")


async def _await(coro: Coroutine[Any, Any, T]) -> T:
    return await coro


class BackgroundRunner:
    """An asyncio event loop on its own thread (anyio's blocking portal), started on first
    use and stopped for good by :meth:`close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def started(self) -> bool:
        """Whether the loop is running (it starts on first use)."""
        return self._portal is not None

    @property
    def thread(self) -> threading.Thread | None:
        """The loop's thread while it runs, else None."""
        return self._thread

    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the loop's own thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def _running_portal(self) -> BlockingPortal:
        with self._lock:
            if self._closed:
                raise SessionClosedError("the session is closed: its background loop has stopped")
            if self._portal is None:
                self._portal, self._thread = _start_portal()
            return self._portal

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop (starting it if needed); return a thread-safe future
        of its result. Cancelling the future cancels the task.

        Raises:
            SessionClosedError: the runner is closed (``coro`` is closed unrun).
        """
        try:
            portal = self._running_portal()
        except SessionClosedError:
            coro.close()
            raise
        if self.in_loop_thread():  # the portal only takes calls from other threads
            return asyncio.run_coroutine_threadsafe(coro, asyncio.get_running_loop())
        return portal.start_task_soon(_await, coro)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait (at most ``timeout`` seconds) for its result.

        Raises:
            BlockingCallError: called from the loop's own thread (it would deadlock).
            SessionClosedError: the runner is closed.
            TimeoutError: no result within ``timeout`` (the task is cancelled).
        """
        try:
            self.refuse_blocking()
        except BlockingCallError:
            coro.close()
            raise
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def refuse_blocking(self) -> None:
        """Raise :class:`BlockingCallError` when the caller runs on the loop's own thread,
        where a blocking call would stall the loop (or deadlock waiting for it)."""
        if self.in_loop_thread():
            raise BlockingCallError("a blocking session call was made inside the session's loop;"
                              " use the async twin (e.g. `await session.atick()`)")  # fmt: skip

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` on the loop's thread without waiting for it (at once when the
        caller is on that thread); nothing happens if the loop is not running."""
        portal = self._portal
        if portal is None:
            return
        if self.in_loop_thread():
            callback()
            return
        with contextlib.suppress(RuntimeError):  # the portal stopped in between
            portal.start_task_soon(callback)

    def close(self) -> None:
        """Cancel the tasks still running, end the loop and join its thread; later calls
        to :meth:`submit` or :meth:`run` raise. Idempotent.

        Called from a task on the loop itself, it returns at once and a helper thread
        stops the loop once the calling task (and any other) has finished, then joins
        the loop's thread.
        """
        with self._lock:
            self._closed = True
            portal, thread = self._portal, self._thread
            self._portal = self._thread = None
        if portal is None or thread is None:
            return
        if thread is threading.current_thread():  # a thread cannot join itself
            helper = threading.Thread(target=_stop, args=(portal, thread, False), daemon=True)
            helper.start()
            return
        _stop(portal, thread, cancel_remaining=True)


def _start_portal() -> tuple[BlockingPortal, threading.Thread]:
    """Start an asyncio loop holding a blocking portal on a new daemon thread; return the
    portal once it takes calls, and the thread."""
    ready: concurrent.futures.Future[BlockingPortal] = concurrent.futures.Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            ready.set_result(portal)
            await portal.sleep_until_stopped()

    def run_loop() -> None:
        try:
            anyio.run(serve, backend="asyncio")
        except BaseException as exc:  # reported to the starter if the portal never opened
            if not ready.done():
                ready.set_exception(exc)
            raise

    thread = threading.Thread(target=run_loop, name="dagctx-background", daemon=True)
    thread.start()
    return ready.result(), thread


def _stop(portal: BlockingPortal, thread: threading.Thread, cancel_remaining: bool) -> None:
    """Stop the portal (cancelling its remaining tasks, or waiting for them), which ends
    its loop, and join the loop's thread."""
    portal.call(portal.stop, cancel_remaining)
    thread.join()
