"""TextNode: a file under the session root, whole or as a line range.

The node reads its file when created and again on :meth:`TextNode.recompute`, which
compares a stat key first (:func:`stat_key`: mtime, size, and the file's identity —
device, inode, type, permissions, ctime — without following a final symlink, and the
target's too when it is one, packed exactly into one int) and the content second, so
an untouched file costs one ``lstat``, a file made readable or replaced (by another file
or a symlink) is read again, and a touched-but-identical file does not bump the version
(early cutoff). The
lines shown are kept as one string (``"\n"``-joined), not a list of lines: a list costs
more memory than the text it holds.
Binary, non-UTF-8, unreadable and deleted files render a one-line placeholder instead of
content, and so does a path that resolves outside the root (a symlink swapped in after the
node was made, or a node loaded from a tampered session file): the file is opened with
:func:`dagctx._fs.open_inside`, so nothing outside the root is ever read, even when a
symlink or a FIFO is swapped in while the file is being opened. A file larger than
``max_bytes`` is never loaded whole: only its first ``max_bytes`` (or the requested line
range) are read, and the render says so.
Secrets (``include_secrets=False``, the default): a secret-bearing file by its name
(:func:`dagctx._secrets.secret_file_reason`: ``.env``, private keys, certificates,
credential files) is never read and shows ``[withheld: ...]``; in any other file, secrets
found in the content (:func:`dagctx._secrets.redact`) are replaced by
``[REDACTED <kind>]`` when the file is read, so everything after (outline, token counts,
the render) sees only the redacted text, and the scan runs once per content read.
:meth:`TextNode.safety_note` says which it was.
:attr:`TextNode.edited` turns true the first time a re-read during the session finds the
content changed, and stays true (a checkpoint restore, which leaves content alone, leaves
it alone too): the projection shows an edited file in its "changed" band, after the files
that never changed (:mod:`dagctx.projection.bands`). It is saved with the node (a loaded
session goes on like the original), and a resume's re-read of the files edited while
nobody watched does not set it, so a session saved from a cold start and resumed after
offline edits shows every file where a cold start would.
SUMMARY shows the file's outline from :func:`dagctx.outline.outline` (definitions with
signatures, line ranges and docstring first lines; headings; top-level keys), compacted to
:func:`~dagctx.outline.kinds.outline_chars` for its kind of file (top-level definitions
first, the rest marked as left out), or its first 5 lines when the outline is empty. For
a focus, :meth:`TextNode.focused_summary` gives the outline that keeps first the
definitions the focused cut matches best (with the ones they are nested in), where that
is not the outline without a focus; the projection shows it.
Outlines are not held by the nodes: the most recently used :data:`OUTLINES_KEPT` are kept
in one cache keyed by path, first line and a digest of the content, so a render of an
unchanged file does not parse it again while it is among those, and a tree of 10,000
files holds a few hundred outlines, not 10,000.
A file with an outline is cut by it (:meth:`TextNode.render_focused_cut`): its parts
(:func:`dagctx.outline.cut.partition`) in full by their match with the focus, the others
as marker lines with their line ranges; the parts and each focus's order of them are kept
in caches like the outlines'.
What comes from the file is fenced (:func:`dagctx._quote.fence`: the content at DETAILS and
ALL, the outline or first lines at SUMMARY) and its name escaped onto one line
(:func:`dagctx._fs.display_path`), so no file can write a line that reads as a dagctx
section heading.
"""

from __future__ import annotations

import functools
import hashlib
import math
import mimetypes
import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Generic, TypeVar, overload

from dagctx._fs import (
    SNIFF_BYTES,
    NotRegularFileError,
    OutsideRootError,
    display_path,
    looks_binary,
    open_inside,
)
from dagctx._lines import split_lines
from dagctx._plural import counted
from dagctx._quote import fence, inline
from dagctx._secrets import describe, redact, secret_file_reason
from dagctx._words import terms, tokenize, words
from dagctx.errors import GraphError
from dagctx.nodes.base import (
    Extra,
    Node,
    NodeExtras,
    NodeState,
    TickFrequency,
    all_counts,
    check_column,
    column_error,
    of_types,
)
from dagctx.nodes.group import GroupNode
from dagctx.outline import Outline, outline, referable
from dagctx.outline.cut import Cut, Ladder, partition
from dagctx.outline.kinds import outline_chars

DEFAULT_MAX_BYTES = 1_000_000
#: Outlines kept in the cache shared by all text nodes (most recently used).
OUTLINES_KEPT = 512
_SKIP_PIECE = 1 << 16  # bytes read at a time while skipping to a line range
_LANGUAGES = {
    ".py": "python", ".js": "javascript", ".ts": "typescript", ".tsx": "tsx", ".jsx": "jsx",
    ".rs": "rust", ".go": "go", ".java": "java", ".c": "c", ".h": "c", ".cpp": "cpp",
    ".hpp": "cpp", ".rb": "ruby", ".sh": "bash", ".md": "markdown", ".rst": "rst", ".json": "json",
    ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".html": "html", ".css": "css",
    ".sql": "sql", ".kt": "kotlin", ".swift": "swift", ".php": "php", ".cs": "csharp",
}  # fmt: skip


_DATA_KEYS = (
    "path", "root", "start_line", "end_line", "media_type", "max_bytes", "include_secrets",
    "edited",
)  # fmt: skip
_SNAPSHOT_KEYS = (
    "stat", "placeholder", "notice", "redacted", "lines", "chars", "bytes", "digest"
)  # fmt: skip
"""Keys of :meth:`TextNode.data_dict` and of :meth:`TextNode.snapshot`: its columns."""


#: A file's stat key: its mtime in ns, size and identity packed into one int (an int
#: costs a third of a tuple of three); see :func:`stat_key` and :func:`pack_stat`.
StatKey = int
# (stat key, placeholder, lines, notice, secrets redacted: a describe() phrase or None,
# the file's size when opened: None when it was not)
ReadResult = tuple[StatKey | None, str | None, list[str], str | None, str | None, int | None]
_SIZE_MASK = (1 << 64) - 1  # st_size is a signed 64-bit off_t: 0 <= size < 2**63
_MTIME_OFFSET = 1 << 95  # st_mtime_ns is a 64-bit time_t in ns: |mtime| < 2**94
_CTIME_MASK = (1 << 64) - 1  # the ctime in the low bits of an identity (_identity)
_LEN = 7  # bits that give a packed field's length (at most 96)
_LEN_MASK = (1 << _LEN) - 1


def _identity(st: os.stat_result) -> int:
    """Device, inode, mode (file type and permissions) and ctime packed into one int
    (exactly, no hashing): what changes when a file is replaced, chmod-ed or chown-ed."""
    return (((st.st_dev << 64 | st.st_ino) << 32 | st.st_mode) << 64) | st.st_ctime_ns


