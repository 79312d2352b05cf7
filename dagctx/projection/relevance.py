"""Relevance: each node's score for the focus, and the level that orders the degrade.

A text file's score has two parts:

- **lexical** (0..1): BM25 of the focus against the file's content (the names it defines
  count :data:`SYMBOL_WEIGHT` times more; lengths normalized against a fixed
  :data:`AVERAGE_LENGTH`), plus :data:`PATH_WEIGHT` × the inverse document frequency
  among paths of each focus term in its path (and of each focus word that is the file's
  name less its extensions, matched whole, for a file other than code or tests only when
  the word is written as code: :func:`name_terms`; and of each focus word
  written as code, ``replace_bytes`` or ``nullSafe()``, that is a name the file
  defines: :func:`code_terms`); divided by the most a
  file can score and scaled down for docs, tests and fixtures (:data:`KIND_WEIGHT`),
  for sample code as for docs (:data:`SAMPLE_WEIGHT`: examples, benchmarks, scripts),
  and for a changelog further (:data:`CHANGELOG_WEIGHT`: it names every past change,
  so a task's words match it whatever the task), as for the files that say how to work
  on the project rather than being it (issue and pull-request templates, CI workflows under
  ``.github/``, ``.gitlab/`` or ``.circleci/``, ``CONTRIBUTING``, ``CODE_OF_CONDUCT``,
  ``SECURITY``: written in the words of every bug report; :func:`match_weight`). Terms
  come from
  :func:`dagctx._words.terms` (the tokenizer of ``search_knowledge``, split at
  snake_case and camelCase, stemmed). The statistics are kept per file and updated only
  for the files that change (:class:`Bm25Index`), and only while a focus is set; a
  file's score depends on the other files only through the focus terms' document
  frequencies, so a change rescores that file alone unless it moved one of those.
- **graph** (0..the best lexical score): personalized PageRank over the reference graph
  between files (:class:`~dagctx.outline.references.ReferenceGraph`: definitions from the
  outline parsers ↔ identifiers used in other files), seeded by the :data:`SEED_FILES` best
  lexical matches and the :data:`ATTENTION_FILES` files most recently changed or opened
  (a text node whose version moved: edited on disk, or its state set), walks that leave
  their seed only, scaled so the highest equals the best lexical score (1 when no file
  matches the words: attention alone), so a module every file calls does not outrank the
  files the words point to when they match little; kept only while a focus is set, each file
  re-read only when it changes, the walk bounded by the seeds' neighbourhood. Reading
  every file's definitions (a tree-sitter parse each) is most of what a first focus
  costs: over more than :data:`LATER_FILES` files, a focus set where there was none
  levels the files without this part, and the graph is read in a worker thread once
  that projection is made (:class:`~dagctx.outline.references.GraphBuild`); the next
  projection waits for it if need be and levels every entry with it (:attr:`Relevance.later`),
  so only that first projection differs from one built with the graph.
- **recent** (0 or 1): 1 for the :data:`ATTENTION_FILES` most recently changed or opened
  files (flat, so a change moves the recency of at most the file changed and the one
  that leaves the window; among files of one level the newer one is kept longer anyway).
- **base** (its *tier*, 0..19): without a focus the order is still not the walk's but
  what a newcomer reads first (:func:`prior`): the README, the project's own code as
  outlines (shallow and long modules first), manifests, docs, samples, other files,
  tests, fixtures. With a focus it ranks the files of one bucket (:func:`tier`): source
  files before docs and sample code, other files, tests, and fixtures or lockfiles; then
  files at most
  one directory deep, then files of at most :data:`SMALL_LINES` lines. A focus set where
  there was none, or cleared, levels every file again.

The *level* of a file is ``bucket × TIERS + tier``, the bucket made of ``lexical +
GRAPH_WEIGHT × graph + RECENT_WEIGHT × recent`` (0 for none, else 1..24, in steps of
1/16; sums from 23/16 up, which take a strong word match, share the top bucket); a
container's is its best child's, so a directory holding a relevant file stays open;
other nodes are at level 0. The degrade order sorts by priority, then
level, then recency (the node's ``seq``): explicit priorities win, and among nodes of one
level the most recently changed or added is kept longest. Levels are a function of the
graph and the focus alone (a projection built from scratch ranks alike), recomputed for
every node when a focus is set where there was none (the index is built over every file
then); otherwise only for the files whose bucket can have moved: when the focus changes,
every file matching the old or the new focus (scored again in one pass,
:meth:`Bm25Index.score_all`) or whose graph part moved; for a changed node; for every
file matching the focus when a change moved a focus term's document frequency; and
(while a focus is set, the PageRank walked again at each change, seeded from a sorted
list kept in step with the changed files' scores) for every file whose graph or recency
part moved. A projection's scores (:meth:`Relevance.snapshot`) are made only when read,
from the levels and parts of its turn. The focus is the text of the
newest node that sets one (:meth:`~dagctx.nodes.base.Node.focus_text`: the session's
focus, a user message), except that a user message replaces a focus in effect only when
it names a file or directory of the layout (a term of a path that is not one of the
words that steer a conversation, :data:`CHAT_TERMS`: :meth:`Relevance.names`): the focus
is sticky, so a message such as "what next?" or "continue" neither re-levels
the files nor rewrites the workspace at the start of the prompt (which a provider's
prompt cache would otherwise miss), while ``Session.focus(text)`` always takes effect.
The nodes that set one are offered oldest first, so the focus is a function of the graph.
What was read of a file's content (its term counts and defined names, its definitions
and references) can come from before instead: a session file keeps it
(:meth:`Relevance.pack`) and a resumed session takes it back for each file that still
shows the content it was read from (:mod:`dagctx.projection.file_terms`), so a focused
resume reads and parses only the files that changed; the levels are the same.
Pure computation over nodes; must not import the session or anything that does I/O.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from heapq import nlargest, nsmallest

from dagctx._words import terms
from dagctx.nodes.base import Node
from dagctx.nodes.message import MessageNode
from dagctx.nodes.text import TextNode
from dagctx.outline.kinds import DOCS, FIXTURES, OTHER, SOURCE, TESTS, file_kind
from dagctx.outline.references import GraphBuild, ReferenceGraph, Source
from dagctx.projection.file_terms import FileTerms, Read, SavedReads, pack
from dagctx.projection.layout import Layout

K1, B = 1.2, 0.75
PATH_WEIGHT = 2.0
AVERAGE_LENGTH = 400  # terms: the length BM25 normalizes against (fixed, not the corpus's)
SYMBOL_WEIGHT = 2
SMALL_LINES = 400
TIERS = 20
BUCKET_STEPS = 16  # buckets per unit of combined score
BUCKETS = 24  # buckets 1..24 cover combined scores 0..1.44 (a step each 1/16)
FEW_LOOKUPS = 64  # ids of files looked up one by one in the layout; more: its dict
RELATED_BUCKET = 2  # files below this bucket are unrelated to the focus (left out first)
GRAPH_WEIGHT = 0.75  # how much the reference graph counts beside the lexical match
RECENT_WEIGHT = 0.3  # how much recent attention counts
SEED_FILES = 16  # the best lexical matches seed the PageRank
ATTENTION_FILES = 8  # the most recently changed or opened files seed it too
LATER_FILES = 2000  # above this many files a first focus reads the reference graph later
KEPT_POSTINGS = 256  # content terms whose postings the index keeps (Bm25Index.holding)

# A definition's name: a keyword at the start of a line, after the indent and modifiers
# (a Go method's receiver between ``func`` and the name), or after ``export const`` (an
# ES module's arrow functions and objects); or, on a line opening with Java's
# or C#'s access and storage modifiers, a method's name after its return type. _SYMBOL
# opens with the newline before the line (the text's first line: _FIRST_SYMBOL), so the
# regex engine looks for newlines instead of trying every position; the indent is matched
# possessively (what follows it never starts with a blank).
_MODIFIERS = "public|private|protected|internal|static|final|abstract|sealed|override"
_SYMBOL_REST = (
    r"[ \t]*+(?:"
    rf"(?:export[ \t]+)?(?:default[ \t]+)?(?:(?:{_MODIFIERS}|declare|const|unsafe)[ \t]+)*"
    r"(?:pub(?:\(\w+\))?[ \t]+)?(?:async[ \t]+)?(?:(?:const|unsafe)[ \t]+)?"
    r"(?:func[ \t]+\((?:\w+[ \t]+)?\*?\w+(?:\[[\w, ]*\])?\)[ \t]*|(?:def|class|function|fn"
    r"|func|struct|interface|enum|trait|impl|type|module|record)[ \t]+)"
    r"|export[ \t]+(?:declare[ \t]+)?(?:const|let|var)[ \t]+"
    rf"|(?:(?:{_MODIFIERS}|synchronized|native|virtual)[ \t]+)+"
    r"(?:<[^>\n]*>[ \t]+)?[\w.$<>\[\],?]+(?:<[^>\n]*>)?(?:\[\])*[ \t]+(?=\w+[ \t]*\()"
    r")(\w+)"
)
_SYMBOL = re.compile("\n" + _SYMBOL_REST)
_FIRST_SYMBOL = re.compile(_SYMBOL_REST)
#: How much a lexical match counts for each file kind (:func:`file_kind`).
KIND_WEIGHT = (0.55, 0.65, 0.75, 0.8, 1.0)
#: How much a lexical match counts for sample code (:func:`sample`: examples, benchmarks,
#: scripts, the docs' code), which shows how to use or build the project as its docs do.
SAMPLE_WEIGHT = KIND_WEIGHT[DOCS]
#: How much a lexical match counts for a changelog, whatever its kind.
CHANGELOG_WEIGHT = 0.3
_CHANGELOG = re.compile(
    r"(?:^|/)(?:changes|changelog|history|news|release[-_]?notes)(?:\.(?:md|rst|txt|adoc))?$",
    re.IGNORECASE,
)
#: Files about working on the project (its CI, issue and pull-request templates, how to
#: contribute): their lexical match counts as a changelog's.
_PROJECT_META = re.compile(
    r"(?:^|/)\.(?:github|gitlab|circleci)/"
    r"|(?:^|/)(?:contributing|code_of_conduct|security)(?:\.(?:md|rst|txt|adoc))?$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Score:
    """A node's level and its parts (``inherited``: a container's, from its best child):
    ``lexical`` (BM25, 0..1), ``graph`` (personalized PageRank over the reference graph,
    0..the best lexical score), ``recent`` (attention, 0 or 1), ``tier`` (the focus-free rank)."""

    level: int
    lexical: float = 0.0
    tier: int = 0
    inherited: bool = False
    graph: float = 0.0
    recent: float = 0.0

    @property
    def combined(self) -> float:
        """What the level's bucket is made of: lexical + weighted graph and recency."""
        return self.lexical + GRAPH_WEIGHT * self.graph + RECENT_WEIGHT * self.recent

    def describe(self) -> str:
        """``level 930 = (lexical 0.71 + graph 0.40×0.50 + recent 0.00×0.30) → bucket 46,
        tier 13``."""
        if self.inherited:
            return f"level {self.level} (best child)"
        return (
            f"level {self.level} = lexical {self.lexical:.2f} + graph {self.graph:.2f}"
            f"×{GRAPH_WEIGHT:g} + recent {self.recent:.2f}×{RECENT_WEIGHT:g}"
            f" (bucket {self.level // TIERS}) + tier {self.tier}"
        )


