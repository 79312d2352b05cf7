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
When ``ctx.state["read_limit"]`` holds a number of characters (``dagctx mcp`` sets one),
a read that would return more stops at the last whole line within it and ends with a
line in brackets naming the lines shown and the ``start_line`` that reads on; a first line
longer than the limit alone is cut inside (its start shown, and said so).

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
READ_LIMIT_KEY = "read_limit"
"""State key: the most characters one `read_file` call returns (no limit when unset)."""
MAX_FILE_BYTES = 1_000_000
"""Largest file `read_file` returns, in bytes."""


def read_file(
    ctx: Context, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """Read a file from the working directory.

    Returns the text of the whole file or of a range of lines. A read that would return
    more than the context's limit ends with a line in brackets saying which lines were
    shown and the start_line to read on from.

    Args:
        path: Relative path to the file within the working directory.
        start_line: First line to read (1-based); omit to start at the top.
        end_line: Last line to read (inclusive); omit to read to the end.
    """
    bad = line_range_refusal(start_line, end_line)
    if bad is not None:
        return bad
    text = read_whole(ctx, path)
    if isinstance(text, Refusal):
        return text
    limit = ctx.state.get(READ_LIMIT_KEY)
    if start_line is None and end_line is None and (limit is None or len(text) <= limit):
        return text
    return _line_range(path, text, start_line or 1, end_line, limit)


def _line_range(path: str, text: str, start: int, end: int | None, limit: int | None) -> str:
    """Lines ``start`` to ``end`` (to the last line when None) of ``text``, with their line
    ends as written; lines are numbered as :func:`dagctx._lines.split_lines` numbers
    them (a CRLF file as its editor shows it). A start past the last line is refused.
    Over ``limit`` characters, the lines that fit and a note on how to read on."""
    pieces = text.split("\n")  # the last piece follows the final line end ("" if none)
    count = len(pieces) - (pieces[-1] == "")
    if start > count:
        return Refusal(
            f"{path!r} has {count} line{'s' * (count != 1)}; start_line {start} is past it."
        )
    last = count if end is None else min(end, count)
    if limit is not None:
        return _limited(path, pieces, start, last, end, limit)
    chunk = "\n".join(pieces[start - 1 : last])
    return chunk + "\n" if last < len(pieces) else chunk


def _limited(
    path: str, pieces: list[str], start: int, last: int, end: int | None, limit: int
) -> str:
    """Lines ``start`` to ``last`` of ``pieces`` (as `_line_range` joins them) when they
    fit in ``limit`` characters; else the whole lines that fit, or the start of the first
    line when it alone is longer, and a bracketed note naming what was shown and the
    ``start_line`` (with the asked ``end``) that reads on."""
    used, shown = 0, start - 1
    while shown < last and used + len(pieces[shown]) + 1 <= limit:
        used += len(pieces[shown]) + 1
        shown += 1
    if shown == last:
        chunk = "\n".join(pieces[start - 1 : last])
        return chunk + "\n" if last < len(pieces) else chunk
    count = len(pieces) - (pieces[-1] == "")
    if shown < start:  # the first line alone is over the limit
        shown = start
        size = len(pieces[start - 1])
        chunk = pieces[start - 1][:limit] + "\n"
        what = f"line {start} of {path!r} is {size:,} characters long; its first {limit:,} shown"
    else:
        chunk = "\n".join(pieces[start - 1 : shown]) + "\n"
        what = f"lines {start}-{shown} of {count} of {path!r} shown"
        what += f" (at most {limit:,} characters a call)"
    if shown < last:
        until = "" if end is None else f" and end_line={end}"
        what += f"; call read_file with start_line={shown + 1}{until} to read on"
    return f"{chunk}[read_file: {what}]"


def read_whole(ctx: Context, path: str) -> str:
    """The whole file as `read_file` reads it, secrets redacted as it redacts them, whatever
    the context's ``read_limit``; a `Refusal` for what it refuses."""
    text = read_unredacted(ctx, path)
    if isinstance(text, Refusal) or ctx.state.get(INCLUDE_SECRETS_KEY) is True:
        return text
    return redact(text)[0]


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
