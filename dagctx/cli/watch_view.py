"""What ``dagctx watch`` shows and writes: scan a tree, then keep its budgeted projection fresh.

After each tick the projection is written atomically (:func:`dagctx._fs.write_atomic`: a
temporary file in the same directory, fsynced, then renamed) to ``--out`` (default
``PATH/.dagctx/projection.md``) and to ``PATH/.dagctx/projection.json`` (sections and nodes
left out with their paths, changes and the explain summary; rewritten only when it
changed), so a reader never sees a half-written file. On a terminal the
first scan of a large tree shows a progress bar and the status is a rich ``Live`` panel;
otherwise each tick is one plain log line. Ctrl-C (or SIGTERM) stops cleanly with exit
status 0 and no temporary files, within a fraction of a second even during the first scan
of a large tree (:class:`CtrlC`: until the first tick is done Ctrl-C raises where the main
thread is; token counting stops between texts); a session whose first tick did not
complete is not saved.

The session is saved to ``PATH/.dagctx/session.db`` (every few seconds and at exit), and a
later ``dagctx watch`` on the same tree resumes it: node ids and states, checkpoints and
the turn count carry over, and the tree is re-surveyed for what changed meanwhile.

What it never does: overwrite a file it did not write (``--out`` must be new, empty, or a
file an earlier ``dagctx watch`` wrote; those are listed in ``PATH/.dagctx/outputs.json``
and are never read as content); move or overwrite a saved session it could not read for
a reason that is not the file's fault (disk full, I/O error: it starts a new session
that does not save); overwrite an earlier set-aside copy; save over a session another
process is writing (the save is refused and reported, see :mod:`dagctx.session.file`);
stop when a write fails (disk full: the last good projection stays, the failure is
reported, and the next tick tries again). ``PATH/.dagctx`` holds a ``.gitignore`` of
``*``, and is made again before a write if it vanished (``git clean -fdx``).

``PATH/.dagctx`` must be a real directory inside PATH (a symlink there is refused, see
:func:`dagctx._fs.make_state_dir`). When nothing can be written under PATH (read-only),
the state goes to a directory of its own under ``$XDG_STATE_HOME/dagctx`` instead, and
the first line on stderr says where (:func:`state_location`).

With ``--viz`` (and as ``dagctx viz``) each tick is also shown on the live page of
:class:`dagctx.viz.server.VizServer`, served on 127.0.0.1 from the first tick on.

File tracking lives in :mod:`dagctx.watch.loop`; this module only renders and writes.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import aclosing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.progress_bar import ProgressBar
from rich.table import Table

from dagctx import _postgres
from dagctx._fs import (
    STATE_DIR,
    StateDirError,
    display_path,
    make_state_dir,
    set_aside,
    write_atomic,
)
from dagctx.errors import CheckpointError, PathError, SessionFileUnavailableError
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode
from dagctx.tokens import get_encoding
from dagctx.watch.steering import NO_STEERING, Steering
from dagctx.watch.tracker import TreeTracker

if TYPE_CHECKING:
    from dagctx.session import Session, TickResult

#: A scan still running after this many seconds gets a progress bar (a "large tree").
LARGE_SCAN_SECONDS = 0.3
#: Seconds between two saves of the session while watching (it is also saved at exit).
SAVE_INTERVAL = 5.0
_SHOWN_CHANGES = 5


def describe_changes(session: Session, result: TickResult) -> list[str]:
    """One line per direct change of a tick ("path: what happened"), file changes first;
    structural changes of directory groups only when nothing else changed."""
    lines: list[str] = []
    structural: list[str] = []
    for trace in result.changes:
        if trace.derived:
            continue
        node = session.graph.get(trace.node_id) if trace.node_id in session.graph else None
        label = node.label() if node is not None else trace.node_id
        line = f"{label}: {trace.description}"
        (structural if isinstance(node, GroupNode) else lines).append(line)
    return lines or structural


OUTPUTS_RECORD = "outputs.json"
"""The state directory's list of the ``--out`` files dagctx watch has written."""


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where each tick's projection goes: the text and its JSON account; ``state`` is
    the state directory, ``written`` every output an earlier watch recorded (never
    content)."""

    markdown: Path
    json: Path
    state: Path
    written: tuple[Path, ...] = ()
    #: The account last written to ``json`` (without turn and duration), in a box: the
    #: outputs are otherwise fixed for the watch's life.
    account_written: list[str] = field(default_factory=lambda: [""], compare=False, repr=False)

    @classmethod
    def for_session(cls, session: Session, out: str | None, state: Path | None = None) -> Outputs:
        """The output paths (``out`` or the default in ``state``, by default the root's
        ``.dagctx``), directories made (:func:`dagctx._fs.make_state_dir`: never through
        a symlink), ``out`` recorded as dagctx's.

        Raises:
            PathError: ``out`` is a directory, a file with content that dagctx did not
                write, or in a directory that does not exist outside ``state``.
            OSError: the state directory is a symlink or cannot be made.
        """
        state = state or session.root / STATE_DIR
        markdown = Path(out).expanduser().resolve() if out else state / "projection.md"
        if markdown.is_dir():
            raise PathError(f"--out {out!r} is a directory; give a file path", path=out)
        if out and not markdown.parent.is_dir() and not markdown.is_relative_to(state):
            raise PathError(
                f"--out {out!r}: the directory {str(markdown.parent)!r} does not exist;"
                f" make it first (only directories under {str(state)!r} are made)",
                path=out,
            )
        make_state_dir(state)
        written = _recorded_outputs(state)
        if out and markdown.parent != state and markdown not in written:
            if _has_content(markdown):
                raise PathError(
                    f"--out {out!r} is a file dagctx did not write; refusing to overwrite"
                    " it: give a new path (or remove the file)",
                    path=out,
                )
            written = (*written, markdown)
            write_atomic(
                state / OUTPUTS_RECORD,
                json.dumps([str(p) for p in written], ensure_ascii=False),
                mode=0o644,
            )
        markdown.parent.mkdir(parents=True, exist_ok=True)
        return cls(markdown, state / "projection.json", state, written)

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every path that is dagctx's output, to be left out of the watched content."""
        return (self.markdown, self.json, *self.written)

    def write(self, session: Session, result: TickResult) -> float:
        """Write the text, then its account, each atomically; return the seconds it took.
        The account (``projection.json``: :meth:`Projection.to_dict`, the tick's changes
        and the explain summary) is written only when something in it other than the turn
        and the tick's duration changed since this watch last wrote it, so a tick that
        changed nothing costs no rewrite of a large file. A directory that vanished is
        made again first.

        Raises:
            OSError: a write failed (the file that was there stays as it was).
        """
        started = time.perf_counter()
        make_state_dir(self.state)
        self.markdown.parent.mkdir(parents=True, exist_ok=True)
        projection = result.projection
        write_atomic(self.markdown, projection.text, mode=0o644)  # first: what agents read
        account: dict[str, Any] = {
            **projection.to_dict(),
            "changes": [
                {
                    "node_id": t.node_id,
                    "description": t.description,
                    "old_version": t.old_version,
                    "new_version": t.new_version,
                }
                for t in result.changes
                if not t.derived
            ],
            "explain": projection.explain(),
        }
        # Compact: json's C encoder is used only without indent (several times faster).
        body = json.dumps(account, ensure_ascii=False)
        if body != self.account_written[0] or not self.json.exists():
            tick = {"turn": result.turn, "tick_ms": round(result.duration * 1000, 3)}
            write_atomic(self.json, json.dumps(tick)[:-1] + ", " + body[1:], mode=0o644)
            self.account_written[0] = body
        return time.perf_counter() - started