def bucket(combined: float) -> int:
    """The level bucket of a combined score: 0 for none, else 1.. in steps of
    1/:data:`BUCKET_STEPS`, at most :data:`BUCKETS`."""
    if combined <= 0:
        return 0
    return 1 + min(BUCKETS - 1, int(combined * BUCKET_STEPS))


def unrelated(level: int) -> bool:
    """Whether a file at ``level`` is unrelated to the focus: its combined score is in
    the lowest buckets (below :data:`RELATED_BUCKET`: no match, or only a trace of the
    reference graph)."""
    return level < RELATED_BUCKET * TIERS


def peripheral(level: int) -> bool:
    """Whether a file at ``level`` while no focus is set is outside the project's own
    code and manifests (:func:`prior` ranks it below :data:`MANIFEST_RANK`: docs,
    samples, other files, tests, fixtures): left out before the project's code is
    degraded, as an unrelated file is with a focus. A file's prior moves with its length
    only above this rank, so this follows its path alone."""
    return level < MANIFEST_RANK


def tier(path: str, lines: int) -> int:
    """The rank of a file at ``path`` with ``lines`` lines among the files of its bucket
    while a focus is set (0..19, higher is kept longer): its kind (sample code,
    :func:`sample`, as docs: below the project's own code, as its match counts), then
    shallow, then small (without a focus: :func:`prior`)."""
    kind = DOCS if sample(path) else file_kind(path)
    shallow = 2 if path.count("/") <= 1 else 0
    small = 1 if lines <= SMALL_LINES else 0
    return kind * 4 + shallow + small


#: Files that say what a project is and what it depends on: shown early when there is
#: no focus (:func:`prior`).
MANIFESTS = frozenset(
    {"pyproject.toml", "setup.cfg", "package.json", "go.mod", "cargo.toml", "gemfile",
     "composer.json", "pom.xml", "build.gradle", "build.gradle.kts", "cmakelists.txt",
     "makefile", "mix.exs", "deno.json", "tsconfig.json"}
)  # fmt: skip
#: Directories whose code shows how to use or build the project rather than being it.
SAMPLE_DIRS = frozenset(
    {"examples", "example", "samples", "sample", "demo", "demos", "docs", "doc",
     "benchmarks", "bench", "scripts", ".github", ".devcontainer"}
)  # fmt: skip
#: Directories that hold the project's tooling at its root but its own code inside a
#: package (``dagctx/tools/``, ``django/contrib/``): samples only as a first directory.
ROOT_SAMPLE_DIRS = frozenset({"tools", "contrib", "misc", "hack"})
MANIFEST_RANK = 10  # prior's rank of a manifest: its own code ranks above, the rest below
_README = re.compile(r"readme(?:\.(?:md|rst|txt|adoc|markdown))?", re.IGNORECASE)