def pack_stat(mtime_ns: int, size: int, identity: int) -> StatKey:
    """The stat key of (mtime in ns, size, identity), exactly: :func:`unpack_stat` gives
    them back.

    From the lowest bit: a flag, set when the identity's low 64 bits (its ctime) equal
    the mtime (then left out: a file written and not chmod-ed since); the size's bit
    length in :data:`_LEN` bits, then the size; the same for the mtime (zigzag: 2m for
    m >= 0, -2m - 1 below); then the identity. Each field takes the bits its value
    needs, not the most a stat result can hold: about 200 bits for a file, not 336.

    Raises:
        ValueError: ``size`` or ``mtime_ns`` is out of the range a stat result can hold.
    """
    if not (0 <= size <= _SIZE_MASK and -_MTIME_OFFSET <= mtime_ns < _MTIME_OFFSET):
        raise ValueError(f"not a file's mtime and size: {mtime_ns!r}, {size!r}")
    return _pack(mtime_ns, size, identity)


def _pack(mtime_ns: int, size: int, identity: int) -> StatKey:
    """:func:`pack_stat` without the range check."""
    same = mtime_ns >= 0 and identity & _CTIME_MASK == mtime_ns
    if same:
        identity >>= 64
    zigzag = mtime_ns << 1 if mtime_ns >= 0 else ~mtime_ns << 1 | 1
    size_bits, mtime_bits = size.bit_length(), zigzag.bit_length()
    fields = ((identity << mtime_bits | zigzag) << _LEN | mtime_bits) << size_bits | size
    return (fields << _LEN | size_bits) << 1 | same


_SIZE_AT = _LEN + 1  # where the size starts in a stat key


def _key_size(key: StatKey) -> int:
    """The size in a :func:`pack_stat` key."""
    return key >> _SIZE_AT & ((1 << (key >> 1 & _LEN_MASK)) - 1)


def unpack_stat(key: StatKey) -> tuple[int, int, int]:
    """(mtime in ns, size, identity) of a :func:`pack_stat` key."""
    size_bits = key >> 1 & _LEN_MASK
    rest = key >> (_LEN + 1)
    size = rest & ((1 << size_bits) - 1)
    rest >>= size_bits
    mtime_bits = rest & _LEN_MASK
    rest >>= _LEN
    zigzag = rest & ((1 << mtime_bits) - 1)
    identity = rest >> mtime_bits
    mtime = ~(zigzag >> 1) if zigzag & 1 else zigzag >> 1
    if key & 1:
        identity = identity << 64 | mtime
    return mtime, size, identity


def lstat_key(st: os.stat_result) -> StatKey:
    """The stat key of a file that is not a symlink, from its ``os.lstat`` result: what
    :func:`pack_stat` gives for its mtime, size and identity (no range check: a stat
    result is in range)."""
    mtime, size, ctime = st.st_mtime_ns, st.st_size, st.st_ctime_ns
    identity = (st.st_dev << 64 | st.st_ino) << 32 | st.st_mode  # without the ctime
    if mtime < 0:
        return _pack(mtime, size, identity << 64 | ctime)
    same = ctime == mtime  # _pack's test: a stat result's ctime is below 2**63
    if not same:
        identity = identity << 64 | ctime
    mtime_bits, size_bits = mtime.bit_length() + 1 if mtime else 0, size.bit_length()
    fields = ((identity << mtime_bits | mtime << 1) << _LEN | mtime_bits) << size_bits | size
    return (fields << _LEN | size_bits) << 1 | same


def stat_key(path: str) -> StatKey | None:
    """The stat key of ``path``: mtime, size and identity of the file it leads to and,
    for a symlink, the link's own identity too (:func:`pack_stat`); None when it cannot
    be stat-ed (missing, a dangling link, a bad name).

    Equal keys mean the same file with the same metadata: a file replaced (even by a
    symlink to a file of the same size and mtime), made readable or unreadable, or given
    a new type, gets a new key, so the node reads it again.
    """
    try:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode):
            return lstat_key(st)
        target = os.stat(path)
    except (OSError, ValueError):
        return None
    return pack_stat(target.st_mtime_ns, target.st_size, _identity(target) << 256 | _identity(st))


# path, first line, content digest → outline text; insertion order is recency of use
_outlines: dict[tuple[str, int, bytes], str] = {}
_outlines_lock = threading.Lock()
# the same key → the file's outline and cut units (None: no outline entries), and with a
# focus → its ladder; with the entries matching a focus → its outline keeping them first
_cuts: dict[tuple[str, int, bytes], tuple[Outline, Cut | None]] = {}
_ladders: dict[tuple[str, int, bytes, str | None], Ladder] = {}
_focused: dict[tuple[str, int, bytes, tuple[int, ...]], str | None] = {}
# the same key → its outline, for the last few files outlined: a changed file's outline
# is made once a turn for its summary, its cuts and the reference graph's definitions
_made: dict[tuple[str, int, bytes], Outline] = {}
MADE_KEPT = 16
_NAMED = 4  # definitions named in the note under a focused cut
#: Definitions the focus names that a focused outline shows before others, at most; a
#: name more definitions of the file share than this names none of them (a changelog's
#: "### Fixed", an adapter's ``read``)
OUTLINE_HITS = 4
NAME_MATCH, REFERENCE = 3.0, 1.0  # a focus term in a definition's name; a use of one
_K1, _B = 1.2, 0.75  # BM25's term saturation and length normalization, over a file's units
_K = TypeVar("_K")
_V = TypeVar("_V")


def _recent(cache: dict[_K, _V], key: _K, make: Callable[[], _V], kept: int | None = None) -> _V:
    """``cache[key]``, made by ``make`` when missing; the cache keeps the ``kept``
    (:data:`OUTLINES_KEPT` when None) most recently used (insertion order is recency of
    use)."""
    with _outlines_lock:
        if key in cache:
            value = cache.pop(key)
            cache[key] = value
            return value
    value = make()
    with _outlines_lock:
        cache[key] = value
        while len(cache) > (OUTLINES_KEPT if kept is None else kept):
            del cache[next(iter(cache))]
    return value


