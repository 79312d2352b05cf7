"""``dagctx mcp``: serve the session of a tree over MCP (stdio); see :mod:`dagctx.mcp.server`.

It opens the session as ``dagctx watch`` does (:func:`~dagctx.cli.watch_view.open_session`:
resume ``PATH/.dagctx/session.db`` or start over) while the server already answers
(``initialize`` costs only the MCP SDK's import), serves it while scanning and following
the tree, and saves it like ``dagctx watch``: after the first tick, at most every few
seconds after that, and at exit (:class:`~dagctx.cli.watch_view.SessionSaver`).

Sharing a tree with a running ``dagctx watch``: one process writes a session file at a
time (:mod:`dagctx.session.file`). The first to save is the writer; when ``dagctx watch``
already writes the file, ``dagctx mcp``'s save is refused and it says so once on stderr,
then goes on serving a live copy (its own scan, following the same file changes) that is
never saved, so nothing the watcher saved is overwritten. Its output stays on stderr:
stdout belongs to the protocol.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagctx.cli._options import add_budget, add_encoding, add_secrets, add_steering

if TYPE_CHECKING:
    from dagctx.cli.watch_view import SessionSaver
    from dagctx.session import Session, TickResult


def add_parser(commands: Any) -> None:
    """Add the ``mcp`` subcommand to ``commands`` (an argparse subparsers action)."""
    parser = commands.add_parser("mcp", help="serve a session over MCP (stdio)")
    parser.add_argument("path", nargs="?", default=".", help="session root (default .)")
    add_budget(parser)
    add_encoding(parser)
    add_secrets(parser)
    add_steering(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin; return the exit status.

    The server answers ``initialize`` as soon as the MCP SDK is imported; the session is
    opened meanwhile (see :func:`~dagctx.mcp.server.serve_stdio_while_opening`). What can
    be wrong with the arguments is found first: bad settings, a path that is not a
    directory, an encoding other than the default (which may need its data from the
    network).
    """
    from functools import partial

    import anyio

    from dagctx.cli.settings import load_settings
    from dagctx.mcp.server import serve_stdio_while_opening
    from dagctx.tokens import DEFAULT_ENCODING, get_encoding

    def notice(line: str) -> None:
        print(f"dagctx mcp: {line}", file=sys.stderr, flush=True)

    settings = load_settings(args)  # bad settings fail before anything is opened
    opened: list[tuple[Session, SessionSaver]] = []

    def open_served() -> Session:
        from dagctx.cli.watch_view import SessionSaver, open_session, state_location
        from dagctx.session.store import SESSION_FILE

        get_encoding(settings.encoding)
        state = state_location(args.path, notice)
        session, off = open_session(
            args.path,
            settings.budget,
            settings.encoding,
            notice,
            state,
            include_secrets=args.include_secrets,
        )
        if settings.focus:
            session.focus(settings.focus)  # applied at the first tick
        path = None if state is None else state / SESSION_FILE.name
        opened.append((session, SessionSaver(session, notice, off, path)))
        return session

    def after_tick(result: TickResult) -> None:
        saver = opened[0][1]
        if saver.ticked:
            saver.save_if_due()
        else:  # the first: find out now whether another process writes the file
            saver.ticked = True
            saver.save()

    root = Path(args.path).expanduser()
    if settings.encoding != DEFAULT_ENCODING:
        get_encoding(settings.encoding)  # an unknown encoding fails before anything is served
    if not _is_dir(root):
        open_served()  # raises the session's PathError before anything is served
    try:
        anyio.run(
            partial(
                serve_stdio_while_opening,
                open_served,
                root=root.resolve(),
                budget=settings.budget,
                after_tick=after_tick,
                steering=settings.steering,
            )
        )
    finally:
        for session, saver in opened:
            try:
                saver.save_at_exit()
            finally:
                session.close()
    return 0


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, a symlink loop: the session names the problem
        return False
