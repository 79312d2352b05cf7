"""Session.save / Session.load: a whole session in one SQLite file.

Round trips compare :func:`session_file_worker.describe` pictures (nodes with their type
data, structure, checkpoints, traces, turn, context, projection text) of the original and
the loaded session, in this process and in a fresh one; bad files must raise
CheckpointError and never hand back a partial session.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_file_worker import describe, timeless

from dagctx import CheckpointError, ContextError, NodeState, Session, TextNode, TickFrequency
from dagctx.capability import RawContext
from dagctx.checkpoint import SQLiteCheckpointStore
from dagctx.nodes import node_types
from dagctx.nodes.mcp import MCPServerNode, MCPToolNode, ToolSpec
from dagctx.session.file import SESSION_SCHEMA
from dagctx.session.store import SESSION_FILE

WORKER = Path(__file__).with_name("session_file_worker.py")


def build_session(project: Path) -> Session:
    """Text nodes (a line range, custom states, priorities, a period frequency), groups with
    a shared child, removed and re-rooted nodes, two structure checkpoints, ticks, a file
    change, context state, usage and a snapshot, and a change after the last tick."""
    s = Session(project, budget=4000)
    auth = s.text("src/auth.py", priority=90)
    db = s.text("src/db.py", lines=(1, 1), state="ALL")
    readme = s.text("README.md", state="SUMMARY", frequency=TickFrequency.period(3600))
    src = s.group(auth, db, title="src")
    shared = s.group(auth, title="shared", priority=10)  # auth has two parents
    s.group(src, shared, title="top")
    s.link(shared, readme, index=0)
    s.checkpoint("explore")
    s.tick()
    s.unlink(src, db)  # db becomes a root, after the others
    s.text("src/auth.py", lines=(4, 6))
    s.remove(readme)  # only the "explore" checkpoint still holds it
    src.set_state(NodeState.COLLAPSED)
    (project / "src" / "auth.py").write_text("def login(user):\n    return False\n")
    s.tick()
    s.checkpoint("later")
    s.tick()
    s.context.state.update(goal="fix login", notes=["a", {"b": 1}])
    s.context.snapshot(metadata={"why": "test"})
    child = s.fork("sub")
    child.state["found"] = "bug"
    child.add_tokens({"completion_tokens": 12})
    s.merge(child)
    s.group(db, title="after the last tick")  # shows in project()'s changes section
    return s


@pytest.fixture
def original(project: Path) -> Iterator[Session]:
    with build_session(project) as s:
        yield s


@pytest.fixture
def saved(original: Session) -> Path:
    return original.save()


@pytest.fixture
def loaded(saved: Path) -> Iterator[Session]:
    with Session.load(saved) as s:
        yield s


def load_in_subprocess(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, str(WORKER), "describe", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return json.loads(out)


class TestRoundTrip:
    def test_loaded_session_equals_the_original(self, original: Session, loaded: Session) -> None:
        before, after = describe(original), describe(loaded)
        assert after == before
        assert "after the last tick" in after["projection"]  # changes section survived
        assert len(after["checkpoints"]["explore"]["nodes"]) > len(after["nodes"]) - 3

    def test_a_fresh_process_loads_the_same_session(self, original: Session, saved: Path) -> None:
        assert load_in_subprocess(saved) == describe(original)

    def test_projection_text_is_byte_identical(self, original: Session, loaded: Session) -> None:
        for budget in (None, 60, 150, 400):
            assert loaded.project(budget).text == original.project(budget).text

    def test_structure_checkpoints_restore_identically(
        self, original: Session, loaded: Session
    ) -> None:
        for name in ("explore", "later", "explore"):
            assert loaded.restore(name) == original.restore(name)
            assert timeless(describe(loaded)) == timeless(describe(original))

    def test_turn_context_state_usage_and_snapshots_survive(
        self, original: Session, loaded: Session
    ) -> None:
        assert loaded.turn == original.turn == 3
        assert loaded.context.task_id == "session"
        assert loaded.context.state.to_dict() == {
            "goal": "fix login",
            "notes": ["a", {"b": 1}],
            "found": "bug",
        }
        assert loaded.context.token_usage == original.context.token_usage
        assert loaded.context.token_usage["completion_tokens"] == 12
        assert loaded.context.checkpoints.latest == original.context.checkpoints.latest
        assert loaded.context.snapshot().version == 2  # versions continue

    def test_the_loaded_session_goes_on_like_the_original(
        self, project: Path, original: Session, loaded: Session
    ) -> None:
        (project / "src" / "auth.py").write_text("def login(user):\n    return user.ok\n")
        one, other = original.tick(), loaded.tick()
        assert other.projection.text == one.projection.text
        assert other.recomputed == one.recomputed != []
        assert [(t.node_id, t.description) for t in other.changes] == [
            (t.node_id, t.description) for t in one.changes
        ]
        assert loaded.text("README.md").id == original.text("README.md").id

    def test_new_nodes_never_take_the_id_of_a_removed_one(
        self, original: Session, loaded: Session
    ) -> None:
        removed = {node.id for node in original.graph.get_checkpoint("explore").nodes.values()}
        removed -= {node.id for node in original.nodes()}
        assert removed  # README's first text node
        fresh = loaded.text("README.md")
        assert fresh.id not in removed
        assert fresh.id == original.text("README.md").id
        loaded.restore("explore")
        assert any(node.id in removed for node in loaded.nodes())

    def test_a_text_node_rereads_its_file_on_load(self, project: Path, saved: Path) -> None:
        (project / "src" / "auth.py").write_text("def login(user):\n    return user.ok\n")
        with Session.load(saved) as s:
            node = s.get("text_1")
            assert isinstance(node, TextNode)
            assert node.lines == ["def login(user):", "    return user.ok"]

    def test_saving_again_replaces_the_saved_session(self, project: Path, tmp_path: Path) -> None:
        path = tmp_path / "again.db"
        with Session(project) as s:
            a, b = s.text("src/auth.py"), s.text("src/db.py")
            s.save(path)
            s.remove(a)
            s.group(b, title="only")
            s.save(path)
            with Session.load(path) as loaded:
                assert describe(loaded) == describe(s)
                assert len(loaded.nodes()) == 2

    def test_an_empty_session_round_trips(self, project: Path, tmp_path: Path) -> None:
        with Session(project, budget=321, encoding="cl100k_base") as s:
            s.save(tmp_path / "empty.db")
            with Session.load(tmp_path / "empty.db") as loaded:
                assert describe(loaded) == describe(s)
                assert loaded.budget == 321 and loaded.turn == 0


class TestPaths:
    def test_default_path_is_under_the_session_root(self, project: Path) -> None:
        with Session(project) as s:
            s.text("README.md")
            assert s.save() == project / SESSION_FILE
        with Session.load(root=project) as loaded:
            assert [n.label() for n in loaded.nodes()] == ["README.md"]
            assert loaded.root == project.resolve()

    def test_default_load_uses_the_current_directory(
        self, project: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with Session(project) as s:
            s.text("README.md")
            s.save()
        monkeypatch.chdir(project)
        with Session.load() as loaded:
            assert [n.label() for n in loaded.nodes()] == ["README.md"]

    def test_a_moved_project_loads_under_its_new_root(
        self,
        original: Session,
        saved: Path,
        project: Path,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        before = describe(original)["projection"]
        moved = tmp_path_factory.mktemp("elsewhere") / "moved"
        shutil.move(project, moved)
        with pytest.raises(CheckpointError, match="pass root="):
            Session.load(moved / SESSION_FILE)
        with Session.load(moved / SESSION_FILE, root=moved) as s:
            assert s.root == moved.resolve()
            assert s.project().text == before  # text nodes read the files at the new root
            assert all("[file deleted]" not in n.render() for n in s.nodes())


class TestNodeTypes:
    """Every node type of the package round-trips through the session file."""

    @pytest.fixture
    def mixed(self, project: Path) -> Iterator[Session]:
        (project / "notes.md").write_text("# Notes\n\nintro\n\n## Plan\n\n- step one\n")
        with Session(project, budget=20_000) as s:
            topic = s.topic("debugging")
            s.message("user", "why does login fail?", topic=topic)
            s.message("tool_call", '{"path": "src/auth.py"}', tool_call_id="c1", name="read")
            s.message("tool_result", "def login(user): ...", tool_call_id="c1", name="read")
            s.artifact("print('hi')", language="python", title="snippet", parent=topic)
            s.markdown("notes.md")
            s.work_on("fix login", "src/auth.py")
            s.capability(RawContext("PERSISTENCE_TEST_TYPE", {"pvs": ["A", "B"]}), "step_1")
            server = MCPServerNode("fx", command=["fx-server"])
            s.add(server)
            server.set_status("disconnected")  # a live connection would not survive a load
            s.add(MCPToolNode("fx", ToolSpec("add", "adds", input_schema={})), parent=server)
            s.wait(s.shell("echo", ["hello"]), timeout=30)
            s.wait(s.lock("src/db.py"), timeout=30)
            s.session_node()
            s.tick()
            yield s

    def test_every_node_keeps_its_type_data(self, mixed: Session, tmp_path: Path) -> None:
        mixed.save(tmp_path / "mixed.db")
        with Session.load(tmp_path / "mixed.db") as loaded:
            assert describe(loaded)["nodes"] == describe(mixed)["nodes"]
            assert [type(n) for n in loaded.nodes()] == [type(n) for n in mixed.nodes()]
            assert describe(loaded)["children"] == describe(mixed)["children"]

    def test_the_projection_of_a_mixed_session_is_identical(
        self, mixed: Session, tmp_path: Path
    ) -> None:
        mixed.save(tmp_path / "mixed.db")
        with Session.load(tmp_path / "mixed.db") as loaded:
            assert loaded.project().text == mixed.project().text

    def test_the_mixed_session_covers_the_registered_types(self, mixed: Session) -> None:
        used = {node.type_name for node in mixed.nodes()}
        expected = {
            "text", "group", "topic", "message", "artifact", "markdown", "markdown_section",
            "work", "capability", "mcp_server", "mcp_tool", "shell", "lock", "session",
        }  # fmt: skip
        assert expected <= set(node_types())  # the node types of the package today
        assert expected - {"text", "group"} <= used  # text and group: TestRoundTrip


GROUPS = "type = 'group'"  # the groups' block of columns (text nodes have one too)


def tamper(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


class TestBadFiles:
    def test_a_missing_file_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(CheckpointError, match=r"no saved session at .*nope\.db"):
            Session.load(tmp_path / "nope.db")

    @pytest.mark.parametrize(
        "content",
        [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 5000],
        ids=["empty", "text", "bad-header"],
    )
    def test_a_garbage_file_raises(self, tmp_path: Path, content: bytes) -> None:
        path = tmp_path / "garbage.db"
        path.write_bytes(content)
        with pytest.raises(CheckpointError, match=r"garbage\.db"):
            Session.load(path)

    def test_a_truncated_file_raises_or_loads_whole(self, original: Session, saved: Path) -> None:
        data = saved.read_bytes()
        whole = describe(original)
        page = 4096
        cuts = sorted({100, page, len(data) // 2, len(data) - page, len(data) - 1})
        raised = 0
        for cut in cuts:
            path = saved.with_name(f"cut{cut}.db")
            path.write_bytes(data[:cut])
            try:
                with Session.load(path) as s:
                    assert describe(s) == whole  # never a partial session
            except CheckpointError:
                raised += 1
        assert raised >= 3

    def test_a_checkpoint_store_file_is_not_a_session(self, tmp_path: Path) -> None:
        with SQLiteCheckpointStore(tmp_path / "store.db", "task") as store:
            store.save({"a": 1}, {})
        with pytest.raises(CheckpointError, match="not a dagctx session file"):
            Session.load(tmp_path / "store.db")

    def test_another_schema_version_is_named_on_load_and_save(
        self, original: Session, saved: Path
    ) -> None:
        tamper(saved, "UPDATE dagctx_meta SET value = '99' WHERE key = 'session_schema'")
        with pytest.raises(CheckpointError, match=f"schema 99.*schema {SESSION_SCHEMA}"):
            Session.load(saved)
        before = saved.read_bytes()
        with pytest.raises(CheckpointError, match=f"schema 99.*schema {SESSION_SCHEMA}"):
            original.save(saved)
        assert saved.read_bytes() == before

    @pytest.mark.parametrize(
        ("statement", "message"),
        [
            (f"UPDATE session_columns SET data = '{{broken' WHERE {GROUPS}", "not valid JSON"),
            (f"UPDATE session_columns SET data = '[1, 2]' WHERE {GROUPS}", "not a JSON object"),
            (
                f"UPDATE session_columns SET type = 'nope' WHERE {GROUPS}",
                "unknown node type 'nope'",
            ),
            (
                "UPDATE session_columns SET data = json_set(data, '$.id[1]', 'group_1')"
                f" WHERE {GROUPS}",
                "duplicate node id 'group_1'",
            ),
            (
                "UPDATE session_edges SET child = 'ghost_1' WHERE rowid = 1",
                "unknown node 'ghost_1'",
            ),
            (
                "INSERT INTO session_edges VALUES ('text_1', 0, 'group_3', 0)",
                "cycle",
            ),
            ("DELETE FROM session_roots WHERE position = 0", "roots"),
            ("UPDATE session_info SET value = '-3' WHERE key = 'budget'", "budget"),
            ("DELETE FROM session_info WHERE key = 'turn'", "'turn'"),
            (
                "UPDATE session_info SET value = json_set(value, '$.state', json('[1]'))"
                " WHERE key = 'context'",
                "task context",
            ),
            (
                "UPDATE session_checkpoints SET data = json_set(data, '$.roots', json('[\"x_9\"]'))"
                " WHERE name = 'later'",
                "checkpoint 'later'",
            ),
            ("DROP TABLE session_traces", "no such table"),
        ],
    )
    def test_corrupt_rows_raise(self, saved: Path, statement: str, message: str) -> None:
        tamper(saved, statement)
        with pytest.raises(CheckpointError, match=message):
            Session.load(saved)


class TestFailedSave:
    def test_a_value_json_cannot_hold_is_named_and_nothing_is_written(
        self, original: Session, saved: Path
    ) -> None:
        before = describe(original)
        original.context.state["pair"] = (1, 2)
        original.text("README.md")
        with pytest.raises(CheckpointError, match=r"'pair'.*tuple"):
            original.save(saved)
        with Session.load(saved) as s:
            assert describe(s) == before

    def test_a_file_that_is_not_sqlite_is_left_alone(
        self, original: Session, tmp_path: Path
    ) -> None:
        path = tmp_path / "precious.txt"
        path.write_text("do not overwrite me\n" * 300)
        with pytest.raises(CheckpointError, match=r"precious\.txt"):
            original.save(path)
        assert path.read_text() == "do not overwrite me\n" * 300

    def test_a_sqlite_file_of_something_else_is_left_alone(
        self, original: Session, tmp_path: Path
    ) -> None:
        path = tmp_path / "app.db"
        tamper(path, "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('ada')")
        before = path.read_bytes()
        with pytest.raises(CheckpointError, match="something else"):
            original.save(path)
        assert path.read_bytes() == before

    def test_the_session_file_can_share_a_file_with_a_checkpoint_store(
        self, original: Session, tmp_path: Path
    ) -> None:
        path = tmp_path / "shared.db"
        with SQLiteCheckpointStore(path, "notes") as store:
            store.save({"n": 1}, {})
            original.save(path)
            store.save({"n": 2}, {})
            original.save(path)
            assert store.list_versions() == [1, 2]
        with Session.load(path) as s:
            assert describe(s) == describe(original)


class TestSessionContext:
    def test_each_tick_records_the_projection_tokens(self, session: Session) -> None:
        session.text("src/auth.py")
        assert session.context.task_id == "session"
        assert session.context.token_usage == {}
        totals = [session.tick().projection.tokens for _ in range(3)]
        session.project()  # rendering without a tick records nothing
        assert session.context.token_usage == {"prompt_tokens": sum(totals)}

    def test_atick_records_too(self, session: Session) -> None:
        result = asyncio.run(session.atick())
        assert session.context.token_usage == {"prompt_tokens": result.projection.tokens}

    def test_fork_and_merge_delegate_to_the_context(self, session: Session) -> None:
        session.context.state["goal"] = "ship"
        before = session.tick().projection.tokens
        child = session.fork("reviewer")
        assert child.parent is session.context and child.state["goal"] == "ship"
        child.state["verdict"] = "ok"
        child.add_tokens({"prompt_tokens": 50, "completion_tokens": 7})
        assert session.context.children == [child]
        session.merge(child)
        assert session.context.state["verdict"] == "ok"
        assert session.context.token_usage == {"prompt_tokens": before + 50, "completion_tokens": 7}
        assert session.context.children == []

    def test_merging_twice_raises(self, session: Session) -> None:
        child = session.fork("once")
        session.merge(child)
        with pytest.raises(ContextError, match="already merged"):
            session.merge(child)
