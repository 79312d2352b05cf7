"""Session verbs for background jobs: shell commands, file locks, and waiting for them.

:class:`JobVerbs` is a mixin of :class:`~dagctx.session.Session`. Each job runs on the
session's background loop and only *queues* its result (``Session.queue_result``); the
node changes when the result is applied, which is step 1 of the next ``tick()``, or an
explicit :meth:`JobVerbs.wait` / :meth:`~JobVerbs.wait_all` / :meth:`~JobVerbs.wait_any`.

``wait`` blocks until the job's result is queued and then applies the queued background
results (exactly tick step 1, inside one graph batch) **without** starting a turn: the
nodes change at once, ``Session.turn`` does not move, and the next tick still lists these
changes in its "changes since last turn". Each blocking wait has an async twin for code
running on an event loop, named by the session's twin rule: ``await s.await_(node)``,
``await_all``, ``await_any``. Their former names ``wait_async``, ``wait_all_async`` and
``wait_any_async`` remain as aliases.

Explicit verbs act at once: ``release`` lets the OS lock go and marks the node released;
``cancel`` asks the command to stop (its process group is killed; the node shows
``cancelled`` once the result is applied). Closing the session cancels every command
still running and releases every lock.

The state of the jobs (futures, cancel events, OS locks) is the session's
:class:`~dagctx.session.parts.jobs.Jobs` part, ``self._jobs``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from dagctx._validate import is_finite
from dagctx.errors import ArgumentError, BlockingCallError, LockError, ShellError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.lock import (
    DEFAULT_TIMEOUT as DEFAULT_LOCK_TIMEOUT,
)
from dagctx.nodes.lock import (
    LockHandle,
    LockNode,
    check_lock_timeout,
    lock_file_for,
)
from dagctx.nodes.lock_pg import PostgresLockHandle, advisory_key
from dagctx.nodes.shell import DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ShellNode
from dagctx.runtime.coordination_pg import repository_identity
from dagctx.session.core import SessionCore

if TYPE_CHECKING:
    from dagctx.graph import NodeRef

N = TypeVar("N", bound=Node)
_Typed = TypeVar("_Typed", ShellNode, LockNode)


class JobVerbs(SessionCore):
    """Shell, lock and wait verbs of a :class:`~dagctx.session.Session`."""

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
        ``output_cap`` bytes (head and tail, with a marker where bytes were cut). Secrets in
        the output are redacted unless the session was made with ``include_secrets``.

        Raises:
            ShellError: a malformed argument (non-string cmd, bad args/env, timeout <= 0).
            PathError: ``cwd`` is outside the session root.
            NodeNotFoundError: ``parent`` is unknown. Nothing is started then.
        """
        self._check_open()
        where = self.root if cwd is None else self.resolve_path(cwd)[0]
        node = ShellNode(
            cmd, args, cwd=where, env=env, timeout=timeout, shell=shell, output_cap=output_cap,
            include_secrets=self.include_secrets, state=state, priority=priority,
        )  # fmt: skip
        self.add(node, parent=parent)
        self._jobs.start_shell(node)
        return node

    def cancel(self, node: ShellNode | str) -> bool:
        """Ask a pending or running command to stop; return whether one was still going.

        Its process group gets SIGTERM, then SIGKILL after a grace period; the node shows
        ``cancelled`` once the result is applied (next tick or ``wait``).

        Raises:
            NodeNotFoundError: unknown node. ShellError: not a shell node.
        """
        return self._jobs.cancel(self._typed(node, ShellNode))

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
        it if this process dies. With a PostgreSQL ``store`` it is an advisory lock keyed
        by the repository and the repository-relative path instead
        (:mod:`dagctx.nodes.lock_pg`), exclusive between agents on every machine; the
        server frees it if the holder dies, and a broken connection shows it ``lost``.

        Raises:
            PathError: ``path`` is outside the session root.
            LockError: ``timeout`` is not a finite number >= 0.
            NodeNotFoundError: ``parent`` is unknown. Nothing is locked then.
        """
        self._check_open()
        absolute, relative = self.resolve_path(path)
        seconds = check_lock_timeout(timeout)
        handle: LockHandle | PostgresLockHandle
        if self.store is None:
            lock_file = lock_file_for(self.root, relative)
            handle = LockHandle(lock_file, root=self.root)
            node = LockNode(relative, lock_file=lock_file, timeout=seconds, state=state,
                            priority=priority)  # fmt: skip
        else:
            repo_id, base = repository_identity(self.root)
            name = absolute.relative_to(base).as_posix() if absolute != base else ""
            handle = PostgresLockHandle(self.store, advisory_key(repo_id, name))
            described = f"advisory lock {handle.key} ({repo_id}:{name}) on {handle.where}"
            node = LockNode(relative, lock_file=described, timeout=seconds, state=state,
                            priority=priority, service="postgresql")  # fmt: skip
        self.add(node, parent=parent)
        self._jobs.start_lock(node, handle)
        return node

    def release(self, lock: LockNode | str) -> bool:
        """Release a lock now (or stop waiting for it); return whether an OS lock was held.

        The node shows ``released`` at once. Releasing a lock that timed out, failed or
        was released already changes nothing.

        Raises:
            NodeNotFoundError: unknown node. LockError: not a lock node.
        """
        target = self._typed(lock, LockNode)
        was_held = self._jobs.release(target)
        target.mark_released(was_held=was_held)
        return was_held

    # -- waiting ----------------------------------------------------------------------

    def ready(self, node: NodeRef) -> bool:
        """Whether ``node`` has no background result still to come (it may be queued and
        not yet applied: the next tick applies it).

        Raises:
            NodeNotFoundError: unknown node.
        """
        return self._jobs.ready(self.graph.get(node))

    @overload
    def wait(self, node: N, timeout: float | None = None) -> N: ...
    @overload
    def wait(self, node: str, timeout: float | None = None) -> Node: ...

    def wait(self, node: Node | str, timeout: float | None = None) -> Any:
        """Block until ``node``'s background result is queued (or ``timeout`` seconds
        pass), then apply the queued results without starting a turn; return the node.

        After a timeout the node is returned as it is (e.g. still ``running``).

        Raises:
            NodeNotFoundError: unknown node. ArgumentError: bad timeout.
            BlockingCallError: called on the session's own loop (use :meth:`await_`).
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
            ArgumentError: ``nodes`` is empty or a bad timeout.
            BlockingCallError: called on the session's loop.
            NodeNotFoundError: an unknown node.
        """
        targets, futures = self._wait_targets(nodes, timeout, need_one=True)
        if futures and len(futures) == len(targets):
            concurrent.futures.wait(futures, timeout, concurrent.futures.FIRST_COMPLETED)
        self._apply_background_results()
        return self._jobs.first_settled(targets)

    async def await_(self, node: N, timeout: float | None = None) -> N:
        """The async twin of :meth:`wait` (also called ``wait_async``)."""
        return (await self.await_all([node], timeout))[0]

    async def await_all(self, nodes: Iterable[N], timeout: float | None = None) -> list[N]:
        """The async twin of :meth:`wait_all` (also called ``wait_all_async``)."""
        targets, futures = self._wait_targets(nodes, timeout, blocking=False)
        if futures:
            await asyncio.wait([asyncio.wrap_future(f) for f in futures], timeout=timeout)
        self._apply_background_results()
        return targets

    async def await_any(self, nodes: Iterable[N], timeout: float | None = None) -> N | None:
        """The async twin of :meth:`wait_any` (also called ``wait_any_async``)."""
        targets, futures = self._wait_targets(nodes, timeout, need_one=True, blocking=False)
        if futures and len(futures) == len(targets):
            wrapped = [asyncio.wrap_future(f) for f in futures]
            await asyncio.wait(wrapped, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        self._apply_background_results()
        return self._jobs.first_settled(targets)

    # The names the async twins had before the twin rule (see dagctx.session); kept.
    wait_async = await_
    wait_all_async = await_all
    wait_any_async = await_any

    # -- internals --------------------------------------------------------------------

    def _typed(self, ref: _Typed | str, cls: type[_Typed]) -> _Typed:
        node = self.graph.get(ref)
        if not isinstance(node, cls):
            error = ShellError if cls is ShellNode else LockError
            raise error(f"node {node.id!r} is a {node.type_name} node, not a {cls.type_name} node")
        return node

    def _wait_targets(
        self,
        nodes: Iterable[Node | str],
        timeout: float | None,
        *,
        need_one: bool = False,
        blocking: bool = True,
    ) -> tuple[list[Any], list[concurrent.futures.Future[None]]]:
        if isinstance(nodes, str | Node):
            raise ArgumentError(
                f"expected a list of nodes, got {nodes!r}", name="nodes", value=nodes
            )
        targets = [self.graph.get(n) for n in nodes]
        if need_one and not targets:
            raise ArgumentError(
                "wait_any needs at least one node, got none", name="nodes", value=nodes
            )
        if timeout is not None and (not is_finite(timeout) or timeout < 0):
            raise ArgumentError(
                f"wait timeout must be None or a number >= 0, got {timeout!r}",
                name="timeout",
                value=timeout,
            )
        if blocking and self.background.in_loop_thread():
            raise BlockingCallError("a blocking wait was called on the session's loop;"
                              " use `await session.await_(...)` (formerly wait_async)")  # fmt: skip
        return targets, self._jobs.futures(targets)

    def _apply_background_results(self) -> None:
        """Tick step 1 on its own: apply queued results in one graph batch."""
        with self.graph.batch():
            self._apply_intake()
