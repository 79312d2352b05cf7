"""Regressions found by fuzzing and by the bad-input corpus, each kept as a test.

The fuzz targets at the end (``TestFuzz*``) run with a modest example count in the suite;
set ``DAGCTX_FUZZ_EXAMPLES`` (e.g. ``20000``) to run them as the fuzzer they were, for a
few minutes, locally:

    DAGCTX_FUZZ_EXAMPLES=20000 .venv/bin/pytest -q tests/test_fuzz_regressions.py -k Fuzz

Every input of a target must end in the documented way: a result, or a typed
:class:`~dagctx.errors.DagctxError` (a message string from a tool) — never another
exception, a hang, or a changed state.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import sqlite3
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from robust_support import examples, session_picture

from dagctx import (
    CheckpointError,
    CycleError,
    DagctxError,
    GraphError,
    NodeState,
    PathError,
    Session,
    TickFrequency,
)
from dagctx.capability import RawContext
from dagctx.checkpoint import Checkpoint, SQLiteCheckpointStore
from dagctx.context import Context
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.nodes import node_types
from dagctx.nodes.base import Node
from dagctx.nodes.group import GroupNode
from dagctx.nodes.markdown import MarkdownNode, MarkdownSectionNode
from dagctx.nodes.mcp import MCPServerNode, MCPToolNode, ToolSpec
from dagctx.session.file import expand_column
from dagctx.tokens import get_encoding
from dagctx.tools import Tool, get_context_tools, get_graph_tools

HUGE = 100 * 2**20


class TestTextRanges:
    """A line range is read in bounded pieces, whatever the file looks like."""

    @pytest.fixture
    def one_huge_line(self, tmp_path: Path) -> Path:
        """1,000 short lines, then 100 MB without a newline (a sparse file)."""
        path = tmp_path / "huge.txt"
        path.write_text("".join(f"line {i}\n" for i in range(1000)))
        os.truncate(path, HUGE)
        return tmp_path

    @pytest.mark.parametrize("lines", [(2000, 2001), (2000, None), (1000, 1001)])
    def test_a_range_past_an_enormous_line_never_holds_it(
        self, one_huge_line: Path, lines: tuple[int, int | None]
    ) -> None:
        with Session(one_huge_line, budget=2000) as s:
            tracemalloc.start()
            try:
                node = s.text("huge.txt", lines=lines)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 8 * 2**20  # was 212 MB: the 100 MB line was read whole
            assert node.lines[:1] in ([], ["line 999"])
            assert s.project().tokens <= 2000

    def test_lines_inside_the_range_are_exact(self, one_huge_line: Path) -> None:
        with Session(one_huge_line) as s:
            assert s.text("huge.txt", lines=(999, 1000)).lines == ["line 998", "line 999"]
            cut = s.text("huge.txt", lines=(1000, 1001))
            assert cut.lines == ["line 999"] and cut.notice is not None

    @pytest.mark.parametrize("start", [2**63, 10**30])
    def test_a_start_line_past_any_index_is_an_empty_range(
        self, tmp_path: Path, start: int
    ) -> None:
        (tmp_path / "a.txt").write_text("one\ntwo\n")
        with Session(tmp_path) as s:  # was ValueError from itertools.islice
            assert s.text("a.txt", lines=(start, None)).lines == []
            assert s.text("a.txt", lines=(1, start)).lines == ["one", "two"]


class TestNothingLeavesTheRoot:
    def test_a_file_swapped_for_a_symlink_out_of_the_root_is_not_read(self, tmp_path: Path) -> None:
        root = tmp_path / "root"
        root.mkdir()
        (tmp_path / "secret.txt").write_text("top secret\n")
        (root / "a.txt").write_text("harmless\n")
        with Session(root) as s:
            node = s.text("a.txt")
            (root / "a.txt").unlink()
            (root / "a.txt").symlink_to(tmp_path / "secret.txt")
            text = s.tick().projection.text
            assert "top secret" not in text
            assert node.placeholder == "[outside the session root, not shown]"

    @pytest.mark.parametrize("path", ["../secret.txt", "{outside}"])
    def test_a_tampered_session_file_cannot_read_outside_the_root(
        self, tmp_path: Path, path: str
    ) -> None:
        root = tmp_path / "root"
        root.mkdir()
        (tmp_path / "secret.txt").write_text("top secret\n")
        (root / "a.txt").write_text("harmless\n")
        with Session(root) as s:
            s.text("a.txt")
            saved = s.save()
        target = path.format(outside=tmp_path / "secret.txt")
        conn = sqlite3.connect(saved)
        conn.execute("UPDATE session_columns SET data = json_set(data, '$.path[0]', ?)", (target,))
        conn.commit()
        conn.close()
        with Session.load(saved) as loaded:
            assert "top secret" not in loaded.project().text
            assert loaded.get("text_1").render().endswith("[outside the session root, not shown]")

    def test_a_tampered_session_file_naming_another_root_is_refused(self, tmp_path: Path) -> None:
        root = tmp_path / "root"
        root.mkdir()
        (tmp_path / "secret.txt").write_text("top secret\n")
        (root / "a.txt").write_text("harmless\n")
        with Session(root) as s:
            s.text("a.txt")
            saved = s.save()
        conn = sqlite3.connect(saved)
        conn.execute(
            "UPDATE session_columns SET data = json_set(data, '$.root[0]', ?, '$.path[0]',"
            " 'secret.txt')",
            (str(tmp_path),),
        )
        conn.commit()
        conn.close()
        with pytest.raises(CheckpointError, match="not under the session root"):
            Session.load(saved)  # was: the node read secret.txt under its own root


class TestDamagedFiles:
    """Found by fuzzing damaged files: text that is not UTF-8, or a version that is not a
    number, raised UnicodeDecodeError / ValueError instead of CheckpointError."""

    def test_a_session_file_row_that_is_not_utf8(self, tmp_path: Path) -> None:
        with Session(tmp_path) as s:
            path = s.save(tmp_path / "s.db")
        conn = sqlite3.connect(path)
        conn.execute("UPDATE session_info SET value = CAST(x'80ff' AS TEXT) WHERE key = 'root'")
        conn.commit()
        conn.close()
        with pytest.raises(CheckpointError, match=r"s\.db"):
            Session.load(path)

    def test_a_checkpoint_row_that_is_not_utf8(self, tmp_path: Path) -> None:
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            store.save({"a": 1}, {})
        conn = sqlite3.connect(tmp_path / "cp.db")
        conn.execute("UPDATE context_checkpoints SET state_values = CAST(x'80' AS TEXT)")
        conn.commit()
        conn.close()
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            assert store.list_versions() == [1]
            with pytest.raises(CheckpointError, match=r"cp\.db"):
                store.get(1)

    def test_a_checkpoint_version_that_is_not_a_number(self, tmp_path: Path) -> None:
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            store.save({"a": 1}, {})
        conn = sqlite3.connect(tmp_path / "cp.db")
        conn.execute("UPDATE context_checkpoints SET version = 'x'")  # passes version >= 1
        conn.commit()
        conn.close()
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            for read in (store.list_versions, lambda: store.version):
                with pytest.raises(CheckpointError, match="version 'x'"):
                    read()  # was: ValueError from int()

    def test_json_constants_are_refused(self, tmp_path: Path) -> None:
        with Session(tmp_path) as s:
            s.context.state["x"] = 1.5
            path = s.save(tmp_path / "s.db")
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            store.save({"x": 1.5}, {})
        for db, statement in (
            (path, "UPDATE session_info SET value = replace(value, '1.5', 'Infinity')"),
            (tmp_path / "cp.db", "UPDATE context_checkpoints SET state_values = '{\"x\": NaN}'"),
        ):
            conn = sqlite3.connect(db)
            conn.execute(statement)
            conn.commit()
            conn.close()
        with pytest.raises(CheckpointError, match="Infinity is not JSON"):
            Session.load(path)  # was: a session that could not be saved again
        with (
            SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store,
            pytest.raises(CheckpointError, match="NaN is not JSON"),
        ):
            store.get(1)

    def test_a_row_other_than_the_one_the_index_names(self, tmp_path: Path) -> None:
        """The fuzzed case: the last byte of the file flipped; the index still finds the
        row of task 't', whose own task_id now reads 'u'."""
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            for n in range(3):
                store.save({"n": n, "text": "abc" * n}, {"input_tokens": n}, metadata={"n": n})
        data = bytearray(path.read_bytes())
        data[-1:] = b"u"
        path.write_bytes(bytes(data))
        with SQLiteCheckpointStore(path, "t") as store:
            for version in store.list_versions():
                try:
                    cp = store.get(version)
                except CheckpointError:
                    continue
                assert (cp.task_id, cp.version) == ("t", version)  # was: task 'u' came back

    def test_counts_past_sqlite_integers(self, tmp_path: Path) -> None:
        (tmp_path / "a.py").write_text("x = 1\n")
        with Session(tmp_path) as s:
            node = s.text("a.py")
            path = s.save(tmp_path / "s.db")
            node.version = 2**63  # as a tampered file could make it
            node.mark_changed("one more")
            with pytest.raises(CheckpointError, match="too large"):
                s.save(path)  # was: OverflowError, mid-transaction
        with Session.load(path) as loaded:  # the file is as it was
            assert loaded.get(node.id).version == 0
        conn = sqlite3.connect(path)
        conn.execute("UPDATE session_info SET value = '9223372036854775806' WHERE key = 'clock'")
        conn.commit()
        conn.close()
        with pytest.raises(CheckpointError, match="'clock'"):
            Session.load(path)  # every tick after it would have overflowed


class TestNodeDataIsChecked:
    """Found by fuzzing Node.from_dict: malformed data came back as a node that failed
    later, when rendered, ticked or saved."""

    @pytest.mark.parametrize(
        ("patch", "where"),
        [
            ({"frequency": True}, None),
            ({"tags": "abc"}, None),
            ({"tags": [1]}, None),
            ({"mode": "sleeping"}, None),
            ({"version": -1}, None),
            ({"version": "3"}, None),
            ({"priority": True}, None),
            ({"created_at": float("nan")}, None),
            ({"id": 7}, None),
            ({"data": [1]}, None),
            ({"title": [None]}, "data"),
        ],
    )
    def test_malformed_group_data_is_refused(
        self, patch: dict[str, Any], where: str | None
    ) -> None:
        raw = GroupNode("g", id="group_1").to_dict()
        (raw[where] if where else raw).update(patch)
        with pytest.raises(GraphError, match="malformed group node data"):
            Node.from_dict(raw)

    def test_a_section_without_a_document_path_is_refused(self) -> None:
        raw = MarkdownSectionNode("d.md", (("A", 0),), 2, "A", ["x"], id="s_1").to_dict()
        raw["data"]["doc_path"] = None
        with pytest.raises(GraphError, match="markdown_section"):
            Node.from_dict(raw)  # was: a TypeError when the section was rendered

    def test_good_data_still_round_trips(self) -> None:
        node = GroupNode("g", id="group_1", priority=3, tags=["x"])
        again = Node.from_dict(json.loads(json.dumps(node.to_dict())))
        assert again.to_dict() == node.to_dict()


class TestPathsTheOsRefuses:
    """Lookups the OS refuses (loops, names too long, NUL bytes) are typed errors."""

    def test_symlink_loops_and_long_names_are_path_errors(self, tmp_path: Path) -> None:
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        with Session(tmp_path) as s:
            for path in ("a", "b/c", "x" * 300, "/".join(["d"] * 3000)):
                with pytest.raises(PathError):
                    s.text(path)  # was RuntimeError / OSError
                with pytest.raises(PathError):
                    s.lock(path)
            assert s.nodes() == []

    def test_a_root_the_os_refuses_is_a_path_error(self, tmp_path: Path) -> None:
        with pytest.raises(PathError, match="cannot be used"):
            Session(tmp_path / ("x" * 300))

    @pytest.mark.parametrize("name", ["x" * 300, "a\x00b.db"])
    def test_session_files_with_names_the_os_refuses(self, tmp_path: Path, name: str) -> None:
        with Session(tmp_path) as s:
            with pytest.raises(CheckpointError):
                s.save(tmp_path / name)  # was ValueError for a NUL byte
            with pytest.raises(CheckpointError):
                Session.load(tmp_path / name)  # was OSError for a long name


class TestGroupUnderItsMember:
    def test_a_group_that_would_close_a_cycle_is_not_added_at_all(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("a\n")
        with Session(tmp_path) as s:
            a = s.text("a.txt")
            g = s.group(a, title="outer")
            before = session_picture(s)
            for member, parent in ((g, g), (a, a), (g, a)):
                with pytest.raises(CycleError, match="cycle"):
                    s.group(member, parent=parent)  # was: the group stayed, half linked
                assert session_picture(s) == before


class TestRestoreKeepsTheSessionWhole:
    """Found by the session model test (tests/test_robust_model.py)."""

    def test_a_root_that_comes_back_is_projected_again(self, tmp_path: Path) -> None:
        with Session(tmp_path, budget=10_000) as s:
            inner = s.group(title="inner")
            s.checkpoint("one")
            before = s.project().text
            outer = s.group(inner, title="outer")
            s.tick()
            assert s.restore("one") == [outer.id]
            p = s.project()  # was: the cached layout still had only "outer" as a root
            assert [x.node_id for x in p.sections] == [inner.id, outer.id]
            assert p.text.startswith(before.rstrip("\n"))

    def test_a_restored_text_node_hears_of_file_changes(self, tmp_path: Path) -> None:
        (tmp_path / "a.py").write_text("a = 1\n")
        with Session(tmp_path) as s:
            node = s.text("a.py", frequency=TickFrequency.never())  # only file_changed
            s.checkpoint("one")
            s.remove(node)
            s.restore("one")
            (tmp_path / "a.py").write_text("a = 2\n")
            s.file_changed("a.py")  # was: the restored node had left the path index
            assert s.tick().recomputed == [node.id]
            assert node.lines == ["a = 2"]


# -- fuzz targets ------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()  # NaN and infinities too: json.loads reads them from a session file
    | st.text(max_size=12)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FUZZ = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@st.composite
def mutated(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    """``original`` (a to_dict-like mapping) with 1-3 keys replaced, deleted or added, at
    the top level or one level down."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        target = data
        nested = [k for k, v in data.items() if isinstance(v, dict)]
        if nested and draw(st.booleans()):
            target = data[draw(st.sampled_from(nested))]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        keys = list(target)
        if action == "add" or not keys:
            target[draw(st.text(max_size=6))] = draw(JSON)
        elif action == "delete":
            del target[draw(st.sampled_from(keys))]
        else:
            target[draw(st.sampled_from(keys))] = draw(JSON)
    return data


