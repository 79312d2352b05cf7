"""Specification of dagctx.knowledge: versioned artifacts, chunking and BM25 search."""

from __future__ import annotations

import shutil
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.errors import DagctxError
from dagctx.knowledge import (
    ArtifactNotFoundError,
    Chunk,
    KnowledgeError,
    KnowledgeStore,
    Workspace,
    chunk_text,
    tokenize,
)


class TestWorkspaceVersions:
    def test_write_appends_versions_and_read_returns_latest(self) -> None:
        ws = Workspace("w")
        assert ws.write_sync("plan", "first").version == 1
        assert ws.write_sync("plan", "second").version == 2
        assert ws.read("plan") == "second"
        assert ws.read("plan", version=1) == "first"

    def test_get_returns_whole_artifact_or_none(self) -> None:
        ws = Workspace("w")
        ws.write_sync("plan", "a")
        ws.write_sync("plan", "b")
        artifact = ws.get("plan")
        assert artifact is not None
        assert (artifact.name, artifact.content, artifact.version) == ("plan", "b", 2)
        assert [v.content for v in artifact.versions] == ["a", "b"]
        assert ws.get("missing") is None

    def test_list_is_sorted_names(self) -> None:
        ws = Workspace("w")
        for name in ("zeta", "alpha", "mid"):
            ws.write_sync(name, name)
        assert [artifact.name for artifact in ws.list()] == ["alpha", "mid", "zeta"]
        assert len(ws) == 3 and "mid" in ws

    def test_version_history_oldest_first(self) -> None:
        ws = Workspace("w")
        for content in ("v1", "v2", "v3"):
            ws.write_sync("doc", content)
        history = ws.version_history("doc")
        assert [(v.version, v.content) for v in history] == [(1, "v1"), (2, "v2"), (3, "v3")]
        assert history[0].created_at <= history[-1].created_at

    def test_revert_appends_old_content_as_new_version(self) -> None:
        ws = Workspace("w")
        for content in ("v1", "v2", "v3"):
            ws.write_sync("doc", content)
        reverted = ws.revert_to_version("doc", 0)
        assert (reverted.version, reverted.content) == (4, "v1")
        assert ws.read("doc") == "v1"
        assert [v.content for v in ws.version_history("doc")] == ["v1", "v2", "v3", "v1"]

    def test_delete_removes_artifact(self) -> None:
        ws = Workspace("w")
        ws.write_sync("doc", "x")
        assert ws.delete_sync("doc") is True
        assert ws.delete_sync("doc") is False
        assert "doc" not in ws and ws.list() == []


class TestWorkspaceErrors:
    def test_unknown_artifact_names_it_and_lists_known(self) -> None:
        ws = Workspace("w")
        ws.write_sync("known", "x")
        assert ws.read("ghost") is None
        assert ws.version_history("ghost") == []
        with pytest.raises(ArtifactNotFoundError, match=r"'ghost'.*known"):
            ws.revert_to_version("ghost", 0)

    @pytest.mark.parametrize("version", [0, 3, -1, True])
    def test_bad_version_is_refused(self, version: int) -> None:
        ws = Workspace("w")
        ws.write_sync("doc", "a")
        ws.write_sync("doc", "b")
        with pytest.raises(KnowledgeError, match=repr(version)):
            ws.read("doc", version=version)
        assert ws.read("doc") == "b" and len(ws.version_history("doc")) == 2

    @pytest.mark.parametrize("index", [2, -1, True, 0.0])
    def test_bad_revert_index_is_refused(self, index: int) -> None:
        ws = Workspace("w")
        ws.write_sync("doc", "a")
        ws.write_sync("doc", "b")
        with pytest.raises(KnowledgeError, match=repr(index)):
            ws.revert_to_version("doc", index)
        assert ws.read("doc") == "b" and len(ws.version_history("doc")) == 2

    @pytest.mark.parametrize("name", ["", "   ", "a\x00b", "x" * 300, 7])
    def test_bad_name_is_refused_and_nothing_changes(self, name: object) -> None:
        ws = Workspace("w")
        with pytest.raises(KnowledgeError):
            ws.write_sync(name, "content")  # type: ignore[arg-type]
        assert ws.list() == []

    def test_non_string_content_is_refused(self) -> None:
        ws = Workspace("w")
        ws.write_sync("doc", "kept")
        with pytest.raises(KnowledgeError, match="bytes"):
            ws.write_sync("doc", b"raw")  # type: ignore[arg-type]
        assert ws.read("doc") == "kept" and ws.get("doc").version == 1  # type: ignore[union-attr]

    def test_empty_workspace_id_is_refused(self) -> None:
        with pytest.raises(KnowledgeError):
            Workspace("")

    def test_errors_are_dagctx_errors(self) -> None:
        assert issubclass(ArtifactNotFoundError, DagctxError)
        assert issubclass(ArtifactNotFoundError, KeyError)


