"""A private asyncio event loop on a daemon thread, for a session's background work.

Shell commands, lock acquisition and MCP sessions run here while the caller's code does
other things; they never touch nodes directly but queue results that the next tick
applies. Synchronous session verbs that need a coroutine (``Session.tick``) run it here
and wait for the result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from dagctx.errors import DagctxError

T = TypeVar("T")


class BackgroundLoop:
    """An event loop running on its own daemon thread, started on first use."""

    def __init__(self, name: str = "dagctx-background") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started if needed)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; return a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from another thread).

        Raises:
            DagctxError: called from the loop's own thread (it would deadlock).
        """
        if self.in_loop_thread():
            coro.close()
            raise DagctxError("a blocking session call was made inside the session's loop;"
                              " use the async twin (e.g. `await session.atick()`)")  # fmt: skip
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        """Cancel pending tasks, stop the loop and join its thread (idempotent)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if thread is not threading.current_thread():
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout=10)
            loop.close()
