"""Resuming a watched tree from a saved session: compare the saved state with the disk.

Real files and real ``session.db`` files: a session is scanned, ticked and saved (as
``dagctx watch`` does), files are edited, created and deleted while nothing watches, and
the resumed session must list exactly those as the first tick's changes, without reading
(or counting) the files that did not change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from functools import partial
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from dagctx.cli import main
from dagctx.cli.watch_view import LiveView, Outputs
from dagctx.nodes.text import TextNode
from dagctx.session import Session, TickResult, core
from dagctx.session.file import expand_column
from dagctx.watch.tracker import TreeTracker


def _write_tree(root: Path, files: int = 12) -> None:
    for i in range(files):
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{k}(x):\n    return x + {k}\n" for k in range(30))
        path.write_text(body)
    (root / "README.md").write_text("# Demo\n\nA tree to resume.\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write_tree(root)
    return root


def _cold(root: Path, budget: int) -> tuple[Session, TickResult]:
    session = Session(root, budget=budget)
    TreeTracker(session, ".").load()
    return session, session.tick()


def _save_cold(root: Path, budget: int = 100_000) -> dict[str, str]:
    """Scan, tick and save as ``dagctx watch`` does; return each file's node id."""
    session, _ = _cold(root, budget)
    with session:
        session.save()
        return {n.path: n.id for n in session.graph if isinstance(n, TextNode)}


def _resume(root: Path, budget: int | None = None) -> tuple[Session, TickResult]:
    session = Session.load(root=root)
    if budget is not None:
        session.set_budget(budget)
    TreeTracker(session, ".").load()
    return session, session.tick()


def _expanded(block: dict[str, Any]) -> dict[str, Any]:
    """A saved block of columns with each column a list (as it is read)."""
    return {key: expand_column(column, len(block["ref"])) for key, column in block.items()}


def _file_changes(session: Session, result: TickResult) -> dict[str, str]:
    """path → description of the tick's direct changes of text nodes."""
    found = {}
    for trace in result.changes:
        node = session.graph.get(trace.node_id) if trace.node_id in session.graph else None
        if not trace.derived and isinstance(node, TextNode):
            found[node.path] = trace.description
    return found


class TestOfflineEdits:
    def test_edits_creations_and_deletions_while_stopped_are_the_first_ticks_changes(
        self, tree: Path
    ) -> None:
        ids = _save_cold(tree)
        (tree / "pkg0" / "mod0.py").write_text("def edited():\n    return 1\n")
        (tree / "pkg1" / "mod1.py").unlink()
        (tree / "pkg2" / "new.py").write_text("NEW = 1\n")
        session, result = _resume(tree)
        with session:
            assert _file_changes(session, result) == {
                "pkg0/mod0.py": "content changed",
                "pkg1/mod1.py": "file deleted",
                "pkg2/new.py": "file created",
            }
            summary = "files changed while not watched: 1 edited, 1 created, 1 deleted"
            (top,) = [t for t in result.changes if t.description == summary]
            assert session.graph.get(top.node_id).label() == "repo/"
            text = result.projection.text
            assert "## Changes since last turn" in text
            assert re.search(r"pkg0/mod0\.py: content changed", text)
            assert summary in text
            assert "return 1" in text
            assert session.text_nodes("pkg0/mod0.py")[0].id == ids["pkg0/mod0.py"]

    def test_a_file_shown_by_two_nodes_and_edited_while_stopped_changes_both(
        self, tree: Path
    ) -> None:
        session, _ = _cold(tree, 100_000)
        with session:
            part = session.text("pkg0/mod0.py", lines=(1, 2))  # beside the tree's node
            session.tick()
            session.save()
        (tree / "pkg0" / "mod0.py").write_text("def edited():\n    return 1\n")
        (tree / "pkg0" / "mod3.py").write_text("def edited():\n    return 3\n")
        resumed, result = _resume(tree)
        with resumed:
            nodes = resumed.text_nodes("pkg0/mod0.py")
            assert part.id in {n.id for n in nodes} and len(nodes) == 2
            changed = {t.node_id: t.description for t in result.changes if not t.derived}
            assert {n.id: changed.get(n.id) for n in nodes} == dict.fromkeys(
                [n.id for n in nodes], "content changed"
            )
            assert _file_changes(resumed, result)["pkg0/mod3.py"] == "content changed"
            assert sorted(changed.values()) == [
                *["content changed"] * 3,
                "files changed while not watched: 2 edited",
            ]

    def test_a_rename_while_stopped_keeps_the_node(self, tree: Path) -> None:
        ids = _save_cold(tree)
        (tree / "pkg0" / "mod3.py").rename(tree / "pkg1" / "moved.py")
        session, result = _resume(tree)
        with session:
            assert _file_changes(session, result) == {"pkg1/moved.py": "renamed from pkg0/mod3.py"}
            assert session.text_nodes("pkg1/moved.py")[0].id == ids["pkg0/mod3.py"]

    def test_an_unchanged_tree_resumes_with_no_changes(self, tree: Path) -> None:
        _save_cold(tree)
        session, result = _resume(tree)
        with session:
            assert [t for t in result.changes if not t.derived] == []
            assert "## Changes since last turn" not in result.projection.text

    def test_a_touched_but_identical_file_is_no_change(self, tree: Path) -> None:
        _save_cold(tree)
        path = tree / "pkg0" / "mod0.py"
        path.write_text(path.read_text())  # new mtime, same bytes
        session, result = _resume(tree)
        with session:
            assert _file_changes(session, result) == {}

    def test_a_file_newly_ignored_is_dropped_and_one_no_longer_ignored_comes_in(
        self, tree: Path
    ) -> None:
        (tree / ".gitignore").write_text("pkg2/\n")
        _save_cold(tree)
        (tree / ".gitignore").write_text("pkg1/\n")
        session, result = _resume(tree)
        with session:
            assert session.text_nodes("pkg2/mod2.py") and not session.text_nodes("pkg1/mod1.py")
            assert _file_changes(session, result)["pkg2/mod2.py"] == "file created"


