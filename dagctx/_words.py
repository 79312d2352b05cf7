"""Words of a text for ranking: the tokenizer shared by the knowledge store and the
projection's relevance score.

:func:`tokenize` splits a text into case-folded runs of word characters (what
``search_knowledge`` indexes). :func:`terms` goes further for matching code against a
task: each token is also split at snake_case and camelCase boundaries, English stop words
are dropped and a light suffix strip makes ``checkpoints``, ``restored`` and ``restore``
meet; each distinct token's terms are made once and kept in a bounded cache, so a text
costs about what splitting it into tokens does. An ASCII text is split without the
regex (:func:`words`: a third of the time), to the same tokens. Pure functions (the cache
changes no result); must not import anything of dagctx.
"""

from __future__ import annotations

import re
from itertools import chain

_TOKEN = re.compile(r"\w+")
# A byte table mapping each ASCII character that is not a word character (among them
# ``\w`` matches [0-9A-Za-z_]) to a space; only ASCII text is translated with it.
_ASCII_WORDS = bytes(c if c < 128 and (chr(c).isalnum() or c == 95) else 32 for c in range(256))
_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
    ]
)


def words(text: str) -> list[str]:
    r"""The runs of Unicode word characters of ``text``, in order (``re.findall(r"\w+")``);
    an ASCII text is split at the spaces its other characters are mapped to instead,
    which is about three times faster."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _TOKEN.findall(text)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into case-folded word tokens (runs of Unicode word characters)."""
    return words(text.casefold())


def stem(word: str) -> str:
    """``word`` without a plural or verb suffix (``ies``, ``es``, ``s``, ``ing``, ``ed``,
    a final ``e``), when at least three letters remain."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("e", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: len(word) - len(suffix)] + repl
    return word


def _token_terms(raw: str) -> tuple[str, ...]:
    """The terms of one token (:func:`terms` of a text that is that token alone)."""
    word = raw.casefold()
    if word in _STOP:
        return ()
    out = [stem(word)]
    parts = _PIECE.findall(raw)
    if len(parts) > 1:
        out.extend(stem(p.casefold()) for p in parts if p.casefold() not in _STOP)
    return tuple(out)


class _TermCache(dict[str, tuple[str, ...]]):
    """Token → its terms, made on first use; emptied when it holds :data:`TERMS_KEPT`
    tokens (the terms of a token never change: only the time to make them again is lost)."""

    def __missing__(self, raw: str) -> tuple[str, ...]:
        if len(self) >= TERMS_KEPT:
            self.clear()
        made = self[raw] = _token_terms(raw)
        return made


TERMS_KEPT = 200_000  # tokens whose terms are kept (a code base has far fewer distinct ones)
_terms_of = _TermCache()


def terms(text: str) -> list[str]:
    """Matching terms of ``text``: each token stemmed, and for a compound identifier
    (``restore_checkpoint``, ``CheckpointStore``) its stemmed parts too; stop words
    left out."""
    return list(chain.from_iterable(map(_terms_of.__getitem__, words(text))))
