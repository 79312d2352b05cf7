"""What the ranking read of each text file's content, packed for a session file.

A focus ranks the files by what their content holds (:mod:`dagctx.projection.relevance`):
the BM25 term counts and the names each file defines (the
:class:`~dagctx.projection.relevance.Bm25Index`), and each file's definitions and
references (the :class:`~dagctx.outline.references.ReferenceGraph`). Finding them reads
and tokenizes every file and parses each with tree-sitter: most of what a first focus
costs. A save keeps them per text node (:func:`pack`: one JSON text beside the nodes,
whose digest the nodes' block names, :func:`digest_of`), each for the content its node
shows (its digest); a load takes them back (:class:`SavedReads`, decoded by
:func:`unpack` when the ranking first asks: a :class:`FileTerms` per node) and the
ranking uses one only while its node shows that content (:meth:`FileTerms.fits`); any
other file is read again.

**Packing.** The words (terms and names) of one save are numbered as they come
(:class:`Vocabulary`): each file's ``words`` value lists, newline-separated, the words it
is the first to use, so the words of the files in order are the vocabulary.
A word's number is written as a *code* of 2 to 4 printable ASCII characters (:func:`codes`;
JSON writes them as they are): the first from one of three alphabets that say the code's
length and never appear elsewhere in a code, the others from a fourth. So a code found
in a string of codes is one of its codes, whole: whether a file holds a term is a plain
substring test (:meth:`FileTerms.__contains__`, at C speed), and a string of codes is
split by one regular expression (:data:`_CODE`). A file's terms are its codes, those
counted most first: ``counts`` holds (count, end) pairs, the codes before character
``end`` counted ``count`` times, the others once. A save whose files are mostly ones taken
back numbers its words after the vocabulary they came with and writes them as they are
(:func:`_base`: unless that vocabulary has grown to twice what it held when made afresh);
what a save wrote is held as taken back, for the next save.

A vocabulary holds at most :data:`MOST_WORDS` words; a file using a word beyond them is
saved without what the ranking read (it is read again after a load). Pure data: imports
nothing of the ranking, the nodes or the session.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import accumulate, chain, islice, product, repeat
from typing import Any

from dagctx._json import decode_json, dump_json

_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"\\')
# 92 characters JSON writes as they are: 24 open a code of 2, 16 one of 3, 6 one of 4,
# and 46 follow
_LEADS = (_PRINTABLE[:24], _PRINTABLE[24:40], _PRINTABLE[40:46])
_TAIL = _PRINTABLE[46:]
_BASE = len(_TAIL)
#: How many numbers the codes of each length hold, from 2 characters up.
_SPANS = tuple(len(lead) * _BASE ** (width + 1) for width, lead in enumerate(_LEADS))
MOST_WORDS = sum(_SPANS)
"""The most words a vocabulary numbers (619,620)."""
_CODE = re.compile(
    "|".join(
        f"[{re.escape(lead)}][{re.escape(_TAIL)}]{{{width}}}"
        for width, lead in enumerate(_LEADS, 1)
    )
)


def codes() -> Iterator[str]:
    """Every code, in the order words are numbered: those of 2 characters first, then 3,
    then 4 (:data:`MOST_WORDS` in all)."""
    return chain.from_iterable(
        map("".join, product(lead, *[_TAIL] * width)) for width, lead in enumerate(_LEADS, 1)
    )


class _Codes(dict[str, str]):
    """Word → code, numbering a word on first use and noting it as fresh; it starts
    with the words of ``base`` (all fresh), numbered as there."""

    def __init__(self, base: Words | None) -> None:
        super().__init__(() if base is None else base.codes)
        self.fresh: list[str] = list(self)
        self._next = islice(codes(), len(self), None)

    def __missing__(self, word: str) -> str:
        made = next(self._next, None)
        if made is None:
            raise OverflowError(f"no code for a word beyond the first {MOST_WORDS:,}")
        self[word] = made
        self.fresh.append(word)
        return made


class Vocabulary:
    """The words of one save, numbered as they come (module docstring), after those of
    ``base`` (a loaded vocabulary, whose codes then stand as they are)."""

    __slots__ = ("_codes", "base", "built")

    def __init__(self, base: Words | None = None) -> None:
        self._codes = _Codes(base)
        self.base = base
        #: how many words it held when it was last made afresh
        self.built = 0 if base is None else base.built

    def __len__(self) -> int:
        return len(self._codes)

    def numbered(self) -> dict[str, str]:
        """Word → code, of every word numbered."""
        return dict(self._codes)

    def codes(self, words: Iterable[str]) -> list[str]:
        """The code of each of ``words``, numbering those new to it.

        Raises:
            OverflowError: a word beyond :data:`MOST_WORDS` (the ones numbered before it
                stay numbered: :meth:`take_fresh` lists them).
        """
        return list(map(self._codes.__getitem__, words))

    def take_fresh(self) -> str:
        """The words numbered since the last call, newline-separated (a ``words`` value)."""
        fresh = self._codes.fresh
        self._codes.fresh = []
        return "\n".join(fresh)


class Words:
    """A loaded vocabulary: each word's code (``codes``) and back (made on first use);
    ``built``: how many words it held when it was last made afresh."""

    __slots__ = ("_words", "built", "codes")

    def __init__(
        self, words: list[str], built: int = 0, numbered: dict[str, str] | None = None
    ) -> None:
        #: word → code (a word beyond :data:`MOST_WORDS` has none); ``numbered`` when given
        self.codes: dict[str, str] = (
            dict(zip(words, codes(), strict=False)) if numbered is None else numbered
        )
        self.built = built
        self._words: dict[str, str] | None = None

    def decode(self, codes: str) -> list[str]:
        """The words of a string of codes (a code beyond the vocabulary, which only a
        file edited by hand holds, stands for none)."""
        if self._words is None:
            self._words = {c: w for w, c in self.codes.items()}
        return list(filter(None, map(self._words.get, _CODE.findall(codes))))


@dataclass(slots=True, eq=False)
class FileTerms:
    """What the ranking read of one file's content (``digest``: that content's, as
    :meth:`~dagctx.nodes.text.TextNode.content_digest` gives it), packed: its term
    counts for the BM25 index (``in`` and :meth:`get`, not iterated; ``length``: their
    sum; ``defined``: the names it defines, as
    :func:`~dagctx.projection.relevance.defined_list` lists them), and its definitions
    and references for the reference graph (:meth:`names`; None: not read)."""

    digest: bytes
    terms: str
    counts: list[int]
    length: int
    defined: str
    defs: str | None
    refs: str | None
    words: Words

    def fits(self, digest: bytes) -> bool:
        """Whether it was read from the content of ``digest``."""
        return digest == self.digest

    def __contains__(self, term: object) -> bool:
        found = self.words.codes.get(term) if type(term) is str else None
        return found is not None and found in self.terms

    def get(self, term: str, default: int = 0) -> int:
        """The count of ``term`` (``default`` when the file does not hold it)."""
        found = self.words.codes.get(term)
        at = -1 if found is None else self.terms.find(found)
        if at < 0:
            return default
        counts = self.counts
        for i in range(1, len(counts), 2):
            if at < counts[i]:
                return counts[i - 1]
        return 1

    def names(self) -> tuple[frozenset[str], frozenset[str]] | None:
        """Its definitions and references (None: not read)."""
        return None if self.defs is None else self.graph_names()

    def graph_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """Its definitions and references, which were read (``defs`` is not None)."""
        decode = self.words.decode
        return frozenset(decode(self.defs or "")), frozenset(decode(self.refs or ""))


@dataclass(frozen=True, slots=True)
class Read:
    """What the ranking holds of one file to save: its term counts (a mapping, or the
    :class:`FileTerms` it was taken back from), their sum, its defined-names list, and
    its definitions and references (None: not read, or those of the :class:`FileTerms`)."""

    counts: Mapping[str, int] | FileTerms
    length: int
    defined: str
    names: tuple[Set[str], Set[str]] | None


#: The columns of what :func:`pack` writes, one value per file, beside ``by``.
COLUMNS = ("id", "digest", "words", "terms", "counts", "length", "defined", "defs", "refs")


def pack(
    files: Iterable[tuple[str, bytes, Read | None]], made_by: str
) -> tuple[str, dict[str, FileTerms]]:
    """JSON text of what the ranking read of ``files`` (node id, the digest of the
    content it shows, what was read of that content or None), as :func:`unpack` reads
    it: an object of the :data:`COLUMNS` (a file with nothing read, or using a word
    beyond the vocabulary, left out), the words numbered in that order, and ``by``:
    ``made_by``, what names the code that read them; and the :class:`FileTerms` written,
    by node id (a next save numbers its words as this one did and writes those of them
    still read as they are)."""
    listed = [(nid, digest, read) for nid, digest, read in files if read is not None]
    vocabulary = Vocabulary(_base([read for _, _, read in listed]))
    columns: dict[str, list[Any]] = {key: [] for key in COLUMNS}
    rows = list(columns.values())
    written: list[tuple[str, bytes, _Packed]] = []
    for nid, digest, read in listed:
        try:
            packed = _pack(read, vocabulary)
        except (OverflowError, KeyError):  # beyond the vocabulary, or edited by hand
            packed = None
        fresh = vocabulary.take_fresh()
        if packed is None and not fresh:
            continue
        if packed is None:  # its words stay numbered: a file of no id holds them
            packed = ("", [], 0, "", None, None)
            nid = ""
        else:
            written.append((nid, digest, packed))
        for column, value in zip(rows, (nid, digest.hex(), fresh, *packed), strict=True):
            column.append(value)
    built = vocabulary.built or len(vocabulary)
    words = Words([], built, vocabulary.numbered())
    files_written = {
        nid: FileTerms(digest, terms, pairs, length, defined, defs, refs, words)
        for nid, digest, (terms, pairs, length, defined, defs, refs) in written
    }
    return dump_json({"by": made_by, "built": built, **columns}), files_written


def _base(reads: list[Read]) -> Words | None:
    """The loaded vocabulary a save keeps numbering its words by (so the files read
    before are written as they were read back): that of the reads taken back, when they
    are at least half of ``reads`` and it holds at most twice the words it held when it
    was made (the words of files since changed are in it still); else None (numbered
    afresh)."""
    back = [read.counts.words for read in reads if isinstance(read.counts, FileTerms)]
    if not back or 2 * len(back) < len(reads):
        return None
    words = back[0]
    if len(words.codes) > 2 * words.built or back.count(words) != len(back):
        return None
    return words


def digest_of(text: str) -> str:
    """The digest of :func:`pack`'s ``text`` that the block of text nodes saved with it
    names (so a load takes it back only beside the nodes it was written with)."""
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


#: A file's packed values: its terms, their (count, end) pairs, length, defined names,
#: definitions and references.
_Packed = tuple[str, list[int], int, str, str | None, str | None]


def _pack(read: Read, vocabulary: Vocabulary) -> _Packed:
    counts = read.counts
    pairs: list[int] = []
    if isinstance(counts, FileTerms) and counts.words is vocabulary.base:  # as it was
        names = read.names
        defs, refs = counts.defs, counts.refs
        if defs is None and names is not None:
            defs = "".join(vocabulary.codes(sorted(names[0])))
            refs = "".join(vocabulary.codes(sorted(names[1])))
        return counts.terms, counts.counts, read.length, read.defined, defs, refs
    if isinstance(counts, FileTerms):  # its words in its order, coded anew
        old = _CODE.findall(counts.terms)
        codes = vocabulary.codes(counts.words.decode(counts.terms))
        if len(codes) != len(old):  # a code beyond its vocabulary: read it again
            raise OverflowError("not all of its words are known")
        ends = [0, *accumulate(map(len, codes))]
        at = dict(zip(accumulate(map(len, old)), range(1, len(old) + 1), strict=True))
        for k in range(0, len(counts.counts), 2):
            pairs += [counts.counts[k], ends[at[counts.counts[k + 1]]]]
    else:
        order = sorted(counts, key=counts.__getitem__, reverse=True)
        codes = vocabulary.codes(order)
        ends = list(accumulate(map(len, codes)))
        done = 0
        for count, many in sorted(Counter(counts.values()).items(), reverse=True):
            done += many
            if count != 1:
                pairs += [count, ends[done - 1]]
    defs = refs = None
    names = read.names
    if names is None and isinstance(counts, FileTerms):
        names = counts.names()
    if names is not None:
        defs = "".join(vocabulary.codes(sorted(names[0])))
        refs = "".join(vocabulary.codes(sorted(names[1])))
    return "".join(codes), pairs, read.length, read.defined, defs, refs


def unpack(text: str, made_here: Callable[[object], bool]) -> dict[str, FileTerms]:
    """The :class:`FileTerms` of each file :func:`pack`'s ``text`` holds, by node id.
    Text that is not such an object, with a malformed value, or that other code than
    this read (``made_here`` of its ``by``) gives none."""
    try:
        saved = decode_json(text)
    except (TypeError, ValueError):
        return {}
    if type(saved) is not dict or not made_here(saved.get("by")):
        return {}
    columns: list[Any] = [saved.get(key) for key in COLUMNS]
    if any(type(column) is not list for column in columns):
        return {}
    count = len(columns[0])
    if any(len(column) != count for column in columns):
        return {}
    ids, digests, words_column, terms, counts, lengths, defined, defs, refs = columns
    # each column checked at once (C loops); one bad value gives none (a file edited by
    # hand, which the digest the nodes name does not match anyway)
    if not (
        set(map(type, chain(ids, digests, words_column, terms, defined))) <= _STR
        and set(map(type, lengths)) <= _INT
        and set(map(type, counts)) <= _LIST
        and set(map(type, chain.from_iterable(counts))) <= _INT
        and not any(map((1).__and__, map(len, counts)))
        and set(map(type, defs)) <= _STR_OR_NONE
        and list(map(type, defs)) == list(map(type, refs))
    ):
        return {}
    try:
        digested = list(map(bytes.fromhex, digests))
    except ValueError:
        return {}
    built = saved.get("built")
    listed = [word for fresh in words_column if fresh for word in fresh.split("\n")]
    words = Words(listed, built if type(built) is int else 0)
    if len(words.codes) != min(len(listed), MOST_WORDS):  # a word twice: not as written
        return {}
    files = map(FileTerms, digested, terms, counts, lengths, defined, defs, refs, repeat(words))
    found = dict(zip(ids, files, strict=True))
    found.pop("", None)  # a file that left only its words (see pack)
    return found


class SavedReads:
    """What a session file kept of the ranking's reads: the :class:`FileTerms` by node id
    (:meth:`entries`), decoded from :func:`pack`'s text on first use, and only when the
    text has the digest the nodes saved with it name (:func:`digest_of`); an empty one
    holds none."""

    __slots__ = ("_digest", "_entries", "_made_here", "_text")

    def __init__(
        self,
        text: str | None = None,
        digest: object = None,
        made_here: Callable[[object], bool] | None = None,
    ) -> None:
        self._text, self._digest, self._made_here = text, digest, made_here
        self._entries: dict[str, FileTerms] | None = None if text else {}

    def keep(self, entries: dict[str, FileTerms]) -> None:
        """Hold ``entries`` instead (those a save wrote)."""
        self._entries, self._text = entries, None

    def entries(self) -> dict[str, FileTerms]:
        """Node id → what was read of its content (the caller drops those that no
        longer fit)."""
        if self._entries is None:
            text, made_here = self._text or "", self._made_here
            fits = made_here is not None and self._digest == digest_of(text)
            self._entries = unpack(text, made_here) if fits and made_here else {}
            self._text = None
        return self._entries


_STR = frozenset({str})
_INT = frozenset({int})
_LIST = frozenset({list})
_STR_OR_NONE = frozenset({str, type(None)})


__all__ = [
    "COLUMNS",
    "MOST_WORDS",
    "FileTerms",
    "Read",
    "SavedReads",
    "Vocabulary",
    "Words",
    "codes",
    "digest_of",
    "pack",
    "unpack",
]
