"""File-system primitives written once: atomic writes, the binary sniff, reads inside a root.

- :func:`write_atomic` replaces a file in one step (a temporary ``.<name>.*.tmp`` beside
  it, written and fsynced, renamed over the target, then the directory fsynced): a reader
  sees the old file or the new one, a returned write survives a crash, and the temporary
  file never outlives a failure.
- :func:`set_aside` moves a file out of the way under a name that is not taken yet (it
  never overwrites an earlier set-aside copy), together with its SQLite write-ahead log.
- :func:`make_state_dir` makes a dagctx state directory (``.dagctx``) with a
  ``.gitignore`` of ``*`` in it, so ``git add``, ``git stash -u`` and ``git clean -fd``
  leave it out; it is called again before each write, so a directory that vanished is
  made again. It is a real directory, never a symlink: created or opened relative to a
  descriptor of its parent with ``O_NOFOLLOW | O_DIRECTORY``, so a ``.dagctx`` that a
  repository ships as a symlink out of the root is refused (:class:`StateDirError`) and
  nothing is written through it.
- :func:`looks_binary` is the one verdict on binary content: a NUL byte in the first
  :data:`SNIFF_BYTES` bytes. :func:`is_binary_file` applies it to a file.
- :func:`resolve_inside` decides whether a path lies inside a root (after ``..`` and every
  symlink; decided on path components, so ``/wd2`` is not inside ``/wd``), and
  :func:`open_inside` opens a file under a root so that nothing outside it is ever read,
  even while the tree changes: the root-relative path is opened one component at a time
  from a descriptor of the root, each with ``O_NOFOLLOW`` (``O_DIRECTORY`` for the
  directories, ``O_NONBLOCK`` for the last one), and the descriptor is ``fstat``-ed. A
  symlink swapped in after the check (for the file or for any parent directory) is never
  followed, and a FIFO swapped in is never waited on. Symlinks that stay inside the root
  keep working: a path that meets one is resolved and opened again along its real path.
  (A directory *moved* out of the root while a read walks through it is not guarded
  against; that needs write access to the root itself.)
- :func:`display_path` is how a file name is shown: bytes that are not UTF-8 (kept in a
  ``str`` by ``surrogateescape``, as Python decodes them) shown as ``\\xNN``, so rendered
  text is always valid UTF-8 while the name itself still opens the file; line breaks and
  control characters escaped (:func:`dagctx._quote.inline`), so a name stays on its line.

POSIX only (``dir_fd``, ``O_NOFOLLOW``, ``O_DIRECTORY``). Imports nothing of dagctx but
:mod:`dagctx._quote`.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

from dagctx._quote import inline

SNIFF_BYTES = 8192
"""How much of a file's start :func:`looks_binary` looks at."""

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = _ROOT_FLAGS | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


# -- atomic writes ------------------------------------------------------------------------


def write_atomic(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8, line ends untouched).

    The data goes to a temporary ``.<name>.*.tmp`` in the same directory, which is
    fsynced, given ``mode`` (default: ``0o600``, as :func:`tempfile.mkstemp` makes it),
    renamed over ``path``, and the directory is fsynced: readers see the old file or the
    new one, and once this returns the new one survives a crash. On any failure the
    temporary file is removed and ``path`` is as it was.

    Raises:
        OSError: the directory cannot be written, the disk is full, ...
        UnicodeEncodeError: text that UTF-8 cannot hold (a lone surrogate).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where the file system cannot)."""
    fd = os.open(directory, _ROOT_FLAGS)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def set_aside(path: Path, suffix: str) -> Path:
    """Move ``path`` to ``<path><suffix>`` (or ``<path><suffix>.2``, ``.3``, ... when that
    name is taken) and return the new path; its ``-wal`` file (a SQLite write-ahead log,
    which may hold committed data) moves along to ``<new path>-wal``.

    The move is a hard link to the new name (which fails rather than replace an existing
    file) followed by removing the old name, so no earlier copy is ever overwritten.

    Raises:
        OSError: the file cannot be linked or removed (it is then left where it was).
    """
    number = 1
    while True:
        aside = path.with_name(f"{path.name}{suffix}" + (f".{number}" if number > 1 else ""))
        try:
            os.link(path, aside)
        except FileExistsError:
            number += 1
            continue
        break
    wal = path.with_name(path.name + "-wal")
    with suppress(FileNotFoundError):
        os.replace(wal, aside.with_name(aside.name + "-wal"))
    os.unlink(path)
    with suppress(FileNotFoundError):  # SQLite makes the shared-memory index again
        os.unlink(path.with_name(path.name + "-shm"))
    return aside


STATE_GITIGNORE = "*\n"
"""The ``.gitignore`` :func:`make_state_dir` writes: git ignores the whole directory."""


STATE_DIR = ".dagctx"
"""The name of dagctx's state directory under a root (session file, projection, locks)."""


class StateDirError(OSError):
    """A state directory (or a directory below it) exists but is not a real directory
    (a symlink, a file): dagctx refuses to keep state there."""


