"""Knowledge an agent keeps beside its context: versioned artifacts and ranked search.

`Workspace` owns named text artifacts. Every write appends a version (nothing is ever
overwritten), and with a `storage_path` each artifact lives in one JSON file whose name is
a hash of the artifact name, so no name (``../x``, ``/etc/passwd``, ``a\\0b``) can place a
file outside that directory. Files are replaced atomically.

`KnowledgeStore` cuts texts into chunks and ranks them with BM25. Chunks are cut only
after a whitespace character (preferably at a blank line, then at a line end, then between
words), so no word is ever split, and every character of a text belongs to at least one
chunk. A word longer than ``chunk_size`` becomes a chunk of its own rather than being cut.

This module does not know about tools or contexts; `dagctx.tools.knowledge` exposes it to
a model.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import math
import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from dagctx._fs import write_atomic
from dagctx._validate import is_int
from dagctx._words import tokenize
from dagctx.errors import ArtifactNotFoundError, KnowledgeError

__all__ = [
    "Artifact",
    "ArtifactNotFoundError",
    "ArtifactVersion",
    "Chunk",
    "KnowledgeError",
    "KnowledgeStore",
    "SearchResult",
    "Workspace",
    "chunk_text",
    "tokenize",
]

_MAX_NAME_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice ``text == source[start:end]`` of the text stored under `name`."""

    name: str
    index: int
    start: int
    end: int
    text: str


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


def chunk_text(name: str, text: str, chunk_size: int, chunk_overlap: int = 0) -> list[Chunk]:
    """Cut `text` into chunks of at most `chunk_size` characters.

    Consecutive chunks share up to `chunk_overlap` characters of whole pieces (lines or
    words) so that a passage on a boundary is found from either side. Returns no chunk for
    an empty text.

    Raises:
        KnowledgeError: `chunk_size` < 1, or `chunk_overlap` not in ``[0, chunk_size)``.
    """
    _check_chunking(chunk_size, chunk_overlap)
    ends = list(_atoms(text, 0, len(text), chunk_size)) if text else []
    starts = [0, *ends[:-1]]
    chunks: list[Chunk] = []
    first = 0  # index of the first atom of the next chunk
    while first < len(ends):
        last = first  # the chunk is atoms first..last inclusive
        while last + 1 < len(ends) and ends[last + 1] - starts[first] <= chunk_size:
            last += 1
        start, end = starts[first], ends[last]
        chunks.append(Chunk(name, len(chunks), start, end, text[start:end]))
        if last + 1 == len(ends):
            break
        first = _overlap_start(starts, ends, first, last, chunk_size, chunk_overlap)
    return chunks


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
    """One ranked chunk: its BM25 `score` for the query and where it comes from."""

    name: str
    chunk_index: int
    start: int
    end: int
    text: str
    score: float


