"""``dagctx mcp``: serve a session over MCP (stdio); see :mod:`dagctx.mcp.server`."""

from __future__ import annotations

import argparse
from typing import Any

from dagctx.cli._options import add_encoding, add_secrets, budget


def add_parser(commands: Any) -> None:
    """Add the ``mcp`` subcommand to ``commands`` (an argparse subparsers action)."""
    parser = commands.add_parser("mcp", help="serve a session over MCP (stdio)")
    parser.add_argument("path", nargs="?", default=".", help="session root (default .)")
    parser.add_argument("--budget", type=budget, default=8000, help="token budget (default 8000)")
    add_encoding(parser)
    add_secrets(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin; return the exit status."""
    from dagctx.mcp.server import run_stdio

    run_stdio(
        args.path,
        budget=args.budget,
        encoding=args.encoding,
        include_secrets=args.include_secrets,
    )
    return 0