def _digest(text: str) -> bytes:
    """The digest a node keeps of the text it shows (the cache keys' and the snapshot's)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _named(name: str, focus: set[str]) -> bool:
    """Whether a focus of the terms ``focus`` names ``name``: each of its words (but stop
    words) is a term of the focus, or each part of it for a compound identifier
    (``restore_snapshot`` for "restore the snapshot"), and it has one."""
    found = False
    for word in words(name):
        parts = terms(word)
        if not parts:
            continue
        if parts[0] not in focus and not (len(parts) > 1 and focus.issuperset(parts[1:])):
            return False
        found = True
    return found


def _edited(data: dict[str, Any]) -> bool:
    """The ``edited`` flag of :meth:`TextNode.data_dict` (False when absent: saved before
    the flag existed).

    Raises:
        TypeError: it is not a bool.
    """
    edited = data.get("edited", False)
    if not isinstance(edited, bool):
        raise TypeError(f"edited must be a bool, got {edited!r}")
    return edited


def _optional(value: Any, kind: type, name: str) -> Any:
    """``value`` if it is None or a ``kind`` (never a bool for an int); else TypeError."""
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise TypeError(f"{name} must be {kind.__name__} or None, got {value!r}")
    return value


def _binary(size: int) -> str:
    return f"[binary file, {size:,} bytes, not shown]"


def _posix(path: str | os.PathLike[str]) -> str:
    """``Path(path).as_posix()``, skipping the Path object for an already clean string."""
    if (
        isinstance(path, str)
        and path
        and path != "."
        and "//" not in path
        and "\\" not in path
        and not path.startswith("./")
        and "/./" not in path
        and not path.endswith(("/", "/."))
    ):
        return path
    return Path(path).as_posix()


#: What a path :func:`_posix` would change holds, in a column joined by NULs (around it
#: too): "//", "\\", "/./", a start "./", an end "/" or "/.", "." alone, "" (a NUL in
#: a path only adds a false alarm).
_NOT_POSIX = ("//", "\\", "/./", "\0./", "/\0", "/.\0", "\0.\0", "\0\0")


def _all_posix(paths: list[str]) -> bool:
    """Whether :func:`_posix` keeps every path of ``paths`` (strings) as it is: tested on
    the whole column at once."""
    joined = "\0" + "\0".join(paths) + "\0"
    return not any(mark in joined for mark in _NOT_POSIX)


@functools.lru_cache(maxsize=64)
def _resolved(root: str, cwd: str) -> Path:
    return Path(cwd, root).resolve()


def _resolved_root(root: str) -> Path:
    """``Path(root).resolve()``, shared by the nodes of a session (one object, one lookup)."""
    return _resolved(root, "" if os.path.isabs(root) else os.getcwd())


#: Distinct specs (see :class:`TextNode`) shared between nodes, at most this many: the
#: least recently made go first, so a process that reads many trees in turn (a server,
#: a test suite) keeps sharing the specs of the tree it reads now.
SPECS_KEPT = 1024
_specs: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _shared_spec(spec: tuple[Any, ...]) -> tuple[Any, ...]:
    """An equal spec already in use (one tuple for the files of a tree read alike), or
    ``spec`` itself, kept for the next nodes (the oldest of :data:`SPECS_KEPT` dropped)."""
    kept = _specs.get(spec)
    if kept is not None:
        return kept
    if len(_specs) >= SPECS_KEPT:
        del _specs[next(iter(_specs))]
    _specs[spec] = spec
    return spec


class _SpecField(Generic[_V]):
    """An attribute of a text node kept in its spec tuple, at ``index``."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    @overload
    def __get__(self, node: None, owner: type[Any]) -> _SpecField[_V]: ...
    @overload
    def __get__(self, node: TextNode, owner: type[Any]) -> _V: ...
    def __get__(self, node: TextNode | None, owner: type[Any]) -> Any:
        return self if node is None else node._spec[self.index]

    def __set__(self, node: TextNode, value: _V) -> None:
        spec = list(node._spec)
        spec[self.index] = value
        node._spec = _shared_spec(tuple(spec))


_NO_MARKS: tuple[str | None, str | None, str | None] = (None, None, None)
# The body of a text node not read yet is one int: the length of its text, then its
# digest (16 bytes) in the low bits (a third of the bytes of an int and a bytes object).
_DIGEST_BITS = 128
_DIGEST_MASK = (1 << _DIGEST_BITS) - 1


class _TextExtras(NodeExtras):
    """A text node's :class:`~dagctx.nodes.base.Extra` fields: its marks (placeholder,
    notice, redaction note), whether it shows content newer than its version, its size
    when that is not the one in its stat key, whether it was edited."""

    __slots__ = ("_marks", "_size", "_stale", "edited")
    _marks: tuple[str | None, str | None, str | None] | None
    _size: int | None
    _stale: bool
    edited: bool
    DEFAULTS: ClassVar[dict[str, Any]] = {
        **NodeExtras.DEFAULTS, "_marks": None, "_size": None, "_stale": False, "edited": False
    }  # fmt: skip