def prior(path: str, lines: int) -> int:
    """The rank of a file at ``path`` with ``lines`` lines when there is no focus (0..19,
    higher is kept longer): what a newcomer to the project reads first. The README at
    the root; then the project's own code (not tests or fixtures, not under
    :data:`SAMPLE_DIRS` nor under a first directory of :data:`ROOT_SAMPLE_DIRS`),
    shallow before deep (a leading ``src/`` does not count), then longer before shorter
    (the modules a project is built around are its longest: the most depended on and
    the most often changed; an outline's length is capped, so a long file costs no more
    to show than a short one); then the manifests at most one
    directory deep, the docs, sample code, other files, changelogs, tests, whatever
    else the sample directories hold, and fixtures or lockfiles."""
    if "/" not in path and _README.fullmatch(path):
        return 19
    parts = path.casefold().split("/")
    kind = file_kind(path)
    dirs = parts[:-1]
    sample = _sample(dirs)
    if kind == SOURCE:
        if sample:
            return 7
        depth = len(dirs) - (dirs[:1] == ["src"])
        size = 3 if lines >= 1000 else 2 if lines >= 300 else 1 if lines >= 80 else 0
        return (15 if depth <= 1 else 11) + size
    if kind in (DOCS, OTHER) and _CHANGELOG.search(path):
        return 5
    if parts[-1] in MANIFESTS and len(parts) <= 2:
        return MANIFEST_RANK
    if kind == DOCS and (not sample or dirs[0] in ("docs", "doc")):
        return 9 if len(parts) <= 2 else 8
    if kind == OTHER and not sample:
        return 6 if len(parts) <= 2 else 5
    if kind == TESTS:
        return 4 if lines <= SMALL_LINES else 3
    return 2 if kind != FIXTURES else 0


def _sample(dirs: list[str]) -> bool:
    """Whether a file in the (case-folded) directories ``dirs`` is a sample of the
    project rather than the project: under one of :data:`SAMPLE_DIRS`, or under a first
    directory of :data:`ROOT_SAMPLE_DIRS`."""
    return not SAMPLE_DIRS.isdisjoint(dirs) or (bool(dirs) and dirs[0] in ROOT_SAMPLE_DIRS)


def sample(path: str) -> bool:
    """Whether the file at ``path`` is sample code: source (:func:`file_kind`) under one
    of :data:`SAMPLE_DIRS` (``examples/``, ``benchmarks/``, ``scripts/``, ``docs/`` …) or
    under a first directory of :data:`ROOT_SAMPLE_DIRS`."""
    return file_kind(path) == SOURCE and _sample(path.casefold().split("/")[:-1])


def match_weight(path: str) -> float:
    """How much a lexical match counts for the file at ``path``: its kind's
    :data:`KIND_WEIGHT`; :data:`SAMPLE_WEIGHT` for sample code (:func:`sample`), which
    shows how to use the project rather than being it, so a task's words that match an
    example as well as the module it calls rank the module first; or
    :data:`CHANGELOG_WEIGHT` for a changelog (``CHANGES``,
    ``CHANGELOG.md``, ``HISTORY.rst``, ``NEWS``, ``RELEASE_NOTES.md`` …) and for a file
    about working on the project (under ``.github/``, ``.gitlab/``, ``.circleci/``;
    ``CONTRIBUTING``, ``CODE_OF_CONDUCT``, ``SECURITY``)."""
    if _CHANGELOG.search(path) or _PROJECT_META.search(path):
        return CHANGELOG_WEIGHT
    if sample(path):
        return SAMPLE_WEIGHT
    return KIND_WEIGHT[file_kind(path)]


#: The terms of words that steer a conversation rather than name what it is about ("ok,
#: what next?", "thanks, go ahead", "yes, continue"): in a user message they name no file,
#: even one whose path has them (flask's docs/tutorial/next.rst), so such a message
#: leaves the focus in effect (:meth:`Relevance.names`). The message's other words still
#: count: "fix next.rst" names that file by its extension.
CHAT_TERMS = frozenset(
    terms(
        "ok okay next continue go ahead proceed carry on keep going thanks thank you yes no"
        " sure fine good great nice done now then again please let us"
    )
)


#: Marks a file-name term of a code or test file (:func:`name_terms`), which no word of
#: content ever is.
NAME_MARK = "="
#: Marks a file-name term of any other file (docs, data, configuration), which only a word
#: written as code names (:func:`name_terms`).
CODE_NAME_MARK = "`"
_NAME_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
# A word as code writes it: with an underscore or an inner capital (``replace_bytes``,
# ``_client``, ``nullSafe``, ``ShouldBindJSON``), or in backticks, or called or dotted.
_CODE_WORD = re.compile(
    r"`\s*([A-Za-z_$][\w$]*)\s*(?:\(\))?`"
    r"|(?<![\w$])([A-Za-z$]*_[\w$]*|[A-Za-z$][\w$]*[a-z0-9][A-Z][\w$]*)"
    r"|(?<=\.)([A-Za-z_$][\w$]*)|([A-Za-z_$][\w$]*)(?=\()"
)


def name_terms(text: str) -> list[str]:
    """The words of ``text`` (of four characters or more) whole and case-folded, each as
    a file-name term of a code or test file (:data:`NAME_MARK`), and a word written as
    code (:data:`_CODE_WORD`: ``TypeAdapters``, ``_client``, in backticks) also as one of
    any other file (:data:`CODE_NAME_MARK`): a focus that writes a file's name as its
    code does names that file, where the split and stemmed terms (type, adapter) match
    every file about type adapters alike; a plain word (http2, node) names no page of
    the docs."""
    code = {w.casefold() for match in _CODE_WORD.finditer(text) for w in match.groups() if w}
    found = []
    for word in _NAME_WORD.findall(text):
        name = word.casefold()
        found.append(NAME_MARK + name)
        if name in code:
            found.append(CODE_NAME_MARK + name)
    return found


def path_terms(path: str) -> frozenset[str]:
    """The terms of a path's components, and the file's name less its extensions as a
    file-name term (:func:`name_terms`): ``=typeadapters`` for ``TypeAdapters.java``,
    ``=_client`` for ``_client.py``, ``=node`` for the test ``spec/node.js``, but
    ``http2`` marked with :data:`CODE_NAME_MARK` for ``docs/http2.md``."""
    stem = path.rpartition("/")[2].partition(".")[0].casefold()
    found = terms(path.replace("/", " ").replace(".", " "))
    if len(stem) < 4:
        return frozenset(found)
    mark = NAME_MARK if file_kind(path) in (SOURCE, TESTS) else CODE_NAME_MARK
    return frozenset([*found, mark + stem])


