"""Chunked texts ranked by keyword: `chunk_text`, `Chunk`, `KnowledgeStore`, `SearchResult`.

`KnowledgeStore` cuts texts into chunks and ranks them with BM25. Chunks are cut only
after a whitespace character (preferably at a blank line, then at a line end, then between
words), so no word is ever split, and every character of a text belongs to at least one
chunk. A word longer than ``chunk_size`` becomes a chunk of its own rather than being cut.
The shapes are orbiter's (``chunk_text`` returning strings, results carrying their chunk).

Must not import the workspace (:mod:`dagctx.knowledge.workspace` feeds a store, not the
other way round), tools or contexts.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from dagctx._validate import is_int
from dagctx._words import tokenize
from dagctx.errors import KnowledgeError


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice ``text == source[start:end]`` of the text stored under `name`.

    ``artifact_name`` and ``content`` are orbiter's names for `name` and `text`.
    """

    name: str
    index: int
    start: int
    end: int
    text: str

    @property
    def artifact_name(self) -> str:
        """The name of the text this chunk belongs to (same as `name`)."""
        return self.name

    @property
    def content(self) -> str:
        """The chunk's text (same as `text`)."""
        return self.text


_PARAGRAPH_END = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_END = re.compile(r"\n(?:[^\S\n]*\n)*")
_WORD_END = re.compile(r"\s+")