class _MarkField:
    """The placeholder, notice or redaction note of a text node (at ``index``), kept
    together in its ``_marks``: None while all three are None, as for nearly every
    file."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    @overload
    def __get__(self, node: None, owner: type[Any]) -> _MarkField: ...
    @overload
    def __get__(self, node: TextNode, owner: type[Any]) -> str | None: ...
    def __get__(self, node: TextNode | None, owner: type[Any]) -> Any:
        if node is None:
            return self
        extras = node._extras  # read here, not through Extra: a render reads it
        marks = None if extras is None else extras._marks  # type: ignore[attr-defined]
        return (marks or _NO_MARKS)[self.index]

    def __set__(self, node: TextNode, value: str | None) -> None:
        marks = list(node._marks or _NO_MARKS)
        marks[self.index] = value
        node._set_marks(marks[0], marks[1], marks[2])


class TextNode(Node):
    """File content, optionally lines ``start_line``..``end_line`` (1-based, inclusive).

    What says how the file is read (``root``, ``start_line``, ``end_line``,
    ``media_type``, ``max_bytes``, ``include_secrets``) is one tuple, the *spec*, shared
    by the nodes that read alike (the files of a scanned tree differ only by media
    type): one slot per node instead of six. ``total_bytes`` is the size in the stat
    key unless the file's size differed from it when it was read. ``placeholder``,
    ``notice`` and ``redacted`` are one tuple, None while all three are None, and with
    ``edited`` and the flag of a late read they are :class:`~dagctx.nodes.base.Extra`
    fields (no slot of their own while at their defaults). The text shown is one string,
    or while it is not read yet (a node restored from a snapshot) its length and digest
    packed in one int.
    """

    type_name: ClassVar[str] = "text"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 40
    default_frequency: ClassVar[TickFrequency] = TickFrequency.turn()
    column_keys: ClassVar[tuple[str, ...]] = (*_DATA_KEYS, *_SNAPSHOT_KEYS)
    extras_type: ClassVar[type[NodeExtras]] = _TextExtras
    placed: ClassVar[bool] = True  # a name line under its directory's heading: render_section

    __slots__ = ("_body", "_n", "_spec", "_stat", "path")

    # placeholder (shown instead of content), notice (after it), redacted (what
    # redaction replaced in the lines shown): None while all three are None
    _marks: Extra[tuple[str | None, str | None, str | None] | None] = Extra(None)
    _stale: Extra[bool] = Extra(False)  # shows newer content than its version says
    # the size of the file when last read, None while that is the size in _stat (or 0
    # without a stat key)
    _size: Extra[int | None] = Extra(None)
    #: Whether a re-read this session found the content changed (see the module docstring).
    edited: Extra[bool] = Extra(False)

    root: _SpecField[Path] = _SpecField(0)
    start_line: _SpecField[int | None] = _SpecField(1)
    end_line: _SpecField[int | None] = _SpecField(2)
    media_type: _SpecField[str] = _SpecField(3)
    max_bytes: _SpecField[int] = _SpecField(4)
    include_secrets: _SpecField[bool] = _SpecField(5)
    placeholder = _MarkField(0)
    notice = _MarkField(1)
    redacted = _MarkField(2)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] = ".",
        start_line: int | None = None,
        end_line: int | None = None,
        media_type: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        include_secrets: bool = False,
        **node_fields: Any,
    ) -> None:
        super().__init__(**node_fields)
        self._setup(path, root, start_line, end_line, media_type, max_bytes, include_secrets)
        self._load(self._read())

    def _setup(
        self,
        path: str | os.PathLike[str],
        root: str | os.PathLike[str],
        start_line: int | None,
        end_line: int | None,
        media_type: str | None,
        max_bytes: int,
        include_secrets: bool,
    ) -> None:
        """Set the fields that say what to read, and an empty content (not read yet)."""
        self.path = _posix(path)
        media_type = media_type or mimetypes.guess_type(self.path)[0] or "text/plain"
        self._spec = _shared_spec(
            (_resolved_root(os.fspath(root)), start_line, end_line, media_type, max_bytes,
             include_secrets)
        )  # fmt: skip
        # the lines shown, "\n"-joined; an int while not read yet (see _DIGEST_BITS)
        self._body: str | int = ""
        self._n = -1  # how many lines that is (-1: not read yet)
        self._stat: StatKey | None = None

    # -- reading ----------------------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        """The file's size when it was last read (0: never read)."""
        size = self._size
        if size is None:
            key = self._stat
            return 0 if key is None else _key_size(key)
        return size

    @total_bytes.setter
    def total_bytes(self, size: int) -> None:
        self._size = size

    def _set_marks(self, placeholder: str | None, notice: str | None, redacted: str | None) -> None:
        """Set :attr:`placeholder`, :attr:`notice` and :attr:`redacted` at once."""
        if placeholder is None and notice is None and redacted is None:
            self._marks = None
        else:
            self._marks = (placeholder, notice, redacted)

    def _set_stat(self, key: StatKey | None, size: int | None = None) -> None:
        """Adopt ``key`` as the stat key of the read shown, and ``size`` as
        :attr:`total_bytes` (None: it stays), kept only while it is not the key's size
        (0 without a key)."""
        if size is None:
            size = self.total_bytes
        self._stat = key
        self._size = None if size == (0 if key is None else _key_size(key)) else size

    @property
    def abspath(self) -> Path:
        return self.root / self.path

    @property
    def lines(self) -> list[str]:
        """The lines shown (without line ends); empty when a placeholder stands instead."""
        return self._text.split("\n") if self._n > 0 else []

    @property
    def content(self) -> str:
        return self._text

    @property
    def _text(self) -> str:
        """The lines shown, "\n"-joined (read now for a node restored from a snapshot)."""
        body = self._body
        return body if isinstance(body, str) else self._materialize()

    def _read(self) -> ReadResult:
        """Read the file: (stat key, placeholder, lines, notice, secrets redacted, its size
        when it was opened: None when it was not).

        The key is taken before the file is opened: a change after that gives a new key
        at the next check, so what was read is never taken for newer than it is.
        """
        key = self._key()
        if not self.include_secrets:
            reason = secret_file_reason(self.path)
            if reason is not None:
                return key, f"[withheld: {reason}, may hold secrets]", [], None, None, None
        try:
            fd, st = open_inside(self.root, self.path)
        except FileNotFoundError:
            return None, "[file deleted]", [], None, None, None
        except OutsideRootError:
            # A symlink swapped in since, or a loaded node naming ../ or an absolute path.
            return key, "[outside the session root, not shown]", [], None, None, None
        except NotRegularFileError:
            return key, "[not a regular file]", [], None, None, None
        except OSError as exc:
            return key, f"[file unreadable: {exc.strerror or exc}]", [], None, None, None
        except ValueError as exc:  # a NUL byte in the path of a tampered session file
            return None, f"[file unreadable: {exc}]", [], None, None, None
        size = st.st_size
        try:
            with open(fd, "rb") as handle:
                if self.start_line is not None or self.end_line is not None:
                    if looks_binary(handle.read(SNIFF_BYTES)):
                        return key, _binary(st.st_size), [], None, None, size
                    handle.seek(0)
                    data, truncated = self._read_range(handle)
                else:
                    # Ask for what stat said is there (a max_bytes buffer costs a large
                    # allocation per file); a file that grew since shows the rest next time.
                    data = handle.read(max(min(self.max_bytes, st.st_size), SNIFF_BYTES))
                    if looks_binary(data):
                        return key, _binary(st.st_size), [], None, None, size
                    data = data[: self.max_bytes]
                    truncated = st.st_size > len(data)
        except OSError as exc:
            return key, f"[file unreadable: {exc.strerror or exc}]", [], None, None, size
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not (truncated and exc.start >= len(data) - 3):
                return (
                    key,
                    f"[not UTF-8 text (byte {exc.start:,}), not shown]",
                    [],
                    None,
                    None,
                    size,
                )
            text = data[: exc.start].decode("utf-8")  # a character cut by max_bytes
        found = None
        if not self.include_secrets:
            text, kinds = redact(text)
            found = describe(kinds) if kinds else None
        lines = split_lines(text)
        if not truncated:
            return key, None, lines, None, found, size
        lines = lines[:-1] if lines and not text.endswith("\n") else lines
        notice = (
            f"[file is {st.st_size:,} bytes; only {len(lines):,} lines were read;"
            " open a (smaller) line range to see more]"
        )
        return key, None, lines, notice, found, size

    def _read_range(self, handle: BinaryIO) -> tuple[bytes, bool]:
        """Stream to the line range, keeping at most ``max_bytes`` of it: (bytes, truncated).

        A range deep inside a huge file costs one pass over the lines before it, never the
        whole file in memory: lines are read in bounded pieces, so even a file that is one
        enormous line (no newline for gigabytes) holds at most ``max_bytes`` at a time.
        """
        start = max(1, self.start_line or 1)
        skipped = 0
        while skipped < start - 1:  # complete lines before the range, read piece by piece
            piece = handle.readline(_SKIP_PIECE)
            if not piece:
                return b"", False
            skipped += piece.endswith(b"\n")
        chunks: list[bytes] = []
        size, taken = 0, 0
        while self.end_line is None or taken < self.end_line - start + 1:
            room = self.max_bytes - size
            line = handle.readline(room + 1)  # a whole line, or more than fits
            if not line:
                break
            if len(line) > room:
                return b"".join(chunks), True
            chunks.append(line)
            size += len(line)
            taken += 1
        return b"".join(chunks), False

    def _load(self, read: ReadResult) -> bool:
        """Adopt a read result; return whether what the node shows changed."""
        key, placeholder, lines, notice, redacted, size = read
        self._set_stat(key, size)
        text, n = "\n".join(lines), len(lines)
        if (placeholder, notice, n) == (self.placeholder, self.notice, self._n) and self._shows(
            text
        ):
            return False
        self._body, self._n = text, n
        self._set_marks(placeholder, notice, redacted)
        return True

    def _shows(self, text: str) -> bool:
        """Whether ``text`` is the text shown (compared by digest while not read yet)."""
        body = self._body
        if isinstance(body, str):
            return text == body
        return int.from_bytes(_digest(text), "big") == body & _DIGEST_MASK

    def _key(self) -> StatKey | None:
        """The file's :func:`stat_key`."""
        return stat_key(os.path.join(str(self.root), self.path))

    def watch_path(self) -> str:
        """The file's absolute path (a session learns of its changes from the OS)."""
        return os.path.join(str(self.root), self.path)

    def _reread(self, changed: bool = False) -> bool:
        """Re-read the file if its stat key changed (content, permissions, identity or
        type; or it cannot be stat-ed and was not already shown as deleted), or at once
        when ``changed`` (the OS reported a change: a rewrite of the same size within one
        tick of a coarse filesystem clock keeps the key); return whether what the node
        shows changed."""
        if self._stale:  # read late, after a change: that change is reported now
            self._stale = False
            self._load(self._read())
            return True
        if not changed:
            key = self._key()
            if key is not None and key == self._stat:
                return False
            if key is None and self.placeholder == "[file deleted]":
                return False
        return self._load(self._read())

    def changed_on_disk(self) -> bool:
        """Whether a check (:meth:`recompute`) would read the file again: its stat key
        differs from the one of the read shown. Reads nothing: one ``lstat`` (and a
        ``stat`` of a symlink's target)."""
        return self._stale or self.differs_from(self._key())

    def differs_from(self, key: StatKey | None) -> bool:
        """Whether a check (:meth:`recompute`) would read the file again if its
        :func:`stat_key` is now ``key`` (a walk that listed the file took it): it differs
        from the one of the read shown, or the read shown is newer than the node's
        version. Reads nothing."""
        if key == self._stat:
            return self._stale
        return key is not None or self.placeholder != "[file deleted]" or self._stale

    def recompute(self, *, changed: bool = False, edit: bool = True) -> bool:
        """Re-read the file if its stat key changed, or when ``changed`` says the OS
        reported a change to it; bump the version only if the shown content differs, and
        then mark the node :attr:`edited` unless ``edit`` is false (a resume's re-read of
        what changed while nobody watched)."""
        if not self._reread(changed):
            return False
        self.edited = self.edited or edit
        self.mark_changed(
            "file deleted" if self.placeholder == "[file deleted]" else "content changed"
        )
        return True

    def safety_note(self) -> str | None:
        """Why the file is withheld as secret-bearing, or what was redacted from it."""
        if self.placeholder is not None and self.placeholder.startswith("[withheld: "):
            return f"{self.placeholder[1:-1]} (include secrets to show it)"
        return self.redacted

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        """The path as shown (bytes that are not UTF-8 as ``\\xNN``), with the line range."""
        shown = display_path(self.path)
        if self.start_line is None and self.end_line is None:
            return shown
        return f"{shown}:{self.start_line or 1}-{self.end_line or ''}"

    def _header(self) -> str:
        return f"### {self.label()} (#{self.id})"

    def _fence(self, body: str) -> str:
        return fence(body, _LANGUAGES.get(os.path.splitext(self.path)[1].lower(), ""))

    def _name_line(self, shown: str) -> str:
        """The line a file collapsed to its name shows, naming it ``shown``."""
        if self.placeholder is not None:
            return f"- {shown} {self.placeholder}"
        return f"- {shown} ({counted(self._n, 'line')})"

    def render_state(self, state: NodeState) -> str:
        n = self._n
        if state == NodeState.COLLAPSED:
            return self._name_line(self.label())
        if self.placeholder is not None:
            return f"{self._header()}\n{self.placeholder}"
        if state == NodeState.SUMMARY:
            shown = self._outline_text()
            if shown:
                return self._summary(shown)
            first = self._first_lines(5)
            head = f"{self._header()}\n({counted(n, 'line')}; first {len(first)})"
            return f"{head}\n{self._fence(chr(10).join(first))}"
        return self.render_cut(state, n)

    def render_section(self, state: NodeState) -> str:
        """As :meth:`render_state`, except that a whole file collapsed to its name under
        the heading of its directory (its only parent a group titled with the directory's
        path and ``/``, as a scanned tree's are) is named by its file name alone: the
        heading just above says the rest (``## src/pkg/`` then ``- mod.py (120 lines)``).
        A file the session saw edited is named in full, since the projection shows it
        apart from its directory (:mod:`dagctx.projection.bands`), and so is a file linked
        anywhere else or a range of lines."""
        if state == NodeState.COLLAPSED:
            name = self._listed_name()
            if name is not None:
                return self._name_line(display_path(name))
        return self.render_state(state)

    def _listed_name(self) -> str | None:
        """The file name when the file is listed under its directory's heading (see
        :meth:`render_section`), else None."""
        graph, parents = self.graph, self._parent_ids
        if graph is None or len(parents) != 1 or self.edited:
            return None
        if self.start_line is not None or self.end_line is not None:
            return None
        directory, _, name = self.path.rpartition("/")
        if not directory:
            return None
        parent = graph.get(parents[0])
        if isinstance(parent, GroupNode) and parent.title == f"{directory}/":
            return name
        return None

    def _outline_text(self) -> str:
        """The outline of the lines shown (:func:`dagctx.outline.outline`) as one string,
        "" if it has no entries; taken from the shared cache of recent outlines when the
        same content at the same path was outlined lately, else made and put there."""
        first_line = self.start_line or 1
        key = (self.path, first_line, self.content_digest())
        with _outlines_lock:
            shown = _outlines.pop(key, None)
            if shown is not None:
                _outlines[key] = shown  # now the most recently used
                return shown
        shown = "\n".join(self._made_outline().render(max_chars=outline_chars(self.path)))
        with _outlines_lock:
            _outlines[key] = shown
            while len(_outlines) > OUTLINES_KEPT:
                del _outlines[next(iter(_outlines))]
        return shown

    def _summary(self, shown: str) -> str:
        """The render at SUMMARY of the outline text ``shown``."""
        return f"{self._header()}\n({counted(self._n, 'line')}; outline)\n{fence(shown)}"

    def focused_summary(self, focus: str) -> str | None:
        """The render at SUMMARY for ``focus`` where its outline is not the one without a
        focus (:meth:`render_state`): the outline shows first the definitions the focus
        names (each word of the name a word of the focus: ``aclose``, ``_send_handling_
        redirects``, not ``_get_client_nonce`` for a focus saying "client"; a name at most
        :data:`OUTLINE_HITS` definitions of the file share) among those its focused cut
        matches, best first as the cut shows them in full (at most
        :data:`OUTLINE_HITS`), each with the definitions it is nested in, and the rest as
        the outline without a focus takes them, every run of left-out definitions marked
        (:meth:`dagctx.outline.Outline.focused`). None where that outline would be the same
        (no definition is named, or the outline shows each one anyway), for a placeholder
        and without outline entries. The outline is kept in a cache like the cuts',
        keyed by the definitions it keeps first."""
        if self.placeholder is not None or self._n <= 0:
            return None
        made, cut = self._parsed()
        if cut is None:
            return None
        ladder = self._ladder(cut, focus)
        wanted = set(terms(focus))
        shared = Counter(e.name for e in made.entries)
        hits: list[int] = []
        for u in ladder.order[: ladder.hits]:
            unit = cut.units[u]
            if (
                unit.entry >= 0
                and shared[unit.name] <= OUTLINE_HITS
                and _named(unit.name, wanted)
                and unit.entry not in hits
            ):
                hits.append(unit.entry)
                if len(hits) == OUTLINE_HITS:
                    break
        if not hits:
            return None

        def make() -> str | None:
            lines = made.focused(outline_chars(self.path), hits)
            return None if lines is None else "\n".join(lines)

        shown = _recent(_focused, (*self._content_key(), tuple(hits)), make)
        return None if shown is None else self._summary(shown)

    def least_chars(self, state: NodeState) -> int | None:
        """The length of the text shown (known while it is not read yet, for a node
        restored from a snapshot), a lower bound on a render at DETAILS or ALL (which show
        it whole), so that a bound on its count needs no render; None at lower states
        and for a placeholder."""
        if self.placeholder is None and state >= NodeState.DETAILS:
            body = self._body
            return len(body) if isinstance(body, str) else body >> _DIGEST_BITS
        return None

    def cuttable_lines(self) -> int:
        """How many lines the projection may cut from this node (0: not cuttable)."""
        return 0 if self.placeholder is not None else self._n

    def render_cut(self, state: NodeState, keep: int) -> str:
        """Render at DETAILS (plain) or ALL (numbered lines) keeping the first ``keep`` lines."""
        first, n = self.start_line or 1, self._n
        if state >= NodeState.ALL:
            width = len(str(first + n))
            head = self._first_lines(keep)
            body = "\n".join(f"{first + i:>{width}} {line}" for i, line in enumerate(head))
        else:
            body = self._text if keep >= n else "\n".join(self._first_lines(keep))
        parts = [self._header(), self._fence(body)]
        cut = n - keep
        if cut > 0:
            parts.append(
                f"[… {counted(cut, 'more line')} cut to fit the budget: lines {first + keep}-"
                f"{first + n - 1} of {display_path(self.path)}]"
            )
        if self.notice:
            parts.append(self.notice)
        return "\n".join(parts)

    # -- focused cuts -----------------------------------------------------------------

    def _content_key(self) -> tuple[str, int, bytes]:
        """(path, first line, digest of the lines shown): what the cut caches are keyed by."""
        return (self.path, self.start_line or 1, self.content_digest())

    def _units(self) -> Cut | None:
        """The file's cut units (:func:`dagctx.outline.cut.partition`; None without
        outline entries)."""
        return self._parsed()[1]

    def _parsed(self) -> tuple[Outline, Cut | None]:
        """The file's outline and its cut units (None without outline entries), from the
        shared cache of recent ones or made and put there."""
        first = self.start_line or 1

        def make() -> tuple[Outline, Cut | None]:
            made = self._made_outline()
            return made, partition(made, self.lines, first)

        return _recent(_cuts, self._content_key(), make)

    def _made_outline(self) -> Outline:
        """The outline of the lines shown (:func:`dagctx.outline.outline`), from the
        cache of the last :data:`MADE_KEPT` made or made and put there."""
        first = self.start_line or 1
        return _recent(
            _made,
            self._content_key(),
            lambda: outline(self.path, self._text, first_line=first),
            MADE_KEPT,
        )

    def defined_names(self) -> list[str]:
        """The names its outline defines that other code can refer to: what
        :func:`dagctx.outline.names` gives for its content, from the outline its summary
        and cuts are made of (:meth:`_made_outline`), so a changed file is parsed once."""
        return referable(self._made_outline())

    def _ladder(self, cut: Cut, focus: str | None) -> Ladder:
        """The steps of a focused cut of ``cut`` for ``focus`` (from the shared cache)."""
        return _recent(
            _ladders,
            (*self._content_key(), focus),
            lambda: cut.ladder(self.lines, self._scores(cut, focus)),
        )

    def _scores(self, cut: Cut, focus: str | None) -> list[float]:
        """Each unit's match with ``focus``, BM25 over the file's units: every focus term
        in a unit's lines by how rare it is among the units (a term in more than half of
        at least four units counts only in names), :data:`NAME_MATCH` times that for a
        term in its name, plus :data:`REFERENCE` when it uses a name defined here that
        matched by name. The file's head scores 0."""
        wanted = set(terms(focus)) if focus else set()
        units = cut.units
        if not wanted or not units:
            return [0.0] * len(units)
        lines = self.lines
        bodies = ["\n".join(lines[u.start : u.end + 1]) for u in units]
        counts = [Counter(t for t in terms(body) if t in wanted) for body in bodies]
        lengths = [max(1, u.end - u.start + 1) for u in units]
        average = sum(lengths) / len(units)
        n = len(units)
        idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t in wanted
               for df in [sum(1 for c in counts if t in c)]}  # fmt: skip
        common = {t for t in wanted if n >= 4 and sum(1 for c in counts if t in c) * 2 > n}
        scores: list[float] = []
        symbols: set[str] = set()
        for unit, found, length in zip(units, counts, lengths, strict=True):
            if unit.kind == "head":
                scores.append(0.0)
                continue
            named = wanted.intersection(terms(unit.name)) if unit.name else set()
            if named:
                symbols.add(unit.name.casefold())
            norm = _K1 * (1 - _B + _B * length / average)
            score = sum(NAME_MATCH * idf[t] for t in named)
            for t, tf in found.items():
                if t not in common:
                    score += idf[t] * tf * (_K1 + 1) / (tf + norm)
            scores.append(score)
        for k, unit in enumerate(units):
            if (
                symbols
                and unit.kind != "head"
                and unit.name.casefold() not in symbols
                and symbols.intersection(tokenize(bodies[k]))
            ):
                scores[k] += REFERENCE
        return scores

    def cut_steps(self, focus: str | None) -> int:
        """How many focused cuts of this file there are (steps 0 to this minus one, each
        showing more than the one before; :attr:`dagctx.outline.cut.Ladder.steps`): 0 when
        it has no outline to cut by (then only :meth:`render_cut` applies) or shows a
        placeholder."""
        if self.placeholder is not None or self._n <= 0:
            return 0
        cut = self._units()
        return self._ladder(cut, focus).steps if cut is not None else 0

    def render_focused_cut(self, state: NodeState, step: int, focus: str | None) -> tuple[str, int]:
        """The file cut to step ``step`` (< :meth:`cut_steps`) for ``focus``: the parts
        that match the focus in full (best first) with the ranges between them marked,
        then more and more of its outline (each other part as a marker line with its
        signature and line range), then in full its head and the rest
        (:meth:`dagctx.outline.cut.Cut.render`); numbered lines at ALL. Step 0, the
        least cut (the first line, the rest left out), is rendered as the cut by lines
        that keeps the first line (:meth:`render_cut`), which says as much in fewer
        tokens and is known without outlining the file. Returns the render and how
        many of the file's lines it shows."""
        if step == 0:
            return self.render_cut(state, 1), 1
        cut = self._units()
        assert cut is not None, "cut_steps() is 0: no focused cut"
        ladder = self._ladder(cut, focus)
        body, kept, names = cut.render(self.lines, ladder, step, numbered=state >= NodeState.ALL)
        shown = inline(", ".join(names[:_NAMED]) + (", …" if len(names) > _NAMED else ""))
        note = (
            f"[cut to fit the budget: {kept} of {self._n} lines of {display_path(self.path)}"
            f" shown, each … line marks lines left out" + (f"; in full: {shown}]" if shown else "]")
        )
        parts = [self._header(), self._fence("\n".join(body)), note]
        if self.notice:
            parts.append(self.notice)
        return "\n".join(parts), kept

    def cut_adds(self, step: int, focus: str | None, kept: int) -> bool:
        """Whether step ``step`` (< :meth:`cut_steps`) of the focused cut for ``focus``,
        showing ``kept`` lines, shows more than the outline
        (:meth:`dagctx.outline.cut.Cut.adds`)."""
        cut = self._units()
        assert cut is not None, "cut_steps() is 0: no focused cut"
        return cut.adds(self._ladder(cut, focus), step, kept)

    def _first_lines(self, keep: int) -> list[str]:
        """The first ``keep`` lines shown."""
        if keep <= 0 or self._n <= 0:
            return []
        return self._text.split("\n", keep)[:keep]

    # -- serialization ----------------------------------------------------------------

    def content_digest(self) -> bytes:
        """A digest of the text shown: computed from the text (not kept: a digest per
        node would cost memory), or the snapshot's while the text is not read yet."""
        body = self._body
        if isinstance(body, str):
            return _digest(body)
        return (body & _DIGEST_MASK).to_bytes(16, "big")

    def snapshot(self) -> dict[str, Any] | None:
        """What the node read, without the text: the stat key of the read, the
        placeholder, notice and redaction note, the line and byte counts and a digest of
        the text shown. :meth:`from_snapshot` restores the node from it without reading
        the file (the text is read on first use and checked against the digest). None
        for a subclass (whose content has parts of its own) or while the text shown is
        newer than the node's version."""
        if type(self) is not TextNode or self._stale:
            return None
        body = self._body
        return {
            "stat": None if self._stat is None else list(unpack_stat(self._stat)),
            "placeholder": self.placeholder,
            "notice": self.notice,
            "redacted": self.redacted,
            "lines": self._n,
            "chars": len(body) if isinstance(body, str) else body >> _DIGEST_BITS,
            "bytes": self.total_bytes,
            "digest": self.content_digest().hex(),
        }

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], snapshot: dict[str, Any]) -> TextNode:
        """A node of ``data`` (:meth:`data_dict`) showing what ``snapshot``
        (:meth:`snapshot`) says was read, without reading the file now: its text is read
        when first used (:meth:`_materialize`). A subclass reads its file (as
        :meth:`from_data`). The fields are checked as :meth:`from_columns` checks them
        (a column of one).

        Raises:
            TypeError: a field of ``data`` has the wrong type (KeyError: no ``path``).
            GraphError: a field of ``snapshot`` is missing or malformed.
        """
        if cls is not TextNode:
            return cls.from_data(data)
        node = cls.__new__(cls)
        Node.__init__(node)
        fields = dict(zip(_DATA_KEYS[:-1], _fields(data), strict=True))
        if not isinstance(snapshot, dict):
            raise GraphError(f"a snapshot must be a dict, got {snapshot!r}", value=snapshot)
        missing = [key for key in _SNAPSHOT_KEYS if key not in snapshot]
        if missing:
            raise GraphError(f"the snapshot lacks {missing}", value=snapshot)
        fields["edited"] = _edited(data)
        columns = {key: [value] for key, value in {**fields, **snapshot}.items()}
        cls._restore_columns([node], columns)
        return node

    @classmethod
    def to_columns(cls, saved: Sequence[tuple[Node, dict[str, Any]]]) -> dict[str, list[Any]]:
        """As :meth:`Node.to_columns`, with each snapshot's stat key as one int
        (:func:`pack_stat`), as the node holds it, not its three fields: no list per
        node to decode and pack again at a load (:meth:`from_columns` reads either)."""
        columns = super().to_columns(saved)
        columns["stat"] = [_stat_key(snapshot["stat"]) for _, snapshot in saved]
        return columns

    @classmethod
    def _restore_columns(cls, nodes: list[Node], columns: dict[str, list[Any]]) -> None:
        """Set what :meth:`data_dict` and :meth:`snapshot` saved on each of ``nodes``
        (their text is read on first use), checking each column once: path and root
        strings (each distinct root resolved once), ``edited`` a bool, line numbers and
        ``max_bytes`` ints or None (``max_bytes`` None: the default; a media type None:
        guessed from the path), the stat key None, an int >= 0 (the key itself) or 3 ints
        (an mtime and a size a file can have, then its identity), the placeholder, notice and
        redaction note strings or None, line, char and byte counts ints >= 0, the digest
        32 hex digits (that of no text when no lines are shown).

        Raises:
            GraphError: a bad value (named), or ``cls`` is a subclass (whose content has
                parts of its own: it is never saved as columns).
        """
        if cls is not TextNode:
            raise GraphError(f"{cls.type_name} nodes are not saved as columns", value=cls.type_name)
        get = columns.__getitem__
        for key in ("path", "root"):
            check_column(get(key), key, _is_str, rule="a string", whole=_STRINGS)
        for key in ("start_line", "end_line", "max_bytes"):
            check_column(get(key), key, _int_or_none, rule="an int or None", whole=_INTS)
        for key in ("media_type", "placeholder", "notice", "redacted"):
            check_column(get(key), key, _str_or_none, rule="a string or None", whole=_TEXTS)
        check_column(get("edited"), "edited", _is_bool, rule="a bool", whole=_BOOLS)
        check_column(
            get("stat"),
            "stat",
            _stat_value,
            rule="a file's mtime, size and identity or None",
            whole=_stat_values,
        )
        for key in ("lines", "chars", "bytes"):
            check_column(get(key), key, _count, rule="an int >= 0", whole=all_counts)
        digests = get("digest")
        check_column(digests, "digest", _is_digest, rule="32 hex digits", whole=_all_digests)
        bodies = [int(value, 16) for value in digests]  # see _DIGEST_BITS
        lines, empty = get("lines"), int.from_bytes(_digest(""), "big")
        if 0 in lines:
            at = next((i for i, n in enumerate(lines) if n == 0 and bodies[i] != empty), None)
            if at is not None:
                raise column_error("digest", digests[at], "the digest of no text (no lines)")
        stats = get("stat")  # keys, or (saved before session schema 5) their three fields
        keys = stats if set(map(type, stats)) <= _KEYS else list(map(_stat_key, stats))
        paths = get("path")
        if not _all_posix(paths):
            paths = list(map(_posix, paths))
        medias, most = get("media_type"), get("max_bytes")
        if not all(medias):  # None (or ""): guessed from the path
            guess = mimetypes.guess_type
            medias = [m or guess(p)[0] or "text/plain" for m, p in zip(medias, paths, strict=True)]
        if None in most:  # None: the default
            most = [DEFAULT_MAX_BYTES if m is None else m for m in most]
        # each distinct way of reading a file (the root as saved) → its spec, made once
        ways = list(zip(
            get("root"), get("start_line"), get("end_line"), medias, most,
            map(bool, get("include_secrets")), strict=True,
        ))  # fmt: skip
        roots = {root: _resolved_root(root) for root in set(get("root"))}
        made = {way: _shared_spec((roots[way[0]], *way[1:])) for way in dict.fromkeys(ways)}
        rows = zip(
            nodes, paths, map(made.__getitem__, ways), keys, get("placeholder"),
            get("notice"), get("redacted"), lines, get("chars"), get("bytes"), bodies,
            get("edited"), strict=True,
        )  # fmt: skip
        # The extras (edited, marks, size) are set only where they are not the default:
        # a node made by from_columns has no extras record.
        for row in rows:
            node, path, spec, key, *shown = row
            placeholder, notice, redacted, n, chars, size, digest, edited = shown
            assert isinstance(node, TextNode)
            node.path, node._spec = path, spec
            if edited:
                node.edited = True
            if placeholder is not None or notice is not None or redacted is not None:
                node._marks = (placeholder, notice, redacted)
            node._n, node._stat = n, key
            # as _set_stat keeps it: only a size that is not the key's (_key_size, inline)
            if key is None:
                if size:
                    node._size = size
            elif size != key >> _SIZE_AT & ((1 << (key >> 1 & _LEN_MASK)) - 1):
                node._size = size
            # nothing shown: nothing to read; else its length and digest (_DIGEST_BITS)
            node._body = "" if n == 0 else chars << _DIGEST_BITS | digest

    def _materialize(self) -> str:
        """Read the text of a node restored from a snapshot. When the file no longer
        holds what the snapshot says (it changed after it was last checked), the node
        shows the file as it is now, and its next check (:meth:`recompute`) reports that
        as a change, so no version ever stands for two contents unnoticed."""
        key, placeholder, lines, notice, redacted, size = self._read()
        text = "\n".join(lines)
        same = (placeholder, notice, len(lines)) == (self.placeholder, self.notice, self._n)
        if not (same and self._shows(text)):
            self.placeholder, self.notice, self._n = placeholder, notice, len(lines)
            self._stale = True
        self.redacted, self._body = redacted, text
        self._set_stat(key, size)
        return text

    def data_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "root": str(self.root),
            "start_line": self.start_line,
            "end_line": self.end_line,
            "media_type": self.media_type,
            "max_bytes": self.max_bytes,
            "include_secrets": self.include_secrets,
            "edited": self.edited,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> TextNode:
        path, root, start_line, end_line, media_type, max_bytes, secrets = _fields(data)
        node = cls(
            path,
            root=root,
            start_line=start_line,
            end_line=end_line,
            media_type=media_type,
            max_bytes=max_bytes,
            include_secrets=secrets,
        )
        node.edited = _edited(data)
        return node


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _int_or_none(value: Any) -> bool:
    return value is None or type(value) is int


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _stat_value(value: Any) -> bool:
    if value is None or (type(value) is int and value >= 0):  # none, or a key as one int
        return True
    if not (type(value) is list and len(value) == 3 and all(type(v) is int for v in value)):
        return False
    mtime: int = value[0]
    size: int = value[1]
    return 0 <= size <= _SIZE_MASK and -_MTIME_OFFSET <= mtime < _MTIME_OFFSET


