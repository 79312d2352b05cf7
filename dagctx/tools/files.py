"""File tool: ``read_file`` reads a text file inside ``ctx.state["working_dir"]``.

The path is refused, and nothing is opened, when it contains a NUL byte, is absolute,
or resolves (after ``..`` and every symlink) to anything outside the working directory;
containment is decided on path components, so ``/wd2/x`` is not inside ``/wd``.
Directories, devices, FIFOs, files over `MAX_FILE_BYTES` and binary files (a NUL byte in
the first 8 KB, or invalid UTF-8) are refused too. The file is opened with
:func:`dagctx._fs.open_inside`, so a file or a parent directory swapped for a symlink after
the checks is never followed, and a FIFO swapped in is never waited on.

``start_line`` and ``end_line`` (1-based, inclusive) read a range of lines, numbered as
the projection's outlines and cut markers number them; without them the whole file.

Secrets stay out as they do in the projection (:mod:`dagctx._secrets`): unless
``ctx.state["include_secrets"]`` is true, a secret-bearing file (``.env``, a private key,
a certificate, a credentials file) is refused with a message, and secrets found in any
other file come back as ``[REDACTED <kind>]``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagctx import _fs
from dagctx._secrets import redact, secret_file_reason
from dagctx.context import Context
from dagctx.tools.base import ContextTool, Refusal, line_range_refusal

__all__ = ["MAX_FILE_BYTES", "get_file_tools", "read_file"]

WORKING_DIR_KEY = "working_dir"
INCLUDE_SECRETS_KEY = "include_secrets"
MAX_FILE_BYTES = 1_000_000
"""Largest file `read_file` returns, in bytes."""


def read_file(
    ctx: Context, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """Read a file from the working directory.

    Args:
        path: Relative path to the file within the working directory.
        start_line: First line to read (1-based); omit to start at the top.
        end_line: Last line to read (inclusive); omit to read to the end.
    """
    bad = line_range_refusal(start_line, end_line)
    if bad is not None:
        return bad
    text = read_unredacted(ctx, path)
    if isinstance(text, Refusal):
        return text
    if ctx.state.get(INCLUDE_SECRETS_KEY) is not True:
        text = redact(text)[0]
    if start_line is None and end_line is None:
        return text
    return _line_range(path, text, start_line or 1, end_line)


def _line_range(path: str, text: str, start: int, end: int | None) -> str:
    """Lines ``start`` to ``end`` (to the last line when None) of ``text``, with their line
    ends as written; lines are numbered as :func:`dagctx._lines.split_lines` numbers
    them (a CRLF file as its editor shows it). A start past the last line is refused."""
    pieces = text.split("\n")  # the last piece follows the final line end ("" if none)
    count = len(pieces) - (pieces[-1] == "")
    if start > count:
        return Refusal(
            f"{path!r} has {count} line{'s' * (count != 1)}; start_line {start} is past it."
        )
    last = count if end is None else min(end, count)
    chunk = "\n".join(pieces[start - 1 : last])
    return chunk + "\n" if last < len(pieces) else chunk


def read_unredacted(ctx: Context, path: str) -> str:
    """What `read_file` reads, before secrets in the content are redacted (a
    secret-bearing file is refused all the same): for callers that redact it themselves
    and report what was replaced."""
    working_dir = ctx.state.get(WORKING_DIR_KEY)
    if working_dir is None:
        return Refusal("No working directory is set for this context (ctx.state['working_dir']).")
    if "\x00" in path:
        return Refusal(f"Refused {path!r}: the path contains a NUL byte.")
    if not path.strip():
        return Refusal("Give a path relative to the working directory.")
    if os.path.isabs(path):
        return Refusal(
            f"Refused {path!r}: absolute paths are not allowed; "
            "give a path relative to the working directory."
        )
    try:
        root = Path(working_dir).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return Refusal(f"The working directory {str(working_dir)!r} cannot be used: {exc}.")
    outside = f"Refused {path!r}: it resolves outside the working directory."
    try:
        _, relative = _fs.resolve_inside(root, path)
    except _fs.OutsideRootError:
        return Refusal(outside)
    except OSError as exc:  # a symlink loop, a name too long
        return Refusal(f"Cannot resolve {path!r} in the working directory: {exc}.")
    include_secrets = ctx.state.get(INCLUDE_SECRETS_KEY) is True
    reason = None if include_secrets else secret_file_reason(relative)
    if reason is not None:
        return Refusal(f"Refused {path!r}: a secret-bearing file ({reason}) is not shown.")
    try:
        fd, info = _fs.open_inside(root, relative)
    except _fs.OutsideRootError:  # a component swapped for a symlink since the lookup
        return Refusal(outside)
    except _fs.NotRegularFileError as exc:
        if exc.is_dir:
            return Refusal(f"Refused {path!r}: it is a directory, not a file.")
        return Refusal(f"Refused {path!r}: it is not a regular file.")
    except FileNotFoundError:
        return Refusal(f"File not found: {path!r}.")
    except OSError as exc:
        return Refusal(f"Cannot read {path!r}: {exc.strerror}.")
    try:
        if info.st_size > MAX_FILE_BYTES:
            return _too_large(path, f"{info.st_size:,}")
        data = _read_prefix(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        return Refusal(f"Cannot read {path!r}: {exc.strerror}.")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return _too_large(path, f"more than {MAX_FILE_BYTES:,}")
    if _fs.looks_binary(data):
        return Refusal(f"Refused {path!r}: it looks like a binary file (contains NUL bytes).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Refusal(f"Refused {path!r}: it looks like a binary file (not valid UTF-8 text).")
    return text


def _too_large(path: str, size: str) -> Refusal:
    return Refusal(
        f"Refused {path!r}: the file is {size} bytes, over the size limit of "
        f"{MAX_FILE_BYTES:,} bytes for read_file."
    )


def _read_prefix(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from the descriptor."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def get_file_tools() -> list[ContextTool]:
    """A fresh, unbound ``read_file`` tool (in a list)."""
    return [ContextTool(read_file)]
