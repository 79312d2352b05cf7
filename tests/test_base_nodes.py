"""TextNode and GroupNode: rendering at each state, placeholders, serialization."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dagctx import GraphError, GroupNode, Node, NodeState, Session, TextNode, TickFrequency
from dagctx.nodes import node_types
from dagctx.nodes import text as text_module


class TestTextNode:
    def test_each_state_renders_differently(self, project: Path) -> None:
        node = TextNode("src/auth.py", root=project)
        renders = {s: node.render(s) for s in NodeState}
        assert renders[NodeState.HIDDEN] == ""
        assert renders[NodeState.COLLAPSED] == "- src/auth.py (6 lines)"
        assert "def login(user):" in renders[NodeState.SUMMARY]  # outline of definitions
        assert "return check(user)" not in renders[NodeState.SUMMARY]
        assert "```python\ndef login(user):" in renders[NodeState.DETAILS]
        assert "1 def login(user):" in renders[NodeState.ALL]  # numbered lines
        assert len(set(renders.values())) == len(NodeState)

    def test_binary_file_placeholder(self, tmp_path: Path) -> None:
        (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
        node = TextNode("blob.bin", root=tmp_path)
        assert "[binary file, 300 bytes, not shown]" in node.render()
        assert node.cuttable_lines() == 0

    def test_non_utf8_file_placeholder(self, tmp_path: Path) -> None:
        (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
        assert "not UTF-8" in TextNode("latin.txt", root=tmp_path).render()

    def test_unreadable_file_placeholder(self, tmp_path: Path) -> None:
        import os

        if os.geteuid() == 0:
            pytest.skip("root reads files whatever their mode")
        path = tmp_path / "secret.txt"
        path.write_text("x")
        path.chmod(0)
        assert "unreadable" in TextNode("secret.txt", root=tmp_path).render()

    def test_huge_file_is_read_only_up_to_max_bytes(self, tmp_path: Path) -> None:
        line = "x" * 99 + "\n"
        (tmp_path / "huge.txt").write_text(line * 50_000)  # 5 MB
        node = TextNode("huge.txt", root=tmp_path, max_bytes=10_000)
        assert len(node.lines) == 100
        assert "5,000,000 bytes" in node.render()
        assert "open a (smaller) line range" in node.render()

    def test_line_range_of_a_huge_file(self, tmp_path: Path) -> None:
        (tmp_path / "nums.txt").write_text("".join(f"{i}\n" for i in range(1, 1001)))
        node = TextNode("nums.txt", root=tmp_path, start_line=10, end_line=12)
        assert node.lines == ["10", "11", "12"]

    def test_recompute_uses_stat_then_content(self, project: Path) -> None:
        node = TextNode("src/db.py", root=project)
        assert node.recompute() is False
        (project / "src" / "db.py").write_text("class Store:\n    items = []\n")
        assert node.recompute() is True and node.version == 1
        (project / "src" / "db.py").unlink()
        assert node.recompute() is True and node.placeholder == "[file deleted]"
        assert node.recompute() is False

    def test_fence_grows_when_content_has_backticks(self, tmp_path: Path) -> None:
        (tmp_path / "doc.md").write_text("```\ncode\n```\n")
        rendered = TextNode("doc.md", root=tmp_path).render()
        assert rendered.count("````") == 2

    def test_nodes_read_alike_share_a_spec_and_each_keeps_its_own_fields(
        self, project: Path
    ) -> None:
        a, b = TextNode("src/auth.py", root=project), TextNode("src/db.py", root=project)
        part = TextNode("src/auth.py", root=str(project), start_line=2, max_bytes=99)
        assert a._spec is b._spec  # one tuple, not six fields per node
        assert (a.root, a.start_line, a.end_line, a.max_bytes) == (
            project.resolve(),
            None,
            None,
            1_000_000,
        )
        assert (a.media_type, a.include_secrets) == ("text/x-python", False)
        assert (part.start_line, part.end_line, part.max_bytes) == (2, None, 99)
        b.media_type = "text/plain"  # a rename sets it (watch.tracker)
        assert (a.media_type, b.media_type) == ("text/x-python", "text/plain")
        assert b.to_dict()["data"]["media_type"] == "text/plain"
        again = Node.from_dict(part.to_dict())
        assert again.to_dict() == part.to_dict() and again.lines == part.lines

    def test_specs_stay_shared_after_many_trees(self, tmp_path: Path) -> None:
        """A process that read more than SPECS_KEPT distinct specs (other roots, other
        settings) still shares the spec of the tree it reads now: the oldest go."""
        (tmp_path / "a.py").write_text("a = 1\n")
        (tmp_path / "b.py").write_text("b = 2\n")
        for n in range(text_module.SPECS_KEPT + 5):
            TextNode("a.py", root=tmp_path, max_bytes=1000 + n)
        a, b = TextNode("a.py", root=tmp_path), TextNode("b.py", root=tmp_path)
        assert a._spec is b._spec
        assert len(text_module._specs) <= text_module.SPECS_KEPT

    def test_total_bytes_is_the_size_at_the_last_read_that_got_that_far(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "a.txt"
        path.write_text("alpha\n")
        node = TextNode("a.txt", root=tmp_path)
        assert node.total_bytes == 6
        path.write_text("a longer text\n")
        assert node.recompute() and node.total_bytes == 14
        path.unlink()  # nothing read: the last size stays
        assert node.recompute() and node.total_bytes == 14
        path.write_bytes(b"\x00" * 50)
        assert node.recompute() and node.total_bytes == 50
        snapshot = node.snapshot()
        assert snapshot is not None and snapshot["bytes"] == 50
        (tmp_path / ".env").write_text("KEY=1\n")  # withheld: never read, never sized
        assert TextNode(".env", root=tmp_path).total_bytes == 0

    def test_placeholder_notice_and_redaction_note_follow_each_read(self, tmp_path: Path) -> None:
        path = tmp_path / "a.txt"
        path.write_text("x\n" * 10)
        node = TextNode("a.txt", root=tmp_path, max_bytes=8)
        marks = lambda: (node.placeholder, node.notice, node.redacted)  # noqa: E731
        assert marks()[0] is None and "only 4 lines were read" in (node.notice or "")
        path.write_text('key = "AKIA' + "ABCDEFGHIJKLMNOP" + '"\n')
        node.max_bytes = 1_000_000
        assert node.recompute()
        assert marks()[:2] == (None, None) and "AWS" in (node.redacted or "")
        path.unlink()
        assert node.recompute() and marks() == ("[file deleted]", None, None)
        path.write_text("plain\n")
        assert node.recompute() and marks() == (None, None, None)
        assert node._marks is None  # nothing to say: no tuple kept
        node.notice = "a note"
        assert marks() == (None, "a note", None)
        again = Node.from_dict({**node.to_dict(), "snapshot": node.snapshot()})
        assert isinstance(again, TextNode) and again.notice == "a note"

    def test_round_trip(self, project: Path) -> None:
        node = TextNode("src/auth.py", root=project, start_line=1, end_line=2, priority=7)
        node.id = "text_9"
        again = Node.from_dict(node.to_dict())
        assert isinstance(again, TextNode)
        assert again.to_dict() == node.to_dict()
        assert again.lines == node.lines


class TestGroupNode:
    def test_states(self, session: Session) -> None:
        a, b = session.text("src/auth.py"), session.text("src/db.py")
        g = session.group(a, b, title="src")
        assert g.render(NodeState.COLLAPSED).startswith("## src (#group_1, 2 children")
        summary = g.render(NodeState.SUMMARY)
        assert "- src/auth.py (6 lines)" in summary and "- src/db.py (2 lines)" in summary
        assert g.render(NodeState.DETAILS) == "## src (#group_1)"
        assert "2 children" in g.render(NodeState.ALL)

    def test_summary_state_hides_children_and_details_shows_them(self, session: Session) -> None:
        a = session.text("src/auth.py")
        g = session.group(a, title="src")
        assert "def login" not in session.project().text
        g.set_state(NodeState.DETAILS)
        assert "def login" in session.project().text

    def test_child_change_updates_the_summary(self, project: Path, session: Session) -> None:
        a = session.text("src/auth.py")
        g = session.group(a, title="src")
        before = g.version
        (project / "src" / "auth.py").write_text("x = 1\n")
        session.tick()
        assert g.version > before
        assert "- src/auth.py (1 line)" in session.project().text

    def test_sync_summarizer_and_stale_rendering(self, project: Path, session: Session) -> None:
        a = session.text("src/auth.py")
        g = session.group(a, title="src", summarizer=lambda group, kids: "auth module")
        assert "summary pending" in g.render(NodeState.SUMMARY)
        session.tick()
        assert g.render(NodeState.SUMMARY).endswith("auth module")
        (project / "src" / "auth.py").write_text("y = 1\n")
        with session.graph.batch():
            a.recompute()
        assert g.stale and "summary pending" in g.render(NodeState.SUMMARY)

    def test_a_directory_holding_only_directories_has_no_heading(self, session: Session) -> None:
        a, b = session.text("src/auth.py"), session.text("src/db.py")
        inner = session.group(a, b, title="src/main/pkg/")
        middle = session.group(inner, title="src/main/")
        outer = session.group(middle, title="src/")
        for group in (outer, middle):  # each child's heading says where it is
            assert group.render(NodeState.DETAILS) == ""
            assert group.render(NodeState.ALL).startswith(f"## {group.title} (#{group.id}, ")
        assert inner.render(NodeState.DETAILS) == f"## src/main/pkg/ (#{inner.id})"
        for group in (inner, middle, outer):
            group.set_state(NodeState.DETAILS)
        text = session.project().text
        assert "## src/main/pkg/ (#" in text and "def login" in text
        assert "## src/ (#" not in text and "## src/main/ (#" not in text
        # a file of its own (a link is a change of the group): the heading is back
        version = middle.version
        session.link(middle, session.text("README.md"))
        assert middle.version > version
        assert middle.render(NodeState.DETAILS) == f"## src/main/ (#{middle.id})"
        assert f"## src/main/ (#{middle.id})" in session.project().text

    def test_other_groups_keep_their_heading(self, session: Session) -> None:
        a = session.text("src/auth.py")
        named = session.group(session.group(a, title="src/"), title="Sources")  # not a path
        assert named.render(NodeState.DETAILS) == f"## Sources (#{named.id})"
        elsewhere = session.group(session.group(a, title="lib/"), title="src/")  # not below it
        assert elsewhere.render(NodeState.DETAILS) == f"## src/ (#{elsewhere.id})"
        empty = session.group(title="docs/")
        assert empty.render(NodeState.DETAILS) == f"## docs/ (#{empty.id})"
        unread = session.group(session.group(a, title="data/raw/"), title="data/")
        unread.notice = "(could not list data/: permission denied)"
        assert unread.render(NodeState.DETAILS).startswith(f"## data/ (#{unread.id})")

    def test_round_trip(self) -> None:
        g = GroupNode("title", state="DETAILS")
        g.id = "group_4"
        again = Node.from_dict(g.to_dict())
        assert isinstance(again, GroupNode) and again.to_dict() == g.to_dict()


class TestNamesUnderTheirDirectory:
    """A file collapsed to its name under its directory's heading is named by its name."""

    @staticmethod
    def _names(session: Session, *nodes: TextNode) -> dict[str, str]:
        """Each node's section in a projection that shows every file by name: its text
        (the first line) and whether its token count is that of the text shown."""
        for node in nodes:
            node.set_state(NodeState.COLLAPSED)
        projection = session.project()
        lines = projection.text.split("\n")
        shown: dict[str, str] = {}
        for section in projection.sections:
            node = session.get(section.node_id)
            if isinstance(node, TextNode) and not section.reference:
                name = node.path.rsplit("/", 1)[-1]
                line = next(x for x in lines if x.startswith("- ") and name in x)
                assert section.tokens == session.counter.count(f"{line}\n\n"), line
                shown[node.path] = line
        return shown

    def test_a_file_under_its_directory_group_is_named_by_its_file_name(
        self, session: Session
    ) -> None:
        auth, db = session.text("src/auth.py"), session.text("src/db.py")
        group = session.group(auth, db, title="src/", state=NodeState.DETAILS)
        assert self._names(session, auth, db) == {
            "src/auth.py": "- auth.py (6 lines)",
            "src/db.py": "- db.py (2 lines)",
        }
        assert f"## src/ (#{group.id})\n\n- auth.py (6 lines)\n\n- db.py" in session.project().text
        # elsewhere (a tool's view of the node, the footer) the path stays whole
        assert auth.render(NodeState.COLLAPSED) == "- src/auth.py (6 lines)"
        assert auth.label() == "src/auth.py"

    @pytest.mark.parametrize("title", ["Sources", "lib/", "src", "src/main/"])
    def test_under_any_other_group_the_path_is_whole(self, session: Session, title: str) -> None:
        auth = session.text("src/auth.py")
        session.group(auth, title=title, state=NodeState.DETAILS)
        assert self._names(session, auth) == {"src/auth.py": "- src/auth.py (6 lines)"}

    def test_a_second_parent_names_it_whole_and_unlinking_it_names_it_short_again(
        self, session: Session
    ) -> None:
        auth = session.text("src/auth.py")
        directory = session.group(auth, title="src/", state=NodeState.DETAILS)
        assert self._names(session, auth)["src/auth.py"] == "- auth.py (6 lines)"
        version = auth.version
        picked = session.group(title="Picked", state=NodeState.DETAILS)
        session.link(picked, auth)  # counted short at the same version: counted again
        assert auth.version == version
        assert self._names(session, auth)["src/auth.py"] == "- src/auth.py (6 lines)"
        session.unlink(picked, auth)
        assert self._names(session, auth)["src/auth.py"] == "- auth.py (6 lines)"
        session.unlink(directory, auth)  # a root of its own
        assert self._names(session, auth)["src/auth.py"] == "- src/auth.py (6 lines)"

    def test_a_scanned_tree_lists_its_files_under_their_directories(self, tmp_path: Path) -> None:
        from dagctx.watch.scan import scan_tree

        for d in ("pkg/core", "pkg/extra"):
            (tmp_path / d).mkdir(parents=True)
            for i in range(30):
                body = "".join(f"X{j} = {j}\n" for j in range(40))
                (tmp_path / d / f"mod{i}.py").write_text(body)
        with Session(tmp_path, budget=600) as s:
            scan_tree(s, tmp_path)
            text = s.tick().projection.text
        names = [line for line in text.split("\n") if line.startswith("- ")]
        assert len(names) > 10 and all(line.startswith("- mod") for line in names), names
        # each under its own directory's heading, the nearest one above it
        heading = ""
        for line in text.split("\n"):
            if line.startswith("## "):
                heading = line[3:].split(" (#")[0]
            elif line.startswith("- mod"):
                assert heading in ("pkg/core/", "pkg/extra/")
                assert (tmp_path / heading / line[2:].split(" (")[0]).is_file()

    def test_a_line_range_and_an_edited_file_are_named_whole(
        self, project: Path, session: Session
    ) -> None:
        auth, db = session.text("src/auth.py"), session.text("src/db.py", lines=(1, None))
        session.group(auth, db, title="src/", state=NodeState.DETAILS)
        assert self._names(session, auth, db)["src/db.py"] == "- src/db.py:1- (2 lines)"
        (project / "src" / "auth.py").write_text("def login(user):\n    return user\n")
        session.tick()
        assert auth.edited  # shown in the changed band, away from its directory's heading
        assert self._names(session, auth)["src/auth.py"] == "- src/auth.py (2 lines)"