class TestNotReadAgain:
    def test_the_comparison_with_the_disk_reads_only_what_changed(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _save_cold(tree)
        (tree / "pkg0" / "mod0.py").write_text("def edited():\n    return 1\n")
        read: list[str] = []
        projecting = [False]
        original_read, original_build = TextNode._read, core.build_projection

        def spy(node: TextNode) -> object:
            if not projecting[0]:  # the projection reads what it shows, when it shows it
                read.append(node.path)
            return original_read(node)

        def build(*args: object, **kwargs: object) -> object:
            projecting[0] = True
            try:
                return original_build(*args, **kwargs)
            finally:
                projecting[0] = False

        monkeypatch.setattr(TextNode, "_read", spy)
        monkeypatch.setattr(core, "build_projection", build)
        session, result = _resume(tree)
        with session:
            assert read == ["pkg0/mod0.py"]
            assert _file_changes(session, result) == {"pkg0/mod0.py": "content changed"}

    def test_saved_section_counts_come_back_for_unchanged_nodes(self, tree: Path) -> None:
        session, first = _cold(tree, 100_000)
        with session:
            session.save()
            cold_encodings = session.counter.encodings
        resumed, result = _resume(tree)
        with resumed:
            assert cold_encodings > 12
            assert resumed.counter.encodings <= 2
            assert result.projection.text == first.projection.text


class TestSafety:
    def test_a_file_changed_after_the_check_is_reported_at_the_next_check(self, tree: Path) -> None:
        _save_cold(tree)
        with Session.load(root=tree) as session:
            (node,) = session.text_nodes("pkg0/mod0.py")
            version = node.version
            (tree / "pkg0" / "mod0.py").write_text("def late():\n    return 2\n")
            assert "def late" in node.content  # read late: shows the file as it is now
            session.file_changed("pkg0/mod0.py")
            result = session.tick()
            assert node.version == version + 1
            assert (node.id, "content changed") in {
                (t.node_id, t.description) for t in result.changes
            }

    def test_a_tampered_snapshot_is_refused(self, tree: Path) -> None:
        import sqlite3

        _save_cold(tree)
        db = tree / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            (data,) = con.execute("SELECT data FROM session_columns WHERE type = 'text'").fetchone()
            raw = _expanded(json.loads(data))
            raw["lines"][0] = "many"
            con.execute(
                "UPDATE session_columns SET data = ? WHERE type = 'text'", (json.dumps(raw),)
            )
        from dagctx.errors import CheckpointError

        with pytest.raises(CheckpointError, match="lines"):
            Session.load(root=tree)


class TestWatchCommand:
    def test_the_account_lists_offline_edits_and_the_panel_says_resumed(self, tree: Path) -> None:
        args = ["watch", str(tree), "--budget", "8000", "--once"]
        assert main(args) == 0
        (tree / "pkg0" / "mod0.py").write_text("def edited():\n    return 1\n")
        assert main(args) == 0
        account = json.loads((tree / ".dagctx" / "projection.json").read_text())
        assert any(c["description"] == "content changed" for c in account["changes"])
        console = Console(file=StringIO(), force_terminal=True, width=120, record=True)
        (tree / "pkg1" / "mod1.py").unlink()
        session = Session.load(root=tree)
        with session:
            view = LiveView(session, Outputs.for_session(session, None), console)
            TreeTracker(session, ".").load()
            view.update(session.tick(), 0.001)
            view.close()
        screen = console.export_text()
        assert "first scan" not in screen
        assert "resumed after turn 2: 1 offline edit" in screen
        assert "pkg1/mod1.py: file deleted" in screen


_ID = re.compile(r"#(text|group)_\d+")
_CHANGES = re.compile(r"## Changes since last turn\n.*?\n\n", re.DOTALL)


def _normalized(text: str) -> str:
    return _ID.sub("#id", _CHANGES.sub("", text))


_edit = st.tuples(st.sampled_from(["edit", "delete", "create", "touch"]), st.integers(0, 11))


def _resumed_after_reap(root: Path, budget: int, changes: dict[str, str]) -> str:
    """Resume at ``budget``, check the first tick lists ``changes`` (path → what), and
    return the text of the tick after the next (files shown deleted go at the next, and
    the changes section, which takes its tokens from the budget, is empty after it)."""
    resumed = Session.load(root=root)
    with resumed:
        resumed.set_budget(budget)
        tracker = TreeTracker(resumed, ".")
        tracker.load()
        assert _file_changes(resumed, resumed.tick()) == changes
        resumed.queue_result(tracker.reap)
        resumed.tick()
        return resumed.tick().projection.text


class TestSameAsColdStart:
    @pytest.mark.parametrize("budget", [900, 2_500])
    def test_an_unchanged_tree_under_pressure_resumes_to_the_cold_starts_bytes(
        self, tree: Path, budget: int
    ) -> None:
        session, cold = _cold(tree, budget)
        with session:
            session.save()
        assert cold.projection.tokens <= budget
        assert "elided" in cold.projection.text  # the budget binds
        resumed, result = _resume(tree, budget)
        with resumed:
            assert result.projection.text == cold.projection.text
        shutil.rmtree(tree / ".dagctx")
        again, fresh = _cold(tree, budget)
        with again:
            assert fresh.projection.text == cold.projection.text

    @pytest.mark.parametrize("budget", [900, 2_500])
    def test_a_focus_saved_with_the_session_resumes_to_the_focused_cold_starts_bytes(
        self, tree: Path, budget: int
    ) -> None:
        session = Session(tree, budget=budget)
        session.focus("f7_3 in mod7")
        TreeTracker(session, ".").load()
        cold = session.tick()
        with session:
            session.save()
        assert "elided" in cold.projection.text
        resumed, result = _resume(tree, budget)
        with resumed:
            assert result.projection.text == cold.projection.text

    def test_offline_edits_files_added_and_deleted_and_an_ignore_change_resume_like_a_cold_start(
        self, tree: Path
    ) -> None:
        (tree / ".gitignore").write_text("pkg2/mod5.py\n")
        _save_cold(tree)
        (tree / "pkg0" / "mod3.py").write_text("def edited_offline():\n    return 3\n")
        (tree / "pkg1" / "mod4.py").unlink()
        (tree / "pkg1" / "added.py").write_text("ADDED = 1\n")
        (tree / "pkg3").mkdir()
        (tree / "pkg3" / "new.py").write_text("def fresh():\n    return 0\n")
        (tree / ".gitignore").write_text("pkg2/mod8.py\n")  # mod5 comes in, mod8 goes
        text = _resumed_after_reap(
            tree,
            100_000,
            {
                ".gitignore": "content changed",
                "pkg0/mod3.py": "content changed",
                "pkg1/mod4.py": "file deleted",
                "pkg1/added.py": "file created",
                "pkg3/new.py": "file created",
                "pkg2/mod5.py": "file created",
            },
        )
        assert "### pkg2/mod8.py" not in text and "### pkg1/mod4.py" not in text
        shutil.rmtree(tree / ".dagctx")
        again, fresh = _cold(tree, 100_000)
        with again:
            assert _normalized(text) == _normalized(fresh.projection.text)

    @pytest.mark.parametrize("budget", [900, 2_500])
    def test_files_deleted_and_ignored_offline_under_pressure_resume_to_the_cold_starts_bytes(
        self, tree: Path, budget: int
    ) -> None:
        # a file changed or created offline ranks as changed last (as in a session that
        # watched), so under pressure only what left the tree compares with a cold start
        (tree / ".gitignore").write_text(".gitignore\n*.bak\n")  # ignores itself
        session, _ = _cold(tree, budget)
        with session:
            session.save()
        (tree / "pkg1" / "mod4.py").unlink()
        (tree / "pkg2" / "mod8.py").unlink()
        (tree / "pkg0" / "mod9.py").rename(tree / "mod9.bak")
        (tree / ".gitignore").write_text(".gitignore\n*.bak\npkg2/mod5.py\n")  # mod5 goes
        resumed_text = _resumed_after_reap(
            tree,
            budget,
            {
                "pkg1/mod4.py": "file deleted",
                "pkg2/mod8.py": "file deleted",
                "pkg0/mod9.py": "file deleted",
            },
        )
        assert "elided" in resumed_text
        assert not re.search(r"mod[4589]\.py", resumed_text)
        shutil.rmtree(tree / ".dagctx")
        again, fresh = _cold(tree, budget)
        with again:
            assert _normalized(resumed_text) == _normalized(fresh.projection.text)

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(edits=st.lists(_edit, max_size=6))
    def test_resume_after_random_offline_edits_projects_like_a_cold_start(
        self, tmp_path: Path, edits: list[tuple[str, int]]
    ) -> None:
        root = tmp_path / "h"
        shutil.rmtree(root, ignore_errors=True)
        _write_tree(root)
        _save_cold(root)
        for kind, i in edits:
            path = root / f"pkg{i % 3}" / f"mod{i}.py"
            if kind == "edit" and path.exists():
                path.write_text(f"def changed_{i}():\n    return {len(edits)}\n")
            elif kind == "delete":
                path.unlink(missing_ok=True)
            elif kind == "create":
                (root / f"pkg{i % 3}" / f"extra{i}.py").write_text(f"EXTRA = {i}\n")
            elif kind == "touch" and path.exists():
                path.write_text(path.read_text())
        resumed = Session.load(root=root)
        with resumed:
            tracker = TreeTracker(resumed, ".")
            tracker.load()
            resumed.tick()
            if tracker.pending_removals():  # files shown deleted for one tick go at the next
                resumed.queue_result(tracker.reap)
            text = resumed.tick().projection.text
        shutil.rmtree(root / ".dagctx")
        cold, fresh = _cold(root, 100_000)
        with cold:
            assert _normalized(text) == _normalized(fresh.projection.text)


def _offline(root: Path, edits: list[tuple[str, int]], mark: int) -> None:
    """Edit, delete, create or touch files of the tree (``mark`` tells rounds apart)."""
    for kind, i in edits:
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        if kind == "edit" and path.exists():
            path.write_text(f"def changed_{i}_{mark}():\n    return {mark}\n")
        elif kind == "delete":
            path.unlink(missing_ok=True)
        elif kind == "create":
            (root / f"pkg{i % 3}" / f"extra{i}_{mark}.py").write_text(f"EXTRA = {i}\n")
        elif kind == "touch" and path.exists():
            path.write_text(path.read_text())


def _turn(session: Session, tracker: TreeTracker) -> str:
    """The text of a turn that takes in what changed on disk (as a watch's re-survey),
    and of the next when files shown deleted go then, without the changes section."""
    session.queue_result(partial(tracker.apply_survey, tracker.top))
    text = session.tick().projection.text
    if tracker.pending_removals():
        session.queue_result(tracker.reap)
        text = session.tick().projection.text
    return _normalized(text)


class TestDeletedBeforeTheSave:
    def test_a_file_shown_deleted_when_saved_is_removed_at_the_first_tick(self, tree: Path) -> None:
        """A session saved between the tick that showed a file deleted and the tick
        that removes it (as ``dagctx watch --once`` leaves it) removes it at the first
        tick after the resume; a file deleted longer ago stays removed."""
        session, _ = _cold(tree, 100_000)
        with session:
            tracker = TreeTracker(session, ".")
            tracker.load()  # adopts the scanned tree
            (tree / "pkg1" / "mod1.py").unlink()
            session.queue_result(partial(tracker.apply_survey, tracker.top))
            session.tick()
            assert session.text_nodes("pkg1/mod1.py")[0].placeholder == "[file deleted]"
            session.save()
        resumed, result = _resume(tree)
        with resumed:
            assert resumed.text_nodes("pkg1/mod1.py") == []
            shown, _, changes = result.projection.text.partition("## Changes since last turn")
            assert "mod1.py" not in shown
            assert "removed child text_" in changes and "(pkg1/mod1.py)" in changes
            assert "pkg1/mod4.py" in result.projection.text


class TestTurnsAfterAResume:
    @settings(
        max_examples=10,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        offline=st.lists(_edit, max_size=5),
        rounds=st.lists(st.lists(_edit, min_size=1, max_size=4), min_size=1, max_size=3),
    )
    def test_a_resumed_session_and_its_turns_after_edits_are_a_fresh_sessions(
        self, tmp_path: Path, offline: list[tuple[str, int]], rounds: list[list[Any]]
    ) -> None:
        """A session saved (text nodes and groups as compact columns), edited offline and
        resumed projects what a session scanning the edited tree projects, and so do
        their turns after the same edits."""
        root = tmp_path / "h"
        shutil.rmtree(root, ignore_errors=True)
        _write_tree(root)
        _save_cold(root)
        _offline(root, offline, 0)
        resumed = Session.load(root=root)
        fresh = Session(root, budget=100_000)
        with resumed, fresh:
            trackers = {}
            for session in (resumed, fresh):
                trackers[id(session)] = tracker = TreeTracker(session, ".")
                tracker.load()
                session.tick()
            texts = [_turn(s, trackers[id(s)]) for s in (resumed, fresh)]
            assert texts[0] == texts[1]
            for mark, edits in enumerate(rounds, start=1):
                _offline(root, edits, mark)
                texts = [_turn(s, trackers[id(s)]) for s in (resumed, fresh)]
                assert texts[0] == texts[1]


class TestTreeLoad:
    def test_a_cycle_of_single_parents_beside_a_tree_is_refused(self) -> None:
        from dataclasses import replace

        from dagctx.errors import GraphLoadError
        from dagctx.graph import ContextGraph
        from dagctx.nodes.group import GroupNode

        g = ContextGraph()
        top, a, b, c = (g.add(GroupNode(name)) for name in "tabc")
        g.link(top, a)
        g.link(b, c)
        data = g.dump()
        data.edges.append((c.id, 0, b.id, 0))  # b ← c ← b: every node has one parent
        data.roots.remove(b.id)
        copies = [GroupNode(n.title, id=n.id) for n in data.nodes]  # type: ignore[attr-defined]
        with pytest.raises(GraphLoadError, match="cycle"):
            ContextGraph().load(replace(data, nodes=copies))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=8,
)


