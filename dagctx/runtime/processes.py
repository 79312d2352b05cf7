"""One command's life on an asyncio loop: spawn, capped capture, timeout, cancel, kill.

:func:`run_command` starts a command with ``asyncio.create_subprocess_exec`` in a new
session, so it leads its own process group, and reads stdout and stderr in chunks into
:class:`CappedBuffer` s that keep at most ``output_cap`` bytes each (the head and the tail,
counting what was cut), so memory does not grow with the output. It then waits for the
exit, the timeout or a cancel request, whichever comes first. On timeout or cancel the
whole process group — children and grandchildren included — gets SIGTERM, and SIGKILL if
anything in the group is still alive after a grace period.

A descendant can leave the group (``setsid``) and be reparented when its parent exits, so
the group alone does not find it. Every command therefore runs with its own mark in the
environment (``DAGCTX_JOB=<mark>``), which children inherit through fork, exec and
``setsid``; a stop signals the group *and* every process whose ``/proc/<pid>/environ``
carries the mark or whose parent chain leads to the command (:func:`marked_processes`).
:func:`stop_marked` ends what is left of finished commands (a session calls it at
close). A process that clears its environment and leaves the group and its parent can
still escape; where ``/proc`` is missing only the group is stopped.

A command that cannot start (missing executable, bad working directory, permission) is
not an exception: the result says ``failed`` with the reason. This module knows nothing
of nodes or sessions; :mod:`dagctx.session.jobs` queues its result for the next tick and
:class:`~dagctx.nodes.shell.ShellNode` renders it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

ShellStatus = Literal["pending", "running", "completed", "failed", "timeout", "cancelled"]
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "timeout", "cancelled"})

CHUNK_BYTES = 64 * 1024
#: Seconds between SIGTERM and SIGKILL for a process group being stopped.
KILL_GRACE = 2.0
#: Seconds a finished command's pipes may stay open (held by a leftover background
#: process of its group) before that group is killed so the capture can end.
DRAIN_SECONDS = 1.0
_POLL = 0.02
#: The environment variable that marks a command's processes (see the module docstring).
MARK_VARIABLE = "DAGCTX_JOB"


def new_mark() -> str:
    """A mark no other command of any process shares."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """What to run: the argument vector, where, with which extra environment, how long."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] | None = None  # added to (overriding) the inherited environment
    timeout: float | None = 30.0
    output_cap: int = 32 * 1024
    kill_grace: float = KILL_GRACE
    mark: str = field(default_factory=new_mark)  # DAGCTX_JOB of its processes


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command ended.

    ``exit_code`` is set when the process exited, ``signal`` when a signal killed it.
    ``stdout`` / ``stderr`` hold the kept bytes decoded as UTF-8 (invalid bytes replaced),
    with a truncation marker where bytes were cut; ``*_bytes`` count everything the
    command wrote and ``*_cut`` what was dropped.
    """

    status: ShellStatus
    exit_code: int | None = None
    signal: int | None = None
    started_at: float | None = None
    duration: float | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_cut: int = 0
    stderr_cut: int = 0
    error: str | None = None


class CappedBuffer:
    """Keeps the first and last bytes of a stream, at most ``cap`` bytes in all.

    The head takes the first ``cap // 2`` bytes and the tail the last ``cap - cap // 2``;
    everything between is counted in :attr:`cut` and dropped as it arrives.
    """

    __slots__ = ("_head_cap", "_tail_cap", "head", "tail", "total")

    def __init__(self, cap: int) -> None:
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    @property
    def cut(self) -> int:
        """How many bytes were dropped between the head and the tail."""
        return self.total - len(self.head) - len(self.tail)

    def feed(self, data: bytes) -> None:
        """Take one chunk of the stream."""
        self.total += len(data)
        room = self._head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self._tail_cap:
            self.tail += data[-self._tail_cap :]
            excess = len(self.tail) - self._tail_cap
            if excess > 0:
                del self.tail[:excess]

    def text(self, name: str) -> str:
        """The kept bytes as text, with a marker naming ``name`` where bytes were cut."""
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.cut:
            return head + tail
        marker = (
            f"[… {self.cut:,} bytes of {name} cut; kept the first {len(self.head):,} and"
            f" the last {len(self.tail):,} of {self.total:,} …]"
        )
        return f"{head}\n{marker}\n{tail}"


async def run_command(
    spec: CommandSpec,
    *,
    cancel: asyncio.Event,
    on_start: Callable[[int, float], None],
) -> CommandResult:
    """Run ``spec`` to its end and return how it ended; never raises for a bad command.

    ``on_start(pid, wall_clock_start)`` is called once the process exists. Setting
    ``cancel`` stops the command (status ``cancelled``); so does cancelling the task
    running this coroutine (the process group is killed before it returns).
    """
    if cancel.is_set():
        return CommandResult("cancelled", error="never started")
    if not os.path.isdir(spec.cwd):
        return CommandResult("failed", error=f"working directory {spec.cwd!r} does not exist")
    env = {**os.environ, **(spec.env or {}), MARK_VARIABLE: spec.mark}
    started_at, t0 = time.time(), time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *spec.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=spec.cwd,
            env=env,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return CommandResult("failed", started_at=started_at, error=_start_error(spec, exc))
    on_start(proc.pid, started_at)
    out, err = CappedBuffer(spec.output_cap), CappedBuffer(spec.output_cap)
    assert proc.stdout is not None and proc.stderr is not None  # PIPE was asked for
    readers = [
        asyncio.create_task(_pump(proc.stdout, out)),
        asyncio.create_task(_pump(proc.stderr, err)),
    ]
    try:
        ending = await _supervise(proc, spec, cancel)
    except asyncio.CancelledError:  # the loop is shutting down: leave nothing behind
        await _kill_group(proc, spec)
        ending = "cancelled"
    duration = time.monotonic() - t0
    await _drain(proc, readers, spec)
    code = proc.returncode
    status: ShellStatus = "completed" if ending == "exited" and code == 0 else "failed"
    if ending != "exited":
        status = "timeout" if ending == "timeout" else "cancelled"
    return CommandResult(
        status,
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        started_at=started_at,
        duration=duration,
        stdout=out.text("stdout"),
        stderr=err.text("stderr"),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_cut=out.cut,
        stderr_cut=err.cut,
    )


def _start_error(spec: CommandSpec, exc: Exception) -> str:
    program = spec.argv[0]
    if isinstance(exc, FileNotFoundError) and exc.filename == spec.cwd:
        return f"working directory {spec.cwd!r} does not exist"
    if isinstance(exc, FileNotFoundError):
        where = "" if os.sep in program else " on PATH"
        return f"executable {program!r} not found{where}"
    if isinstance(exc, PermissionError):
        return f"cannot run {program!r}: permission denied (not executable?)"
    if isinstance(exc, OSError):
        return f"cannot start {program!r}: {exc.strerror or exc}"
    return f"cannot start {program!r}: {exc}"


async def _pump(stream: asyncio.StreamReader, buffer: CappedBuffer) -> None:
    while chunk := await stream.read(CHUNK_BYTES):
        buffer.feed(chunk)


async def _supervise(
    proc: asyncio.subprocess.Process, spec: CommandSpec, cancel: asyncio.Event
) -> Literal["exited", "timeout", "cancelled"]:
    """Wait for the exit, the timeout or the cancel request; stop the group if not exited."""
    exited = asyncio.ensure_future(_exit(proc))
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait(
            {exited, cancelled}, timeout=spec.timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        exited.cancel()
        cancelled.cancel()
    if exited in done:
        return "exited"
    await _kill_group(proc, spec)
    return "cancelled" if cancelled in done else "timeout"


async def _kill_group(proc: asyncio.subprocess.Process, spec: CommandSpec) -> None:
    """SIGTERM the process group and the command's marked processes (see the module
    docstring); SIGKILL them if any outlives ``spec.kill_grace`` seconds."""
    group = proc.pid  # start_new_session makes the child its group's leader
    escaped = _signal_all(group, spec.mark, signal.SIGTERM)
    deadline = time.monotonic() + spec.kill_grace
    while time.monotonic() < deadline:
        escaped |= set(marked_processes({spec.mark}, group))
        if proc.returncode is not None and not _group_alive(group) and not _any_alive(escaped):
            return
        await asyncio.sleep(_POLL)
    _signal_all(group, spec.mark, signal.SIGKILL, escaped)
    await _exit(proc)


def _signal_all(group: int, mark: str, sig: signal.Signals, also: Collection[int] = ()) -> set[int]:
    """Send ``sig`` to the group, the processes marked ``mark`` and ``also``; return the
    pids signalled outside the group."""
    _signal_group(group, sig)
    pids = set(marked_processes({mark}, group)) | set(also)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return pids


def _any_alive(pids: Collection[int]) -> bool:
    return any(_state(pid) not in (None, b"Z", b"X") for pid in pids)


def stop_marked(marks: Collection[str], grace: float = 0.5) -> list[int]:
    """End every live process marked with one of ``marks``: SIGTERM, then SIGKILL for
    those still alive after ``grace`` seconds. Blocks at most about ``grace`` seconds;
    returns the pids it signalled."""
    pids = marked_processes(marks)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and _any_alive(pids) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for pid in pids:
        if _any_alive((pid,)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return pids


def marked_processes(marks: Collection[str], ancestor: int | None = None) -> list[int]:
    """Live processes (not zombies) whose environment holds ``DAGCTX_JOB=<m>`` for a mark
    ``m`` in ``marks``, or whose parent chain reaches ``ancestor``; never this process.
    Empty where ``/proc`` is missing."""
    if not marks or not os.path.isdir("/proc/self"):
        return []
    wanted = {f"{MARK_VARIABLE}={m}".encode() for m in marks}
    parents: dict[int, int] = {}
    found: list[int] = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        fields = _stat_fields(pid)
        if fields is None or fields[0] in (b"Z", b"X"):
            continue
        parents[pid] = int(fields[1])
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue  # gone, or another user's process
        if wanted.intersection(environ.split(b"\0")):
            found.append(pid)
    if ancestor is not None:
        for pid in parents:
            seen, up = 0, parents.get(pid)
            while up is not None and up > 1 and seen < 4096:
                if up == ancestor:
                    found.append(pid)
                    break
                up, seen = parents.get(up), seen + 1
    return sorted(set(found))


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None  # the process ended while we looked


def _state(pid: int) -> bytes | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


async def _exit(proc: asyncio.subprocess.Process) -> int:
    """Wait for the process itself to end.

    ``Process.wait()`` is not used: before Python 3.12 it also waits for the pipes to
    close, which a leftover background process of the command can keep open forever.
    """
    delay = 0.002
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


async def _drain(
    proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]], spec: CommandSpec
) -> None:
    """Let the readers reach end of output; kill leftovers of the group holding the pipes."""
    _, pending = await asyncio.wait(readers, timeout=DRAIN_SECONDS)
    if pending and _group_alive(proc.pid):
        await _kill_group(proc, spec)
        _, pending = await asyncio.wait(pending, timeout=DRAIN_SECONDS)
    for reader in pending:  # a process that left the group still holds a pipe
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    """Whether a process of the group still runs (zombies do not count where ``/proc``
    tells them apart: an init that never reaps orphans must not stall every kill)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _live_member(group) if os.path.isdir("/proc/self") else True


def _live_member(group: int) -> bool:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and len(fields) > 2 and int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            return True
    return False
