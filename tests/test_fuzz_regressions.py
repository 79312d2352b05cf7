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

import copy
import json
import os
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
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
from dagctx.nodes import node_types
from dagctx.nodes.base import Node
from dagctx.nodes.group import GroupNode
from dagctx.nodes.markdown import MarkdownSectionNode
from dagctx.nodes.mcp import MCPServerNode, MCPToolNode, ToolSpec

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
        conn.execute("UPDATE session_nodes SET data = json_set(data, '$.data.path', ?)", (target,))
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
            "UPDATE session_nodes SET data = json_set(data, '$.data.root', ?, '$.data.path',"
            " 'secret.txt')",
            (str(tmp_path),),
        )
        conn.commit()
        conn.close()
        with pytest.raises(CheckpointError, match="not under the session root"):
            Session.load(saved)  # was: the node read secret.txt under its own root


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
        s.tick()
        dicts = [node.to_dict() for node in s.nodes()]
    assert {d["type"] for d in dicts} >= set(node_types()) - {"probe"}
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
