"""Argument types and options shared by the subcommands."""

from __future__ import annotations

import argparse

from dagctx.tokens import DEFAULT_ENCODING


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


def add_encoding(parser: argparse.ArgumentParser) -> None:
    """Add ``--encoding`` (the tiktoken encoding to count with)."""
    parser.add_argument("--encoding", default=DEFAULT_ENCODING, help="tiktoken encoding")
