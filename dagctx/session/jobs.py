"""Session verbs for background jobs: shell commands, file locks, and waiting for them.

:class:`JobVerbs` is a mixin of :class:`~dagctx.session.Session`. Each job runs on the
session's background loop and only *queues* its result (``Session.queue_result``); the
node changes when the result is applied, which is step 1 of the next ``tick()``, or an
explicit :meth:`JobVerbs.wait` / :meth:`~JobVerbs.wait_all` / :meth:`~JobVerbs.wait_any`.

``wait`` blocks until the job's result is queued and then applies the queued background
results (exactly tick step 1, inside one graph batch) **without** starting a turn: the
nodes change at once, ``Session.turn`` does not move, and the next tick still lists these
changes in its "changes since last turn". Each blocking wait has an async twin
(``await s.wait_async(node)``) for code running on an event loop.

Explicit verbs act at once: ``release`` lets the OS lock go and marks the node released;
``cancel`` asks the command to stop (its process group is killed; the node shows
``cancelled`` once the result is applied). Closing the session cancels every command
still running and releases every lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, overload

from dagctx.errors import DagctxError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.lock import (
    DEFAULT_TIMEOUT as DEFAULT_LOCK_TIMEOUT,
)
from dagctx.nodes.lock import (
    LockError,
    LockHandle,
    LockNode,
    check_lock_timeout,
    lock_file_for,
)
from dagctx.nodes.shell import DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ShellError, ShellNode
from dagctx.runtime.processes import (
    DRAIN_SECONDS,
    KILL_GRACE,
    CommandResult,
    CommandSpec,
    run_command,
)
from dagctx.session.host import SessionParts

if TYPE_CHECKING:
    from dagctx.graph import NodeRef

N = TypeVar("N", bound=Node)
_Typed = TypeVar("_Typed", ShellNode, LockNode)
#: How long closing the session waits for running commands to be killed.
_CLOSE_WAIT = KILL_GRACE + 2 * DRAIN_SECONDS + 2.0


@dataclass(slots=True)
class _Jobs:
    """A session's background jobs whose results were not applied yet, and its locks."""

    mutex: threading.Lock = field(default_factory=threading.Lock)
    outstanding: dict[Node, concurrent.futures.Future[None]] = field(default_factory=dict)
    cancels: dict[ShellNode, asyncio.Event] = field(default_factory=dict)
    locks: dict[LockNode, LockHandle] = field(default_factory=dict)


