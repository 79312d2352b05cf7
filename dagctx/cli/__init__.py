"""The ``dagctx`` command: ``render``, ``watch`` and ``mcp``.

Every failure the user can cause (a bad argument, an unreadable path, a bad budget or
encoding) is reported as one line on stderr with a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from dagctx.errors import DagctxError

EXIT_USAGE = 2
EXIT_ERROR = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"dagctx: error: {message} (see `dagctx --help`)\n")


def _budget(value: str) -> int:
    try:
        budget = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"budget must be a positive integer, got {value!r}"
        ) from None
    if budget <= 0:
        raise argparse.ArgumentTypeError(f"budget must be a positive integer, got {value!r}")
    return budget


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dagctx", description="A budgeted context DAG for LLM agents.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    render = commands.add_parser("render", help="print a budgeted projection of a directory")
    render.add_argument("path", nargs="?", default=".", help="directory to render (default .)")
    render.add_argument("--budget", type=_budget, required=True, help="token budget")
    render.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding")
    render.add_argument("--explain", action="store_true", help="token table on stderr")
    render.add_argument("--format", choices=("text", "json", "messages"), default="text")
    watch = commands.add_parser("watch", help="keep a budgeted projection of a directory fresh")
    watch.add_argument("path", nargs="?", default=".", help="directory to watch (default .)")
    watch.add_argument("--budget", type=_budget, required=True, help="token budget")
    watch.add_argument("--out", help="projection file (default PATH/.dagctx/projection.md)")
    watch.add_argument("--once", action="store_true", help="scan, write, and exit")
    watch.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding")
    mcp = commands.add_parser("mcp", help="serve a session over MCP (stdio)")
    mcp.add_argument("path", nargs="?", default=".", help="session root (default .)")
    mcp.add_argument("--budget", type=_budget, default=8000, help="token budget (default 8000)")
    mcp.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding")
    return parser


def cmd_render(args: argparse.Namespace) -> int:
    from dagctx.session import Session
    from dagctx.watch.scan import scan_tree

    with Session(args.path, budget=args.budget, encoding=args.encoding) as session:
        scan_tree(session, ".")
        projection = session.project()
    if args.format == "json":
        print(projection.to_json())
    elif args.format == "messages":
        print(json.dumps(projection.to_messages(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(projection.text)
    if args.explain:
        print(projection.explain(), file=sys.stderr)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from dagctx.cli.watch import cmd_watch as run_watch

    return run_watch(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from dagctx.mcp.server import run_stdio

    run_stdio(args.path, budget=args.budget, encoding=args.encoding)
    return 0


COMMANDS = {"render": cmd_render, "watch": cmd_watch, "mcp": cmd_mcp}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except DagctxError as exc:
        print(f"dagctx: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"dagctx: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)  # fmt: skip
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