class TestRegistry:
    def test_types_register_by_name(self) -> None:
        assert node_types()["text"] is TextNode and node_types()["group"] is GroupNode

    def test_unknown_type_is_refused(self) -> None:
        with pytest.raises(GraphError, match="'martian'"):
            Node.from_dict({"type": "martian", "id": "m", "version": 0, "state": "DETAILS"})

    def test_malformed_data_is_refused(self) -> None:
        with pytest.raises(GraphError, match="malformed"):
            Node.from_dict({"type": "group", "data": {}})

    def test_a_second_class_cannot_take_a_name(self) -> None:
        with pytest.raises(GraphError, match="taken"):
            type("Impostor", (Node,), {"type_name": "text", "__slots__": ()})


class TestFrequency:
    def test_period_must_be_positive(self) -> None:
        with pytest.raises(GraphError, match="-1"):
            TickFrequency.period(-1)

    def test_due(self) -> None:
        assert TickFrequency.turn().is_due(5.0, 4.9)
        assert not TickFrequency.never().is_due(5.0, None)
        assert TickFrequency.period(2).is_due(5.0, 3.0)
        assert not TickFrequency.period(2).is_due(5.0, 3.5)


class TestLineRanges:
    def test_range_deep_in_a_huge_file_is_streamed(self, tmp_path: Path) -> None:
        (tmp_path / "log.txt").write_text("".join(f"entry {i}\n" for i in range(1, 300_001)))
        node = TextNode(
            "log.txt", root=tmp_path, start_line=250_000, end_line=250_002, max_bytes=10_000
        )
        assert node.lines == ["entry 250000", "entry 250001", "entry 250002"]
        assert node.notice is None

    def test_open_ended_range_is_capped_by_max_bytes(self, tmp_path: Path) -> None:
        (tmp_path / "log.txt").write_text("".join(f"entry {i}\n" for i in range(1, 10_001)))
        node = TextNode("log.txt", root=tmp_path, start_line=9_000, max_bytes=100)
        assert node.lines[0] == "entry 9000"
        assert len(node.lines) < 1001 and node.notice is not None

    def test_session_accepts_an_open_ended_range(self, session: Session) -> None:
        node = session.text("src/auth.py", lines=(5, None))
        assert node.lines == ["def check(user):", "    return True"]


