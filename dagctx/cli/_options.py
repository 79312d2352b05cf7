"""Argument types and options shared by the subcommands."""

from __future__ import annotations

import argparse

from dagctx.tokens import DEFAULT_ENCODING

#: The token budget of every subcommand when ``--budget`` is not given.
DEFAULT_BUDGET = 8000


def budget(value: str) -> int:
    """An argparse type: a positive int of tokens (else a usage error naming ``value``)."""
    try:
        parsed = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"budget must be a positive integer, got {value!r}"
        ) from None
    if parsed <= 0:
        raise argparse.ArgumentTypeError(f"budget must be a positive integer, got {value!r}")
    return parsed


def add_budget(parser: argparse.ArgumentParser) -> None:
    """Add ``--budget`` (tokens; :data:`DEFAULT_BUDGET` unless given)."""
    parser.add_argument(
        "--budget",
        type=budget,
        help=f"token budget (default {DEFAULT_BUDGET})",
    )


def add_encoding(parser: argparse.ArgumentParser) -> None:
    """Add ``--encoding`` (the tiktoken encoding to count with; None unless given)."""
    parser.add_argument("--encoding", help=f"tiktoken encoding (default {DEFAULT_ENCODING})")


def add_steering(parser: argparse.ArgumentParser) -> None:
    """Add ``--focus`` and the repeatable ``--include``, ``--exclude``, ``--priority`` and
    ``--state`` (read with the config files by :func:`dagctx.cli.settings.load_settings`)."""
    parser.add_argument("--focus", help="what the task is about: ranks the files against it")
    parser.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="take in only the files matching GLOB (gitignore-style, relative to PATH; repeatable)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="leave out the paths matching GLOB, as an ignore rule (repeatable)",
    )
    parser.add_argument(
        "--priority",
        action="append",
        metavar="GLOB=N",
        help="give the matching files priority N (higher degrades later; files default"
        " to 40; repeatable, the last match wins)",
    )
    parser.add_argument(
        "--state",
        action="append",
        metavar="GLOB=STATE",
        help="show the matching files at STATE: hidden, collapsed, summary, details or all"
        " (repeatable, the last match wins)",
    )
    parser.epilog = (
        "The same settings can come from PATH/.dagctx/config.toml and from [tool.dagctx]"
        " in PATH/pyproject.toml (keys: focus, budget, encoding, include, exclude, priority,"
        " state); the command line wins over config.toml, which wins over pyproject.toml;"
        " include, exclude, priority and state rules merge (the last match wins)."
    )


def add_secrets(parser: argparse.ArgumentParser) -> None:
    """Add ``--include-secrets`` (show secret-bearing files and unredacted secrets)."""
    parser.add_argument(
        "--include-secrets",
        action="store_true",
        help="show .env files, private keys, certificates and credential files, and leave"
        " secrets in file content unredacted (default: withheld and redacted)",
    )


def add_viz(parser: argparse.ArgumentParser, *, always: bool = False) -> None:
    """Add ``--port`` of the live viz page (and ``--viz`` unless ``always``)."""
    if not always:
        parser.add_argument(
            "--viz", action="store_true", help="also serve the live viz page (see dagctx viz)"
        )
    parser.add_argument(
        "--port", type=port, default=0, help="port of the viz page on 127.0.0.1 (default: any free)"
    )


def port(value: str) -> int:
    """An argparse type: a TCP port 0-65535 (0: any free port)."""
    try:
        parsed = int(value)
    except ValueError:
        parsed = -1
    if not 0 <= parsed <= 65535:
        raise argparse.ArgumentTypeError(f"port must be an integer 0-65535, got {value!r}")
    return parsed
