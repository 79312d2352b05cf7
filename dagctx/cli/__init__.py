"""The ``dagctx`` command: one module per subcommand (:mod:`.render`, :mod:`.watch`,
:mod:`.viz`, :mod:`.mcp`), each adding its parser with ``add_parser`` and running it with ``run``;
the settings they share (flags and config files) are read by :mod:`.settings`.

Every failure the user can cause (a bad argument, an unreadable path, a bad budget or
encoding) is reported as one line on stderr with a non-zero exit, never a traceback: 2 for
a usage error (a bad flag, or a bad setting of the flags or config files of
:mod:`.settings`, found before anything starts), 1 for the rest. A
reader that stops early (``dagctx render ... | head``) ends the command quietly with
status 0. Subcommands import their heavy parts when they run, so ``dagctx --help`` and
``dagctx --version`` import no third-party package (``tests/test_startup.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from dagctx.cli import mcp, render, viz, watch
from dagctx.errors import DagctxError, SettingsError

EXIT_USAGE = 2
EXIT_ERROR = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"dagctx: error: {message} (see `dagctx --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand; each sets ``run`` to its entry point."""
    parser = _Parser(prog="dagctx", description="A budgeted context DAG for LLM agents.")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in (render, watch, viz, mcp):
        command.add_parser(commands)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed distribution's version ("unknown" when dagctx runs
    uninstalled), looked up only when asked for (importlib.metadata is slow to import)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("dagctx")
        except PackageNotFoundError:
            found = "unknown"
        print(f"dagctx {found}")
        parser.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except BrokenPipeError:
        return _reader_left()
    except SettingsError as exc:  # raised before anything started: a usage error
        print(f"dagctx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DagctxError as exc:
        print(f"dagctx: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"dagctx: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)  # fmt: skip
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_left()
    return status


def _reader_left() -> int:
    """The reader of stdout went away (``| head``): nothing more to say, and Python's
    exit-time flush must not report it either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0