class TestExtras:
    """Fields nearly every node leaves at their default live in one record, made on the
    first other value and dropped when all are back at their defaults."""

    def test_a_read_file_holds_no_record_until_a_field_leaves_its_default(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        node = TextNode("a.txt", root=tmp_path)
        assert node._extras is None
        assert sys.getsizeof(node) <= 176  # 18 slots: 232 bytes with a slot per field
        assert (node.priority, node.tags, node.edited, node.placeholder) == (40, set(), False, None)
        assert node._extras is not None  # reading tags made a set: a record holds it
        node.tags = ()
        assert node._extras is None
        node.edited = True
        node.priority = 7
        assert (node.edited, node.priority, node._extras is not None) == (True, 7, True)
        node.edited = False
        assert node._extras is not None  # the priority is still its own
        node.priority = None
        assert node._extras is None and (node.edited, node.priority) == (False, 40)

    def test_nodes_keep_their_own_records(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        one, two = TextNode("a.txt", root=tmp_path), TextNode("a.txt", root=tmp_path)
        one.edited = True
        two.priority = 3
        assert (one.edited, one.priority, two.edited, two.priority) == (True, 40, False, 3)

    def test_a_node_restored_unread_keeps_length_and_digest_in_one_int(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "a.txt").write_text("alpha\nbeta\n")
        node = TextNode("a.txt", root=tmp_path)
        again = Node.from_dict({**node.to_dict(), "snapshot": node.snapshot()})
        assert isinstance(again, TextNode) and type(again._body) is int
        assert again.least_chars(NodeState.DETAILS) == len("alpha\nbeta")
        assert again.content_digest() == node.content_digest()
        assert again.snapshot() == node.snapshot()
        assert again.content == "alpha\nbeta" and again._extras is None
        assert again.snapshot() == node.snapshot()

    def test_a_paused_node_holds_a_record_a_running_one_none(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        node = TextNode("a.txt", root=tmp_path)
        assert (node.mode, node._extras) == ("running", None)
        node.pause()
        assert (node.mode, node._extras is not None) == ("paused", True)
        again = Node.from_dict(json.loads(json.dumps(node.to_dict())))
        assert again.mode == "paused"
        node.run()
        assert (node.mode, node._extras) == ("running", None)
        running = "".join(["run", "ning"])  # equal to the default, another object
        for made in (
            GroupNode("g", mode=running),
            Node.from_dict({**GroupNode("g").to_dict(), "mode": running}),
        ):
            assert (made.mode, made._extras) == ("running", None)
        paused = GroupNode("g", mode="paused")
        assert (paused.mode, paused._extras is not None) == ("paused", True)


class TestTraces:
    def test_equal_descriptions_are_one_string(self) -> None:
        nodes = [GroupNode(f"g{i}") for i in range(3)]
        said = ["".join(["linked ", "10", " children"]) for _ in nodes]
        assert said[0] is not said[1]
        traces = [n.mark_changed(d) for n, d in zip(nodes, said, strict=True)]
        assert traces[0].description == "linked 10 children"
        assert traces[0].description is traces[1].description is traces[2].description

    def test_a_description_of_a_str_subclass_is_kept(self) -> None:
        class Said(str):
            pass

        trace = GroupNode("g").mark_changed(Said("edited"))
        assert trace.description == "edited" and type(trace.description) is Said


class TestTimes:
    def test_nodes_made_within_the_grain_share_one_float(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from dagctx.nodes import base

        clock = iter([1000.0, 1000.0 + base.TIME_GRAIN / 2, 1000.0 + base.TIME_GRAIN * 2])
        monkeypatch.setattr(base.time, "time", lambda: next(clock))
        a, b, c = (GroupNode(title) for title in "abc")
        assert a.created_at is b.created_at and a.updated_at is a.created_at
        assert c.created_at == 1000.0 + base.TIME_GRAIN * 2

    def test_equal_saved_times_come_back_as_one_float(self, tmp_path: Path) -> None:
        for name in "ab":
            (tmp_path / f"{name}.txt").write_text(f"{name}\n")
        nodes = [TextNode(f"{name}.txt", root=tmp_path) for name in "ab"]
        for node in nodes:
            node.created_at = node.updated_at = 1000.5
        columns = TextNode.to_columns([(node, node.snapshot() or {}) for node in nodes])
        back = TextNode.from_columns(json.loads(json.dumps(columns)))  # as a file holds them
        assert back[0].created_at is back[1].created_at is back[1].updated_at == 1000.5
