"""``dagctx mcp``: serve the session of a tree over MCP (stdio); see :mod:`dagctx.mcp.server`.

It opens the session as ``dagctx watch`` does (:func:`~dagctx.cli.watch_view.open_session`:
resume ``PATH/.dagctx/session.db`` or start over), serves it while scanning and following
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
from typing import Any

from dagctx.cli._options import add_budget, add_encoding, add_secrets, add_steering


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
    """Serve until the client closes stdin; return the exit status."""
    from functools import partial

    import anyio

    from dagctx.cli.settings import load_settings
    from dagctx.cli.watch_view import SessionSaver, open_session, state_location
    from dagctx.mcp.server import serve_stdio
    from dagctx.session import TickResult
    from dagctx.session.store import SESSION_FILE
    from dagctx.tokens import get_encoding

    def notice(line: str) -> None:
        print(f"dagctx mcp: {line}", file=sys.stderr, flush=True)

    settings = load_settings(args)  # bad settings fail before anything is opened
    get_encoding(settings.encoding)  # an unknown encoding fails before any notice
    state = state_location(args.path, notice)
    session, off = open_session(
        args.path,
        settings.budget,
        settings.encoding,
        notice,
        state,
        include_secrets=args.include_secrets,
    )
    with session:
        if settings.focus:
            session.focus(settings.focus)  # applied at the first tick
        path = None if state is None else state / SESSION_FILE.name
        saver = SessionSaver(session, notice, off, path)

        def after_tick(result: TickResult) -> None:
            if saver.ticked:
                saver.save_if_due()
            else:  # the first: find out now whether another process writes the file
                saver.ticked = True
                saver.save()

        try:
            serve = partial(
                serve_stdio,
                session,
                follow=True,
                after_tick=after_tick,
                steering=settings.steering,
            )
            anyio.run(serve)
        finally:
            saver.save_at_exit()
    return 0