class KnowledgeStore:
    """Chunked texts, searchable by keyword with Okapi BM25.

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
        chunk_size: int = 1000,
        chunk_overlap: int = 100,
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

    def names(self) -> list[str]:
        """Names of the stored texts, in the order they were first added."""
        return list(self._chunks)

    def chunks(self, name: str) -> list[Chunk]:
        """The chunks of the text stored under `name` (empty if there is none)."""
        return list(self._chunks.get(name, ()))

    def add(self, name: str, text: str) -> list[Chunk]:
        """Chunk and index `text` under `name`, replacing what `name` held before.

        Returns the new chunks.

        Raises:
            KnowledgeError: `name` or `text` is not a string.
        """
        if not isinstance(name, str) or not isinstance(text, str):
            raise KnowledgeError(
                f"add needs a str name and text, got {type(name).__name__} "
                f"and {type(text).__name__}",
                value=text if isinstance(name, str) else name,
            )
        chunks = chunk_text(name, text, self.chunk_size, self.chunk_overlap)
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
        chunk = self._chunks[key[0]][key[1]]
        return SearchResult(chunk.name, chunk.index, chunk.start, chunk.end, chunk.text, score)


# --------------------------------------------------------------------------- workspace


@dataclass(frozen=True, slots=True)
class ArtifactVersion:
    """One immutable version of an artifact; versions are numbered from 1."""

    version: int
    content: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Artifact:
    """A named artifact with all its versions, oldest first."""

    name: str
    versions: tuple[ArtifactVersion, ...]

    @property
    def latest(self) -> ArtifactVersion:
        """The newest version."""
        return self.versions[-1]

    @property
    def content(self) -> str:
        """The content of the newest version."""
        return self.versions[-1].content

    @property
    def version(self) -> int:
        """The number of the newest version."""
        return self.versions[-1].version


class Workspace:
    """Named, versioned text artifacts, optionally persisted and indexed for search.

    Args:
        workspace_id: A non-empty identifier, recorded in every persisted file.
        storage_path: Directory holding this workspace's files (created if missing);
            existing artifacts there are loaded. ``None`` keeps everything in memory.
        knowledge_store: Kept in step with the latest version of every artifact.

    Raises:
        KnowledgeError: `workspace_id` is empty, or a stored file is malformed or belongs
            to another workspace.
    """

    def __init__(
        self,
        workspace_id: str,
        storage_path: str | os.PathLike[str] | None = None,
        *,
        knowledge_store: KnowledgeStore | None = None,
    ) -> None:
        if not isinstance(workspace_id, str) or not workspace_id.strip():
            raise KnowledgeError(
                f"workspace_id must be a non-empty string, got {workspace_id!r}", value=workspace_id
            )
        self.workspace_id = workspace_id
        self.storage_path = Path(storage_path) if storage_path is not None else None
        self.knowledge_store = knowledge_store
        self._artifacts: dict[str, Artifact] = {}
        if self.storage_path is not None:
            self.storage_path.mkdir(parents=True, exist_ok=True)
            self._load()

    def __contains__(self, name: object) -> bool:
        return name in self._artifacts

    def __len__(self) -> int:
        return len(self._artifacts)

    def write(self, name: str, content: str) -> ArtifactVersion:
        """Append `content` as the next version of `name` (creating it at version 1).

        Returns the new version. The file is written before memory and index change, so a
        failed write leaves the workspace as it was.

        Raises:
            KnowledgeError: `name` is empty, too long or contains a NUL byte, or `content`
                is not a string.
            OSError: The artifact file cannot be written.
        """
        _check_name(name)
        if not isinstance(content, str):
            raise KnowledgeError(
                f"content of artifact {name!r} must be a str, got {type(content).__name__}",
                value=content,
            )
        previous = self._artifacts.get(name)
        number = previous.version + 1 if previous else 1
        version = ArtifactVersion(number, content, time.time())
        self._commit(Artifact(name, (*(previous.versions if previous else ()), version)))
        return version

    def read(self, name: str, version: int | None = None) -> str:
        """The content of `version` of `name` (the newest when ``None``).

        Raises:
            ArtifactNotFoundError: There is no artifact `name`.
            KnowledgeError: `name` has no such version.
        """
        return self._version(name, version).content

    def get(self, name: str) -> Artifact | None:
        """The artifact `name` with its whole history, or ``None``."""
        return self._artifacts.get(name)

    def list(self) -> builtins.list[str]:
        """Names of all artifacts, sorted."""
        return sorted(self._artifacts)

    def delete(self, name: str) -> bool:
        """Remove `name`, its history, its file and its index entry.

        Returns whether the artifact existed.

        Raises:
            OSError: The artifact file cannot be removed (the artifact is kept).
        """
        if name not in self._artifacts:
            return False
        if self.storage_path is not None:
            self._file_for(name).unlink(missing_ok=True)
        del self._artifacts[name]
        if self.knowledge_store is not None:
            self.knowledge_store.remove(name)
        return True

    def version_history(self, name: str) -> builtins.list[ArtifactVersion]:
        """Every version of `name`, oldest first.

        Raises:
            ArtifactNotFoundError: There is no artifact `name`.
        """
        return builtins.list(self._require(name).versions)

    def revert_to_version(self, name: str, version: int) -> ArtifactVersion:
        """Append a new version of `name` holding the content of `version`, and re-index.

        History is kept: reverting 3 → 1 creates version 4 equal to version 1.

        Raises:
            ArtifactNotFoundError: There is no artifact `name`.
            KnowledgeError: `name` has no such version.
        """
        return self.write(name, self._version(name, version).content)

    # ------------------------------------------------------------------ internals

    def _require(self, name: str) -> Artifact:
        artifact = self._artifacts.get(name)
        if artifact is None:
            known = ", ".join(self.list()) or "none"
            raise ArtifactNotFoundError(
                f"no artifact {name!r} in workspace {self.workspace_id!r} (artifacts: {known})",
                name=name,
            )
        return artifact

    def _version(self, name: str, version: int | None) -> ArtifactVersion:
        artifact = self._require(name)
        if version is None:
            return artifact.latest
        if not is_int(version):
            raise KnowledgeError(f"version must be an integer, got {version!r}", value=version)
        if not 1 <= version <= artifact.version:
            raise KnowledgeError(
                f"artifact {name!r} has no version {version} (versions 1..{artifact.version})",
                value=version,
            )
        return artifact.versions[version - 1]

    def _commit(self, artifact: Artifact) -> None:
        if self.storage_path is not None:
            self._persist(artifact)
        self._artifacts[artifact.name] = artifact
        if self.knowledge_store is not None:
            self.knowledge_store.add(artifact.name, artifact.content)

    def _file_for(self, name: str) -> Path:
        assert self.storage_path is not None
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.storage_path / f"{digest}.json"

    def _persist(self, artifact: Artifact) -> None:
        assert self.storage_path is not None
        record = {
            "workspace_id": self.workspace_id,
            "name": artifact.name,
            "versions": [
                {"version": v.version, "content": v.content, "created_at": v.created_at}
                for v in artifact.versions
            ],
        }
        write_atomic(self._file_for(artifact.name), json.dumps(record, ensure_ascii=False))

    def _load(self) -> None:
        assert self.storage_path is not None
        loaded: dict[str, Artifact] = {}
        for path in sorted(self.storage_path.glob("[0-9a-f]*.json")):
            artifact = self._parse(path)
            if path != self._file_for(artifact.name):
                raise KnowledgeError(f"{path} does not hold the artifact its name says", value=path)
            loaded[artifact.name] = artifact
        for artifact in sorted(loaded.values(), key=lambda a: (a.versions[0].created_at, a.name)):
            self._artifacts[artifact.name] = artifact
            if self.knowledge_store is not None:
                self.knowledge_store.add(artifact.name, artifact.content)

    def _parse(self, path: Path) -> Artifact:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            owner, name = record["workspace_id"], record["name"]
            versions = tuple(
                ArtifactVersion(int(v["version"]), str(v["content"]), float(v["created_at"]))
                for v in record["versions"]
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise KnowledgeError(f"cannot load artifact file {path}: {exc}", value=path) from exc
        if owner != self.workspace_id:
            raise KnowledgeError(
                f"{path} belongs to workspace {owner!r}, not {self.workspace_id!r}; "
                "give each workspace its own storage_path",
                value=path,
            )
        if not versions or [v.version for v in versions] != builtins.list(
            range(1, len(versions) + 1)
        ):
            raise KnowledgeError(f"{path} has missing or out-of-order versions", value=path)
        return Artifact(str(name), versions)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise KnowledgeError(f"artifact name must be a non-empty string, got {name!r}", value=name)
    if "\x00" in name:
        raise KnowledgeError(f"artifact name must not contain a NUL byte, got {name!r}", value=name)
    if len(name) > _MAX_NAME_LENGTH:
        raise KnowledgeError(
            f"artifact name is {len(name)} characters; the limit is {_MAX_NAME_LENGTH}", value=name
        )
