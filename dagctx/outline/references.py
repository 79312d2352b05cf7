"""The reference graph between files, and personalized PageRank over it.

A file *defines* the names of its outline entries (:func:`dagctx.outline.outline`: the
tree-sitter parse of a code file; nothing for other files) and *references* every
identifier-shaped word of its text (:data:`IDENTIFIER`). Two files are linked when one
references a name the other defines; the link weighs, per shared name, one over the number
of files defining it, so a name many files define says little about any one of them. A
name defined in more than :data:`MAX_DEFINERS` files, or defined and referenced only in
the same file, links nothing. Links are undirected: a caller and what it calls pull each
other up.

:class:`ReferenceGraph` keeps, per file, its definitions and references, and the postings
name → files defining it and name → files referencing it, updated one file at a time
(:meth:`ReferenceGraph.update` reads that file alone). :meth:`ReferenceGraph.rank` is
personalized PageRank (restart probability :data:`ALPHA`) from weighted seed files,
truncated to the walk's first two steps: seeds and their neighbours are expanded, and
the second step goes out from at most :data:`EXPAND` first-step files. So a ranking costs
what the seeds' neighbourhood holds, not the graph; and it is a function of the graph and
the seeds alone (files are visited in sorted order: floating-point sums come out the same
in every run and for a graph built in any order).

:class:`GraphBuild` reads many files into a new graph in a worker thread, from copies of
their key, version, path and text taken when it was made (so nothing it reads changes
under it), or their definitions and references as read before
(:meth:`ReferenceGraph.hold`; a resumed session's, :mod:`dagctx.projection.file_terms`),
for a caller that can use the graph later.

Imports only :mod:`dagctx.outline`; must not import the rest of dagctx.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set

from dagctx.outline import language_of
from dagctx.outline import names as outline_names
from dagctx.outline.code import LANGUAGES

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
MAX_DEFINERS = 8  # a name defined in more files than this links none of them
ALPHA = 0.3  # the walk's restart probability
EXPAND = 32  # first-step files the second step goes out from
STEPS = 2  # the walk is cut off after this many steps
KEPT_LINKS = 1024  # files whose links are kept between walks (ReferenceGraph._linked)


def definitions(
    path: str, text: str, named: Callable[[], Iterable[str]] | None = None
) -> frozenset[str]:
    """The names a code file at ``path`` defines (its outline's entries; empty for a file
    that is not code in a known language). Dunder names (``__init__``) are left out: every
    class has them. ``named`` gives the names of its outline's entries
    (:func:`dagctx.outline.names` of ``text``, made when None) for a caller holding them."""
    if language_of(path) not in LANGUAGES:
        return frozenset()
    names = outline_names(path, text) if named is None else named()
    return frozenset(n for n in names if len(n) > 2 and not n.startswith("__"))


def references(text: str) -> frozenset[str]:
    """The identifier-shaped words of ``text`` (three characters or more)."""
    return frozenset(IDENTIFIER.findall(text))


class ReferenceGraph:
    """Definitions and references per file, and the name postings (module docstring).

    Files are named by a key (a node id); each is kept at a version, and updating it at
    the version it is kept at does nothing.
    """

    __slots__ = ("_defined_by", "_files", "_links", "_referenced_by")

    def __init__(self) -> None:
        #: key → (version, names defined, names referenced)
        self._files: dict[str, tuple[int, frozenset[str], frozenset[str]]] = {}
        self._defined_by: dict[str, set[str]] = {}
        self._referenced_by: dict[str, set[str]] = {}
        #: key → its links (:meth:`neighbours`) as last found, for the files walked lately
        #: (at most KEPT_LINKS); a change of a file's names forgets those it can move
        self._links: dict[str, dict[str, float]] = {}

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, key: object) -> bool:
        return key in self._files

    def __iter__(self) -> Iterator[str]:
        """The keys of the files held."""
        return iter(list(self._files))

    def update(
        self,
        key: str,
        version: int,
        path: str,
        text: str,
        named: Callable[[], Iterable[str]] | None = None,
    ) -> bool:
        """Hold file ``key`` (at ``path``, with ``text``) at ``version``; return whether
        anything was read (False: it was held at that version already). ``named`` as for
        :func:`definitions`."""
        if self.holds(key, version):
            return False
        defs = definitions(path, text, named)
        self.hold(key, version, defs, references(text) - defs)
        return True

    def holds(self, key: str, version: int) -> bool:
        """Whether file ``key`` is held at ``version``."""
        old = self._files.get(key)
        return old is not None and old[0] == version

    def names(self, key: str, version: int) -> tuple[frozenset[str], frozenset[str]] | None:
        """The names file ``key`` defines and those it references (none it defines), if
        it is held at ``version``."""
        old = self._files.get(key)
        return None if old is None or old[0] != version else (old[1], old[2])

    def hold(self, key: str, version: int, defs: Set[str], refs: Set[str]) -> None:
        """Hold file ``key`` at ``version`` as defining ``defs`` and referencing ``refs``
        (read before: :func:`definitions`, and :func:`references` less those)."""
        defs, refs = frozenset(defs), frozenset(refs)
        old = self._files.get(key)
        if old is not None and old[1] == defs and old[2] == refs:
            self._files[key] = (version, defs, refs)
            return
        before: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        if old is not None:
            before = old[1], old[2]
        self._forget_links(key, before[0] ^ defs, before[1] ^ refs)
        self._files[key] = (version, defs, refs)
        for postings, was, now in (
            (self._defined_by, before[0], defs),
            (self._referenced_by, before[1], refs),
        ):  # the postings of the names it no longer has and of those it has now
            _unpost(postings, was - now, key)
            for name in now - was:
                postings.setdefault(name, set()).add(key)

    def remove(self, key: str) -> None:
        """Forget file ``key`` (nothing if it is not held)."""
        old = self._files.get(key)
        if old is not None:
            self._forget_links(key, old[1], old[2])
            del self._files[key]
            _unpost(self._defined_by, old[1], key)
            _unpost(self._referenced_by, old[2], key)

    def _forget_links(self, key: str, defs: Set[str], refs: Set[str]) -> None:
        """Forget the links kept of the files whose links move when file ``key`` comes to
        define or stops defining ``defs`` and to reference or stops referencing ``refs``
        (call it while the postings are those before the change): ``key``'s own, those
        of the files defining a name of ``refs`` (who uses what they define), and for a
        name of ``defs`` those of every file defining or referencing it (its weight, one
        over its definers, moves). A name defined in more than :data:`MAX_DEFINERS`
        files before and after links nothing either way."""
        links = self._links
        if not links:
            return
        links.pop(key, None)
        defined_by, referenced_by = self._defined_by, self._referenced_by
        for name in refs:
            definers = defined_by.get(name, ())
            if len(definers) <= MAX_DEFINERS:
                for other in definers:
                    links.pop(other, None)
        for name in defs:
            definers = defined_by.get(name, ())
            if len(definers) - 1 <= MAX_DEFINERS:  # one more or one less than that now
                for other in (*definers, *referenced_by.get(name, ())):
                    links.pop(other, None)

    def neighbours(self, key: str) -> dict[str, float]:
        """The files linked to ``key``, each with the link's weight."""
        return dict(self._linked(key))

    def _linked(self, key: str) -> dict[str, float]:
        """:meth:`neighbours` of ``key``, kept until a change can move them (not to be
        changed by the caller)."""
        links = self._links
        found = links.get(key)
        if found is None:
            found = self._find_links(key)
            if len(links) >= KEPT_LINKS:
                del links[next(iter(links))]
            links[key] = found
        return found

    def _find_links(self, key: str) -> dict[str, float]:
        held = self._files.get(key)
        if held is None:
            return {}
        _, defs, refs = held
        defined_by, referenced_by = self._defined_by, self._referenced_by
        out: dict[str, float] = {}
        for name in sorted(refs):  # what this file uses (sorted: the sums come out alike)
            definers = defined_by.get(name)
            if definers and len(definers) <= MAX_DEFINERS:
                w = 1.0 / len(definers)
                for other in sorted(definers):
                    out[other] = out.get(other, 0.0) + w
        for name in sorted(defs):  # who uses what this file defines
            definers = defined_by[name]
            if len(definers) <= MAX_DEFINERS:
                w = 1.0 / len(definers)
                for other in sorted(referenced_by.get(name, ())):
                    out[other] = out.get(other, 0.0) + w
        out.pop(key, None)
        return out

    def rank(self, seeds: Mapping[str, float], *, walked_only: bool = False) -> dict[str, float]:
        """Personalized PageRank from ``seeds`` (key → weight > 0; keys not held are
        ignored), truncated: each file's probability of ending there a walk that starts at
        a seed (chosen by weight), stops with probability :data:`ALPHA` at each file and
        is cut off after two steps; from the first step only the :data:`EXPAND` files it
        most likely reaches go on. Every file with a probability above zero is returned;
        with ``walked_only``, walks that stop at their seed before a first step are not
        counted (what the graph adds to the seeds).
        """
        start = {k: w for k, w in seeds.items() if w > 0 and k in self._files}
        total = sum(start.values())
        if total <= 0:
            return {}
        rank: dict[str, float] = {}
        mass = {k: w / total for k, w in sorted(start.items())}
        for step in range(STEPS + 1):
            for key, m in mass.items():
                if step or not walked_only:
                    rank[key] = rank.get(key, 0.0) + ALPHA * m
            if step == STEPS:
                break
            if step > 0 and len(mass) > EXPAND:
                best = sorted(mass.items(), key=lambda km: (-km[1], km[0]))[:EXPAND]
                mass = dict(sorted(best))
            walked: dict[str, float] = {}
            for key, m in mass.items():
                links = self._linked(key)
                degree = sum(links.values())
                if degree > 0:
                    share = (1 - ALPHA) * m / degree
                    for other in sorted(links):
                        walked[other] = walked.get(other, 0.0) + share * links[other]
            mass = dict(sorted(walked.items()))
        return rank


