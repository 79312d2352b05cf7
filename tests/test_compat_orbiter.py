"""Code written against orbiter's ``orbiter.context`` keeps working.

Each test follows orbiter's documented behaviour (``packages/orbiter-context`` of
``hazel-core/orbiter-ai``: docstrings and its own tests); the deliberate differences are
listed in the README's "Coming from orbiter / osprey".
"""

from __future__ import annotations

import asyncio
from collections.abc import KeysView
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.context import ContextState, make_config
from dagctx.knowledge import (
    Artifact,
    ArtifactNotFoundError,
    ArtifactType,
    ArtifactVersion,
    Chunk,
    KnowledgeError,
    KnowledgeStore,
    SearchResult,
    Workspace,
    chunk_text,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TestContextStateKeys:
    """Item 11: ``keys()`` is a keys view: set semantics, deterministic order."""

    def test_keys_compare_as_a_set(self) -> None:
        state = ContextState({"b": 2, "a": 1})
        assert state.keys() == {"a", "b"}
        assert isinstance(state.keys(), KeysView)

    def test_set_operations_work_across_the_parent_chain(self) -> None:
        parent = ContextState({"p": 1, "shared": 0})
        child = ContextState({"c": 1, "shared": 1}, parent=parent)
        assert child.keys() & {"p", "zzz"} == {"p"}
        assert child.keys() - parent.keys() == {"c"}
        assert child.keys() | {"x"} == {"c", "shared", "p", "x"}

    def test_the_view_is_live_and_iterates_in_spec_order(self) -> None:
        parent = ContextState({"p": 1})
        child = ContextState({"z": 1, "a": 2}, parent=parent)
        keys = child.keys()
        child["m"] = 3
        assert list(keys) == ["z", "a", "m", "p"]
        assert len(keys) == 4 and "p" in keys


class TestMakeConfigPresets:
    """Item 12: orbiter's presets, and ``make_config()`` defaulting to copilot."""

    def test_pilot_offloads_at_100(self) -> None:
        pilot = make_config("pilot")
        assert (pilot.history_rounds, pilot.summary_threshold, pilot.offload_threshold) == (
            100,
            100,
            100,
        )
        assert pilot.enable_retrieval is False

    def test_copilot_and_navigator(self) -> None:
        copilot, navigator = make_config("copilot"), make_config("navigator")
        assert (copilot.history_rounds, copilot.summary_threshold, copilot.offload_threshold) == (
            20,
            10,
            50,
        )
        assert (navigator.summary_threshold, navigator.offload_threshold) == (5, 20)
        assert navigator.enable_retrieval is True

    def test_the_default_mode_is_copilot(self) -> None:
        assert make_config() == make_config("copilot")
        assert make_config(history_rounds=3).history_rounds == 3


@pytest.mark.anyio
class TestAsyncWorkspace:
    """Item 6: ``await ws.write(...)`` / ``await ws.delete(...)``, with blocking twins."""

    async def test_write_and_delete_are_awaited(self) -> None:
        ws = Workspace("ws-1")
        artifact = await ws.write("readme", "# Hello")
        assert isinstance(artifact, Artifact)
        assert (artifact.name, artifact.content, artifact.version_count) == ("readme", "# Hello", 1)
        assert ws.read("readme") == "# Hello"
        assert await ws.delete("readme") is True
        assert await ws.delete("readme") is False
        assert len(ws) == 0

    async def test_the_blocking_twins_refuse_to_run_observers_on_a_running_loop(self) -> None:
        ws = Workspace("ws")
        ws.write_sync("quiet", "no observers, so the twin works here")
        seen: list[str] = []

        async def handler(event: str, artifact: Artifact) -> None:
            seen.append(event)

        ws.on("on_create", handler)
        with pytest.raises(KnowledgeError, match=r"await ws\.write"):
            ws.write_sync("loud", "x")
        assert "loud" not in ws and seen == []

    def test_the_blocking_twins_run_async_observers_off_the_loop(self) -> None:
        seen: list[tuple[str, str]] = []

        async def handler(event: str, artifact: Artifact) -> None:
            await asyncio.sleep(0)
            seen.append((event, artifact.content))

        def plain(event: str, artifact: Artifact) -> None:
            seen.append(("plain " + event, artifact.content))

        ws = Workspace("ws").on("on_create", handler).on("on_update", plain)
        ws.on("on_delete", handler)
        ws.write_sync("f", "v1")
        ws.write_sync("f", "v2")
        assert ws.delete_sync("f") is True
        assert seen == [("on_create", "v1"), ("plain on_update", "v2"), ("on_delete", "v2")]


@pytest.mark.anyio
class TestRevertIsZeroBased:
    """Item 7: ``revert_to_version(name, i)`` restores ``version_history(name)[i]``."""

    async def test_revert_to_the_first_version(self) -> None:
        ws = Workspace("ws")
        for content in ("v1", "v2", "v3"):
            await ws.write("f", content)
        artifact = ws.revert_to_version("f", 0)
        assert ws.read("f") == "v1" == artifact.content
        assert ws.get("f").version_count == 4  # type: ignore[union-attr]
        ws.revert_to_version("f", 1)
        assert ws.read("f") == "v2"

    async def test_out_of_range_and_missing_raise(self) -> None:
        ws = Workspace("ws")
        await ws.write("f", "v1")
        for bad in (1, 5, -1):
            with pytest.raises(KnowledgeError, match=r"indexes 0\.\.0"):
                ws.revert_to_version("f", bad)
        with pytest.raises(ArtifactNotFoundError, match="missing"):
            ws.revert_to_version("missing", 0)
        assert ws.version_history("f")[0].content == "v1" and len(ws.version_history("f")) == 1

    async def test_revert_persists(self, tmp_path: Path) -> None:
        ws = Workspace("ws", storage_path=tmp_path)
        await ws.write("file", "one")
        await ws.write("file", "two")
        ws.revert_to_version("file", 0)
        assert Workspace("ws", storage_path=tmp_path).read("file") == "one"


class TestMissingNames:
    """Item 8: reads of a missing name answer ``None`` / ``[]``."""

    def test_read_and_history_of_a_missing_name(self) -> None:
        ws = Workspace("ws")
        assert ws.read("missing") is None
        assert ws.read("missing", version=1) is None
        assert ws.get("missing") is None
        assert ws.version_history("missing") == []


@pytest.mark.anyio
class TestArtifactsAndObservers:
    """Item 9: artifact types, observers, ``version_count``, ``ArtifactVersion``, ``list()``."""

    def test_artifact_version_is_built_from_content_and_timestamp(self) -> None:
        version = ArtifactVersion("hello", timestamp=1000.0)
        assert (version.content, version.timestamp, version.created_at) == ("hello", 1000.0, 1000.0)
        assert ArtifactVersion("data").timestamp > 0
        assert ArtifactVersion("data", None).timestamp > 0  # type: ignore[arg-type]

    async def test_types_and_filtered_listing(self) -> None:
        ws = Workspace("ws")
        await ws.write("code.py", "print(1)", artifact_type=ArtifactType.CODE)
        await ws.write("notes", "text")
        assert len(ws.list()) == 2
        [code] = ws.list(artifact_type=ArtifactType.CODE)
        assert (code.name, code.artifact_type) == ("code.py", ArtifactType.CODE)
        assert ws.get("notes").artifact_type is ArtifactType.TEXT  # type: ignore[union-attr]
        assert ws.list(artifact_type="markdown") == []
        with pytest.raises(KnowledgeError, match="unknown artifact type 'pdf'"):
            await ws.write("x", "y", artifact_type="pdf")
        assert "x" not in ws

    async def test_an_update_keeps_the_type_unless_given(self) -> None:
        ws = Workspace("ws")
        await ws.write("data", "{}", artifact_type=ArtifactType.JSON)
        assert (await ws.write("data", "[]")).artifact_type is ArtifactType.JSON
        assert (
            await ws.write("data", "a,b", artifact_type="csv")
        ).artifact_type is ArtifactType.CSV

    async def test_version_count_and_versions(self) -> None:
        ws = Workspace("ws")
        await ws.write("file", "v1")
        artifact = await ws.write("file", "v2")
        assert artifact.version_count == 2
        assert [v.content for v in artifact.versions] == ["v1", "v2"]

    async def test_observers_fire_per_event_in_order_and_chain(self) -> None:
        events: list[tuple[str, str, int]] = []

        async def first(event: str, artifact: Artifact) -> None:
            events.append((event, artifact.name, 1))

        async def second(event: str, artifact: Artifact) -> None:
            events.append((event, artifact.name, 2))

        ws = Workspace("ws")
        assert ws.on("on_create", first).on("on_create", second) is ws
        ws.on("on_update", first).on("on_delete", first)
        await ws.write("file", "v1")
        await ws.write("file", "v2")
        await ws.delete("file")
        await ws.delete("file")
        assert events == [
            ("on_create", "file", 1),
            ("on_create", "file", 2),
            ("on_update", "file", 1),
            ("on_delete", "file", 1),
        ]

    def test_an_unknown_event_is_refused(self) -> None:
        with pytest.raises(KnowledgeError, match="unknown workspace event 'on_write'"):
            Workspace("ws").on("on_write", lambda event, artifact: None)

    async def test_types_survive_a_reload(self, tmp_path: Path) -> None:
        await Workspace("ws", tmp_path).write("p.md", "# t", artifact_type=ArtifactType.MARKDOWN)
        again = Workspace("ws", tmp_path).get("p.md")
        assert again is not None and again.artifact_type is ArtifactType.MARKDOWN

    def test_repr(self) -> None:
        assert repr(Workspace("ws-3")) == "Workspace(id='ws-3', artifacts=0)"


class TestKnowledgeShapes:
    """Item 10: orbiter's ``chunk_text``, ``SearchResult.chunk``, ``get``, defaults."""

    def test_chunk_text_returns_strings_with_orbiters_defaults(self) -> None:
        assert chunk_text("hello world", chunk_size=100) == ["hello world"]
        assert chunk_text("") == []
        words = " ".join(f"w{i:03}" for i in range(300))
        pieces = chunk_text(words)
        assert all(isinstance(p, str) and len(p) <= 512 for p in pieces)
        assert len(pieces) > 1 and pieces[0] == words[: len(pieces[0])]

    @pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
    def test_bad_settings_raise_knowledge_error(self, size: int, overlap: int) -> None:
        with pytest.raises(KnowledgeError):
            chunk_text("hello", chunk_size=size, chunk_overlap=overlap)

    def test_store_defaults_are_512_and_64(self) -> None:
        store = KnowledgeStore()
        assert (store.chunk_size, store.chunk_overlap) == (512, 64)

    def test_search_results_carry_their_chunk(self) -> None:
        store = KnowledgeStore(chunk_size=40, chunk_overlap=0)
        store.add("doc1", "Python is a programming language.\n\nRust is fast too.\n")
        store.add("doc2", "Cooking pasta takes ten minutes.")
        [hit] = store.search("python", top_k=5)
        assert isinstance(hit, SearchResult) and isinstance(hit.chunk, Chunk)
        assert hit.chunk.artifact_name == "doc1" == hit.name
        assert "Python" in hit.chunk.content and hit.score > 0

    def test_get_get_range_and_introspection(self) -> None:
        store = KnowledgeStore(chunk_size=20, chunk_overlap=0)
        text = "alpha beta gamma\ndelta epsilon\nzeta eta theta\n"
        chunks = store.add("doc1", text)
        assert store.get("doc1") == chunks and store.get("nope") == []
        assert all(text[c.start : c.end] == c.content for c in chunks)
        second = chunks[1]
        assert store.get_range("doc1", second.start, second.start + 1) == [second]
        assert store.get_range("doc1", 0, len(text)) == chunks
        assert store.get_range("nope", 0, 100) == []
        store.add("doc2", "more")
        assert set(store.artifact_names) == {"doc1", "doc2"}
        assert store.total_chunks() == len(chunks) + 1
        assert "artifacts=2" in repr(store)

    def test_an_empty_artifact_name_is_refused(self) -> None:
        store = KnowledgeStore()
        with pytest.raises(KnowledgeError, match="non-empty"):
            store.add("", "content")
        assert len(store) == 0 and store.total_chunks() == 0

    def test_ranking_stays_bm25(self) -> None:
        store = KnowledgeStore(chunk_size=1000, chunk_overlap=0)
        store.add("common", "python " * 30 + "tutorial")
        store.add("rare", "python asyncio event loop")
        for name in ("a", "b", "c"):
            store.add(name, f"python notes {name}")
        assert store.search("python asyncio")[0].name == "rare"

    @settings(max_examples=200, deadline=None)
    @given(st.text(alphabet="ab \n", max_size=300), st.integers(1, 60), st.data())
    def test_chunk_text_is_the_texts_of_the_store_chunks(
        self, text: str, size: int, data: st.DataObject
    ) -> None:
        overlap = data.draw(st.integers(0, size - 1))
        pieces = chunk_text(text, chunk_size=size, chunk_overlap=overlap)
        store = KnowledgeStore(chunk_size=size, chunk_overlap=overlap)
        assert pieces == [c.text for c in store.add("d", text)]
