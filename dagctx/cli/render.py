"""``dagctx render``: print a budgeted projection of a directory tree, steered by the
settings of :mod:`dagctx.cli.settings` (flags and config files)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dagctx.cli._options import add_budget, add_encoding, add_secrets, add_steering


def add_parser(commands: Any) -> None:
    """Add the ``render`` subcommand to ``commands`` (an argparse subparsers action)."""
    parser = commands.add_parser("render", help="print a budgeted projection of a directory")
    parser.add_argument("path", nargs="?", default=".", help="directory to render (default .)")
    add_budget(parser)
    add_encoding(parser)
    add_secrets(parser)
    add_steering(parser)
    parser.add_argument(
        "--explain",
        nargs="?",
        const="summary",
        metavar="full|GLOB",
        help="where the tokens went, on stderr: a summary; =full every node;"
        " =GLOB the nodes whose path or id matches",
    )
    parser.add_argument("--format", choices=("text", "json", "messages"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Scan ``args.path``, print its projection in ``args.format``; return the exit status.

    Raises:
        SettingsError: a bad setting (before anything is read or scanned).
    """
    from dagctx.cli.settings import load_settings
    from dagctx.session import Session
    from dagctx.watch.scan import scan_tree

    settings = load_settings(args)
    with Session(
        args.path,
        budget=settings.budget,
        encoding=settings.encoding,
        include_secrets=args.include_secrets,
    ) as session:
        scan_tree(session, ".", steering=settings.steering)
        if settings.focus:
            session.focus(settings.focus)
            projection = session.tick().projection
        else:
            projection = session.project()
    if args.format == "json":
        print(projection.to_json())
    elif args.format == "messages":
        print(json.dumps(projection.to_messages(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(projection.text)
    if args.explain == "summary":
        print(projection.explain(), file=sys.stderr)
    elif args.explain == "full":
        print(projection.explain(full=True), file=sys.stderr)
    elif args.explain:
        print(projection.explain(nodes=args.explain), file=sys.stderr)
    return 0