class TestTamperedSnapshots:
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        key=st.sampled_from(
            ["stat", "placeholder", "notice", "redacted", "lines", "chars", "bytes", "digest"]
        ),
        value=_json_values,
    )
    def test_a_snapshot_field_of_any_value_is_refused_or_renders(
        self, tmp_path: Path, key: str, value: object
    ) -> None:
        import sqlite3

        from dagctx.errors import CheckpointError
        from dagctx.nodes.base import NodeState

        root = tmp_path / "t"
        if not root.exists():
            _write_tree(root, files=2)
            _save_cold(root)
            shutil.copy(root / ".dagctx" / "session.db", tmp_path / "good.db")
        db = root / ".dagctx" / "session.db"
        shutil.copy(tmp_path / "good.db", db)
        with sqlite3.connect(db) as con:
            (data,) = con.execute("SELECT data FROM session_columns WHERE type = 'text'").fetchone()
            raw = _expanded(json.loads(data))
            raw[key][0] = value
            con.execute(
                "UPDATE session_columns SET data = ? WHERE type = 'text'", (json.dumps(raw),)
            )
        try:
            session = Session.load(root=root)
        except CheckpointError:
            return
        with session:
            for node in session.graph:
                for state in NodeState:
                    assert isinstance(node.render(state), str)
            TreeTracker(session, ".").load()
            assert session.tick().projection.tokens <= session.budget