def make_state_dir(directory: Path, *names: str) -> Path:
    """Make ``directory`` a real directory with a ``.gitignore`` holding
    :data:`STATE_GITIGNORE` (unless it already has one), and the subdirectories ``names``
    below it (``make_state_dir(root / STATE_DIR, "locks")``); return the innermost.

    The parent of ``directory`` (the root) is made if missing and may be reached through
    symlinks; ``directory`` and each of ``names`` are created if missing (mode ``0o777``
    minus the umask) and opened relative to their parent's descriptor with
    ``O_NOFOLLOW | O_DIRECTORY``, so a symlink among them (shipped by a repository, or
    swapped in) is refused, never followed.

    Raises:
        StateDirError: one of them is a symlink or not a directory (its path, and why).
        OSError: a directory or the ``.gitignore`` cannot be made (read-only, no
            permission, disk full, ...).
    """
    directory.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory.parent, _ROOT_FLAGS)
    path = directory.parent
    try:
        for name in (directory.name, *names):
            path = path / name
            with suppress(FileExistsError):
                os.mkdir(name, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                kind = "a symlink" if _is_link(name, fd) else "not a directory"
                raise StateDirError(
                    exc.errno,
                    f"the state directory is {kind} (dagctx keeps its state only in a real"
                    " directory)",
                    str(path),
                ) from None
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    ignore = directory / ".gitignore"
    if not os.path.lexists(ignore):
        write_atomic(ignore, STATE_GITIGNORE, mode=0o644)
    return path


def display_path(path: str) -> str:
    """``path`` as shown in rendered text, on one line: bytes that are not UTF-8 (lone
    surrogates from ``surrogateescape``) written as ``\\xNN``, line breaks and control
    characters as escapes (:func:`dagctx._quote.inline`); any other text unchanged."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate no decoder made: show its code point
            return inline(path.encode("utf-8", "backslashreplace").decode("utf-8"))
        return inline(raw.decode("utf-8", "backslashreplace"))
    return inline(path)


# -- binary content -----------------------------------------------------------------------


def looks_binary(head: bytes) -> bool:
    """Whether content starting with ``head`` is binary: a NUL byte in its first
    :data:`SNIFF_BYTES` bytes."""
    return b"\x00" in head[:SNIFF_BYTES]


def is_binary_file(path: Path) -> bool:
    """Whether the file at ``path`` looks binary (:func:`looks_binary`); unreadable counts."""
    try:
        with path.open("rb") as handle:
            return looks_binary(handle.read(SNIFF_BYTES))
    except OSError:
        return True


# -- reading inside a root ----------------------------------------------------------------


class OutsideRootError(Exception):
    """A path that resolves outside its root, or leads outside it while being opened."""


class NotRegularFileError(Exception):
    """What a path names is not a regular file; ``stat`` is what ``fstat`` said."""

    def __init__(self, info: os.stat_result) -> None:
        super().__init__("not a regular file")
        self.stat = info

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)


class _SymlinkMet(Exception):
    """A component of the path is a symlink (it must be resolved, not followed)."""


def resolve_inside(root: Path, path: str | os.PathLike[str]) -> tuple[Path, str]:
    """Resolve ``path`` (relative to ``root``, or absolute) after ``..`` and every symlink.

    ``root`` must be resolved already. Returns (absolute resolved path, root-relative posix
    path; ``"."`` for the root itself). The path need not exist.

    Raises:
        OutsideRootError: it resolves outside ``root``.
        OSError: it cannot be looked up at all (a symlink loop, a name too long).
        ValueError: it contains a NUL byte.
    """
    raw = os.fspath(path)
    candidate = Path(raw) if os.path.isabs(raw) else root / raw
    try:
        resolved = candidate.resolve()
    except RuntimeError:  # a symlink loop (Python < 3.13)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), raw) from None
    resolved.exists()  # raises for what the OS refuses to look up (not for "missing")
    try:
        relative = resolved.relative_to(root)
    except ValueError:
        raise OutsideRootError(f"{raw!r} resolves outside {str(root)!r}") from None
    return resolved, relative.as_posix()


def open_inside(root: Path, path: str) -> tuple[int, os.stat_result]:
    """Open the regular file at ``path`` (relative to the resolved ``root``) for reading.

    Returns (file descriptor, its ``fstat``); the caller closes the descriptor.

    Raises:
        OutsideRootError: the path resolves outside ``root``, or a component was swapped
            for a symlink while it was being opened.
        NotRegularFileError: it is a directory, a FIFO, a device, ... (nothing is read).
        FileNotFoundError: it does not exist.
        OSError: it cannot be opened (no permission, a symlink loop, ...).
        ValueError: it contains a NUL byte.
    """
    parts = _plain_parts(path)
    if parts is not None:
        try:
            return _open_parts(root, parts)
        except _SymlinkMet:
            pass  # resolve it, then open the real path without following anything
    _, relative = resolve_inside(root, path)
    try:
        return _open_parts(root, [] if relative == "." else relative.split("/"))
    except _SymlinkMet:
        raise OutsideRootError(f"{path!r} changed into a symlink while being opened") from None


def _plain_parts(path: str) -> list[str] | None:
    """The components of a relative path without ``.``, ``..`` or empty names; else None."""
    if not path or os.path.isabs(path):
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _open_parts(root: Path, parts: list[str]) -> tuple[int, os.stat_result]:
    fd = os.open(root, _ROOT_FLAGS)
    try:
        for name in parts[:-1]:
            parent, fd = fd, _open_at(name, _DIR_FLAGS, fd)
            os.close(parent)
        if parts:
            parent, fd = fd, _open_at(parts[-1], _FILE_FLAGS, fd)
            os.close(parent)
        info = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFileError(info)
    return fd, info


def _open_at(name: str, flags: int, dir_fd: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        # O_NOFOLLOW refuses a symlink with ELOOP, or with ENOTDIR when O_DIRECTORY is set.
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(name, dir_fd)):
            raise _SymlinkMet from None
        raise


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


__all__ = [
    "SNIFF_BYTES",
    "STATE_DIR",
    "STATE_GITIGNORE",
    "NotRegularFileError",
    "OutsideRootError",
    "StateDirError",
    "display_path",
    "is_binary_file",
    "looks_binary",
    "make_state_dir",
    "open_inside",
    "resolve_inside",
    "set_aside",
    "write_atomic",
]