class TestWorkspacePersistence:
    def test_artifacts_survive_reload(self, tmp_path: Path) -> None:
        ws = Workspace("w", tmp_path / "store")
        ws.write_sync("notes", "one")
        ws.write_sync("notes", "two")
        ws.write_sync("plan", "p")
        again = Workspace("w", tmp_path / "store")
        assert again.names() == ["notes", "plan"]
        assert [v.content for v in again.version_history("notes")] == ["one", "two"]

    @pytest.mark.parametrize(
        "name",
        ["../escape", "../../etc/passwd", "/etc/passwd", "a/b/c", "..", ".", "~root", "C:\\x"],
    )
    def test_names_cannot_escape_storage(self, tmp_path: Path, name: str) -> None:
        storage = tmp_path / "deep" / "store"
        ws = Workspace("w", storage)
        ws.write_sync(name, "payload")
        every_file = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert every_file and all(p.parent == storage for p in every_file)
        assert Workspace("w", storage).read(name) == "payload"

    def test_delete_removes_the_file(self, tmp_path: Path) -> None:
        ws = Workspace("w", tmp_path)
        ws.write_sync("doc", "x")
        ws.delete_sync("doc")
        assert list(tmp_path.iterdir()) == []
        assert Workspace("w", tmp_path).list() == []

    def test_failed_write_leaves_memory_and_index_unchanged(self, tmp_path: Path) -> None:
        store = KnowledgeStore()
        ws = Workspace("w", tmp_path / "store", knowledge_store=store)
        ws.write_sync("doc", "original words")
        shutil.rmtree(tmp_path / "store")
        with pytest.raises(OSError):
            ws.write_sync("doc", "replacement words")
        assert ws.read("doc") == "original words"
        assert [r.name for r in store.search("original")] == ["doc"]
        assert store.search("replacement") == []

    def test_storage_of_another_workspace_is_refused(self, tmp_path: Path) -> None:
        Workspace("first", tmp_path).write_sync("doc", "x")
        with pytest.raises(KnowledgeError, match="first"):
            Workspace("second", tmp_path)

    def test_corrupt_file_is_reported(self, tmp_path: Path) -> None:
        Workspace("w", tmp_path).write_sync("doc", "x")
        next(tmp_path.glob("*.json")).write_text("{not json", encoding="utf-8")
        with pytest.raises(KnowledgeError, match="cannot load"):
            Workspace("w", tmp_path)

    def test_reload_reindexes_into_attached_store(self, tmp_path: Path) -> None:
        Workspace("w", tmp_path).write_sync("doc", "persistent knowledge")
        store = KnowledgeStore()
        Workspace("w", tmp_path, knowledge_store=store)
        assert [r.name for r in store.search("persistent")] == ["doc"]


class TestWorkspaceIndexing:
    def test_writes_index_latest_version_only(self) -> None:
        store = KnowledgeStore()
        ws = Workspace("w", knowledge_store=store)
        ws.write_sync("doc", "alpha topic")
        ws.write_sync("doc", "beta topic")
        assert store.search("alpha") == []
        assert [r.text for r in store.search("beta")] == ["beta topic"]

    def test_revert_reindexes(self) -> None:
        store = KnowledgeStore()
        ws = Workspace("w", knowledge_store=store)
        ws.write_sync("doc", "alpha topic")
        ws.write_sync("doc", "beta topic")
        ws.revert_to_version("doc", 0)
        assert [r.text for r in store.search("alpha")] == ["alpha topic"]
        assert store.search("beta") == []

    def test_delete_unindexes(self) -> None:
        store = KnowledgeStore()
        ws = Workspace("w", knowledge_store=store)
        ws.write_sync("doc", "alpha")
        ws.delete_sync("doc")
        assert store.search("alpha") == [] and "doc" not in store


