"""Which paths of a directory tree dagctx takes in: git's ignore rules, git's index, and the
names it always skips. One :class:`TreeFilter` decides for the scan
(:func:`~dagctx.watch.scan.scan_tree` walks with it) and for the watcher (it is the core of
:meth:`~dagctx.watch.tracker.TreeTracker.watch_filter`), so the two cannot disagree.

The rules, as git applies them (``git ls-files --cached --others --exclude-standard``):

- a ``.gitignore``'s patterns are relative to its directory; a deeper file overrides a
  shallower one, then ``.git/info/exclude``; within a file the last matching pattern wins
  and ``!`` re-includes (patterns: :mod:`dagctx.watch.patterns`);
- each directory is decided before it is entered; the files under an excluded directory
  cannot be re-included (its own ``.gitignore`` is not read);
- in a git repository, tracked files are always kept, also under an excluded directory
  (the index is read once, with ``git ls-files``, when the filter is made and again on
  :meth:`TreeFilter.reload_index`); without git, or outside a repository, the rules alone;
- the ``.gitignore`` files between the repository's top and the tree apply too; the tree's
  top and the directories above it are never excluded (the tree asked for is scanned).

Always skipped, tracked or not: :data:`ALWAYS_SKIPPED` (VCS metadata, dagctx's own
folder, bytecode caches), virtual environments (directories holding ``pyvenv.cfg``:
installed packages, never a project's source), symbolic links (a link may point outside
the root), and the extra paths given as ``ignore`` (with the ``.<name>.*.tmp`` files of an
atomic write of them). The user's global excludes file (``core.excludesFile``) is not read.

The user's own steering (``--exclude`` / ``--include``, see :mod:`dagctx.watch.steering`)
comes last, as two :class:`Globs` (patterns relative to the root): ``exclude`` is one more
ignore file that tracked files do not escape (an excluded directory is not entered), and
``include``, when it has patterns, keeps only the files it matches (a file matches when a
pattern matches it or one of its directories; directories are still entered). Neither
brings back what the rules above leave out.

Imports nothing from dagctx but :mod:`dagctx.watch.patterns`.
"""

from __future__ import annotations

import enum
import operator
import os
import subprocess
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagctx.watch.patterns import Pattern, compile_line

if TYPE_CHECKING:
    from watchfiles import Change

ALWAYS_SKIPPED = frozenset({".git", ".dagctx", ".hg", ".svn", "__pycache__"})
#: How long reading the index (``git ls-files``) may take before the rules alone are used.
GIT_TIMEOUT_S = 30.0


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def read_patterns(path: Path) -> tuple[Pattern, ...]:
    """The patterns of an ignore file, in order; none if it is missing or unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return ()
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="surrogateescape")
    patterns = (compile_line(line.removesuffix("\r")) for line in text.split("\n"))
    return tuple(p for p in patterns if p is not None)


@dataclass(frozen=True, slots=True)
class _IgnoreFile:
    """The patterns of one ignore file and how a root-relative path is made relative to
    its directory: strip ``strip`` leading characters (the directory under the root and
    its "/"), prepend ``lead`` (the root's path below a directory above it)."""

    patterns: tuple[Pattern, ...]
    strip: int
    lead: str

    def decide(self, rel: str, name: str, is_dir: bool) -> bool | None:
        """Whether the last pattern matching the path ignores it (None: none matches)."""
        relative = self.lead + rel[self.strip :]
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, name, is_dir):
                return not pattern.negated
        return None


