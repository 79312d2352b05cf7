"""File tool: ``read_file`` reads a text file inside ``ctx.state["working_dir"]``.

The path is refused, and nothing is opened, when it contains a NUL byte, is absolute,
or resolves (after ``..`` and every symlink) to anything outside the working directory;
containment is decided on path components, so ``/wd2/x`` is not inside ``/wd``.
Directories, devices, FIFOs, files over `MAX_FILE_BYTES` and binary files (a NUL byte or
invalid UTF-8) are refused too. The final open uses ``O_NOFOLLOW`` and ``O_NONBLOCK`` so a
file swapped for a symlink or a FIFO after the checks is still not followed or waited on.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dagctx.context import Context
from dagctx.tools.base import ContextTool

__all__ = ["MAX_FILE_BYTES", "get_file_tools", "read_file"]

WORKING_DIR_KEY = "working_dir"
MAX_FILE_BYTES = 1_000_000
"""Largest file `read_file` returns, in bytes."""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_file(ctx: Context, path: str) -> str:
    """Read a file from the working directory.

    Args:
        path: Relative path to the file within the working directory.
    """
    working_dir = ctx.state.get(WORKING_DIR_KEY)
    if working_dir is None:
        return "No working directory is set for this context (ctx.state['working_dir'])."
    if "\x00" in path:
        return f"Refused {path!r}: the path contains a NUL byte."
    if not path.strip():
        return "Give a path relative to the working directory."
    if os.path.isabs(path):
        return (
            f"Refused {path!r}: absolute paths are not allowed; "
            "give a path relative to the working directory."
        )
    try:
        root = Path(working_dir).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return f"The working directory {str(working_dir)!r} cannot be used: {exc}."
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        return f"Cannot resolve {path!r} in the working directory: {exc}."
    if not target.is_relative_to(root):
        return f"Refused {path!r}: it resolves outside the working directory."
    try:
        info = target.stat()
    except FileNotFoundError:
        return f"File not found: {path!r}."
    except OSError as exc:
        return f"Cannot read {path!r}: {exc.strerror}."
    refusal = _refuse_kind(path, info)
    if refusal:
        return refusal
    try:
        data = _read_prefix(target, MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"Cannot read {path!r}: {exc.strerror}."
    if data is None:
        return f"Refused {path!r}: it is not a regular file."
    if len(data) > MAX_FILE_BYTES:
        return _too_large(path, f"more than {MAX_FILE_BYTES:,}")
    if b"\x00" in data:
        return f"Refused {path!r}: it looks like a binary file (contains NUL bytes)."
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"Refused {path!r}: it looks like a binary file (not valid UTF-8 text)."


def _refuse_kind(path: str, info: os.stat_result) -> str | None:
    if stat.S_ISDIR(info.st_mode):
        return f"Refused {path!r}: it is a directory, not a file."
    if not stat.S_ISREG(info.st_mode):
        return f"Refused {path!r}: it is not a regular file."
    if info.st_size > MAX_FILE_BYTES:
        return _too_large(path, f"{info.st_size:,}")
    return None


def _too_large(path: str, size: str) -> str:
    return (
        f"Refused {path!r}: the file is {size} bytes, over the size limit of "
        f"{MAX_FILE_BYTES:,} bytes for read_file."
    )


def _read_prefix(target: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of `target`, or ``None`` if it is not a regular file once open."""
    fd = os.open(target, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def get_file_tools() -> list[ContextTool]:
    """A fresh, unbound ``read_file`` tool (in a list)."""
    return [ContextTool(read_file)]