def _chunks(text: str, chunk_size: int, chunk_overlap: int = 0) -> list[Chunk]:
    """The chunks a store cuts `text` into (`chunk_text` returns their texts only)."""
    return KnowledgeStore(chunk_size=chunk_size, chunk_overlap=chunk_overlap).add("d", text)


class TestChunking:
    def test_small_text_is_one_chunk(self) -> None:
        [chunk] = _chunks("hello world", chunk_size=100)
        assert (chunk.start, chunk.end, chunk.text) == (0, 11, "hello world")

    def test_empty_text_has_no_chunks(self) -> None:
        assert _chunks("", chunk_size=10) == []

    def test_prefers_paragraph_boundaries(self) -> None:
        text = "first paragraph here.\n\nsecond paragraph here.\n"
        chunks = _chunks(text, chunk_size=30)
        assert [c.text for c in chunks] == ["first paragraph here.\n\n", "second paragraph here.\n"]

    def test_windows_line_endings_count_as_boundaries(self) -> None:
        text = "para one\r\nline b\r\n\r\npara two\r\n"
        chunks = _chunks(text, chunk_size=15)
        assert [c.text for c in chunks] == ["para one\r\n", "line b\r\n\r\n", "para two\r\n"]

    def test_long_line_is_cut_between_words(self) -> None:
        chunks = _chunks("one two three four five six", chunk_size=10)
        assert [c.text for c in chunks] == ["one two ", "three ", "four five ", "six"]

    def test_word_longer_than_chunk_is_kept_whole(self) -> None:
        chunks = _chunks("a supercalifragilistic b", chunk_size=5)
        assert "supercalifragilistic " in [c.text for c in chunks]

    def test_overlap_repeats_trailing_lines(self) -> None:
        text = "line one\nline two\nline three\nline four\n"
        chunks = _chunks(text, chunk_size=22, chunk_overlap=11)
        assert [c.text for c in chunks] == [
            "line one\nline two\n",
            "line two\nline three\n",
            "line three\nline four\n",
        ]

    @pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1), (5, 7)])
    def test_bad_settings_are_refused(self, size: int, overlap: int) -> None:
        with pytest.raises(KnowledgeError):
            chunk_text("text", chunk_size=size, chunk_overlap=overlap)
        with pytest.raises(KnowledgeError):
            KnowledgeStore(chunk_size=size, chunk_overlap=overlap)


_texts = st.text(
    alphabet=st.sampled_from(list("abcdxyz.,é  \t\n\n\r\x0b\x1c\u00a0\u2028")), max_size=400
)


@st.composite
def _settings(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(1, 80))
    return size, draw(st.integers(0, size - 1))


class TestChunkingProperties:
    @settings(max_examples=300, deadline=None)
    @given(_texts, _settings())
    def test_chunks_are_slices_covering_the_text_in_order(
        self, text: str, sizes: tuple[int, int]
    ) -> None:
        chunks = _chunks(text, *sizes)
        assert all(c.text == text[c.start : c.end] and c.end > c.start for c in chunks)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        if not text:
            assert chunks == []
            return
        assert chunks[0].start == 0 and chunks[-1].end == len(text)
        for before, after in pairwise(chunks):
            assert before.start < after.start <= before.end < after.end
            assert before.end - after.start <= sizes[1]

    @settings(max_examples=300, deadline=None)
    @given(_texts, _settings())
    def test_chunks_never_split_a_word(self, text: str, sizes: tuple[int, int]) -> None:
        for chunk in _chunks(text, *sizes):
            for cut in (chunk.start, chunk.end):
                if 0 < cut < len(text):
                    assert text[cut - 1].isspace(), (cut, text)

    @settings(max_examples=300, deadline=None)
    @given(_texts, _settings())
    def test_only_single_words_exceed_the_size(self, text: str, sizes: tuple[int, int]) -> None:
        for chunk in _chunks(text, *sizes):
            if len(chunk.text) > sizes[0]:
                assert len(chunk.text.split()) <= 1

    @settings(max_examples=200, deadline=None)
    @given(_texts, st.integers(1, 80))
    def test_without_overlap_chunks_concatenate_to_the_text(self, text: str, size: int) -> None:
        assert "".join(c.text for c in _chunks(text, size, 0)) == text