@dataclass(frozen=True, slots=True)
class Globs:
    """Gitignore-style patterns matched against root-relative paths, in order; the last
    pattern that matches decides (a ``!`` pattern decides "no")."""

    patterns: tuple[Pattern, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def last_match(self, rel: str, is_dir: bool, *, inherit: bool = False) -> int | None:
        """The index of the last pattern matching the path (``inherit``: or one of its
        directories), or None if none does."""
        name = rel.rpartition("/")[2]
        for index in range(len(self.patterns) - 1, -1, -1):
            pattern = self.patterns[index]
            if pattern.matches(rel, name, is_dir):
                return index
            if inherit:
                parent = _parent(rel)
                while parent:
                    if pattern.matches(parent, parent.rpartition("/")[2], True):
                        return index
                    parent = _parent(parent)
        return None

    def selects(self, rel: str, is_dir: bool, *, inherit: bool = False) -> bool:
        """Whether the last matching pattern (see :meth:`last_match`) is not negated."""
        index = self.last_match(rel, is_dir, inherit=inherit)
        return index is not None and not self.patterns[index].negated


#: No patterns: includes nothing in particular, excludes nothing.
NO_GLOBS = Globs()


class _Dir(enum.Enum):
    OPEN = "open"  # entered; the rules decide for its entries
    TRACKED_ONLY = "tracked only"  # excluded, but holds tracked files: only those kept
    PRUNED = "pruned"  # not entered


@dataclass(frozen=True, slots=True)
class Repository:
    """Where the git repository holding a tree keeps what the rules need."""

    top: Path
    git_dir: Path  # the directory with this worktree's index
    common_dir: Path  # the directory with ``info/exclude``

    @classmethod
    def find(cls, path: Path) -> Repository | None:
        """The repository ``path`` is in (a ``.git`` directory or worktree file in it or
        above it), or None."""
        for top in (path, *path.parents):
            dot_git = top / ".git"
            if dot_git.is_dir():
                return cls(top, dot_git, dot_git)
            if dot_git.is_file():
                try:
                    line = dot_git.read_text(encoding="utf-8").strip()
                except (OSError, UnicodeDecodeError):
                    return None
                if not line.startswith("gitdir:"):
                    return None
                git_dir = (top / line.removeprefix("gitdir:").strip()).resolve()
                try:
                    common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
                except OSError:
                    return cls(top, git_dir, git_dir)
                return cls(top, git_dir, (git_dir / common).resolve())
        return None


def tracked_files(root: Path) -> frozenset[str] | None:
    """The root-relative paths git tracks under ``root`` (``git ls-files``), or None
    when git is missing, fails, or takes longer than :data:`GIT_TIMEOUT_S`."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--cached"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return frozenset(n for n in names if n)


def _as_is(result: os.stat_result) -> os.stat_result:
    """What :meth:`TreeFilter.walk` keeps of a file's ``os.lstat`` result by default."""
    return result


class TreeFilter:
    """The paths under ``root`` dagctx takes in (see the module docstring); paths are
    root-relative posix strings.

    Usable as a ``watch_filter`` of :func:`watchfiles.awatch`: ``filter(change, path)``
    keeps events on paths the scan takes in and on the files that change the rules
    (``.gitignore``, ``pyvenv.cfg``, the index and ``info/exclude``).

    Args:
        root: the session root; paths are relative to it.
        top: the root-relative tree being scanned: it and the directories above it are
            never excluded.
        ignore: extra files never taken in, with their ``.<name>.*.tmp`` siblings.
        include: when not empty, only the files these patterns match (or one of whose
            directories they match) are taken in.
        exclude: paths never taken in (an ignore file of the user's, above git's
            tracked files).
    """

    def __init__(
        self,
        root: Path,
        *,
        top: str = "",
        ignore: Iterable[str | os.PathLike[str]] = (),
        include: Globs = NO_GLOBS,
        exclude: Globs = NO_GLOBS,
    ) -> None:
        self.root = root
        self.top = top
        self.include = include
        self.exclude = exclude
        self._root_prefix = str(root) + os.sep
        self._outputs = {Path(p).resolve() for p in ignore}
        # the directories holding an output, as strings (a walk asks once per directory)
        self._output_parents = frozenset(str(o.parent) for o in self._outputs)
        self.repository = Repository.find(root)
        self._tracked: frozenset[str] = frozenset()
        self._tracked_dirs: frozenset[str] = frozenset()
        self._above: tuple[_IgnoreFile, ...] = ()
        self._exclude: _IgnoreFile | None = None
        self._chains: dict[str, tuple[_IgnoreFile, ...]] = {}
        self._states: dict[str, _Dir] = {}
        #: Directories the last walk through them could not list: path -> why.
        self.unreadable: dict[str, str] = {}
        self.reload_rules()
        self.reload_index()

    # -- reading the rules and the index ----------------------------------------------

    @property
    def index_path(self) -> Path | None:
        """The repository's index file (its changes change the tracked files)."""
        return None if self.repository is None else self.repository.git_dir / "index"

    @property
    def exclude_path(self) -> Path | None:
        """The repository's ``info/exclude`` file."""
        return None if self.repository is None else self.repository.common_dir / "info/exclude"

    def reload_rules(self) -> None:
        """Forget what was read from ignore files (call it when one changed)."""
        self._chains.clear()
        self._states.clear()
        self._above, self._exclude = (), None
        repository = self.repository
        if repository is None:
            return
        exclude = self.exclude_path
        assert exclude is not None
        patterns = read_patterns(exclude)
        if patterns:
            self._exclude = _IgnoreFile(patterns, 0, _below(repository.top, self.root))
        above = []
        for directory in reversed(self.root.parents):
            if directory == repository.top or repository.top in directory.parents:
                lead = _below(directory, self.root)
                above.append(_IgnoreFile(read_patterns(directory / ".gitignore"), 0, lead))
        self._above = tuple(f for f in above if f.patterns)

    def reload_index(self) -> set[str]:
        """Read the tracked files again; return the paths whose tracked state changed."""
        tracked = None if self.repository is None else tracked_files(self.root)
        tracked = tracked or frozenset()
        changed = set(tracked ^ self._tracked)
        if changed:
            self._tracked = tracked
            self._tracked_dirs = frozenset(_parents(tracked))
            self._states.clear()
        return changed

    def _chain(self, rel_dir: str, read: bool = True) -> tuple[_IgnoreFile, ...]:
        """The ignore files in force in a directory, shallowest first. ``read`` False:
        the caller listed the directory and it holds no ``.gitignore`` (none is read)."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            base = self._above if not rel_dir else self._chain(_parent(rel_dir))
            own = read_patterns(self.root / rel_dir / ".gitignore") if read else ()
            if own:
                strip = len(rel_dir) + 1 if rel_dir else 0
                chain = (*base, _IgnoreFile(own, strip, ""))
            else:
                chain = base
            self._chains[rel_dir] = chain
        return chain

    # -- decisions --------------------------------------------------------------------

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the ignore rules exclude the path itself (its directories assumed
        entered; tracked files and skipped names are not considered here)."""
        return self._ignored_in(self._chain(_parent(rel)), rel, rel.rpartition("/")[2], is_dir)

    def _ignored_in(
        self, chain: tuple[_IgnoreFile, ...], rel: str, name: str, is_dir: bool
    ) -> bool:
        for file in reversed(chain):
            decision = file.decide(rel, name, is_dir)
            if decision is not None:
                return decision
        if self._exclude is not None:
            return bool(self._exclude.decide(rel, name, is_dir))
        return False

    def _state(self, rel: str) -> _Dir:
        state = self._states.get(rel)
        if state is None:
            if not rel or rel == self.top or self.top.startswith(rel + "/"):
                state = _Dir.OPEN
            else:
                parent = self._state(_parent(rel))
                name = rel.rpartition("/")[2]
                if (
                    parent is _Dir.PRUNED
                    or name in ALWAYS_SKIPPED
                    or self.exclude.selects(rel, True)
                    or _has_venv_marker(self._root_prefix + rel)
                ):
                    state = _Dir.PRUNED
                elif parent is _Dir.OPEN and not self.ignored(rel, True):
                    state = _Dir.OPEN
                elif rel in self._tracked_dirs:
                    state = _Dir.TRACKED_ONLY
                else:
                    state = _Dir.PRUNED
            self._states[rel] = state
        return state

    def keeps_dir(self, rel: str) -> bool:
        """Whether the scan enters the directory (and makes a group of it)."""
        return self._state(rel) is not _Dir.PRUNED

    def keeps_file(self, rel: str) -> bool:
        """Whether the scan takes the file in (binary files are the scan's business)."""
        parent = _parent(rel)
        return self._keeps_file_in(self._state(parent), parent, rel, rel.rpartition("/")[2])

    def _keeps_file_in(self, state: _Dir, rel_dir: str, rel: str, name: str) -> bool:
        if name in ALWAYS_SKIPPED:  # a worktree's or submodule's ``.git`` is a file
            return False
        if state is _Dir.PRUNED or (self._outputs_in(rel_dir) and self._is_output(rel)):
            return False
        if self.exclude.selects(rel, False):
            return False
        if self.include and not self.include.selects(rel, False, inherit=True):
            return False
        if rel in self._tracked:
            return True
        return state is _Dir.OPEN and not self._ignored_in(self._chain(rel_dir), rel, name, False)

    def _plain(self, state: _Dir, rel_dir: str) -> bool:
        """Whether no rule can leave out a file of the directory but its name (an
        entered directory, no ignore file in force, no include or exclude patterns, no
        ignored output in it): :meth:`_keeps_file_in` then keeps every file not in
        ``ALWAYS_SKIPPED``, so a walk need not ask it file by file."""
        return (
            state is _Dir.OPEN
            and not self._outputs_in(rel_dir)
            and not self.exclude
            and not self.include
            and self._exclude is None
            and not self._chain(rel_dir)
        )

    def _outputs_in(self, rel_dir: str) -> bool:
        """Whether an ignored output (or its temporary files) can lie in the directory:
        one of them is there (:meth:`_is_output` asks only there; once per directory)."""
        parents = self._output_parents
        if not parents:
            return False
        return (self._root_prefix + rel_dir if rel_dir else str(self.root)) in parents

    def _is_output(self, rel: str) -> bool:
        absolute = self.root / rel
        for out in self._outputs:
            if absolute == out:
                return True
            name = absolute.name
            if absolute.parent == out.parent and name.startswith(f".{out.name}."):
                return name.endswith(".tmp")
        return False

    def relative(self, path: str) -> str | None:
        """The root-relative posix path of an absolute path under ``top``, or None."""
        if not path.startswith(self._root_prefix):
            return None
        rel = path[len(self._root_prefix) :].replace(os.sep, "/")
        top = self.top
        return rel if not top or rel == top or rel.startswith(top + "/") else None

    def __call__(self, change: Change, path: str) -> bool:
        """Keep an event on ``path`` if the scan would take the path in, or if it may
        change the rules (``.gitignore``, ``pyvenv.cfg`` in an entered directory, the
        index, ``info/exclude``)."""
        if self.repository is not None and Path(path) in (self.index_path, self.exclude_path):
            return True
        rel = self.relative(path)
        if rel is None:
            return False
        if os.path.isdir(path):
            return self.keeps_dir(rel)
        name = rel.rpartition("/")[2]
        if name in (".gitignore", "pyvenv.cfg"):
            return self.keeps_dir(_parent(rel))
        return self.keeps_file(rel)

    # -- the scan's walk --------------------------------------------------------------

    def walk(
        self,
        start: Path,
        stats: dict[str, Any] | None = None,
        measure: Callable[[os.stat_result], object] = _as_is,
    ) -> Iterator[tuple[str, bool]]:
        """Yield (root-relative posix path, is_dir) for every entry taken in under
        ``start`` (a directory under the root): a directory's files, then its
        subdirectories, then theirs, each level in sorted order. A directory that cannot
        be listed (no permission) is yielded but not entered, and recorded in
        :attr:`unreadable` with the reason (a later walk that lists it removes it).

        Each directory is listed through a descriptor of its own. With ``stats``, the
        files are not yielded (only the directories are, in the order of each listing):
        each file's ``os.lstat`` result, or what ``measure`` makes of it, goes there under
        its path instead (None when it cannot be stat-ed), taken by name relative to that
        descriptor, so no path from the root is looked up again (a resume compares every
        file with the disk, and keeps of each its stat key, an int, not the stat result,
        which the garbage collector would walk)."""
        rel_start = "" if start == self.root else start.relative_to(self.root).as_posix()
        stack: list[tuple[str, str]] = [(str(start), rel_start)]
        while stack:
            directory, rel_dir = stack.pop()
            try:
                fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # gone meanwhile: the watcher's events say so
            except OSError as exc:
                self.unreadable[rel_dir] = exc.strerror or str(exc)
                continue
            try:
                subdirs = yield from self._walk_directory(fd, directory, rel_dir, stats, measure)
            finally:
                os.close(fd)
            stack.extend(reversed(subdirs))
            for _path, rel in subdirs:
                yield rel, True

    def _walk_directory(
        self,
        fd: int,
        directory: str,
        rel_dir: str,
        stats: dict[str, Any] | None,
        measure: Callable[[os.stat_result], object],
    ) -> Generator[tuple[str, bool], None, list[tuple[str, str]]]:
        """Yield the files :meth:`walk` takes in from the directory open as ``fd``;
        return its subdirectories to enter, as (path, root-relative path)."""
        try:
            listing = os.scandir(fd)
            entries = sorted(listing, key=_entry_name) if stats is None else list(listing)
        except OSError as exc:
            self.unreadable[rel_dir] = exc.strerror or str(exc)
            return []
        self.unreadable.pop(rel_dir, None)
        if rel_dir not in self._chains and ".gitignore" not in map(_entry_name, entries):
            self._chain(rel_dir, read=False)  # no ignore file to try to open
        subdirs = []
        state = self._state(rel_dir)
        plain = self._plain(state, rel_dir)
        prefix = f"{rel_dir}/" if rel_dir else ""
        lstat = os.lstat
        for entry in entries:
            name = entry.name
            rel = prefix + name
            # Neither test follows a symlink, so a symlink is neither (and skipped).
            if entry.is_file(follow_symlinks=False):
                if (
                    name not in ALWAYS_SKIPPED
                    if plain
                    else self._keeps_file_in(state, rel_dir, rel, name)
                ):
                    if stats is None:
                        yield rel, False
                        continue
                    try:
                        stats[rel] = measure(lstat(name, dir_fd=fd))
                    except OSError:
                        stats[rel] = None
            elif entry.is_dir(follow_symlinks=False) and self.keeps_dir(rel):
                subdirs.append((os.path.join(directory, name), rel))
        return subdirs


_entry_name = operator.attrgetter("name")


def _has_venv_marker(directory: str) -> bool:
    """Whether ``directory`` holds ``pyvenv.cfg`` (a directory that cannot be searched
    holds none that counts: the walk cannot list it either)."""
    try:
        os.stat(os.path.join(directory, "pyvenv.cfg"))
    except OSError:
        return False
    return True


def _below(directory: Path, root: Path) -> str:
    """The path from ``directory`` down to ``root`` with a trailing "/" ("" if equal)."""
    return "" if directory == root else root.relative_to(directory).as_posix() + "/"


def _parents(paths: Iterable[str]) -> Iterator[str]:
    """Every directory (proper prefix) of the given relative paths."""
    seen: set[str] = set()
    for path in paths:
        parent = _parent(path)
        while parent and parent not in seen:
            seen.add(parent)
            yield parent
            parent = _parent(parent)