def _split_after(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[int]:
    """Cut points in ``text[start:end]`` just after each run matched by `separator`."""
    cuts = [m.end() for m in separator.finditer(text, start, end) if m.end() < end]
    return [start, *cuts, end]


def _atoms(text: str, start: int, end: int, size: int, level: int = 0) -> Iterator[int]:
    """Yield the end offsets of pieces of ``text[start:end]`` no longer than `size`.

    A piece is a paragraph if it fits, otherwise the paragraph's lines, otherwise the
    line's words (with their trailing whitespace); a single word may exceed `size`.
    """
    separators = (_PARAGRAPH_END, _LINE_END, _WORD_END)
    if end - start <= size or level == len(separators):
        yield end
        return
    bounds = _split_after(text, start, end, separators[level])
    for piece_start, piece_end in pairwise(bounds):
        yield from _atoms(text, piece_start, piece_end, size, level + 1)


def chunk_text(text: str, *, chunk_size: int = 512, chunk_overlap: int = 64) -> list[str]:
    """Cut `text` into pieces of at most `chunk_size` characters, cut only after whitespace.

    Consecutive pieces share up to `chunk_overlap` characters of whole pieces (lines or
    words) so that a passage on a boundary is found from either side; a word longer than
    `chunk_size` is a piece of its own. Returns no piece for an empty text.

    Raises:
        KnowledgeError: `chunk_size` < 1, or `chunk_overlap` not in ``[0, chunk_size)``.
    """
    _check_chunking(chunk_size, chunk_overlap)
    return [text[start:end] for start, end in _spans(text, chunk_size, chunk_overlap)]


def _spans(text: str, chunk_size: int, chunk_overlap: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of the chunks of `text` (settings already checked)."""
    ends = list(_atoms(text, 0, len(text), chunk_size)) if text else []
    starts = [0, *ends[:-1]]
    spans: list[tuple[int, int]] = []
    first = 0  # index of the first atom of the next chunk
    while first < len(ends):
        last = first  # the chunk is atoms first..last inclusive
        while last + 1 < len(ends) and ends[last + 1] - starts[first] <= chunk_size:
            last += 1
        spans.append((starts[first], ends[last]))
        if last + 1 == len(ends):
            break
        first = _overlap_start(starts, ends, first, last, chunk_size, chunk_overlap)
    return spans


def _overlap_start(
    starts: list[int], ends: list[int], first: int, last: int, size: int, overlap: int
) -> int:
    """Index of the atom the chunk after atoms ``first..last`` starts with."""
    following = last + 1
    candidate = following
    # Walk back over whole atoms while they fit in the overlap and leave room for the
    # next atom; never back to `first`, so every chunk makes progress.
    while (
        candidate - 1 > first
        and ends[last] - starts[candidate - 1] <= overlap
        and ends[following] - starts[candidate - 1] <= size
    ):
        candidate -= 1
    return candidate


def _check_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not is_int(chunk_size) or chunk_size < 1:
        raise KnowledgeError(
            f"chunk_size must be a positive integer, got {chunk_size!r}", value=chunk_size
        )
    if not is_int(chunk_overlap) or not 0 <= chunk_overlap < chunk_size:
        raise KnowledgeError(
            f"chunk_overlap must be an integer in [0, chunk_size={chunk_size}), "
            f"got {chunk_overlap!r}",
            value=chunk_overlap,
        )


# --------------------------------------------------------------------------- ranking


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One ranked `chunk` and its BM25 `score` for the query.

    ``name``, ``chunk_index``, ``start``, ``end`` and ``text`` read through to the chunk.
    """

    chunk: Chunk
    score: float

    @property
    def name(self) -> str:
        """The name of the text the chunk comes from."""
        return self.chunk.name

    @property
    def chunk_index(self) -> int:
        """The chunk's position among the chunks of its text."""
        return self.chunk.index

    @property
    def start(self) -> int:
        """Offset of the chunk's first character in its text."""
        return self.chunk.start

    @property
    def end(self) -> int:
        """Offset just past the chunk's last character in its text."""
        return self.chunk.end

    @property
    def text(self) -> str:
        """The chunk's text."""
        return self.chunk.text


class KnowledgeStore:
    """Chunked texts, searchable by keyword with Okapi BM25.

    The settings and the shapes (``add``, ``get``, ``get_range``, ``search`` returning
    `SearchResult` with its `Chunk`) are orbiter's; the ranking is BM25.

    Args:
        chunk_size: Longest chunk, in characters (a single longer word is kept whole).
        chunk_overlap: Characters of whole lines or words repeated between neighbours.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation (0 = none, 1 = full).

    Raises:
        KnowledgeError: A setting is out of range.
    """

    def __init__(
        self,
        chunk_size: int = 512,
        chunk_overlap: int = 64,
        *,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        _check_chunking(chunk_size, chunk_overlap)
        if k1 < 0 or not 0 <= b <= 1:
            raise KnowledgeError(
                f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}", value=(k1, b)
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.k1 = k1
        self.b = b
        self._chunks: dict[str, list[Chunk]] = {}
        self._term_counts: dict[tuple[str, int], Counter[str]] = {}
        self._postings: dict[str, set[tuple[str, int]]] = {}
        self._total_length = 0

    def __contains__(self, name: object) -> bool:
        return name in self._chunks

    def __len__(self) -> int:
        """Number of texts (not chunks) in the store."""
        return len(self._chunks)

    def __repr__(self) -> str:
        return (
            f"KnowledgeStore(artifacts={len(self)}, chunks={self.total_chunks()}, "
            f"chunk_size={self.chunk_size})"
        )

    def names(self) -> list[str]:
        """Names of the stored texts, in the order they were first added."""
        return list(self._chunks)

    @property
    def artifact_names(self) -> list[str]:
        """Names of the stored texts, in the order they were first added (a new list)."""
        return list(self._chunks)

    def total_chunks(self) -> int:
        """Number of chunks of all stored texts."""
        return len(self._term_counts)

    def chunks(self, name: str) -> list[Chunk]:
        """The chunks of the text stored under `name` (empty if there is none)."""
        return list(self._chunks.get(name, ()))

    def get(self, name: str) -> list[Chunk]:
        """The chunks of the text stored under `name` (empty if there is none)."""
        return self.chunks(name)

    def get_range(self, name: str, start: int, end: int) -> list[Chunk]:
        """The chunks of `name` that share at least one character with ``[start, end)``."""
        return [c for c in self._chunks.get(name, ()) if c.end > start and c.start < end]

    def add(self, name: str, text: str) -> list[Chunk]:
        """Chunk and index `text` under `name`, replacing what `name` held before.

        Returns the new chunks.

        Raises:
            KnowledgeError: `name` is empty, or `name` or `text` is not a string.
        """
        if not isinstance(name, str) or not isinstance(text, str):
            raise KnowledgeError(
                f"add needs a str name and text, got {type(name).__name__} "
                f"and {type(text).__name__}",
                value=text if isinstance(name, str) else name,
            )
        if not name:
            raise KnowledgeError("artifact name must be a non-empty string, got ''", value=name)
        chunks = [
            Chunk(name, index, start, end, text[start:end])
            for index, (start, end) in enumerate(_spans(text, self.chunk_size, self.chunk_overlap))
        ]
        self.remove(name)
        self._chunks[name] = chunks
        for chunk in chunks:
            key = (name, chunk.index)
            counts = Counter(tokenize(chunk.text))
            self._term_counts[key] = counts
            self._total_length += counts.total()
            for term in counts:
                self._postings.setdefault(term, set()).add(key)
        return list(chunks)

    def remove(self, name: str) -> bool:
        """Forget the text stored under `name`; returns whether there was one."""
        chunks = self._chunks.pop(name, None)
        if chunks is None:
            return False
        for chunk in chunks:
            key = (name, chunk.index)
            counts = self._term_counts.pop(key)
            self._total_length -= counts.total()
            for term in counts:
                holders = self._postings[term]
                holders.discard(key)
                if not holders:
                    del self._postings[term]
        return True

    def search(self, query: str, top_k: int = 5) -> list[SearchResult]:
        """The `top_k` chunks with the highest BM25 score for `query`, best first.

        Chunks sharing no term with the query are never returned; ties keep the order in
        which the texts were added.

        Raises:
            KnowledgeError: `top_k` is not a positive integer.
        """
        if not is_int(top_k) or top_k < 1:
            raise KnowledgeError(f"top_k must be a positive integer, got {top_k!r}", value=top_k)
        scores: dict[tuple[str, int], float] = {}
        for term in set(tokenize(query)):
            holders = self._postings.get(term)
            if not holders:
                continue
            idf = self._idf(len(holders))
            for key in holders:
                scores[key] = scores.get(key, 0.0) + idf * self._saturated_tf(key, term)
        order = {name: position for position, name in enumerate(self._chunks)}
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0][0]], kv[0][1]))
        return [self._result(key, score) for key, score in ranked[:top_k]]

    def _idf(self, document_frequency: int) -> float:
        # The "+1" variant keeps every IDF positive, so a term present in most chunks
        # still counts a little instead of pushing a chunk below ones that lack it.
        n = len(self._term_counts)
        return math.log(1 + (n - document_frequency + 0.5) / (document_frequency + 0.5))

    def _saturated_tf(self, key: tuple[str, int], term: str) -> float:
        counts = self._term_counts[key]
        tf = counts[term]
        average = self._total_length / len(self._term_counts)
        norm = 1 - self.b + self.b * counts.total() / average
        return tf * (self.k1 + 1) / (tf + self.k1 * norm)

    def _result(self, key: tuple[str, int], score: float) -> SearchResult:
        return SearchResult(self._chunks[key[0]][key[1]], score)