def usable(node: Node) -> None:
    """A node that from_dict returned must render, label and serialize, and project."""
    for state in NodeState:
        assert isinstance(node.render(state), str)
    assert isinstance(node.label(), str)
    json.dumps(node.to_dict())


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The to_dict of a node of every registered type, from a real session."""
    root = tmp_path_factory.mktemp("samples")
    (root / "a.py").write_text("def f():\n    return 1\n")
    (root / "notes.md").write_text("# Notes\n\nintro\n\n## Plan\n\n- one\n")
    with Session(root) as s:
        s.text("a.py", lines=(1, 1))
        s.group(s.text("a.py"), title="g")
        topic = s.topic("t")
        s.message("user", "hi", topic=topic)
        s.message("tool_call", "{}", tool_call_id="c1", name="read")
        s.message("tool_result", "ok", tool_call_id="c1", name="read")
        s.artifact("x = 1", language="python", title="snippet")
        s.markdown("notes.md")
        s.wait(s.shell("echo", ["hi"]), timeout=30)
        s.wait(s.lock("a.py"), timeout=30)
        s.work_on("fix", "a.py")
        s.capability(RawContext("FUZZ_TYPE", {"items": [1, 2]}), "k")
        server = MCPServerNode("fx", command=["fx-server"])
        s.add(server)
        server.set_status("disconnected")
        s.add(MCPToolNode("fx", ToolSpec("add", "adds", input_schema={})), parent=server)
        s.session_node()
        s.focus("fix a.py")
        s.tick()
        dicts = [node.to_dict() for node in s.nodes()]
    # Types registered by test or benchmark modules (imported by other tests) are not the
    # library's; only dagctx's own must all be here.
    own = {name for name, cls in node_types().items() if cls.__module__.startswith("dagctx.")}
    assert {d["type"] for d in dicts} >= own
    return dicts


class TestFuzzNodeFromDict:
    @FUZZ
    @given(data=st.data())
    def test_a_node_comes_back_usable_or_the_data_is_refused(
        self, samples: list[dict[str, Any]], data: st.DataObject
    ) -> None:
        raw = data.draw(mutated(data.draw(st.sampled_from(samples))))
        try:
            node = Node.from_dict(raw)
        except DagctxError:
            return
        usable(node)


GOOD_CHECKPOINT = {
    "task_id": "t",
    "version": 2,
    "values": {"a": [1, {"b": None}], "c": "text"},
    "token_usage": {"input_tokens": 5},
    "metadata": {"why": "fuzz"},
    "created_at": "2024-01-01T00:00:00+00:00",
}


class TestFuzzCheckpointFromDict:
    @FUZZ
    @given(raw=st.one_of(JSON, mutated(GOOD_CHECKPOINT)))
    def test_a_checkpoint_that_round_trips_or_a_checkpoint_error(self, raw: Any) -> None:
        try:
            cp = Checkpoint.from_dict(raw)
        except CheckpointError:
            return
        assert Checkpoint.from_dict(cp.to_dict()) == cp
        restored = Context.restore(cp)
        assert restored.state.to_dict() == cp.values
        assert restored.token_usage == cp.token_usage


@pytest.fixture(scope="module")
def saved_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small saved session (text, group, conversation, checkpoints, context state)."""
    root = tmp_path_factory.mktemp("saved")
    (root / "a.py").write_text("def f():\n    return 1\n")
    (root / "b.md").write_text("# B\n\ntext\n")
    with Session(root, budget=500) as s:
        a = s.text("a.py")
        s.group(a, s.text("b.md", lines=(1, 2)), title="g")
        s.checkpoint("one")
        s.topic("t")
        s.message("tool_call", "{}", tool_call_id="c1", name="read")
        s.message("tool_result", "ok", tool_call_id="c1", name="read")
        s.tick()
        s.context.state.update(goal="x", items=[1, 2])
        s.context.snapshot()
        s.checkpoint("two")
        path = s.save(root / "session.db")
    return root, path