def _term_count_ranking(docs: dict[str, str], query: str) -> list[str]:
    counts = {name: Counter(tokenize(text)) for name, text in docs.items()}
    score = {name: sum(c[t] for t in tokenize(query)) for name, c in counts.items()}
    return sorted(docs, key=lambda name: -score[name])


class TestBM25Ranking:
    corpus = {  # noqa: RUF012
        "python-intro": (
            "Python python python. Python is a language; python code, python scripts, "
            "python modules, python packages, python tools and python everywhere."
        ),
        "asyncio": "The asyncio event loop schedules coroutines in Python.",
        "typing": "Python type hints and the typing module.",
        "packaging": "Packaging Python projects with a pyproject file.",
        "testing": "Testing Python code with pytest fixtures.",
    }

    def _store(self, **kwargs: float) -> KnowledgeStore:
        store = KnowledgeStore(chunk_size=1000, chunk_overlap=0, **kwargs)  # type: ignore[arg-type]
        for name, text in self.corpus.items():
            store.add(name, text)
        return store

    def test_rare_term_outweighs_repeated_common_term(self) -> None:
        query = "python asyncio"
        assert _term_count_ranking(self.corpus, query)[0] == "python-intro"
        assert self._store().search(query)[0].name == "asyncio"

    def test_shorter_chunk_wins_at_equal_relevance(self) -> None:
        filler = " ".join(["storage layer notes about persistence and indexes"] * 4)
        docs = {
            "short": "cache invalidation notes",
            "long": f"cache {filler} the cache again {filler}",
            "other": "unrelated networking text",
        }
        assert _term_count_ranking(docs, "cache")[0] == "long"
        normalised, plain = KnowledgeStore(), KnowledgeStore(b=0.0)
        for store in (normalised, plain):
            for name, text in docs.items():
                store.add(name, text)
        assert normalised.search("cache")[0].name == "short"
        assert plain.search("cache")[0].name == "long"

    def test_scores_descend_and_top_k_limits(self) -> None:
        results = self._store().search("python", top_k=3)
        assert len(results) == 3
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)

    def test_matching_is_case_insensitive_and_ignores_punctuation(self) -> None:
        assert self._store().search("ASYNCIO!")[0].name == "asyncio"

    def test_no_shared_term_no_result(self) -> None:
        assert self._store().search("kubernetes") == []
        assert self._store().search("") == []

    @pytest.mark.parametrize("top_k", [0, -1, True])
    def test_bad_top_k_is_refused(self, top_k: int) -> None:
        with pytest.raises(KnowledgeError):
            self._store().search("python", top_k=top_k)


class TestKnowledgeStore:
    def test_add_replaces_previous_text(self) -> None:
        store = KnowledgeStore()
        store.add("doc", "old words")
        store.add("doc", "new words")
        assert store.search("old") == []
        assert [r.text for r in store.search("words")] == ["new words"]
        assert store.names() == ["doc"] and len(store) == 1

    def test_remove(self) -> None:
        store = KnowledgeStore()
        store.add("a", "shared term")
        store.add("b", "shared term too")
        assert store.remove("a") is True
        assert store.remove("a") is False
        assert [r.name for r in store.search("shared")] == ["b"]

    def test_results_carry_chunk_positions(self) -> None:
        store = KnowledgeStore(chunk_size=20, chunk_overlap=0)
        text = "intro paragraph.\n\nthe needle is here.\n"
        store.add("doc", text)
        [hit] = store.search("needle")
        assert text[hit.start : hit.end] == hit.text == "the needle is here.\n"
        assert hit.chunk_index == 1 == store.chunks("doc")[1].index

    def test_non_string_text_is_refused_and_store_unchanged(self) -> None:
        store = KnowledgeStore()
        store.add("doc", "kept")
        with pytest.raises(KnowledgeError):
            store.add("doc", None)  # type: ignore[arg-type]
        assert [r.text for r in store.search("kept")] == ["kept"]
