"""Work coordination: claims in a shared store, conflicts seen by both agents at their
next tick, heartbeats and expiry, and real processes writing the same store; the tests
marked ``on_both`` run on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_copy import rebuild, renders

from dagctx.errors import DagctxError, NodeNotFoundError, PathError
from dagctx.nodes.base import NodeState, TickFrequency
from dagctx.nodes.work import WorkNode
from dagctx.runtime.coordination import CoordinationError, paths_overlap
from dagctx.session import Session

AGENT_SCRIPT = Path(__file__).with_name("work_agent.py")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text("x = 1\n")
    (tmp_path / "src" / "db.py").write_text("y = 2\n")
    (tmp_path / "src2").mkdir()
    return tmp_path


on_both = pytest.mark.usefixtures("any_backend")


@pytest.fixture
def a(root: Path) -> Iterator[Session]:
    with Session(root) as s:
        s.use_coordination(agent_name="alice")
        yield s


@pytest.fixture
def b(root: Path) -> Iterator[Session]:
    with Session(root) as s:
        s.use_coordination(agent_name="bob")
        yield s


def graph_state(s: Session) -> list[tuple[str, int]]:
    return [(n.id, n.version) for n in s.nodes()]


class TestClaims:
    @on_both
    def test_work_on_stores_a_claim_and_adds_a_work_node(self, a: Session, root: Path) -> None:
        node = a.work_on("fix login", "src/auth.py", "src/new_module.py")
        assert isinstance(node, WorkNode)
        assert (node.intent, node.access, node.status) == ("fix login", "write", "active")
        assert node.files == ["src/auth.py", "src/new_module.py"]
        assert (node.state, node.priority, node.frequency) == (
            NodeState.DETAILS, 80, TickFrequency.turn(),
        )  # fmt: skip
        (claim,) = a.work_list()
        assert claim.claim_id == node.claim_id
        assert claim.agent_name == "alice"
        assert claim.files == (str(root / "src/auth.py"), str(root / "src/new_module.py"))

    def test_the_default_store_is_a_wal_sqlite_file_under_the_root(self, root: Path) -> None:
        with Session(root) as s:
            s.work_on("look around", "src", mode="read")
            db = root / ".dagctx" / "coordination.db"
            assert db.is_file()
            with sqlite3.connect(db) as conn:
                assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
                assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 1

    @on_both
    def test_a_file_outside_the_root_is_refused_and_nothing_changes(self, a: Session) -> None:
        with pytest.raises(PathError, match=r"\.\./elsewhere\.py"):
            a.work_on("escape", "src/auth.py", "../elsewhere.py")
        with pytest.raises(PathError, match="42"):
            a.work_on("typed", 42)  # type: ignore[arg-type]
        assert a.nodes() == []
        assert a.work_list() == []

    @pytest.mark.parametrize(
        ("intent", "mode", "named"), [("", "write", "''"), ("fix", "append", "'append'")]
    )
    @on_both
    def test_a_bad_intent_or_mode_is_refused_and_nothing_changes(
        self, a: Session, intent: str, mode: str, named: str
    ) -> None:
        with pytest.raises(CoordinationError, match=named):
            a.work_on(intent, "src/auth.py", mode=mode)
        assert isinstance(CoordinationError("x"), DagctxError)
        assert a.nodes() == []
        assert a.work_list() == []

    @on_both
    def test_an_unknown_parent_is_refused_before_claiming(self, a: Session) -> None:
        with pytest.raises(NodeNotFoundError):
            a.work_on("fix", "src/auth.py", parent="group_4")
        assert a.work_list() == []

    @on_both
    def test_renders_distinctly_at_each_state(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix login", "src/auth.py", "src/db.py")
        b.work_on("rename users", "src/db.py")
        a.tick()
        collapsed, summary, details, full = renders(mine)
        assert collapsed == (
            "- work #work_1: fix login (active; write src/auth.py, src/db.py; 1 conflict)"
        )
        assert summary.splitlines() == [
            "### Work: fix login (#work_1, active)",
            "write: src/auth.py, src/db.py",
            f"1 conflict: src/db.py (bob ({b.coordination().agent.id}))",
            "other agents: 1 active claims",
        ]
        assert "- CONFLICT write/write on src/db.py: bob" in details
        assert "'rename users'" in details
        assert f"claim: {mine.claim_id}" in full and "claim:" not in details
        assert len({collapsed, summary, details, full}) == 4


@on_both
class TestConflicts:
    def test_overlapping_write_claims_conflict_in_both_at_the_next_tick(
        self, a: Session, b: Session
    ) -> None:
        mine = a.work_on("fix login", "src/auth.py")
        a.tick()
        assert mine.conflicts == ()
        theirs = b.work_on("refactor auth", "src/auth.py")
        assert [c.agent_name for c in theirs.conflicts] == ["alice"]  # seen at once
        assert mine.conflicts == ()  # alice sees it at her next tick
        result = a.tick()
        assert [(c.agent_name, c.intent, c.kind) for c in mine.conflicts] == [
            ("bob", "refactor auth", "write/write")
        ]
        assert [c.description for c in result.changes if c.node_id == mine.id] == [
            f"1 conflict: src/auth.py with bob ({b.coordination().agent.id})"
        ]
        assert "CONFLICT write/write on src/auth.py" in result.projection.text
        b.tick()
        assert [c.agent_name for c in theirs.conflicts] == ["alice"]

    @pytest.mark.parametrize(
        ("mine", "theirs", "kinds"),
        [
            (("src/auth.py", "read"), ("src/auth.py", "read"), []),
            (("src/auth.py", "read"), ("src/auth.py", "write"), ["read/write"]),
            (("src", "write"), ("src/db.py", "read"), ["write/read"]),
            (("src", "write"), ("src2", "write"), []),
            (("src/auth.py", "write"), ("src/db.py", "write"), []),
            ((".", "write"), ("src2", "write"), ["write/write"]),
        ],
    )
    def test_overlap_needs_a_shared_path_and_a_writer(
        self,
        a: Session,
        b: Session,
        mine: tuple[str, str],
        theirs: tuple[str, str],
        kinds: list[str],
    ) -> None:
        node = a.work_on("mine", mine[0], mode=mine[1])
        b.work_on("theirs", theirs[0], mode=theirs[1])
        a.tick()
        assert [c.kind for c in node.conflicts] == kinds

    def test_an_agent_does_not_conflict_with_itself(self, a: Session) -> None:
        first = a.work_on("one", "src/auth.py")
        second = a.work_on("two", "src/auth.py")
        a.tick()
        assert first.conflicts == second.conflicts == ()
        assert first.peers == ()

    def test_nothing_changed_means_no_new_version(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        b.work_on("other", "src/auth.py")
        a.tick()
        version = mine.version
        for _ in range(3):
            result = a.tick()
            assert mine.id not in result.recomputed
        assert mine.version == version

    def test_moving_away_clears_the_conflict_on_both_sides(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        theirs = b.work_on("other", "src/auth.py")
        a.tick()
        assert mine.conflicts
        version = theirs.version
        assert b.work_update(theirs, files=["src/db.py"]) is theirs
        assert theirs.files == ["src/db.py"]
        assert theirs.conflicts == ()
        assert theirs.version == version + 1
        assert [t.description for t in b.graph.traces if t.node_id == theirs.id][-1] == (
            "work updated: 1 files"
        )
        a.tick()
        assert mine.conflicts == ()
        assert [p.intent for p in mine.peers] == ["other"]

    def test_work_update_can_change_intent_and_mode(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        theirs = b.work_on("other", "src/auth.py")
        a.work_update(mine, intent="just reading", mode="read")
        b.tick()
        assert [(c.intent, c.kind) for c in theirs.conflicts] == [("just reading", "write/read")]
        a.work_update(mine, "just reading")
        assert mine.version == 1  # the same claim again: renewed, nothing new shown

    def test_work_update_refuses_bad_input_and_keeps_the_claim(self, a: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        before = graph_state(a), a.work_list()
        with pytest.raises(PathError):
            a.work_update(mine, files=["/etc/passwd"])
        with pytest.raises(CoordinationError, match="'delete'"):
            a.work_update(mine, mode="delete")
        with pytest.raises(DagctxError, match="not a work node"):
            a.work_update(a.artifact("x"))
        assert (graph_state(a)[:1], a.work_list()) == (before[0], before[1])

    def test_work_done_releases_the_claim(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        theirs = b.work_on("other", "src/auth.py")
        a.tick()
        assert a.work_done(mine) is True
        assert mine.status == "done"
        assert "(#work_1, done)" in mine.render(NodeState.DETAILS)
        assert [c.claim_id for c in b.work_list()] == [theirs.claim_id]
        b.tick()
        assert theirs.conflicts == ()
        version = mine.version
        assert a.work_done(mine) is False
        assert mine.version == version
        a.tick()
        assert mine.version == version  # a done node is no longer refreshed
        with pytest.raises(DagctxError, match="is done"):
            a.work_update(mine, intent="again")

    def test_closing_a_session_releases_its_claims(self, root: Path, a: Session) -> None:
        with Session(root) as other:
            other.work_on("temp", "src/auth.py")
            other.work_on("temp 2", "src/db.py")
            assert len(a.work_list()) == 2
        assert a.work_list() == []


@on_both
class TestExpiry:
    def test_a_claim_without_heartbeat_expires(self, root: Path, a: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        with Session(root) as lazy:
            lazy.use_coordination(stale_after=0.3, agent_name="lazy")
            theirs = lazy.work_on("slow work", "src/auth.py")
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["lazy"]
            time.sleep(0.4)
            a.tick()
            assert mine.conflicts == ()
            assert a.work_list() == [c for c in a.work_list() if c.agent_name == "alice"]
            result = lazy.tick()
            assert theirs.status == "expired"
            assert [t.description for t in result.changes if t.node_id == theirs.id] == [
                "claim expired (no heartbeat in time)"
            ]
            lazy.work_update(theirs)  # takes the claim again
            assert theirs.status == "active"
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["lazy"]

    def test_each_tick_heartbeats_the_claims(self, root: Path, a: Session) -> None:
        with Session(root) as busy:
            busy.use_coordination(stale_after=0.4)
            node = busy.work_on("steady work", "src/db.py")
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                busy.tick()
                time.sleep(0.1)
            assert [c.claim_id for c in a.work_list()] == [node.claim_id]
            assert node.status == "active"

    @pytest.mark.parametrize("stale_after", [0, -1, True, "10", float("inf")])
    def test_stale_after_must_be_a_positive_number(self, a: Session, stale_after: object) -> None:
        with pytest.raises(CoordinationError, match="stale_after"):
            a.use_coordination(stale_after=stale_after)  # type: ignore[arg-type]


class TestStoreChoice:
    def test_a_custom_store_path_is_shared_by_who_opens_it(
        self, root: Path, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        shared = tmp_path_factory.mktemp("elsewhere") / "claims.db"
        with Session(root) as one, Session(root) as two:
            one.use_coordination(shared)
            two.use_coordination(str(shared))
            one.work_on("x", "src/auth.py")
            assert len(two.work_list()) == 1
        assert not (root / ".dagctx" / "coordination.db").exists()

    def test_the_store_cannot_change_while_claims_are_held(self, a: Session) -> None:
        node = a.work_on("fix", "src/auth.py")
        with pytest.raises(CoordinationError, match="work_done"):
            a.use_coordination("other.db")
        assert [c.claim_id for c in a.work_list()] == [node.claim_id]
        a.work_done(node)
        board = a.use_coordination("other.db", agent_name="carol")
        assert board.store.path == a.root / "other.db"
        assert board.agent.name == "carol"

    def test_an_unusable_store_path_is_a_clear_error(self, a: Session, root: Path) -> None:
        (root / "blocker").write_text("a file, not a folder")
        with pytest.raises(CoordinationError, match="blocker"):
            a.use_coordination("blocker/claims.db")


class TestPathOverlap:
    @pytest.mark.parametrize(
        ("x", "y", "overlap"),
        [
            ("/r/a.py", "/r/a.py", True),
            ("/r/src", "/r/src/a.py", True),
            ("/r/src/", "/r/src/a.py", True),
            ("/r/src", "/r/src2/a.py", False),
            ("/r/a.py", "/r/b.py", False),
            ("/", "/r/b.py", True),
        ],
    )
    def test_paths_overlap(self, x: str, y: str, overlap: bool) -> None:
        assert paths_overlap(x, y) is overlap
        assert paths_overlap(y, x) is overlap


@on_both
class TestSerialization:
    def test_a_rebuilt_node_renders_the_same_and_is_detached(self, a: Session, b: Session) -> None:
        mine = a.work_on("fix", "src/auth.py", "src")
        b.work_on("other", "src/auth.py", mode="read")
        a.tick()
        twin = rebuild(a.nodes()).get(mine.id)
        assert isinstance(twin, WorkNode)
        assert renders(twin) == renders(mine)
        assert twin.to_dict()["data"] == mine.to_dict()["data"]
        assert twin.board is None
        assert twin.recompute() is False

    def test_a_loaded_node_is_not_this_sessions_claim(self, a: Session) -> None:
        mine = a.work_on("fix", "src/auth.py")
        twin = rebuild([mine]).get(mine.id)
        a.remove(mine)
        twin.id = "work_9"
        twin.graph = None
        a.add(twin)
        with pytest.raises(DagctxError, match="not a claim of this session"):
            a.work_update(twin, intent="again")


class Agent:
    """A work_agent.py process driven line by line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(AGENT_SCRIPT), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=None if env is None else {**os.environ, **env},
        )

    def read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"agent exited with {self.proc.wait()}"
        return line.strip()

    def send(self, line: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.read()

    def tick(self) -> dict[str, object]:
        result: dict[str, object] = json.loads(self.send("tick"))
        return result

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


@on_both
class TestProcesses:
    def test_two_processes_see_each_others_conflicts(self, root: Path, a: Session) -> None:
        mine = a.work_on("fix login", "src/auth.py")
        child = Agent(str(root), "bob", "30", "write", "refactor auth", "src/auth.py", "src/db.py")
        try:
            assert child.read().startswith("ready ")
            a.tick()
            assert [(c.agent_name, c.intent) for c in mine.conflicts] == [("bob", "refactor auth")]
            seen = child.tick()
            assert seen["conflicts"] == [
                {"path": "src/auth.py", "agent": "alice", "kind": "write/write"}
            ]
            assert child.send("update src/db.py") == "ok"
            a.tick()
            assert mine.conflicts == ()
            assert child.tick()["conflicts"] == []
            assert child.send("done") == "ok"
            a.tick()
            assert mine.peers == ()
        finally:
            child.stop()

    def test_a_killed_agents_claim_expires(self, root: Path, a: Session) -> None:
        mine = a.work_on("fix login", "src/auth.py")
        child = Agent(str(root), "doomed", "0.5", "write", "crash soon", "src/auth.py")
        try:
            assert child.read().startswith("ready ")
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["doomed"]
            os.kill(child.proc.pid, signal.SIGKILL)
            child.proc.wait(timeout=10)
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["doomed"]  # not yet stale
            time.sleep(0.6)
            a.tick()
            assert mine.conflicts == ()
            assert [c.claim_id for c in a.work_list()] == [mine.claim_id]
        finally:
            child.stop()

    def test_concurrent_writers_lose_nothing(self, root: Path, a: Session) -> None:
        rounds = 20
        agents = [Agent("--hammer", str(root), f"w{i}", str(rounds)) for i in range(3)]
        try:
            lives = [int(agent.read().split()[1]) for agent in agents]
            assert lives == [rounds // 2] * 3
            claims = a.work_list()
            assert len(claims) == sum(lives)
            assert {c.agent_name for c in claims} == {"w0", "w1", "w2"}
        finally:
            for agent in agents:
                agent.stop()
        assert a.work_list() == []


class TestStoreIdentityAndClock:
    """Issue 14 item 9: a deleted or replaced store must not split the agents into groups,
    and a wall-clock step must not purge live claims."""

    @pytest.mark.parametrize("attack", ["delete", "replace"])
    def test_agents_on_a_deleted_or_replaced_store_still_see_each_other(
        self, root: Path, a: Session, attack: str
    ) -> None:
        mine = a.work_on("fix login", "src/auth.py")
        store = root / ".dagctx" / "coordination.db"
        for path in store.parent.glob("coordination.db*"):
            path.unlink()  # git clean -fdx, or rm -rf .dagctx/coordination.db*
        if attack == "replace":
            other = root / "other.db"
            with sqlite3.connect(other) as conn:
                conn.execute("CREATE TABLE dagctx_meta (key TEXT PRIMARY KEY, value TEXT)")
            os.replace(other, store)
        newcomer = Agent(str(root), "carol", "30", "write", "rewrite auth", "src/auth.py")
        try:
            assert newcomer.read().startswith("ready ")  # on the file at the path now
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["carol"]
            seen = newcomer.tick()
            assert seen["conflicts"] == [
                {"path": "src/auth.py", "agent": "alice", "kind": "write/write"}
            ]
            with sqlite3.connect(store) as conn:
                names = {row[0] for row in conn.execute("SELECT agent_name FROM claims")}
            assert names == {"alice", "carol"}
        finally:
            newcomer.stop()

    def test_a_wall_clock_step_does_not_purge_live_claims(self, root: Path, a: Session) -> None:
        mine = a.work_on("fix login", "src/auth.py")
        skewed = Agent(
            str(root), "dave", "30", "write", "also auth", "src/auth.py",
            env={"WALL_CLOCK_STEP": "61"},
        )  # fmt: skip
        try:
            assert skewed.read().startswith("ready ")  # its write purged what it saw expired
            assert [c["agent"] for c in skewed.tick()["conflicts"]] == ["alice"]
            a.tick()
            assert [c.agent_name for c in mine.conflicts] == ["dave"]
            assert mine.status == "active"
        finally:
            skewed.stop()

    def test_claims_of_another_boot_are_dropped(self, root: Path) -> None:
        with Session(root) as s:
            s.use_coordination(agent_name="old")
            s.work_on("before the reboot", "src/auth.py")
            store = root / ".dagctx" / "coordination.db"
            with sqlite3.connect(store) as conn:
                conn.execute("UPDATE claims_clock SET boot = 'another-boot'")
            with Session(root) as later:
                assert later.work_list() == []

    def test_wall_clock_deadlines_of_an_older_store_keep_the_time_they_had_left(
        self, root: Path
    ) -> None:
        with Session(root) as s:
            s.use_coordination(agent_name="old", stale_after=30)
            s.work_on("before the upgrade", "src/auth.py")
            store = root / ".dagctx" / "coordination.db"
            with sqlite3.connect(store) as conn:  # as a dagctx with wall-clock deadlines
                conn.execute("DROP TABLE claims_clock")
                conn.execute("UPDATE claims SET expires_at = ?", (time.time() + 20,))
            with Session(root) as later:
                (claim,) = later.work_list()
                assert 19 < claim.expires_at - time.monotonic() <= 20