class TestMemory:
    def test_a_read_text_node_keeps_no_digest_after_a_render_and_a_snapshot(
        self, tree: Path
    ) -> None:
        from dagctx.nodes.base import NodeState

        session, _ = _cold(tree, 100_000)
        with session:
            (node,) = session.text_nodes("pkg0/mod0.py")
            node.render(NodeState.SUMMARY)  # the outline cache is keyed by the digest
            snapshot = node.snapshot()
            assert snapshot is not None and len(bytes.fromhex(snapshot["digest"])) == 16
            assert type(node._body) is str  # no digest beside it: one per node would cost memory

    def test_resumed_nodes_share_their_mode_and_times_and_hold_no_empty_tag_set(
        self, tree: Path
    ) -> None:
        _save_cold(tree)
        session, _ = _resume(tree)
        with session:
            nodes = list(session.graph)
            assert len(nodes) > 12
            # the steering's check of each adopted file gave none a set of tags
            assert all(n._tags is None for n in nodes)
            # one string per mode, not one decoded from the file per node
            assert all(n.mode is nodes[0].mode for n in nodes)
            # a node never updated keeps one float for both times, as a new node does
            assert all(n.updated_at is n.created_at for n in nodes if n.version == 0)

    def test_resumed_edges_and_traces_hold_the_nodes_own_id_strings(self, tree: Path) -> None:
        _save_cold(tree)
        session = Session.load(root=tree)
        with session:
            graph = session.graph
            ids = {n.id: n.id for n in graph}
            kids = [c for n in graph for c in graph._adj._children[n.id]]
            assert len(kids) == len(ids) - 1  # a tree under one root
            assert all(c is ids[c] for c in kids)
            assert all(p is ids[p] for n in graph for p in graph._adj.pred[n.id])
            traces = list(graph.traces)
            assert traces and all(t.node_id is ids[t.node_id] for t in traces)
            assert len({id(t.description) for t in traces}) == len({t.description for t in traces})

    def test_a_steered_tag_is_still_taken_back_when_no_rule_sets_it(self, tree: Path) -> None:
        from dagctx.watch.steering import NO_STEERING, PRIORITY_TAG

        session, _ = _cold(tree, 100_000)
        with session:
            (node,) = session.text_nodes("pkg0/mod0.py")
            node.priority = 90
            node.tags.add(PRIORITY_TAG)
            assert node.has_tag(PRIORITY_TAG)
            NO_STEERING.apply(node)
            assert node.priority == node.default_priority
            assert not node.has_tag(PRIORITY_TAG) and node.tags == set()