def _recorded_outputs(state: Path) -> tuple[Path, ...]:
    try:
        raw = json.loads((state / OUTPUTS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    if not isinstance(raw, list):
        return ()
    return tuple(Path(item) for item in raw if isinstance(item, str))


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


class ScanProgress:
    """The ``progress`` callback of the first scan: a rich progress bar on a terminal,
    shown only once the scan has run for :data:`LARGE_SCAN_SECONDS`."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.files = 0
        self._started: float | None = None
        self._bar: Progress | None = None

    def __call__(self, files: int) -> None:
        self.files = files
        if self._bar is None:
            now = time.perf_counter()
            self._started = self._started or now
            if not self.console.is_terminal or now - self._started < LARGE_SCAN_SECONDS:
                return
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("scanning"),
                BarColumn(),
                TextColumn("{task.completed:,} files"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.add_task("scan", total=None)
            self._bar.start()
        self._bar.update(self._bar.task_ids[0], completed=files)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


class StatusView(Protocol):
    def update(self, result: TickResult, write_seconds: float) -> None: ...

    def close(self) -> None: ...


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _usage(result: TickResult) -> tuple[str, str]:
    p = result.projection
    budget = f"{p.tokens:,}/{p.budget:,} tokens ({100 * p.tokens / p.budget:.1f}%)"
    sections = f"{len(p.sections)} sections, {len(p.degraded)} degraded, {len(p.omitted)} left out"
    return budget, sections


class LogView:
    """One plain line per tick, for pipes and log files."""

    def __init__(self, session: Session, outputs: Outputs, print_line: Callable[[str], None]):
        self.session = session
        self.outputs = outputs
        self.print = print_line
        self._started = False

    def update(self, result: TickResult, write_seconds: float) -> None:
        if not self._started:
            self._started = True
            self.print(
                f"dagctx watch: watching {self.session.root} (budget {self.session.budget:,});"
                f" writing {self.outputs.markdown} after each tick; Ctrl-C stops"
            )
        budget, sections = _usage(result)
        changes = describe_changes(self.session, result)
        changed = "; ".join(changes[:_SHOWN_CHANGES])
        if len(changes) > _SHOWN_CHANGES:
            changed += f"; … {len(changes) - _SHOWN_CHANGES} more"
        latency = f"tick {result.duration * 1000:.1f} ms, write {write_seconds * 1000:.1f} ms"
        count = f"{_count(len(changes), 'change')} ({changed})" if changes else "no changes"
        self.print(f"turn {result.turn}: {count} | {budget} | {sections} | {latency}")

    def close(self) -> None:
        self.print("dagctx watch: stopped")


class LiveView:
    """A rich ``Live`` panel redrawn after each tick; the first says what the first scan
    found, or, for a resumed session, which files changed while it was not watched."""

    def __init__(self, session: Session, outputs: Outputs, console: Console) -> None:
        self.session = session
        self.outputs = outputs
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._first = True
        #: The turn a resumed session was saved after (None: a new session, scanned).
        self._resumed_after = session.turn or None

    def update(self, result: TickResult, write_seconds: float) -> None:
        if self._first:
            self._live.start()
        self._live.update(self._render(result, write_seconds), refresh=True)
        self._first = False

    def _render(self, result: TickResult, write_seconds: float) -> RenderableType:
        p = result.projection
        budget, sections = _usage(result)
        changes = describe_changes(self.session, result)
        if self._first and self._resumed_after is None:
            files = sum(isinstance(n, TextNode) for n in self.session.graph)
            shown = [f"first scan: {_count(files, 'file')}"]
        elif self._first:  # what changed while nobody watched: the offline edits
            offline = f"{_count(len(changes), 'offline edit')}" if changes else "no offline edits"
            shown = [f"resumed after turn {self._resumed_after}: {offline}"]
            shown += changes[:_SHOWN_CHANGES]
            if len(changes) > _SHOWN_CHANGES:
                shown.append(f"… {len(changes) - _SHOWN_CHANGES} more")
        else:
            shown = changes[:_SHOWN_CHANGES] or ["nothing visible"]
            if len(changes) > _SHOWN_CHANGES:
                shown.append(f"… {len(changes) - _SHOWN_CHANGES} more")
        usage = Table.grid(padding=(0, 1))
        usage.add_row(ProgressBar(total=p.budget, completed=p.tokens, width=30), budget)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_row("watching", f"{self.session.root}  (Ctrl-C stops)")
        grid.add_row("turn", str(result.turn))
        grid.add_row("budget", usage)
        grid.add_row("sections", sections)
        grid.add_row("changed", "\n".join(shown))
        latency = f"tick {result.duration * 1000:.1f} ms, write {write_seconds * 1000:.1f} ms"
        grid.add_row("latency", latency)
        grid.add_row("output", f"{self.outputs.markdown}\n{self.outputs.json}")
        return Panel(grid, title="dagctx watch", expand=False)

    def close(self) -> None:
        self._live.stop()


class SessionSaver:
    """Saves the session to ``PATH/.dagctx/session.db``: at most every
    :data:`SAVE_INTERVAL` seconds while watching (a save costs a full write) and at exit.
    A failed save is reported once (a line to ``notice``, which the caller prefixes
    with its command's name) and does not stop the watch. ``off`` (a reason, already
    reported) turns saving off; ``path`` is the file (default: the session's)."""

    def __init__(
        self,
        session: Session,
        notice: Callable[[str], None],
        off: str | None = None,
        path: Path | None = None,
    ) -> None:
        self.session = session
        self.notice = notice
        self.off = off
        self.path = path
        self._last = time.monotonic()
        self._reported = False
        #: Whether a tick of this run completed (before that, Ctrl-C may have cut the
        #: first scan short: such a graph is not saved; the next run scans again).
        self.ticked = False

    def save_if_due(self) -> None:
        self.ticked = True
        if time.monotonic() - self._last >= SAVE_INTERVAL:
            self.save()

    def save_at_exit(self) -> None:
        """Save, if a tick of this run completed."""
        if self.ticked:
            self.save()

    def save(self) -> None:
        if self.off is not None:
            return
        try:
            self.session.save(self.path)
        except CheckpointError as exc:
            if not self._reported:
                self.notice(f"the session is not saved: {exc}")
                self._reported = True
        self._last = time.monotonic()


def state_location(path: str, notice: Callable[[str], None]) -> Path | None:
    """Where ``dagctx watch`` keeps its state for the tree ``path``: its ``.dagctx``
    (:func:`dagctx._fs.make_state_dir`), or, when nothing can be written under ``path`` (a
    read-only tree or file system), a directory of its own under ``$XDG_STATE_HOME/dagctx``
    (default ``~/.local/state/dagctx``), which ``notice`` names. None if ``path`` is not
    a directory (the session says so).

    Raises:
        StateDirError: ``.dagctx`` is a symlink or not a directory (never written through).
        OSError: neither place can be written.
    """
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        return None
    try:
        return make_state_dir(root / STATE_DIR)
    except StateDirError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
        fallback = base / "dagctx" / f"{display_path(root.name) or 'root'}-{digest}"
        make_state_dir(fallback)
        notice(
            f"cannot write under {display_path(str(root))}"
            f" ({exc.strerror or exc}); keeping its state in {fallback}"
        )
        return fallback


def open_session(
    path: str,
    budget: int,
    encoding: str,
    notice: Callable[[str], None],
    state: Path | None = None,
    *,
    include_secrets: bool = False,
    store: str | None = None,
) -> tuple[Session, str | None]:
    """Resume the session saved in ``state`` (default: ``path``'s ``.dagctx``) as
    ``session.db`` (node states, checkpoints, turn count) with ``budget``, or start a new
    one; ``notice`` says which. With a PostgreSQL ``store`` the session is resumed from
    (and will be saved to) its row there (:func:`_open_stored`).

    Returns the session and, when it must not be saved, why. A saved file that is
    damaged (or not a session of this dagctx) is moved aside to ``session.db.unreadable``
    (``.2``, ``.3``, ... when taken; never overwritten); one that cannot be read now for
    a reason that is not the file's fault (disk full, I/O error) is left as it is, and
    the new session does not save over it. One that counted tokens with another
    encoding, or that included secrets when ``include_secrets`` is False (or the other way
    round), is replaced by the next save.

    Raises:
        BudgetError, EncodingError, PathError: for a new session.
    """
    from dagctx.session import Session
    from dagctx.session.store import SESSION_FILE

    if store is not None:
        return _open_stored(path, budget, encoding, notice, store, include_secrets)
    saved = Path(path).expanduser() / SESSION_FILE if state is None else state / SESSION_FILE.name
    off: str | None = None
    if saved.is_file():
        try:
            session = Session.load(saved, root=path)
        except SessionFileUnavailableError as exc:
            off = f"{saved} could not be read now"
            notice(
                f"not resuming from {saved}: {exc}; starting a new session"
                " that will not be saved (the saved one is kept as it is)"
            )
        except CheckpointError as exc:
            try:
                aside = set_aside(saved, ".unreadable")
            except OSError as move_error:
                off = f"{saved} could not be moved aside"
                notice(
                    f"not resuming from {saved}: {exc}; it cannot be moved"
                    f" aside ({move_error}), so this session will not be saved"
                )
            else:
                notice(f"not resuming from {saved}: {exc}; moved it to {aside}")
        else:
            if session.encoding != encoding:
                why = f"it counts tokens with {session.encoding!r}, not {encoding!r}"
            elif session.include_secrets != include_secrets:
                why = "it was made with" + ("out" if include_secrets else "") + " --include-secrets"
            else:
                session.set_budget(budget)
                notice(f"resuming after turn {session.turn} from {saved}")
                return session, None
            session.close()
            notice(f"not resuming from {saved}: {why}; starting over")
    return Session(path, budget=budget, encoding=encoding, include_secrets=include_secrets), off


class WriteReporter:
    """Reports failed projection writes: the first of a run of failures, and the write
    that ends it (the watch goes on either way)."""

    def __init__(self, notice: Callable[[str], None]) -> None:
        self.notice = notice
        self.failing = False

    def failed(self, exc: OSError) -> None:
        if not self.failing:
            self.notice(
                f"the projection is not written: {exc}; the last written one"
                " stays, and the next tick tries again"
            )
        self.failing = True

    def succeeded(self) -> None:
        if self.failing:
            self.notice("the projection is written again")
        self.failing = False


async def _watch(
    session: Session,
    outputs: Outputs,
    view: StatusView,
    progress: ScanProgress,
    saver: SessionSaver,
    writes: WriteReporter,
    ctrl_c: CtrlC,
    viz: Callable[[TickResult], None] | None = None,
    steering: Steering = NO_STEERING,
) -> None:
    task = asyncio.current_task()
    if task is not None:
        with suppress(NotImplementedError, RuntimeError):  # no signals off the main thread
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    results = session.watch(".", progress=progress, ignore=outputs.paths, steering=steering)
    async with aclosing(results):
        async for result in results:
            progress.close()
            if task is not None:
                ctrl_c.cancel_instead(task)  # the first scan and tick are done
            try:
                seconds = outputs.write(session, result)
            except OSError as exc:
                writes.failed(exc)
            else:
                writes.succeeded()
                view.update(result, seconds)
            if viz is not None:
                viz(result)
            saver.save_if_due()


class CtrlC:
    """The SIGINT handler of ``dagctx watch``, installed by :meth:`installed`.

    Until :meth:`cancel_instead` it raises KeyboardInterrupt wherever the main thread is:
    ``asyncio.run`` alone would only cancel the main task at its next ``await``, and the
    first scan of a large tree and the first tick's token counting (synchronous, many
    seconds) ran to their end first. Afterwards the watcher mostly waits on the event
    loop, and Ctrl-C cancels the main task as ``asyncio.run`` does (a second Ctrl-C
    raises), so no exception lands inside the loop's own machinery.
    """

    def __init__(self) -> None:
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    def cancel_instead(self, task: asyncio.Task[Any]) -> None:
        """From now on, Ctrl-C cancels ``task`` (on its loop)."""
        self._task = task

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        task = self._task
        if task is None or self._cancelled or task.done():
            raise KeyboardInterrupt
        self._cancelled = True
        task.get_loop().call_soon_threadsafe(task.cancel)

    @contextmanager
    def installed(self) -> Iterator[CtrlC]:
        """Handle SIGINT while the block runs (not off the main thread, nor where SIGINT
        is ignored). A handler other than Python's default keeps ``asyncio.run`` from
        installing its own."""
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(
            signal.SIGINT
        ) in (signal.SIG_IGN, None):
            yield self
            return
        previous = signal.signal(signal.SIGINT, self)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


def _open_stored(
    path: str,
    budget: int,
    encoding: str,
    notice: Callable[[str], None],
    store: str,
    include_secrets: bool,
) -> tuple[Session, str | None]:
    """:func:`open_session` on a PostgreSQL store: resume the saved row if there is one
    of the same encoding and secrets setting; a row that cannot be read (or an
    unreachable server) is kept as it is, and the new session does not save over it."""
    from dagctx.session import Session

    def new() -> Session:
        return Session(
            path, budget=budget, encoding=encoding, include_secrets=include_secrets, store=store
        )

    try:
        session = Session.load(store, root=path)
    except CheckpointError as exc:
        if str(exc).startswith("no saved session"):
            return new(), None
        notice(f"not resuming from {_postgres.redact(store)}: {exc}; starting a new session"
               " that will not be saved (the saved one is kept as it is)")  # fmt: skip
        return new(), f"{_postgres.redact(store)} could not be read"
    if session.encoding == encoding and session.include_secrets == include_secrets:
        session.set_budget(budget)
        notice(f"resuming after turn {session.turn} from {_postgres.redact(store)}")
        return session, None
    session.close()
    notice(f"not resuming from {_postgres.redact(store)}: another encoding or secrets"
           " setting; starting over")  # fmt: skip
    return new(), None


def run_watch(args: argparse.Namespace) -> int:
    """``dagctx watch``: see the module docstring. Returns the exit status."""
    console = Console()
    progress = ScanProgress(console)

    command = f"dagctx {args.command}" if getattr(args, "command", None) else "dagctx watch"

    def notice(line: str) -> None:
        print(f"{command}: {line}", file=sys.stderr, flush=True)

    from dagctx.cli.settings import load_settings

    settings = load_settings(args)  # bad settings fail before anything is opened
    get_encoding(settings.encoding)  # an unknown encoding fails before any notice
    store = getattr(args, "store", None)
    if store is not None and not _postgres.is_url(store):
        notice(f"--store must be a postgresql:// URL, got {store!r}")
        return 2
    store = _postgres.store_url(store)
    state = state_location(args.path, notice)
    session, off = open_session(
        args.path,
        settings.budget,
        settings.encoding,
        notice,
        state,
        include_secrets=args.include_secrets,
        store=store,
    )
    with CtrlC().installed() as ctrl_c, session:
        if settings.focus:
            session.focus(settings.focus)  # applied at the first tick
        outputs = Outputs.for_session(session, args.out, state)
        path = None if state is None or store is not None else state / "session.db"
        saver = SessionSaver(session, notice, off, path)
        try:
            if args.once:
                tracker = TreeTracker(
                    session, ".", ignore=outputs.paths, steering=settings.steering
                )
                tracker.load(progress)
                progress.close()
                result = asyncio.run(session.atick())  # on this thread: Ctrl-C stops it
                saver.ticked = True
                outputs.write(session, result)
                budget, sections = _usage(result)
                print(f"wrote {outputs.markdown} and {outputs.json}: {budget}, {sections}")
                return 0
            view: StatusView
            if console.is_terminal:
                view = LiveView(session, outputs, console)
            else:
                view = LogView(session, outputs, lambda line: print(line, flush=True))
            writes = WriteReporter(notice)
            viz = _viz_page(session, args.port, notice) if getattr(args, "viz", False) else None
            try:
                watching = _watch(
                    session, outputs, view, progress, saver, writes, ctrl_c, viz, settings.steering
                )
                asyncio.run(watching)
            finally:
                view.close()
        except (KeyboardInterrupt, asyncio.CancelledError):
            pass
        finally:
            progress.close()
            saver.save_at_exit()
    return 0


def _viz_page(
    session: Session, port: int, notice: Callable[[str], None]
) -> Callable[[TickResult], None]:
    """``--viz``: a callback for each tick that shows it on the live page
    (:class:`dagctx.viz.server.VizServer`); the first call starts the server on this
    loop, on 127.0.0.1:``port``, and ``notice`` prints its URL."""
    from dagctx.viz.server import VizServer

    server = VizServer(session, title=str(session.root))
    tasks: list[asyncio.Task[None]] = []

    def show(result: TickResult) -> None:
        server.publish(result)
        if not tasks:
            ready = lambda url: notice(f"viz page at {url}")  # noqa: E731
            tasks.append(asyncio.create_task(server.serve(port, ready)))
            tasks[0].add_done_callback(_report_failure(notice))

    return show


def _report_failure(notice: Callable[[str], None]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            notice(f"the viz page stopped: {task.exception()}")

    return done