#: Marks a defined-name term (:func:`code_terms`), which no word of content ever is.
DEFINED_MARK = "&"
_NAMING_MARKS = (NAME_MARK, CODE_NAME_MARK, DEFINED_MARK)
_NONE: frozenset[str] = frozenset()


def code_terms(text: str) -> list[str]:
    """The words of ``text`` written as code (:data:`_CODE_WORD`) of four characters or
    more besides underscores, whole and case-folded, each as a defined-name term: a focus
    that names ``replace_bytes`` or ``TypeAdapter.nullSafe()`` points at the files that
    define those names (:func:`defines`), where the split and stemmed terms (replace,
    byte) match every file that replaces bytes alike. A plain word ("node", "render") is
    no such term."""
    found = []
    for match in _CODE_WORD.finditer(text):
        word = next(w for w in match.groups() if w is not None)
        if len(word.strip("_$")) >= 4:
            found.append(DEFINED_MARK + word.casefold())
    return found


def defined_list(names: list[str]) -> str:
    """The defined ``names`` (:func:`defined_names`) case-folded, one per line between
    newlines, for :func:`defines` to look a name up in."""
    return "\n" + "\n".join(names).casefold() + "\n" if names else ""


def defines(defined: str, term: str) -> bool:
    """Whether the :func:`defined_list` ``defined`` holds the name of defined-name term
    ``term`` (:func:`code_terms`)."""
    return f"\n{term[1:]}\n" in defined


def defined_names(content: str) -> list[str]:
    """The names ``content`` defines, in order: the word after a definition keyword
    (``def``, ``class``, ``function``, ``fn``, ``func``, ``struct``, ``record``, …; after
    ``export``, ``default``, ``pub``, ``async``, access modifiers such as ``public`` or
    ``static``; after a Go method's receiver, ``func (c *Context) JSON``) that opens a line,
    indent aside; the name an ES module exports as a constant (``export const cors =``); and
    a Java or C# method's name on a line that opens with such modifiers (``public static
    <T> T fromJson(``)."""
    first = _FIRST_SYMBOL.match(content)
    names = _SYMBOL.findall(content)
    if first is not None:
        names.insert(0, first.group(1))
    return names


def document_terms(content: str, names: list[str]) -> Counter[str]:
    """The weighted term counts of a text file's ``content``, whose definitions are
    ``names`` (:func:`defined_names`; they count :data:`SYMBOL_WEIGHT` times more)."""
    counts = Counter(terms(content))
    for term in terms(" ".join(names)):  # names are word runs: alike
        counts[term] += SYMBOL_WEIGHT
    return counts


class Bm25Index:
    """BM25 statistics of the text files (content and path apart), updated one file at
    a time.

    The files holding a content term (its postings), each with the term's saturated
    frequency in it (:func:`_saturated`, what its BM25 multiplies the term's weight by),
    are gathered the first time a query asks for that term, by one pass over the files,
    and kept up to date from then on: a focus asks for a few terms, so building the
    index does not pay for the postings of every term of every file, and scoring every
    file for a focus is a multiply-add per posting (:meth:`score_all`). At most
    :data:`KEPT_POSTINGS` terms are kept so; the files defining a name a query asks for
    (:meth:`named`) likewise.
    """

    __slots__ = (
        "defined",
        "definers",
        "docs",
        "match",
        "norm",
        "path_of",
        "path_postings",
        "postings",
        "saturated",
    )

    def __init__(self) -> None:
        #: node id → (version, term counts (packed when taken back), length, path terms)
        self.docs: dict[str, tuple[int, Counter[str] | FileTerms, int, frozenset[str]]] = {}
        self.norm: dict[str, float] = {}  # node id → its length normalization
        self.match: dict[str, float] = {}  # node id → how much its match counts (match_weight)
        #: content term → the files holding it, for the terms a query asked for
        self.postings: dict[str, set[str]] = {}
        #: the same terms → each file holding it → the term's saturated frequency in it
        self.saturated: dict[str, dict[str, float]] = {}
        self.path_postings: dict[str, set[str]] = {}
        self.path_of: dict[str, str] = {}
        self.defined: dict[str, str] = {}  # node id → the names it defines (defined_list)
        #: defined-name term → the files defining it, for the terms a query asked for
        self.definers: dict[str, set[str]] = {}

    def update(self, node: TextNode, read: FileTerms | None = None) -> None:
        """Index ``node`` at its version (nothing to do when it is indexed at it), from
        ``read`` when given (what was read of its content before), else from its
        content."""
        old = self.docs.get(node.id)
        if old is not None and old[0] == node.version:
            return
        self.remove(node.id)
        counts: Counter[str] | FileTerms
        if read is None:
            content = node.content
            names = defined_names(content)
            counts = document_terms(content, names)
            length, defined = sum(counts.values()), defined_list(names)
        else:
            counts, length, defined = read, read.length, read.defined
        in_path = path_terms(node.path)
        self.docs[node.id] = (node.version, counts, length, in_path)
        self.defined[node.id] = defined
        self.norm[node.id] = norm = K1 * (1 - B + B * length / AVERAGE_LENGTH)
        self.match[node.id] = match_weight(node.path)
        self.path_of[node.id] = node.path
        for term, ids in self.postings.items():
            tf = counts.get(term, 0)
            if tf:
                ids.add(node.id)
                self.saturated[term][node.id] = _saturated(tf, norm)
        for term in in_path:
            self.path_postings.setdefault(term, set()).add(node.id)
        for term, ids in self.definers.items():
            if defines(defined, term):
                ids.add(node.id)

    def remove(self, node_id: str) -> None:
        """Forget ``node_id`` (nothing if it is not indexed)."""
        old = self.docs.pop(node_id, None)
        if old is None:
            return
        del self.path_of[node_id], self.norm[node_id], self.match[node_id]
        defined = self.defined.pop(node_id)
        for term, ids in self.definers.items():
            if defines(defined, term):
                ids.discard(node_id)
        for term, ids in self.postings.items():
            if term in old[1]:
                ids.discard(node_id)
                del self.saturated[term][node_id]
        for term in old[3]:
            ids = self.path_postings[term]
            ids.discard(node_id)
            if not ids:
                del self.path_postings[term]

    def holding(self, term: str) -> set[str]:
        """The files whose content holds ``term`` (gathered on the first ask)."""
        ids = self.postings.get(term)
        if ids is None:
            if len(self.postings) >= KEPT_POSTINGS:  # gathered again when asked again
                self.postings.clear()
                self.saturated.clear()
            norm = self.norm
            held: dict[str, float] = {}
            if not term.startswith(_NAMING_MARKS):  # such a term is in no content: no pass
                for nid, doc in self.docs.items():
                    tf = doc[1].get(term, 0)  # one look-up, in a Counter or a FileTerms
                    if tf:
                        held[nid] = _saturated(tf, norm[nid])
            self.saturated[term] = held
            ids = self.postings[term] = set(held)
        return ids

    def named(self, term: str) -> Set[str]:
        """The files whose path holds ``term``, or for a defined-name term
        (:func:`code_terms`) the files defining that name (gathered on the first ask)."""
        if not term.startswith(DEFINED_MARK):
            return self.path_postings.get(term, _NONE)
        ids = self.definers.get(term)
        if ids is None:
            if len(self.definers) >= KEPT_POSTINGS:  # gathered again when asked again
                self.definers.clear()
            needle = f"\n{term[1:]}\n"
            ids = self.definers[term] = {
                nid for nid, defined in self.defined.items() if needle in defined
            }
        return ids

    def weights(self, query: Iterable[str]) -> dict[str, tuple[float, float]]:
        """Each distinct term of ``query`` → (its inverse document frequency among the
        files' content, among their paths or definitions: :meth:`named`), times its
        count in the query; 0 where no file holds the term, so a focus word the tree
        does not have adds nothing to the most a file can score (:meth:`score`)."""
        n = len(self.docs)
        return {
            term: (
                qtf * _idf(n, len(self.holding(term))),
                qtf * _idf(n, len(self.named(term))),
            )
            for term, qtf in Counter(query).items()
        }

    def score(self, node_id: str, weights: dict[str, tuple[float, float]]) -> float:
        """The file's BM25 for the query of ``weights`` over its content (length
        normalized against :data:`AVERAGE_LENGTH`), plus :data:`PATH_WEIGHT` × the path
        weight of each query term in its path or among the names it defines (a
        defined-name term, :func:`code_terms`), divided by the most any file can score:
        0..1, and a function of this file and the query's weights alone."""
        doc = self.docs.get(node_id)
        if doc is None or not weights:
            return 0.0
        _, counts, _, in_path = doc
        defined = self.defined[node_id]
        norm_len = self.norm[node_id]
        got = best = 0.0
        for term, (w_content, w_path) in weights.items():
            tf = counts.get(term, 0)
            if tf:
                got += w_content * _saturated(tf, norm_len)
            if term in in_path or (term[:1] == DEFINED_MARK and defines(defined, term)):
                got += PATH_WEIGHT * w_path
            best += w_content * (K1 + 1) + PATH_WEIGHT * w_path
        return got / best if best > 0 else 0.0

    def score_all(self, weights: dict[str, tuple[float, float]]) -> dict[str, float]:
        """:meth:`score` times the file's :func:`match_weight`, of every file that
        holds a term of the query of ``weights`` and scores above 0: the same floats as
        :meth:`score` (each file's parts added in the same order), made a term at a
        time over its postings."""
        if not weights:
            return {}
        k1 = K1 + 1
        best = 0.0
        for w_content, w_path in weights.values():
            best += w_content * k1 + PATH_WEIGHT * w_path
        if best <= 0:
            return {}
        got: dict[str, float] = {}
        get = got.get
        for term, (w_content, w_path) in weights.items():
            self.holding(term)
            postings = self.saturated[term]
            if got:
                for nid, saturated in postings.items():
                    got[nid] = get(nid, 0.0) + w_content * saturated
            else:  # the first term's parts: 0.0 + x is x
                got = {nid: w_content * saturated for nid, saturated in postings.items()}
                get = got.get
            path_weight = PATH_WEIGHT * w_path
            for nid in self.named(term):
                got[nid] = get(nid, 0.0) + path_weight
        match = self.match
        return {nid: v for nid, value in got.items() if (v := value / best * match[nid]) > 0}

    def matching(self, query: Iterable[str]) -> set[str]:
        """Ids of the files whose content or path holds a term of ``query``."""
        out: set[str] = set()
        for term in set(query):
            out.update(self.holding(term))
            out.update(self.named(term))
        return out