def _stat_values(column: list[Any]) -> bool:
    """Whether :func:`_stat_value` takes every value of ``column``, tested at once."""
    stats = [value for value in column if value is not None]
    if not stats:
        return True
    if set(map(type, stats)) == _INT:  # keys as saved since session schema 5
        return bool(min(stats) >= 0)
    if set(map(type, stats)) != _LIST or set(map(len, stats)) != {3}:
        return False
    mtimes: tuple[int, ...]
    sizes: tuple[int, ...]
    mtimes, sizes, identities = zip(*stats, strict=True)
    if not set(map(type, chain(mtimes, sizes, identities))) <= _INT:
        return False
    sizes_ok = min(sizes) >= 0 and max(sizes) <= _SIZE_MASK
    return sizes_ok and min(mtimes) >= -_MTIME_OFFSET and max(mtimes) < _MTIME_OFFSET


def _stat_key(value: int | list[int] | None) -> StatKey | None:
    """The stat key a checked ``stat`` value stands for (:func:`_stat_value`)."""
    if isinstance(value, list):
        mtime, size, identity = value
        return _pack(mtime, size, identity)
    return value


_LIST, _INT, _STR, _DIGEST_LENGTH = frozenset({list}), frozenset({int}), frozenset({str}), {32}
_KEYS = frozenset({int, type(None)})
_STRINGS, _INTS, _TEXTS = of_types(str), of_types(int, type(None)), of_types(str, type(None))
_BOOLS = of_types(bool)