class TestLoadCost:
    def test_the_garbage_collector_does_not_run_while_a_session_loads(self, tmp_path: Path) -> None:
        import gc

        root = tmp_path / "big"
        _write_tree(root, files=40)
        _save_cold(root)
        runs: list[int] = []

        def count(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                runs.append(info["generation"])

        threshold = gc.get_threshold()
        gc.collect()  # what the test allocated so far must not set it off at the first call
        gc.set_threshold(50)  # unpaused, a load this size would run it dozens of times
        gc.callbacks.append(count)
        try:
            session = Session.load(root=root)
        finally:
            gc.callbacks.remove(count)
            gc.set_threshold(*threshold)
        with session:
            assert runs == [1], runs  # the young generations', before it starts
            assert gc.isenabled()  # paused for the load only
            assert len(session.text_nodes("pkg0/mod0.py")) == 1

    def test_a_program_that_disabled_the_collector_finds_it_disabled_after_a_load(
        self, tree: Path
    ) -> None:
        import gc

        _save_cold(tree)
        gc.disable()
        try:
            Session.load(root=tree).close()
            assert not gc.isenabled()
        finally:
            gc.enable()

    def test_the_loaded_objects_are_old_so_young_collections_do_not_walk_them(
        self, tree: Path
    ) -> None:
        import gc

        _save_cold(tree)
        with Session.load(root=tree) as session:
            nodes = list(session.graph)
            assert len(nodes) > 12
            for generation in (0, 1):
                held = {id(o) for o in gc.get_objects(generation=generation)}
                assert not any(id(node) in held for node in nodes), generation
            assert gc.get_freeze_count() == 0  # back where the collector walks them

    def test_a_cycle_dropped_before_a_load_is_freed_not_made_old(self, tree: Path) -> None:
        import weakref

        class Cycle:
            pass

        _save_cold(tree)
        cycle = Cycle()
        cycle.me = cycle  # type: ignore[attr-defined]
        gone = weakref.ref(cycle)
        del cycle  # garbage only the collector frees (as a connection in a cycle is)
        with Session.load(root=tree):
            assert gone() is None

    def test_objects_a_program_froze_stay_frozen_through_a_load(self, tree: Path) -> None:
        import gc

        _save_cold(tree)
        kept = [[i] for i in range(10)]
        gc.freeze()
        try:
            with Session.load(root=tree) as session:
                walked = {id(o) for o in gc.get_objects()}  # every generation but the frozen
                assert not any(id(item) in walked for item in kept)  # still frozen
                young = {id(o) for o in gc.get_objects(generation=0)}
                assert any(id(node) in young for node in session.graph)  # left as made
        finally:
            gc.unfreeze()
        assert any(id(kept[0]) == id(o) for o in gc.get_objects())  # thawed by the test

    def test_a_load_and_its_survey_ask_no_path_of_a_file_that_does_not_run(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from dagctx.watch.steering import Steering

        _save_cold(tree)
        asked: list[str] = []
        watch_path, node_fields = TextNode.watch_path, Steering.node_fields

        def watched(node: TextNode) -> str:
            asked.append(node.path)
            return watch_path(node)

        def steered(steering: Steering, rel: str) -> dict[str, object]:
            asked.append(rel)
            return node_fields(steering, rel)

        monkeypatch.setattr(TextNode, "watch_path", watched)
        monkeypatch.setattr(Steering, "node_fields", steered)
        session, result = _resume(tree)  # scanned files never run; no rule steers them
        with session:
            assert not _file_changes(session, result)
            assert asked == []
            running = session.text("pkg0/mod0.py")  # a running node is followed as before
            assert running.path in asked

    def test_the_survey_stats_each_file_by_name_within_its_listed_directory(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _save_cold(tree)
        (tree / "pkg1" / "mod1.py").write_text("def edited():\n    return 1\n")  # in place
        by_path: list[str] = []
        by_name: list[str] = []
        projecting = [False]
        lstat, original_build = os.lstat, core.build_projection

        def spy(path: str, *, dir_fd: int | None = None) -> os.stat_result:
            if not projecting[0]:  # the projection reads what it shows, when it shows it
                (by_path if dir_fd is None else by_name).append(os.fspath(path))
            return lstat(path, dir_fd=dir_fd)

        def build(*args: object, **kwargs: object) -> object:
            projecting[0] = True
            try:
                return original_build(*args, **kwargs)
            finally:
                projecting[0] = False

        monkeypatch.setattr(os, "lstat", spy)
        monkeypatch.setattr(core, "build_projection", build)
        session, result = _resume(tree)
        with session:
            assert _file_changes(session, result) == {"pkg1/mod1.py": "content changed"}
            paths = sorted(n.path for n in session.graph if isinstance(n, TextNode))
            assert sorted(by_name) == sorted(p.rpartition("/")[2] for p in paths)  # once each
            whole = {os.path.relpath(p, tree) for p in by_path}
            assert whole & set(paths) == {"pkg1/mod1.py"}  # only the edited one, read again