def _source(node: TextNode, read: FileTerms | None) -> Source:
    """What a :class:`GraphBuild` reads ``node`` from: its definitions and references
    as read before, when ``read`` has them (decoded in the worker), else its content."""
    if read is not None and read.defs is not None:
        return read.graph_names
    return node.content


def _saturated(tf: int, norm: float) -> float:
    """BM25's saturated frequency of a term held ``tf`` times by a file of length
    normalization ``norm``: what the term's weight is multiplied by for that file."""
    return tf * (K1 + 1) / (tf + norm)


def _idf(n: int, df: int) -> float:
    """BM25's inverse document frequency of a term held by ``df`` of ``n`` files; 0 for a
    term no file holds (it can match nothing, so it weighs nothing)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else 0.0


class Relevance:
    """The focus, the BM25 index and the levels of one projector (module docstring).

    Attributes:
        focus: the focus text in effect (None: no focus).
    """

    __slots__ = (
        "_attended",
        "_carrier",
        "_graph",
        "_index",
        "_inherited",
        "_layout",
        "_lexical",
        "_named",
        "_paths",
        "_pending",
        "_query",
        "_ranked",
        "_recent",
        "_refs",
        "_rescored_all",
        "_saved",
        "_tiers",
        "_weights",
        "focus",
    )

    def __init__(self, saved: SavedReads | None = None) -> None:
        self.focus: str | None = None
        #: what was read of each file's content before (taken back from a session file:
        #: :mod:`dagctx.projection.file_terms`), used while the node shows that content
        self._saved = SavedReads() if saved is None else saved
        self._index: Bm25Index | None = None
        self._refs: ReferenceGraph | None = None
        self._pending: GraphBuild | None = None  # the reference graph, read later
        self._attended: dict[str, int] = {}  # text node id → seq, for those changed since added
        # The parts of the scores: replaced, never changed in place (snapshots hold them).
        self._lexical: dict[str, float] = {}
        self._graph: dict[str, float] = {}
        self._recent: dict[str, float] = {}
        # (-lexical, id) of every match, sorted: the seeds of a turn that rescored only
        # the changed files (None: not built since the last full scoring)
        self._ranked: list[tuple[float, str]] | None = None
        self._weights: dict[str, tuple[float, float]] = {}  # the query's, at the last scoring
        self._query: tuple[str | None, frozenset[str]] = (None, frozenset())  # focus, terms
        self._rescored_all = True  # whether the last scoring scored every file
        # node id → version * TIERS + tier: an int below 256 (no object of its own) while
        # the version is below 12, where a (version, tier) tuple costs 64 bytes per file
        self._tiers: dict[str, int] = {}
        self._inherited = bytearray()  # per entry: 1 where the level is a child's
        self._carrier = -1  # seq of the node that set the focus in effect
        # the words of the paths of the layout's files: term → files (names()), counted
        # over _paths, and the layout to count them over when next asked (None: counted)
        self._named: Counter[str] = Counter()
        self._paths: set[str] = set()
        self._layout: Layout | None = None

    # -- the focus ----------------------------------------------------------------------

    def offer_focus(self, node: Node) -> None:
        """Take ``node``'s focus if it sets one, is at least as new as the node that set
        the focus in effect and, for a user message while a focus is in effect, names a
        file or directory of the layout (:meth:`names`); levels follow at the next
        :meth:`level_all` or :meth:`refocus`."""
        text = node.focus_text()
        if text is None or node.seq < self._carrier:
            return
        if isinstance(node, MessageNode) and self.focus is not None and not self.names(text):
            return
        self._carrier = node.seq
        self.focus = text.strip() or None

    def find_focus(self, layout: Layout, hidden: Iterable[Node]) -> None:
        """Take the focus of the nodes of ``layout`` (and ``hidden``) that set one, offered
        oldest first (:meth:`offer_focus`; none: no focus)."""
        self._carrier, self.focus, self._layout = -1, None, layout
        nodes, ref = layout.nodes, layout.ref
        carriers = [n for i, n in enumerate(nodes) if not ref[i] and n.focus_text() is not None]
        carriers.extend(n for n in hidden if n.focus_text() is not None)
        for node in sorted(carriers, key=lambda n: n.seq):
            self.offer_focus(node)

    def names(self, text: str) -> bool:
        """Whether ``text`` names a file or directory of the layout: one of its terms,
        other than :data:`CHAT_TERMS`, is a term of a file's path (:func:`path_terms`: a
        file's name or stem, a directory's; numbers alone name nothing). The words of
        the paths are counted when first asked after :meth:`find_focus`, over the paths
        added and removed since they were last counted."""
        layout = self._layout
        if layout is not None:
            self._layout = None
            nodes, ref = layout.nodes, layout.ref
            paths = {n.path for i, n in enumerate(nodes) if not ref[i] and isinstance(n, TextNode)}
            named, old = self._named, self._paths
            for path, step in [*((p, 1) for p in paths - old), *((p, -1) for p in old - paths)]:
                for term in path_terms(path):
                    if not term.isdigit():
                        named[term] += step
                        if not named[term]:
                            del named[term]
            self._paths = paths
        return any(term in self._named for term in terms(text) if term not in CHAT_TERMS)

    def mentions(self, node_id: str) -> bool:
        """Whether the content of the text file ``node_id`` holds a term of the focus, as
        the BM25 index read it (at the version the levels are for): False without a
        focus, True for a file the index does not hold."""
        focus = self.focus
        if focus is None:
            return False
        doc = self._index.docs.get(node_id) if self._index is not None else None
        if doc is None:
            return True
        if self._query[0] != focus:
            self._query = (focus, frozenset(terms(focus)))
        counts = doc[1]
        return any(term in counts for term in self._query[1])

    # -- levels -------------------------------------------------------------------------

    def _lexical_scores(
        self, layout: Layout, changed: Iterable[int] | None, *, rescore: bool = False
    ) -> dict[str, float]:
        """Lexical scores of the files: the index synced with every text entry of
        ``layout`` and all scored (``changed`` None), or with the ``changed`` entries only
        and those scored again — all of them when a query term's weight moved, or with
        ``rescore``."""
        if self.focus is None:
            self._index = self._refs = self._pending = None  # not kept without a focus
            self._attended = {}
            self._ranked = None
            return {}
        index = self._index
        nodes, ref = layout.nodes, layout.ref
        query = [*terms(self.focus), *name_terms(self.focus), *code_terms(self.focus)]
        if index is None or changed is None:
            index = self._index = index or Bm25Index()
            texts = [n for i, n in enumerate(nodes) if not ref[i] and isinstance(n, TextNode)]
            if self._refs is None and self._pending is not None:
                self._refs, self._pending = self._pending.result(), None
            reads: list[FileTerms | None] | None = None  # (None: looked up where needed)
            if self._refs is None and len(texts) > LATER_FILES:
                reads = list(map(self._read_before, texts))
                self._pending = GraphBuild(
                    [
                        (n.id, n.version, n.path, _source(n, read))
                        for n, read in zip(texts, reads, strict=True)
                    ]
                )
            elif self._refs is None:
                self._refs = ReferenceGraph()
            refs = self._refs
            self._attended = {}
            present = set()
            for k, node in enumerate(texts):
                read = reads[k] if reads is not None else self._needed_read(index, refs, node)
                index.update(node, read)
                self._sync(refs, node, read)
                present.add(node.id)
            for nid in [nid for nid in index.docs if nid not in present]:
                index.remove(nid)
            if refs is not None:
                for nid in [nid for nid in refs if nid not in present]:
                    refs.remove(nid)
            return self._score_all(index, query)
        self._rescored_all = False
        ids = []
        for i in changed:
            text = nodes[i]
            if isinstance(text, TextNode):
                read = self._read_before(text)
                index.update(text, read)
                self._sync(self._refs, text, read, outlined=True)
                ids.append(text.id)
        weights = index.weights(query)
        if rescore or weights != self._weights:
            return self._score_all(index, query)
        old = self._lexical
        ranked = self._ranked
        if ranked is None and ids:  # built once per full scoring, then kept in step
            ranked = self._ranked = sorted((-value, nid) for nid, value in old.items())
        lexical = dict(old)
        for nid in ids:
            value = self._kind_scaled(index, nid, weights)
            before = old.get(nid, 0.0)
            if value == before:
                continue
            if ranked is not None:
                if before > 0:
                    del ranked[bisect_left(ranked, (-before, nid))]
                if value > 0:
                    insort(ranked, (-value, nid))
            if value > 0:
                lexical[nid] = value
            else:
                lexical.pop(nid, None)
        return lexical

    def _needed_read(
        self, index: Bm25Index, refs: ReferenceGraph | None, node: TextNode
    ) -> FileTerms | None:
        """:meth:`_read_before` of ``node``, unless the index and the reference graph (if
        one is kept now) hold it at its version already (no digest made then)."""
        doc = index.docs.get(node.id)
        held = doc is not None and doc[0] == node.version
        if held and (refs is None or refs.holds(node.id, node.version)):
            return None
        return self._read_before(node)

    def _read_before(self, node: TextNode) -> FileTerms | None:
        """What was read of ``node``'s content before (taken back from a session file),
        if it still shows that content; an entry for other content is dropped."""
        entries = self._saved.entries()
        read = entries.get(node.id)
        if read is None or read.fits(node.content_digest()):
            return read
        del entries[node.id]
        return None

    def _sync(
        self,
        refs: ReferenceGraph | None,
        node: TextNode,
        read: FileTerms | None = None,
        *,
        outlined: bool = False,
    ) -> None:
        """Hold ``node`` in the reference graph (when one is kept now) at its version, and
        note whether it changed since it was added (edited, or its state set: the model
        opened it). Its definitions and references come from ``read`` when it has them
        (what was read of its content before), else from its content; with ``outlined``
        (a changed file, whose outline the projection makes too: its summary, its cuts)
        its definitions are read from its outline (:meth:`TextNode.defined_names`),
        parsed once for all three."""
        if refs is not None and not refs.holds(node.id, node.version):
            names = None if read is None else read.names()
            if names is not None:
                refs.hold(node.id, node.version, *names)
            else:
                named = node.defined_names if outlined else None
                refs.update(node.id, node.version, node.path, node.content, named)
        if node.version > 0:
            self._attended[node.id] = node.seq
        else:
            self._attended.pop(node.id, None)

    def pack(self, files: Sequence[tuple[TextNode, bytes]], made_by: str) -> str:
        """What a session file keeps of what the ranking read of the content of each of
        ``files`` (a node, the digest of the content it shows): :func:`~dagctx.projection.
        file_terms.pack` of :meth:`reads`, ``made_by`` naming this code. What it wrote is
        held from then on as read before, so that a next save writes it as it is."""
        reads = self.reads([node for node, _ in files])
        listed = zip(files, reads, strict=True)
        text, written = pack([(node.id, digest, read) for (node, digest), read in listed], made_by)
        self._saved.keep(written)
        return text

    def reads(self, nodes: Iterable[TextNode]) -> list[Read | None]:
        """What was read of each of ``nodes``' content for the ranking, where it is known
        for the content the node shows now (at its version; or taken back and still
        fitting), else None: what a session file keeps of them (:meth:`pack`). A
        reference graph being read in a worker thread is waited for."""
        index = self._index
        docs = {} if index is None else index.docs
        refs = self._refs
        if refs is None and self._pending is not None:
            refs = self._pending.result()
        found: list[Read | None] = []
        for node in nodes:
            doc = docs.get(node.id)
            names = None if refs is None else refs.names(node.id, node.version)
            if doc is not None and doc[0] == node.version:
                assert index is not None
                counts = doc[1]
                if not isinstance(counts, FileTerms):  # as a save wrote it, if it did
                    counts = self._read_before(node) or counts
                found.append(Read(counts, doc[2], index.defined[node.id], names))
                continue
            read = self._read_before(node)  # (its own names, if the graph has none)
            found.append(None if read is None else Read(read, read.length, read.defined, names))
        return found

    @property
    def later(self) -> bool:
        """Whether the reference graph is being read for a later projection (a focus was
        set over more than :data:`LATER_FILES` files): the levels leave its part out
        until :meth:`level_all` takes it."""
        return self._pending is not None

    def read_later(self) -> None:
        """Start reading the reference graph in a worker thread, when it is to be read
        later (call once the projection that left it out is made)."""
        if self._pending is not None:
            self._pending.start()

    def _context_scores(self) -> None:
        """The graph and recency parts: personalized PageRank over the reference graph
        seeded by the :data:`SEED_FILES` best lexical matches (by their score) and the
        :data:`ATTENTION_FILES` most recently changed files (each weighing the best
        lexical score; their recency 1), counting only walks that leave their seed,
        scaled so the highest is the best lexical score (1 without one)."""
        self._graph, self._recent = {}, {}
        if self._index is None:
            return
        if self._ranked is not None:
            best = [(nid, -negative) for negative, nid in self._ranked[:SEED_FILES]]
        else:
            best = _best(self._lexical, SEED_FILES)
        seeds = dict(best)
        top = best[0][1] if best else 1.0
        recent = self._recent
        for nid, _ in nsmallest(ATTENTION_FILES, self._attended.items(), key=_best_first):
            recent[nid] = 1.0
            seeds[nid] = seeds.get(nid, 0.0) + top
        if self._refs is None:  # read later (the recency part stands)
            return
        ranked = self._refs.rank(seeds, walked_only=True)
        high = max(ranked.values(), default=0.0)
        if high > 0:
            scale = top / high
            self._graph = {nid: value * scale for nid, value in ranked.items() if value > 0}

    def _score_all(self, index: Bm25Index, query: list[str]) -> dict[str, float]:
        self._rescored_all = True
        self._ranked = None
        weights = self._weights = index.weights(query)
        return index.score_all(weights)

    @staticmethod
    def _kind_scaled(index: Bm25Index, nid: str, weights: dict[str, tuple[float, float]]) -> float:
        # a test or a fixture matches less than source
        return index.score(nid, weights) * index.match[nid]

    def _own(self, node: Node) -> int:
        """The level of ``node`` by its own score (a container's children aside)."""
        if not isinstance(node, TextNode):
            return 0
        nid = node.id
        combined = (
            self._lexical.get(nid, 0.0)
            + GRAPH_WEIGHT * self._graph.get(nid, 0.0)
            + RECENT_WEIGHT * self._recent.get(nid, 0.0)
        )
        return bucket(combined) * TIERS + self._tier(node)

    def _tier(self, node: TextNode) -> int:
        """A file's rank within its bucket: :func:`tier` with a focus, :func:`prior`
        without; kept per node version and focus state."""
        key, t = divmod(self._tiers.get(node.id, -1), TIERS)
        focused = self.focus is not None
        if key != node.version * 2 + focused:
            rank = tier if focused else prior
            t = rank(node.path, node.cuttable_lines())
            self._tiers[node.id] = (node.version * 2 + focused) * TIERS + t
        return t

    def level_all(self, layout: Layout) -> None:
        """Level every entry of ``layout`` (``layout.level``)."""
        self._lexical = self._lexical_scores(layout, None)
        self._context_scores()
        nodes, ref, parent = layout.nodes, layout.ref, layout.parent
        level = layout.level
        inherited = self._inherited = bytearray(len(nodes))
        if self._lexical or self._graph or self._recent:
            for i, node in enumerate(nodes):
                if not ref[i]:
                    level[i] = self._own(node)
        else:  # no score (no focus): a file's level is its rank (_own: bucket 0)
            for i, node in enumerate(nodes):
                if not ref[i]:
                    level[i] = self._tier(node) if isinstance(node, TextNode) else 0
        for i in range(len(nodes) - 1, -1, -1):  # children come after their parent
            p = parent[i]
            if p >= 0 and not ref[i] and level[i] > level[p]:
                level[p] = level[i]
                inherited[p] = 1

    def relevel(self, layout: Layout, changed: list[int]) -> list[int]:
        """Level again after the nodes at entries ``changed`` changed: those, and while a
        focus is set every file whose lexical score moved, and their containers. Returns
        the entries whose level changed."""
        old = (self._lexical, self._graph, self._recent)
        self._lexical = self._lexical_scores(layout, changed)
        if self.focus is not None:
            self._context_scores()
        else:
            self._graph, self._recent = {}, {}
        return self._settle(layout, *self._moved_parts(layout, old, changed))

    def refocus(self, layout: Layout, changed: list[int]) -> list[int] | None:
        """Level again after the focus changed (and the nodes at entries ``changed``):
        every file whose score moved, and their containers — what :meth:`level_all`
        would give. Returns the entries whose level changed, or None when every level
        must be found again (a focus set where none was: the index is built over every
        file first; the focus cleared: each file's rank is its :func:`prior` again):
        then call :meth:`level_all`."""
        if (self.focus is None) != (self._index is None):  # the index lives with a focus
            return None
        old = (self._lexical, self._graph, self._recent)
        self._lexical = self._lexical_scores(layout, changed, rescore=True)
        if self.focus is not None:
            self._context_scores()
        else:
            self._graph, self._recent = {}, {}
        return self._settle(layout, *self._moved_parts(layout, old, changed))

    def _moved_parts(
        self, layout: Layout, old: tuple[dict[str, float], ...], changed: list[int]
    ) -> tuple[dict[int, int], list[int]]:
        """``changed`` and the entries of the files whose score parts differ from
        ``old`` (the lexical ones only when every file was scored again) so much that
        their bucket moved (the tier of a file not changed stays), each → its own new
        level where that is known from its bucket and kept tier (-1: to be found,
        :meth:`_own`; a container's from its children); and the files given their new
        level already. When every file was scored again, a file with a lexical part
        alone (most) gets its level from that part in one pass over the new scores
        (:meth:`_lexical_buckets`, which sets it)."""
        first, level, end = layout.first, layout.level, layout.end
        lexical, graph, recent = new = (self._lexical, self._graph, self._recent)
        moved: set[str] = set()  # the files of the context parts that moved (few)
        for before, after in zip(old[1:], new[1:], strict=True):
            if before is after:
                continue
            get = before.get
            moved.update([nid for nid, value in after.items() if get(nid) != value])
            moved.update([nid for nid in before if nid not in after])
        context = graph.keys() | recent.keys()  # few: most files have a lexical part alone
        todo: dict[int, int] = dict.fromkeys(changed, -1)  # found again whatever their parts
        done: list[int] = []
        if self._rescored_all and old[0] is not lexical:  # every file scored again
            done = self._lexical_buckets(layout, old[0], context, todo)
            moved.update(context)  # a file with a context part: as below
        lexical_of, graph_of, recent_of = lexical.get, graph.get, recent.get
        for nid in moved:
            i = first.index(nid)
            if i < 0 or i in todo:
                continue
            combined = lexical_of(nid, 0.0)  # + 0.0 twice (no context part) is the same
            if nid in context:  # the same sum as _own's, term by term
                combined = (
                    combined
                    + GRAPH_WEIGHT * graph_of(nid, 0.0)
                    + RECENT_WEIGHT * recent_of(nid, 0.0)
                )
            if end[i] > i + 1:
                todo[i] = -1
                continue
            b = bucket(combined)
            if b != level[i] // TIERS:
                todo[i] = b * TIERS + level[i] % TIERS
        return todo, done

    def _lexical_buckets(
        self,
        layout: Layout,
        before: dict[str, float],
        context: Set[str],
        todo: dict[int, int],
    ) -> list[int]:
        """Give each file of the new lexical scores or of ``before`` (the old ones),
        outside ``context`` and ``todo``, whose bucket by its lexical score alone (what
        :func:`bucket` of :meth:`_own`'s sum gives when the other parts are 0) is not
        the one its level holds its new level (its tier kept); returns those files.
        A container among them goes in ``todo`` (-1: from its children)."""
        lexical = self._lexical
        # a dict for a pass over every file (a focus's); the nodes' own indices for a few
        many = len(lexical) + len(before) > FEW_LOOKUPS
        first = layout.first.table().get if many else layout.first.get
        level, end = layout.level, layout.end
        top, steps = BUCKETS - 1, BUCKET_STEPS
        done: list[int] = []
        for nid, value in lexical.items():
            if nid in context:
                continue
            i = first(nid)
            if i is None or i in todo:
                continue
            if end[i] > i + 1:
                todo[i] = -1
                continue
            b = 0
            if value > 0:  # bucket(value), inline
                b = int(value * steps)
                b = 1 + (b if b < top else top)
            lv = level[i]
            if b != lv // TIERS:
                level[i] = b * TIERS + lv % TIERS
                done.append(i)
        for nid in before.keys() - lexical.keys() - context:
            i = first(nid)
            if i is None or i in todo:
                continue
            if end[i] > i + 1:
                todo[i] = -1
            elif level[i] >= TIERS:  # bucket 0 now
                level[i] %= TIERS
                done.append(i)
        return done

    def _settle(self, layout: Layout, todo: dict[int, int], done: list[int]) -> list[int]:
        """Give the entries of ``todo`` their own level (the one given, or
        :meth:`_own` where that is -1), and their containers and those of the files
        ``done`` (given their new level already) the best of theirs and their
        children's; returns the entries whose level changed (``done`` first)."""
        nodes, parent, level, end = layout.nodes, layout.parent, layout.level, layout.end
        inherited = self._inherited
        moved = done
        starts: set[int] = set()  # containers to level again, with those above them
        for i, own in todo.items():
            if end[i] > i + 1:
                starts.add(i)
                continue
            if own < 0:
                own = self._own(nodes[i])
            if own == level[i]:
                continue
            level[i] = own
            moved.append(i)
        starts.update(map(parent.__getitem__, moved))
        containers: set[int] = set()
        for p in starts:
            while p >= 0 and p not in containers:
                containers.add(p)
                p = parent[p]
        ref = layout.ref
        for p in sorted(containers, reverse=True):  # children before their parents
            own = best = self._own(nodes[p])
            c, stop = p + 1, end[p]
            while c < stop:  # the entries directly under p
                if not ref[c] and level[c] > best:
                    best = level[c]
                c = end[c]
            inherited[p] = best > own
            if best != level[p]:
                level[p] = best
                moved.append(p)
        return moved

    def snapshot(self, layout: Layout) -> Callable[[], dict[str, Score]]:
        """A function giving node id → :class:`Score` of every entry of ``layout`` as
        leveled now, made when called (the levels are copied; the score parts are never
        changed in place)."""
        nodes, ref = layout.nodes, layout.ref
        level, inherited = layout.level[:], bytes(self._inherited)
        lexical, graph, recent = self._lexical, self._graph, self._recent

        def scores() -> dict[str, Score]:
            out: dict[str, Score] = {}
            for i, node in enumerate(nodes):
                if ref[i]:
                    continue
                nid, lv = node.id, level[i]
                if inherited[i]:
                    out[nid] = Score(lv, inherited=True)
                elif isinstance(node, TextNode):
                    out[nid] = Score(
                        lv,
                        lexical.get(nid, 0.0),
                        lv % TIERS,
                        False,
                        graph.get(nid, 0.0),
                        recent.get(nid, 0.0),
                    )
                else:
                    out[nid] = Score(lv)
            return out

        return scores


def _best_first(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])


def _best(scores: dict[str, float], n: int) -> list[tuple[str, float]]:
    """The ``n`` best (id, score) of ``scores``, best first, ties by id: the ``n``-th
    best score is found over the floats alone, then only the items scoring at least
    that are ordered."""
    if len(scores) <= n:
        return sorted(scores.items(), key=_best_first)
    least = nlargest(n, scores.values())[-1]
    return sorted([item for item in scores.items() if item[1] >= least], key=_best_first)[:n]