def _unpost(postings: dict[str, set[str]], names: Iterable[str], key: str) -> None:
    """Take file ``key`` out of the postings of ``names`` (it is in each)."""
    for name in names:
        keys = postings[name]
        keys.discard(key)
        if not keys:
            del postings[name]


#: What a :class:`GraphBuild` reads a file from: its text, or a call giving its
#: definitions and references as read before (:meth:`ReferenceGraph.hold`).
Source = str | Callable[[], tuple[Set[str], Set[str]]]


class GraphBuild:
    """A :class:`ReferenceGraph` of ``files`` ((key, version, path, :data:`Source`)
    each), read in a worker thread once :meth:`start` is called; :meth:`result` waits
    for it (or reads the files in the calling thread when the build was never
    started)."""

    __slots__ = ("_error", "_files", "_graph", "_thread")

    def __init__(self, files: Sequence[tuple[str, int, str, Source]]) -> None:
        self._files = files
        self._graph = ReferenceGraph()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        """Start reading the files in a daemon thread (nothing if already started)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="dagctx-references", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            graph = self._graph
            for key, version, path, source in self._files:
                if isinstance(source, str):
                    graph.update(key, version, path, source)
                else:
                    graph.hold(key, version, *source())
        except BaseException as error:  # handed to the caller of result()
            self._error = error

    def result(self) -> ReferenceGraph:
        """The graph of every file, once read; an error raised while reading is raised
        here."""
        if self._thread is None:
            self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._graph
