"""A session's background jobs: shell commands and file locks.

:class:`Jobs` runs each command and each lock wait as a task on the
:class:`~.runner.BackgroundRunner` and keeps, per node, the future of that task until its
result is applied (the node is "outstanding" until then), the cancel event of each
command, and the OS lock of each lock node. A finished task only puts its result in the
:class:`~.intake.Intake`; applying it (next tick or ``wait``) changes the node and
forgets the job. Each tick :meth:`Jobs.check_locks` finds held locks whose lock file
vanished or was replaced (another process can hold those now). :meth:`Jobs.close`
releases every lock and stops every command still running, waiting (a bounded time)
for their process groups to be killed, and then ends every process any of the session's
commands left behind (found by the command's environment mark, see
:mod:`dagctx.runtime.processes`: a ``setsid`` escapee or a background process of a
finished command).

The verbs that create the nodes and wait for them are in :mod:`dagctx.session.jobs`.
Must not import the rest of :mod:`dagctx.session` except its sibling parts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TypeVar

from dagctx.nodes.base import Node
from dagctx.nodes.lock import LockHandle, LockNode
from dagctx.nodes.lock_pg import PostgresLockHandle
from dagctx.nodes.shell import ShellNode
from dagctx.runtime.processes import (
    DRAIN_SECONDS,
    KILL_GRACE,
    CommandResult,
    CommandSpec,
    run_command,
    stop_marked,
)
from dagctx.session.parts.intake import Intake
from dagctx.session.parts.runner import BackgroundRunner

N = TypeVar("N", bound=Node)
#: How long closing waits for running commands to be killed.
CLOSE_WAIT = KILL_GRACE + 2 * DRAIN_SECONDS + 2.0


class Jobs:
    """Shell commands and locks of one session, from start until their result is applied."""

    def __init__(self, runner: BackgroundRunner, intake: Intake) -> None:
        self._runner = runner
        self._intake = intake
        self._mutex = threading.Lock()
        self._outstanding: dict[Node, concurrent.futures.Future[None]] = {}
        self._cancels: dict[ShellNode, asyncio.Event] = {}
        self._locks: dict[LockNode, LockHandle | PostgresLockHandle] = {}
        self._marks: set[str] = set()  # the environment marks of every command started

    # -- shell commands ---------------------------------------------------------------

    def start_shell(self, node: ShellNode) -> None:
        """Run ``node``'s command in the background; its result goes to the intake."""
        cancel = asyncio.Event()
        spec = node.spec()
        with self._mutex:
            self._marks.add(spec.mark)
            self._cancels[node] = cancel
            self._outstanding[node] = self._runner.submit(self._run_shell(node, spec, cancel))

    async def _run_shell(self, node: ShellNode, spec: CommandSpec, cancel: asyncio.Event) -> None:
        def started(pid: int, at: float) -> None:
            self._intake.put(partial(node.apply_started, pid, at))

        try:
            result = await run_command(spec, cancel=cancel, on_start=started)
        except Exception as exc:  # a bug here must not leave the node pending forever
            result = CommandResult("failed", error=f"internal error: {exc!r}")
        self._intake.put(partial(self._settle, node, partial(node.apply_result, result)))

    def cancel(self, node: ShellNode) -> bool:
        """Ask ``node``'s command to stop; return whether it was still going."""
        with self._mutex:
            event = self._cancels.get(node)
            future = self._outstanding.get(node)
        if event is None or future is None or future.done():
            return False
        self._runner.call_soon(event.set)
        return True

    # -- locks ------------------------------------------------------------------------

    def start_lock(self, node: LockNode, handle: LockHandle | PostgresLockHandle) -> None:
        """Start waiting for ``handle``'s lock (an OS file lock or a PostgreSQL advisory
        lock) for ``node``; the outcome goes to the intake."""
        with self._mutex:
            self._locks[node] = handle
            self._outstanding[node] = self._runner.submit(self._acquire(node, handle))

    async def _acquire(self, node: LockNode, handle: LockHandle | PostgresLockHandle) -> None:
        outcome = await asyncio.to_thread(handle.acquire, node.timeout)
        if outcome.status != "acquired":
            with self._mutex:
                if self._locks.get(node) is handle:
                    del self._locks[node]
        self._intake.put(partial(self._settle, node, partial(node.apply_outcome, outcome)))

    def release(self, node: LockNode) -> bool:
        """Let ``node``'s OS lock go (or stop waiting for it); return whether it was held."""
        with self._mutex:
            handle = self._locks.pop(node, None)
        return handle.release() if handle is not None else False

    def check_locks(self) -> None:
        """Let go every held lock whose file vanished or was replaced (or whose
        connection to PostgreSQL broke) and mark its node ``lost`` (:meth:`LockHandle.lost`);
        call it inside a tick, after the intake."""
        with self._mutex:
            held = [(n, h) for n, h in self._locks.items() if n.held and h.held]
        for node, handle in held:
            reason = handle.lost()
            if reason is None:
                continue
            with self._mutex:
                if self._locks.get(node) is handle:
                    del self._locks[node]
            handle.release()
            node.mark_lost(reason)

    # -- outstanding results ----------------------------------------------------------

    def futures(self, nodes: Iterable[Node]) -> list[concurrent.futures.Future[None]]:
        """The futures of those ``nodes`` whose result is not applied yet."""
        with self._mutex:
            return [self._outstanding[n] for n in nodes if n in self._outstanding]

    def ready(self, node: Node) -> bool:
        """Whether ``node`` has no background result still to come."""
        future = self._outstanding.get(node)
        return future is None or future.done()

    def first_settled(self, nodes: Sequence[N]) -> N | None:
        """The first of ``nodes`` whose result is applied (or that never had a job)."""
        return next((n for n in nodes if n not in self._outstanding), None)

    def _settle(self, node: Node, apply: Callable[[], None]) -> None:
        """Apply a job's final result and forget the job (runs inside the intake)."""
        apply()
        with self._mutex:
            self._outstanding.pop(node, None)
            if isinstance(node, ShellNode):
                self._cancels.pop(node, None)

    # -- closing ----------------------------------------------------------------------

    def close(self) -> None:
        """Release every lock, stop every command still running and wait (at most
        :data:`CLOSE_WAIT` seconds, not at all on the runner's own thread) for them, then
        end what any command left running (:func:`stop_marked`)."""
        with self._mutex:
            locks, self._locks = self._locks, {}
            running = [(e, self._outstanding.get(n)) for n, e in self._cancels.items()]
            marks, self._marks = self._marks, set()
        for node, handle in locks.items():
            node.mark_released(was_held=handle.release())
        if running and self._runner.started:
            for event, _ in running:
                self._runner.call_soon(event.set)
            if not self._runner.in_loop_thread():
                futures = [f for _, f in running if f is not None]
                concurrent.futures.wait(futures, CLOSE_WAIT)
        if marks:
            stop_marked(marks)
