"""``dagctx watch``: a live, file-watching session; see :mod:`dagctx.cli.watch_view`."""

from __future__ import annotations

import argparse
from typing import Any

from dagctx.cli._options import add_budget, add_encoding, add_secrets, add_steering, add_viz


def add_parser(commands: Any) -> None:
    """Add the ``watch`` subcommand to ``commands`` (an argparse subparsers action)."""
    parser = commands.add_parser("watch", help="keep a budgeted projection of a directory fresh")
    parser.add_argument("path", nargs="?", default=".", help="directory to watch (default .)")
    add_budget(parser)
    parser.add_argument("--out", help="projection file (default PATH/.dagctx/projection.md)")
    parser.add_argument("--once", action="store_true", help="scan, write, and exit")
    parser.add_argument(
        "--store",
        help="a postgresql:// URL: work claims, locks and the saved session live there,"
        " shared by agents on several machines (default: $DAGCTX_STORE, else SQLite files"
        " under PATH/.dagctx)",
    )
    add_viz(parser)
    add_encoding(parser)
    add_secrets(parser)
    add_steering(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Watch until Ctrl-C or SIGTERM (or once with ``--once``); return the exit status."""
    from dagctx.cli.watch_view import run_watch

    return run_watch(args)
