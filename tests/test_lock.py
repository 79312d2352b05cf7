"""LockNode and the lock verbs: real OS locks between real processes, outcomes applied
at the next tick, release, session close, dead holders, rendering and serialization; the
tests marked ``on_both`` also run with PostgreSQL advisory locks."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dagctx.errors import DagctxError, NodeNotFoundError, PathError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.lock import LockError, LockHandle, LockNode, LockOutcome, lock_file_for
from dagctx.session import Session

WORKER = Path(__file__).with_name("lock_worker.py")
on_both = pytest.mark.usefixtures("any_backend")  # SQLite (file locks) and PostgreSQL
VISIBLE = [NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = Session(tmp_path)
    yield s
    s.close()


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Session]:
    """A second session on the same root (same process, separate OS lock)."""
    s = Session(tmp_path)
    yield s
    s.close()


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class TestAcquire:
    @on_both
    def test_outcome_is_applied_at_the_next_tick_not_before(self, session: Session) -> None:
        lock = session.lock("src/app.py")
        eventually(lambda: session.ready(lock))
        time.sleep(0.05)
        assert lock.status == "pending" and lock.version == 0
        changes = session.tick().changes
        assert lock.status == "acquired" and lock.held
        descriptions = [t.description for t in changes if t.node_id == lock.id]
        assert len(descriptions) == 1 and descriptions[0].startswith("acquired (after ")

    @on_both
    def test_the_lock_is_really_held_before_the_tick(
        self, session: Session, other: Session
    ) -> None:
        lock = session.lock("a.txt")
        eventually(lambda: session.ready(lock))
        rival = other.wait(other.lock("a.txt", timeout=0.2), timeout=10)
        assert rival.status == "timeout"
        session.tick()
        assert lock.status == "acquired"

    def test_lock_file_lives_under_dagctx_locks(self, session: Session, tmp_path: Path) -> None:
        lock = session.wait(session.lock("src/app.py"), timeout=10)
        path = Path(lock.lock_file)
        assert path.parent == tmp_path.resolve() / ".dagctx" / "locks"
        assert path.exists() and path.name.startswith("src_app.py-")
        assert path == lock_file_for(tmp_path.resolve(), "src/app.py")

    def test_lock_files_are_distinct_per_path(self, tmp_path: Path) -> None:
        root = tmp_path.resolve()
        names = {lock_file_for(root, p) for p in ["a/b.py", "a_b.py", "a-b.py", "a/b.py/", "."]}
        assert len(names) == 5

    @on_both
    def test_equivalent_spellings_share_one_lock(self, session: Session, other: Session) -> None:
        mine = session.wait(session.lock("src/../a.txt"), timeout=10)
        theirs = other.wait(other.lock("./a.txt", timeout=0.2), timeout=10)
        assert (mine.path, mine.status, theirs.status) == ("a.txt", "acquired", "timeout")

    @on_both
    def test_path_outside_the_root_is_refused(self, session: Session) -> None:
        for path in ["../x", "/etc/passwd"]:
            with pytest.raises(PathError, match=re.escape(repr(path))):
                session.lock(path)
        assert session.nodes() == []

    @pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "5", True])
    @on_both
    def test_bad_timeout_is_refused(self, session: Session, timeout: object) -> None:
        with pytest.raises(LockError, match=re.escape(repr(timeout))):
            session.lock("a.txt", timeout=timeout)  # type: ignore[arg-type]
        assert session.nodes() == []
        assert issubclass(LockError, DagctxError)

    def test_unwritable_lock_folder_is_an_error_status(
        self, session: Session, tmp_path: Path
    ) -> None:
        (tmp_path / ".dagctx").write_text("not a folder")
        lock = session.wait(session.lock("a.txt"), timeout=10)
        assert lock.status == "error" and lock.error is not None
        assert "cannot lock" in lock.error


@on_both
class TestRelease:
    def test_release_frees_the_lock_for_others(self, session: Session, other: Session) -> None:
        mine = session.wait(session.lock("a.txt"), timeout=10)
        assert other.wait(other.lock("a.txt", timeout=0.1), timeout=10).status == "timeout"
        assert session.release(mine) is True
        assert mine.status == "released" and mine.released_at is not None
        assert other.wait(other.lock("a.txt", timeout=2), timeout=10).status == "acquired"

    def test_release_twice_changes_nothing(self, session: Session) -> None:
        lock = session.wait(session.lock("a.txt"), timeout=10)
        session.release(lock)
        version = lock.version
        assert session.release(lock.id) is False
        assert lock.version == version and lock.status == "released"

    def test_release_while_waiting_gives_up_the_wait(
        self, session: Session, other: Session
    ) -> None:
        held = other.wait(other.lock("a.txt"), timeout=10)
        waiting = session.lock("a.txt", timeout=20)
        time.sleep(0.1)
        assert session.release(waiting) is False
        assert waiting.status == "released"
        eventually(lambda: session.ready(waiting), timeout=3)
        session.tick()
        assert waiting.status == "released"  # the late outcome does not override it
        other.release(held)
        third = Session(session.root)
        try:
            assert third.wait(third.lock("a.txt", timeout=2), timeout=10).status == "acquired"
        finally:
            third.close()

    def test_release_after_acquire_but_before_the_tick(
        self, session: Session, other: Session
    ) -> None:
        lock = session.lock("a.txt")
        eventually(lambda: session.ready(lock))
        assert session.release(lock) is True
        session.tick()
        assert lock.status == "released"
        assert other.wait(other.lock("a.txt", timeout=1), timeout=10).status == "acquired"

    def test_release_refuses_other_nodes(self, session: Session) -> None:
        shell = session.shell("true")
        with pytest.raises(LockError, match=shell.id):
            session.release(shell.id)
        with pytest.raises(NodeNotFoundError):
            session.release("lock_42")

    def test_session_close_releases_every_lock(self, tmp_path: Path, other: Session) -> None:
        s = Session(tmp_path)
        locks = [s.lock(name) for name in ("a", "b", "c")]
        s.wait_all(locks, timeout=10)
        s.close()
        assert [lock.status for lock in locks] == ["released"] * 3
        taken = other.wait_all([other.lock(name, timeout=1) for name in ("a", "b", "c")], 10)
        assert [lock.status for lock in taken] == ["acquired"] * 3


@on_both
class TestBetweenProcesses:
    @pytest.mark.slow
    def test_contending_processes_never_hold_it_together(self, tmp_path: Path) -> None:
        workers = [worker("contend", str(tmp_path), "25") for _ in range(4)]
        outputs = [w.communicate(timeout=60) for w in workers]
        assert [w.returncode for w in workers] == [0] * 4, outputs
        assert not (tmp_path / "violations").exists()
        assert (tmp_path / "counter").read_text() == "100"

    def test_a_killed_holder_does_not_block_others(self, session: Session, tmp_path: Path) -> None:
        holder = worker("hold", str(tmp_path))
        try:
            assert holder.stdout is not None
            status, _ = holder.stdout.readline().split()
            assert status == "acquired"
            blocked = session.wait(session.lock("shared.txt", timeout=0.2), timeout=10)
            assert blocked.status == "timeout"
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=10)
        started = time.monotonic()
        lock = session.wait(session.lock("shared.txt", timeout=10), timeout=20)
        assert lock.status == "acquired" and time.monotonic() - started < 5


class TestLostLock:
    """Issue 14 item 8: ``git clean -fdx`` takes ``.dagctx/locks`` away while a lock is held;
    a second process then locks a new file on the same path. The first holder is told."""

    def _hold_elsewhere(self, root: Path) -> subprocess.Popen[str]:
        holder = worker("hold", str(root))
        assert holder.stdout is not None
        status, _ = holder.stdout.readline().split()
        assert status == "acquired"  # a second process holds "the same" lock now
        return holder

    @pytest.mark.parametrize("attack", ["delete the folder", "replace the file"])
    def test_a_held_lock_whose_file_went_is_lost(
        self, session: Session, tmp_path: Path, attack: str
    ) -> None:
        lock = session.wait(session.lock("shared.txt", timeout=5), timeout=10)
        assert lock.status == "acquired"
        lock_file = Path(lock.lock_file)
        if attack == "delete the folder":
            shutil.rmtree(tmp_path / ".dagctx" / "locks")
        else:
            replacement = lock_file.with_name("new.tmp")
            replacement.write_text("")
            os.replace(replacement, lock_file)
        holder = self._hold_elsewhere(tmp_path)
        try:
            session.tick()
            assert lock.status == "lost" and not lock.held
            assert "deleted" in (lock.error or "") or "replaced" in (lock.error or "")
            assert "lost (its lock file" in lock.render(NodeState.DETAILS)
            assert "- lock shared.txt: lost" in session.project().text
            assert session.release(lock) is False and lock.status == "lost"
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=10)

    @on_both
    def test_a_sound_lock_stays_acquired_across_ticks(self, session: Session) -> None:
        lock = session.wait(session.lock("shared.txt", timeout=5), timeout=10)
        for _ in range(3):
            session.tick()
        assert lock.status == "acquired"

    def test_a_waiter_never_wins_a_file_that_was_deleted(self, tmp_path: Path) -> None:
        path = tmp_path / "x.lock"
        first, waiter, newcomer = LockHandle(path), LockHandle(path), LockHandle(path)
        assert first.acquire(1).status == "acquired"
        outcome: list[LockOutcome] = []
        thread = threading.Thread(target=lambda: outcome.append(waiter.acquire(10)))
        thread.start()
        time.sleep(0.2)  # the waiter has opened the first file and waits on it
        path.unlink()
        assert newcomer.acquire(1).status == "acquired"  # locks a new file at the path
        first.release()  # the waiter may win the old file now: it must not count
        time.sleep(0.3)
        assert not outcome and not waiter.held
        newcomer.release()
        thread.join(10)
        assert outcome[0].status == "acquired" and waiter.lost() is None
        waiter.release()


class TestHandle:
    def test_release_while_waiting_makes_acquire_give_up(self, tmp_path: Path) -> None:
        path = tmp_path / "x.lock"
        first, second = LockHandle(path), LockHandle(path)
        assert first.acquire(1).status == "acquired"
        second.release()
        started = time.monotonic()
        assert second.acquire(5).status == "released"
        assert time.monotonic() - started < 1
        assert first.release() is True and first.release() is False


def lock_node(status: str = "acquired") -> LockNode:
    node = LockNode("src/app.py", lock_file="/r/.dagctx/locks/x.lock", timeout=30, id="lock_1")
    node.requested_at = 1_700_000_000.0
    if status != "pending":
        node.apply_outcome(LockOutcome(status, 0.25, 1_700_000_000.25, "boom"))  # type: ignore[arg-type]
    return node


class TestRender:
    def test_collapsed(self) -> None:
        assert lock_node().render(NodeState.COLLAPSED) == "- lock src/app.py: acquired"

    def test_summary(self) -> None:
        expected = "- lock src/app.py: acquired (after 0.2 s) (#lock_1)"
        assert lock_node().render(NodeState.SUMMARY) == expected

    def test_details(self) -> None:
        text = lock_node().render(NodeState.DETAILS)
        assert text.startswith("### lock src/app.py (#lock_1)\nstatus: acquired (after 0.2 s)")
        assert "lock file" not in text

    def test_all(self) -> None:
        text = lock_node().render(NodeState.ALL)
        assert lock_node().render(NodeState.DETAILS) in text
        assert "lock file: /r/.dagctx/locks/x.lock" in text
        assert "acquired: 2023-11-14T22:13:20.250+00:00" in text

    def test_each_state_is_distinct(self) -> None:
        node = lock_node()
        assert len({node.render(state) for state in VISIBLE}) == 4

    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            ("pending", "pending (waiting up to 30.0 s)"),
            ("timeout", "timeout (held elsewhere for more than 30.0 s)"),
            ("error", "error (boom)"),
        ],
    )
    def test_summary_per_status(self, status: str, expected: str) -> None:
        assert lock_node(status).render(NodeState.SUMMARY) == (
            f"- lock src/app.py: {expected} (#lock_1)"
        )

    @on_both
    def test_default_state_is_collapsed_and_in_the_projection(self, session: Session) -> None:
        lock = session.wait(session.lock("a.txt"), timeout=10)
        assert lock.state == NodeState.COLLAPSED
        assert "- lock a.txt: acquired" in session.tick().projection.text


class TestSerialization:
    @pytest.mark.parametrize("status", ["pending", "acquired", "timeout", "error"])
    def test_round_trip(self, status: str) -> None:
        node = lock_node(status)
        copy = Node.from_dict(node.to_dict())
        assert isinstance(copy, LockNode)
        assert copy.to_dict() == node.to_dict()
        assert [copy.render(s) for s in VISIBLE] == [node.render(s) for s in VISIBLE]

    @on_both
    def test_round_trip_of_a_real_lock(self, session: Session) -> None:
        lock = session.wait(session.lock("a.txt"), timeout=10)
        session.release(lock)
        copy = Node.from_dict(lock.to_dict())
        assert copy.to_dict() == lock.to_dict()

    def test_unknown_status_is_refused(self) -> None:
        data = lock_node().to_dict()
        data["data"]["status"] = "stolen"
        with pytest.raises(LockError, match="stolen"):
            Node.from_dict(data)