def check_loaded(path: Path, root: Path) -> None:
    """Load ``path``: a CheckpointError, or a session that keeps the graph's invariants,
    ticks, projects within budget and saves again."""
    try:
        s = Session.load(path, root=root)
    except CheckpointError as exc:
        event(f"refused: {str(exc).split(':')[0][:40]}")
        return
    event("loaded")
    with s:
        g = s.graph
        assert nx.is_directed_acyclic_graph(g._adj.digraph)
        assert [n.id for n in g.roots()] == [n.id for n in g if not g.parents(n)] or {
            n.id for n in g.roots()
        } == {n.id for n in g if not g.parents(n)}
        p = s.tick().projection
        assert len(get_encoding().encode_ordinary(p.text)) == p.tokens <= s.budget
        for name in s.checkpoints():
            s.restore(name)
        assert s.project().tokens <= s.budget
        try:
            s.save(path.with_name("again.db"))
        except CheckpointError as exc:  # a tampered count past SQLite's 64-bit integers
            assert "too large" in str(exc)
            event("saved again: count too large")


class TestFuzzSessionLoad:
    @FUZZ
    @given(
        edits=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=8)), max_size=4),
        cut=st.none() | st.floats(0, 1),
    )
    def test_a_damaged_file_loads_whole_or_raises(
        self,
        saved_session: tuple[Path, Path],
        tmp_path_factory: pytest.TempPathFactory,
        edits: list[tuple[float, bytes]],
        cut: float | None,
    ) -> None:
        root, path = saved_session
        data = bytearray(path.read_bytes())
        for where, patch in edits:
            at = int(where * (len(data) - len(patch)))
            data[at : at + len(patch)] = patch
        if cut is not None:
            del data[int(cut * len(data)) :]
        damaged = tmp_path_factory.mktemp("damaged") / "session.db"
        damaged.write_bytes(bytes(data))
        check_loaded(damaged, root)

    @FUZZ
    @given(data=st.data())
    def test_a_tampered_row_loads_whole_or_raises(
        self,
        saved_session: tuple[Path, Path],
        tmp_path_factory: pytest.TempPathFactory,
        data: st.DataObject,
    ) -> None:
        root, path = saved_session
        tampered = tmp_path_factory.mktemp("tampered") / "session.db"
        tampered.write_bytes(path.read_bytes())
        conn = sqlite3.connect(tampered)
        try:
            for _ in range(data.draw(st.integers(1, 3))):
                tamper_one(conn, data)
            conn.commit()
        finally:
            conn.close()
        check_loaded(tampered, root)

    def test_a_row_edited_by_hand_is_counted_again(
        self, saved_session: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """A message row whose content was edited (here: its tool name taken out) keeps
        its saved token counts and version; they were taken back and the projection said
        77 tokens for a text of 76 (found by the test above). The counts are for the row
        they were made from, so this one is counted again."""
        root, path = saved_session
        edited = tmp_path_factory.mktemp("edited") / "session.db"
        edited.write_bytes(path.read_bytes())
        with contextlib.closing(sqlite3.connect(edited)) as conn, conn:
            found = 0
            for rowid, raw in conn.execute("SELECT rowid, data FROM session_nodes").fetchall():
                row = json.loads(raw)
                if row.get("type") == "message" and "name" in row["data"] and "tokens" in row:
                    del row["data"]["name"]
                    conn.execute(
                        "UPDATE session_nodes SET data = ? WHERE rowid = ?",
                        (json.dumps(row), rowid),
                    )
                    found += 1
            assert found
        with Session.load(edited, root=root) as s:
            p = s.tick().projection
            assert len(get_encoding().encode_ordinary(p.text)) == p.tokens <= s.budget

    def test_a_column_block_edited_by_hand_is_counted_again(self, tmp_path: Path) -> None:
        """A text node saved as columns whose line range was edited in session.db (lines
        1-30 to 1-5, its version and counts kept) loaded with the counts of 30 lines: the
        projection said 197 tokens for a text of 47 (an edit the other way would say fewer
        than the text has). The file's digest of what was counted no longer matches, so
        every node is counted again."""
        root = tmp_path / "tree"
        root.mkdir()
        (root / "a.py").write_text("".join(f"line {i} of a\n" for i in range(40)))
        with Session(root, budget=100_000) as s:
            s.text("a.py", lines=(1, 30))
            s.tick()
            path = s.save(tmp_path / "session.db")
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            ((raw,),) = conn.execute("SELECT data FROM session_columns WHERE type = 'text'")
            block = json.loads(raw)
            assert expand_column(block["end_line"], 1) == [30]
            block["end_line"] = [5]
            conn.execute(
                "UPDATE session_columns SET data = ? WHERE type = 'text'", (json.dumps(block),)
            )
        with Session.load(path, root=root) as s:
            p = s.tick().projection
            assert "line 4 of a" in p.text and "line 5 of a" not in p.text
            assert len(get_encoding().encode_ordinary(p.text)) == p.tokens


def tamper_one(conn: sqlite3.Connection, data: st.DataObject) -> None:
    """Change one column of one row (or delete the row): to another JSON value inside a
    JSON column, or to any SQLite value."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    table = data.draw(st.sampled_from(tables))
    rows = conn.execute(f"SELECT rowid, * FROM {table}").fetchall()
    if not rows:
        return
    row = data.draw(st.sampled_from(rows))
    columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
    if data.draw(st.integers(0, 9)) == 0:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
        return
    index = data.draw(st.integers(0, len(columns) - 1))
    old = row[index + 1]
    if isinstance(old, str) and old.startswith(("{", "[")) and data.draw(st.booleans()):
        value: Any = json.loads(old)
        if isinstance(value, dict) and value:
            value = data.draw(mutated(value))
        new: Any = json.dumps(value)
    else:
        new = data.draw(
            st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=10)
            | st.binary(max_size=10) | JSON.map(json.dumps)
        )  # fmt: skip
    with contextlib.suppress(sqlite3.IntegrityError):  # the schema refused it: no change
        conn.execute(f"UPDATE {table} SET {columns[index]} = ? WHERE rowid = ?", (new, row[0]))


class TestFuzzCheckpointStoreFile:
    @FUZZ
    @given(
        edits=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=8)), max_size=4)
    )
    def test_a_damaged_store_gives_checkpoints_or_checkpoint_errors(
        self, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[float, bytes]]
    ) -> None:
        path = tmp_path_factory.mktemp("store") / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            for n in range(3):
                store.save({"n": n, "text": "abc" * n}, {"input_tokens": n}, metadata={"n": n})
        data = bytearray(path.read_bytes())
        for where, patch in edits:
            at = int(where * (len(data) - len(patch)))
            data[at : at + len(patch)] = patch
        path.write_bytes(bytes(data))
        try:
            with SQLiteCheckpointStore(path, "t") as store:
                for version in store.list_versions():
                    try:
                        assert store.get(version).task_id == "t"
                    except CheckpointError:
                        event("a corrupt checkpoint")
        except CheckpointError:
            event("refused")


MARKDOWN_LINES = st.one_of(
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), st.sampled_from(["A", "B", "A"])),
    st.sampled_from(
        ["", "", "text", "===", "---", "```", "~~~", "    # indented", "> # quoted", "- # item",
         "#", "#no-space", "<div>", "# A #", "  ## B", "\\# escaped", "* * *", "| a | b |"]
    ),
    st.text(alphabet="#=-`>* \tab\\", max_size=12),
)  # fmt: skip
MARKDOWN = st.lists(MARKDOWN_LINES, max_size=25).map("\n".join)


def outline(node: MarkdownNode) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """(depth, level, heading, body) of every section below ``node``, in document order."""
    out: list[tuple[int, int, str, tuple[str, ...]]] = []

    def walk(parent: Node, depth: int) -> None:
        for child in parent.children:
            if isinstance(child, MarkdownSectionNode):
                out.append((depth, child.level, child.heading, tuple(child.body)))
                walk(child, depth + 1)

    walk(node, 0)
    return out


class TestFuzzMarkdown:
    @FUZZ
    @given(texts=st.lists(MARKDOWN, min_size=2, max_size=4), budget=st.integers(1, 3000))
    def test_an_edited_document_equals_one_parsed_from_scratch(
        self, tmp_path_factory: pytest.TempPathFactory, texts: list[str], budget: int
    ) -> None:
        root = tmp_path_factory.mktemp("md")
        path = root / "doc.md"
        path.write_text(texts[0])
        with Session(root, budget=budget) as s:
            doc = s.markdown("doc.md")
            s.tick()
            for n, text in enumerate(texts[1:], start=1):
                path.write_text(text)
                os.utime(path, ns=(n * 10**17, n * 10**17))  # a new mtime, however coarse
                s.file_changed("doc.md")
                p = s.tick().projection
                assert len(get_encoding().encode_ordinary(p.text)) == p.tokens <= budget
                with Session(root, budget=budget) as fresh:
                    scratch = fresh.markdown("doc.md")
                    assert outline(doc) == outline(scratch)
                    assert doc.render(NodeState.ALL) == scratch.render(NodeState.ALL).replace(
                        f"#{scratch.id}", f"#{doc.id}"
                    )
                assert len(s.nodes()) == 1 + len(doc.sections)  # no section left behind


HOSTILE_STRINGS = st.sampled_from(
    ["", " ", "../x", "/etc/hostname", "a\x00b", "x" * 300, "a.py", "notes", "text_1",
     "group_1", "ALL", "hidden", "(a|aa)+$", "[", "one", "\udcff", "é" * 50]
)  # fmt: skip
ARGUMENT_VALUES = st.one_of(
    JSON,
    HOSTILE_STRINGS,
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, 1, -1, 2**63, 10**30]),
    st.floats(),
    st.lists(HOSTILE_STRINGS, max_size=3),
)


TYPED = {
    "string": HOSTILE_STRINGS | st.text(max_size=20),
    "integer": st.integers(-5, 50) | st.sampled_from([2**63, 10**30, -(10**30)]),
    "number": st.floats(allow_nan=True) | st.integers(-5, 50),
    "array": st.lists(HOSTILE_STRINGS, max_size=3),
}


def json_type(schema: dict[str, Any]) -> str:
    """The (first non-null) JSON type a parameter schema accepts."""
    kinds = [m["type"] for m in schema["anyOf"]] if "anyOf" in schema else schema["type"]
    return kinds if isinstance(kinds, str) else next(k for k in kinds if k != "null")


@pytest.fixture(scope="module")
def tool_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Tool[Any]]]:
    """Every tool, bound: graph tools to a session, context tools to a context."""
    root = tmp_path_factory.mktemp("tools")
    (root / "a.py").write_text("def f():\n    return 1\n" * 20)
    knowledge = KnowledgeStore()
    workspace = Workspace("ws", knowledge_store=knowledge)
    workspace.write_sync("notes", "alpha beta\ngamma delta aaaa\n" * 10)
    ctx = Context("tools")
    ctx.state.update(working_dir=str(root), workspace=workspace, knowledge_store=knowledge)
    with Session(root, budget=2000) as s:
        s.group(s.text("a.py"), title="g")
        s.checkpoint("one")
        tools: dict[str, Tool[Any]] = {t.name: t.bind(s) for t in get_graph_tools()}
        tools.update({t.name: t.bind(ctx) for t in get_context_tools()})
        yield tools


class TestFuzzToolArguments:
    @FUZZ
    @given(data=st.data())
    def test_any_arguments_give_a_message_never_an_exception(
        self, tool_world: dict[str, Tool[Any]], data: st.DataObject
    ) -> None:
        tool = tool_world[data.draw(st.sampled_from(sorted(tool_world)))]
        properties = tool.parameters["properties"]
        if data.draw(st.booleans()):  # values of the right JSON type (the tool runs)
            kwargs = {
                name: data.draw(TYPED[json_type(schema)])
                for name, schema in properties.items()
                if name in tool.parameters["required"] or data.draw(st.booleans())
            }
        else:
            names = st.sampled_from([*properties, "bogus"])
            kwargs = data.draw(st.dictionaries(names, ARGUMENT_VALUES, max_size=4))
        problem = tool.check_arguments(kwargs)
        event(f"{tool.name}: {'valid' if problem is None else 'invalid'} arguments")
        assert problem is None or problem.startswith(f"Invalid arguments for {tool.name}: ")
        if tool.name == "run_shell":
            return  # random programs are not run; their arguments are checked above
        reply = asyncio.run(tool.execute(**kwargs))
        assert isinstance(reply, str) and reply
        if problem is not None:
            assert reply == problem
        session = tool_world["list_nodes"].target
        assert session is not None and session.project().tokens <= session.budget
