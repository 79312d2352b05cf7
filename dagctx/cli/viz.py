"""``dagctx viz``: ``dagctx watch --viz`` under its own name: a live page of where the
tokens go (:mod:`dagctx.viz.server`), kept fresh as the tree changes.

It is the watch session in every respect (the projection files, the saved session, the
status on the terminal); the page's URL is printed on stderr once the first tick is done.
"""

from __future__ import annotations

import argparse
from typing import Any

from dagctx.cli._options import add_budget, add_encoding, add_secrets, add_steering, add_viz


def add_parser(commands: Any) -> None:
    """Add the ``viz`` subcommand to ``commands`` (an argparse subparsers action)."""
    parser = commands.add_parser(
        "viz", help="a live web page of the projection: where the tokens go (127.0.0.1)"
    )
    parser.add_argument("path", nargs="?", default=".", help="directory to watch (default .)")
    add_budget(parser)
    add_viz(parser, always=True)
    add_encoding(parser)
    add_secrets(parser)
    add_steering(parser)
    parser.set_defaults(run=run, viz=True, out=None, once=False, store=None)


def run(args: argparse.Namespace) -> int:
    """Serve the page and watch until Ctrl-C or SIGTERM; return the exit status."""
    from dagctx.cli.watch_view import run_watch

    return run_watch(args)