class JobVerbs(SessionParts):
    """Shell, lock and wait verbs of a :class:`~dagctx.session.Session`."""

    _dagctx_jobs: _Jobs

    # -- shell ------------------------------------------------------------------------

    def shell(
        self,
        cmd: str,
        args: Sequence[str] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        shell: bool = False,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        state: NodeState | str | None = None,
        priority: int | None = None,
        parent: NodeRef | None = None,
    ) -> ShellNode:
        """Start ``cmd args`` in the background and return its :class:`ShellNode` (pending).

        The command runs without a shell (``shell=True`` runs ``/bin/sh -c "cmd args"``),
        in ``cwd`` (default: the session root), with ``env`` added to the inherited
        environment, in its own process group, killed with its children after ``timeout``
        seconds (``None``: no limit). Each of stdout and stderr keeps at most
        ``output_cap`` bytes (head and tail, with a marker where bytes were cut).

        Raises:
            ShellError: a malformed argument (non-string cmd, bad args/env, timeout <= 0).
            PathError: ``cwd`` is outside the session root.
            NodeNotFoundError: ``parent`` is unknown. Nothing is started then.
        """
        self._check_open()
        where = self.root if cwd is None else self.resolve_path(cwd)[0]
        node = ShellNode(
            cmd, args, cwd=where, env=env, timeout=timeout, shell=shell, output_cap=output_cap,
            state=state, priority=priority,
        )  # fmt: skip
        self.add(node, parent=parent)
        jobs = self._jobs()
        cancel = asyncio.Event()
        with jobs.mutex:
            jobs.cancels[node] = cancel
            jobs.outstanding[node] = self.background.submit(
                self._run_shell(node, node.spec(), cancel)
            )
        return node

    async def _run_shell(self, node: ShellNode, spec: CommandSpec, cancel: asyncio.Event) -> None:
        def started(pid: int, at: float) -> None:
            self.queue_result(partial(node.apply_started, pid, at))

        try:
            result = await run_command(spec, cancel=cancel, on_start=started)
        except Exception as exc:  # a bug here must not leave the node pending forever
            result = CommandResult("failed", error=f"internal error: {exc!r}")
        self.queue_result(partial(self._settle, node, partial(node.apply_result, result)))

    def cancel(self, node: ShellNode | str) -> bool:
        """Ask a pending or running command to stop; return whether one was still going.

        Its process group gets SIGTERM, then SIGKILL after a grace period; the node shows
        ``cancelled`` once the result is applied (next tick or ``wait``).

        Raises:
            NodeNotFoundError: unknown node. ShellError: not a shell node.
        """
        target = self._typed(node, ShellNode)
        jobs = self._jobs()
        with jobs.mutex:
            event = jobs.cancels.get(target)
            future = jobs.outstanding.get(target)
        if event is None or future is None or future.done():
            return False
        self.background.loop.call_soon_threadsafe(event.set)
        return True

    # -- locks ------------------------------------------------------------------------

    def lock(
        self,
        path: str | os.PathLike[str],
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        *,
        state: NodeState | str | None = None,
        priority: int | None = None,
        parent: NodeRef | None = None,
    ) -> LockNode:
        """Start acquiring an exclusive inter-process lock on ``path``; return its
        :class:`LockNode` (pending until the next tick applies the outcome).

        The lock file lives under ``<root>/.dagctx/locks/``; ``path`` itself need not exist.
        The lock is held until :meth:`release` or until the session closes; the OS frees
        it if this process dies.

        Raises:
            PathError: ``path`` is outside the session root.
            LockError: ``timeout`` is not a finite number >= 0.
            NodeNotFoundError: ``parent`` is unknown. Nothing is locked then.
        """
        self._check_open()
        _, relative = self.resolve_path(path)
        seconds = check_lock_timeout(timeout)
        lock_file = lock_file_for(self.root, relative)
        node = LockNode(relative, lock_file=lock_file, timeout=seconds, state=state,
                        priority=priority)  # fmt: skip
        self.add(node, parent=parent)
        handle = LockHandle(lock_file)
        jobs = self._jobs()
        with jobs.mutex:
            jobs.locks[node] = handle
            jobs.outstanding[node] = self.background.submit(self._acquire(node, handle))
        return node

    async def _acquire(self, node: LockNode, handle: LockHandle) -> None:
        outcome = await asyncio.to_thread(handle.acquire, node.timeout)
        if outcome.status != "acquired":
            jobs = self._jobs()
            with jobs.mutex:
                if jobs.locks.get(node) is handle:
                    del jobs.locks[node]
        self.queue_result(partial(self._settle, node, partial(node.apply_outcome, outcome)))

    def release(self, lock: LockNode | str) -> bool:
        """Release a lock now (or stop waiting for it); return whether an OS lock was held.

        The node shows ``released`` at once. Releasing a lock that timed out, failed or
        was released already changes nothing.

        Raises:
            NodeNotFoundError: unknown node. LockError: not a lock node.
        """
        target = self._typed(lock, LockNode)
        jobs = self._jobs()
        with jobs.mutex:
            handle = jobs.locks.pop(target, None)
        was_held = handle.release() if handle is not None else False
        target.mark_released(was_held=was_held)
        return was_held

    # -- waiting ----------------------------------------------------------------------

    def ready(self, node: NodeRef) -> bool:
        """Whether ``node`` has no background result still to come (it may be queued and
        not yet applied: the next tick applies it).

        Raises:
            NodeNotFoundError: unknown node.
        """
        future = self._jobs().outstanding.get(self.graph.get(node))
        return future is None or future.done()

    @overload
    def wait(self, node: N, timeout: float | None = None) -> N: ...
    @overload
    def wait(self, node: str, timeout: float | None = None) -> Node: ...

    def wait(self, node: Node | str, timeout: float | None = None) -> Any:
        """Block until ``node``'s background result is queued (or ``timeout`` seconds
        pass), then apply the queued results without starting a turn; return the node.

        After a timeout the node is returned as it is (e.g. still ``running``).

        Raises:
            NodeNotFoundError: unknown node. DagctxError: bad timeout, or called on the
            session's own loop (use :meth:`wait_async`).
        """
        return self.wait_all([node], timeout)[0]

    @overload
    def wait_all(self, nodes: Iterable[N], timeout: float | None = None) -> list[N]: ...
    @overload
    def wait_all(self, nodes: Iterable[Node | str], timeout: float | None = None) -> list[Any]: ...

    def wait_all(self, nodes: Iterable[Node | str], timeout: float | None = None) -> list[Any]:
        """Like :meth:`wait` for every node (one shared ``timeout``); return the nodes."""
        targets, futures = self._wait_targets(nodes, timeout)
        if futures:
            concurrent.futures.wait(futures, timeout, concurrent.futures.ALL_COMPLETED)
        self._apply_background_results()
        return targets

    @overload
    def wait_any(self, nodes: Iterable[N], timeout: float | None = None) -> N | None: ...
    @overload
    def wait_any(self, nodes: Iterable[Node | str], timeout: float | None = None) -> Any: ...

    def wait_any(self, nodes: Iterable[Node | str], timeout: float | None = None) -> Any:
        """Block until one of ``nodes`` has its result (or ``timeout`` passes), apply the
        queued results, and return the first node (in the given order) with nothing
        left to come; ``None`` after a timeout.

        Raises:
            DagctxError: ``nodes`` is empty, a bad timeout, or called on the session's loop.
            NodeNotFoundError: an unknown node.
        """
        targets, futures = self._wait_targets(nodes, timeout, need_one=True)
        if futures and len(futures) == len(targets):
            concurrent.futures.wait(futures, timeout, concurrent.futures.FIRST_COMPLETED)
        self._apply_background_results()
        return self._first_ready(targets)

    async def wait_async(self, node: N, timeout: float | None = None) -> N:
        """The async twin of :meth:`wait`."""
        return (await self.wait_all_async([node], timeout))[0]

    async def wait_all_async(self, nodes: Iterable[N], timeout: float | None = None) -> list[N]:
        """The async twin of :meth:`wait_all`."""
        targets, futures = self._wait_targets(nodes, timeout, blocking=False)
        if futures:
            await asyncio.wait([asyncio.wrap_future(f) for f in futures], timeout=timeout)
        self._apply_background_results()
        return targets

    async def wait_any_async(self, nodes: Iterable[N], timeout: float | None = None) -> N | None:
        """The async twin of :meth:`wait_any`."""
        targets, futures = self._wait_targets(nodes, timeout, need_one=True, blocking=False)
        if futures and len(futures) == len(targets):
            wrapped = [asyncio.wrap_future(f) for f in futures]
            await asyncio.wait(wrapped, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        self._apply_background_results()
        return self._first_ready(targets)

    # -- internals --------------------------------------------------------------------

    def _jobs(self) -> _Jobs:
        jobs = getattr(self, "_dagctx_jobs", None)
        if jobs is None:
            jobs = self._dagctx_jobs = _Jobs()
            self.on_close(self._close_jobs)
        return jobs

    def _typed(self, ref: _Typed | str, cls: type[_Typed]) -> _Typed:
        node = self.graph.get(ref)
        if not isinstance(node, cls):
            error = ShellError if cls is ShellNode else LockError
            raise error(f"node {node.id!r} is a {node.type_name} node, not a {cls.type_name} node")
        return node

    def _settle(self, node: Node, apply: Callable[[], None]) -> None:
        """Apply a job's final result and forget the job (runs inside the intake)."""
        apply()
        jobs = self._jobs()
        with jobs.mutex:
            jobs.outstanding.pop(node, None)
            if isinstance(node, ShellNode):
                jobs.cancels.pop(node, None)

    def _wait_targets(
        self,
        nodes: Iterable[Node | str],
        timeout: float | None,
        *,
        need_one: bool = False,
        blocking: bool = True,
    ) -> tuple[list[Any], list[concurrent.futures.Future[None]]]:
        if isinstance(nodes, str | Node):
            raise DagctxError(f"expected a list of nodes, got {nodes!r}")
        targets = [self.graph.get(n) for n in nodes]
        if need_one and not targets:
            raise DagctxError("wait_any needs at least one node, got none")
        valid = timeout is None or (
            isinstance(timeout, int | float)
            and not isinstance(timeout, bool)
            and math.isfinite(timeout)
            and timeout >= 0
        )
        if not valid:
            raise DagctxError(f"wait timeout must be None or a number >= 0, got {timeout!r}")
        if blocking and self.background.in_loop_thread():
            raise DagctxError("a blocking wait was called on the session's loop;"
                              " use `await session.wait_async(...)`")  # fmt: skip
        jobs = self._jobs()
        with jobs.mutex:
            futures = [jobs.outstanding[t] for t in targets if t in jobs.outstanding]
        return targets, futures

    def _first_ready(self, targets: Sequence[N]) -> N | None:
        outstanding = self._jobs().outstanding
        return next((t for t in targets if t not in outstanding), None)

    def _apply_background_results(self) -> None:
        """Tick step 1 on its own: apply queued results in one graph batch."""
        with self.graph.batch():
            self._apply_intake()

    def _close_jobs(self) -> None:
        """On session close: release every lock, stop every command and wait for it."""
        jobs = self._jobs()
        with jobs.mutex:
            locks, jobs.locks = jobs.locks, {}
            running = [(e, jobs.outstanding.get(n)) for n, e in jobs.cancels.items()]
        for node, handle in locks.items():
            node.mark_released(was_held=handle.release())
        if not running or not self.background.started:
            return
        for event, _ in running:
            self.background.loop.call_soon_threadsafe(event.set)
        if not self.background.in_loop_thread():
            futures = [f for _, f in running if f is not None]
            concurrent.futures.wait(futures, _CLOSE_WAIT)