_HEX = re.compile("[0-9a-fA-F]*")


def _is_digest(value: Any) -> bool:
    """Whether ``value`` is a snapshot's digest: 32 hex digits."""
    return type(value) is str and len(value) == 32 and _HEX.fullmatch(value) is not None


def _all_digests(column: list[Any]) -> bool:
    """Whether :func:`_is_digest` takes every value of ``column``, tested at once."""
    if not set(map(type, column)) <= _STR or not set(map(len, column)) <= _DIGEST_LENGTH:
        return False
    return _HEX.fullmatch("".join(column)) is not None


def _fields(
    data: dict[str, Any],
) -> tuple[str, str, int | None, int | None, str | None, int, bool]:
    """The constructor's fields from :meth:`TextNode.data_dict`, their types checked.

    Raises:
        TypeError: a field has the wrong type (KeyError: ``path`` is missing).
    """
    path, root = data["path"], data.get("root", ".")
    if not isinstance(path, str) or not isinstance(root, str):
        raise TypeError(f"path and root must be strings, got {path!r}, {root!r}")
    max_bytes = _optional(data.get("max_bytes", DEFAULT_MAX_BYTES), int, "max_bytes")
    return (
        path,
        root,
        _optional(data.get("start_line"), int, "start_line"),
        _optional(data.get("end_line"), int, "end_line"),
        _optional(data.get("media_type"), str, "media_type"),
        DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
        bool(data.get("include_secrets", False)),
    )
