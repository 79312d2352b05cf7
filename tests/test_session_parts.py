"""A session's parts: created in ``__init__``, closed in one fixed order; the background
loop (anyio's blocking portal) and the sync/async twin names of the verbs."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dagctx.errors import DagctxError
from dagctx.nodes.lock import LockNode
from dagctx.session import Session
from dagctx.session.parts.intake import Intake
from dagctx.session.parts.jobs import Jobs
from dagctx.session.parts.mcp import MCPClients
from dagctx.session.parts.runner import BackgroundRunner
from dagctx.session.parts.work import Coordination

SERVER = [sys.executable, str(Path(__file__).with_name("mcp_fixture_server.py"))]
CLOSE_ORDER = ["work", "mcp", "jobs", "intake", "runner"]
PARTS = {
    "work": Coordination,
    "mcp": MCPClients,
    "jobs": Jobs,
    "intake": Intake,
    "runner": BackgroundRunner,
}


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the parts whose ``close`` ran, in the order they ran."""
    calls: list[str] = []
    for name, cls in PARTS.items():

        def recording(self: object, _name: str = name, _close: Callable[..., None] = cls.close):
            calls.append(_name)
            _close(self)

        monkeypatch.setattr(cls, "close", recording)
    return calls


def use_work(s: Session) -> None:
    (s.root / "a.py").write_text("x = 1\n")
    s.work_on("edit a", "a.py")


def use_jobs(s: Session) -> None:
    s.wait_all([s.shell("true"), s.lock("a.py")], timeout=10)
    s.shell("sleep", ["30"])  # still running at close


def use_mcp(s: Session) -> None:
    assert s.mcp_connect_sync("fx", SERVER).status == "connected"


def use_intake(s: Session) -> None:
    s.queue_result(lambda: None)
    s.file_changed("a.py")


def use_runner(s: Session) -> None:
    s.tick()


class TestCloseOrder:
    @pytest.mark.parametrize(
        "uses",
        [
            [use_work, use_jobs, use_mcp, use_intake, use_runner],
            [use_runner, use_intake, use_mcp, use_jobs, use_work],
            [use_mcp, use_work, use_runner, use_jobs, use_intake],
        ],
        ids=["work-first", "runner-first", "mcp-first"],
    )
    def test_parts_close_in_one_order_whatever_was_used_first(
        self, tmp_path: Path, closes: list[str], uses: list[Callable[[Session], None]]
    ) -> None:
        s = Session(tmp_path)
        s.on_close(lambda: closes.append("callback"))
        for use in uses:
            use(s)
        s.close()
        assert closes == ["callback", *CLOSE_ORDER]
        s.close()  # idempotent
        assert closes == ["callback", *CLOSE_ORDER]

    def test_unused_parts_exist_from_init_and_close_without_side_effects(
        self, tmp_path: Path, closes: list[str]
    ) -> None:
        s = Session(tmp_path)
        assert not s.background.started  # the loop thread starts on first use
        s.close()
        assert closes == CLOSE_ORDER
        assert not (tmp_path / ".dagctx").exists()  # no coordination store was opened

    def test_callbacks_run_last_registered_first_while_parts_still_work(
        self, tmp_path: Path
    ) -> None:
        s = Session(tmp_path)
        lock = s.wait(s.lock("a"), timeout=10)
        seen: list[object] = []
        s.on_close(lambda: seen.append("first registered"))
        s.on_close(lambda: seen.extend([s.closed, lock.status, s.background.started]))
        s.close()
        assert seen == [True, "acquired", True, "first registered"]
        assert lock.status == "released"

    def test_a_failing_step_does_not_stop_the_others(self, tmp_path: Path) -> None:
        s = Session(tmp_path)
        lock = s.wait(s.lock("a"), timeout=10)
        thread = s.background.thread

        def fail() -> None:
            raise ValueError("callback failed")

        s.on_close(fail)
        with pytest.raises(ValueError, match="callback failed"):
            s.close()
        assert isinstance(lock, LockNode) and lock.status == "released"
        assert thread is not None and not thread.is_alive()
        assert s.closed


class TestBackgroundLoop:
    def test_background_work_starts_the_loop_and_close_joins_it(self, tmp_path: Path) -> None:
        before = set(threading.enumerate())
        s = Session(tmp_path)
        s.tick()  # a tick runs in the calling thread: no loop for it
        assert s.background.thread is None and set(threading.enumerate()) <= before
        s.wait_all([s.shell("true")], timeout=10)
        thread = s.background.thread
        assert thread is not None and thread.is_alive() and thread not in before
        s.wait_all([s.shell("true"), s.lock("x")], timeout=10)
        s.shell("sleep", ["30"])
        s.close()
        assert not thread.is_alive() and s.background.thread is None
        assert set(threading.enumerate()) <= before  # no thread left behind

    def test_a_tick_runs_in_the_calling_thread(self, tmp_path: Path) -> None:
        # a hand-off to the loop's thread and back cost each tick two thread wake-ups
        # (milliseconds on a loaded machine, beyond the tick's own CPU)
        with Session(tmp_path) as s:
            s.wait_all([s.shell("true")], timeout=10)  # the loop runs
            applied: list[threading.Thread] = []
            s.queue_result(lambda: applied.append(threading.current_thread()))
            s.tick()
            assert applied == [threading.current_thread()]
            assert s.background.thread is not threading.current_thread()

    def test_a_tick_inside_a_tick_is_refused(self, tmp_path: Path) -> None:
        # it would wait for itself (it ran on the loop's thread and was refused there)
        with Session(tmp_path) as s:
            errors: list[BaseException] = []

            def tick_inside() -> None:
                try:
                    s.tick()
                except DagctxError as error:
                    errors.append(error)

            s.queue_result(tick_inside)
            assert s.tick().turn == 1 and s.tick().turn == 2
            assert len(errors) == 1 and "inside a tick" in str(errors[0])

    def test_blocking_tick_on_the_loop_is_refused(self, tmp_path: Path) -> None:
        with Session(tmp_path) as s:

            async def inside() -> object:
                return s.tick()

            with pytest.raises(DagctxError, match="atick"):
                s.background.run(inside())

    def test_closing_from_a_task_on_the_loop_ends_the_loop_after_that_task(
        self, tmp_path: Path
    ) -> None:
        s = Session(tmp_path)
        s.wait_all([s.shell("true")], timeout=10)  # the loop runs
        thread = s.background.thread

        async def close_inside() -> str:
            s.close()
            await asyncio.sleep(0.05)  # not cancelled: the loop waits for this task
            return "closed inside"

        assert s.background.submit(close_inside()).result(10) == "closed inside"
        assert thread is not None
        thread.join(10)
        assert not thread.is_alive() and s.closed

    def test_a_closed_loop_runs_nothing(self) -> None:
        runner = BackgroundRunner()
        assert runner.run(asyncio.sleep(0, "done")) == "done"
        runner.close()
        with pytest.raises(DagctxError, match="closed"):
            runner.run(asyncio.sleep(0))
        runner.close()  # idempotent

    @pytest.mark.parametrize("work", ["", "s.shell('sleep', ['30'])\n"], ids=["tick", "shell"])
    def test_a_program_that_never_closes_its_session_still_exits(
        self, tmp_path: Path, work: str
    ) -> None:
        # Regression: anyio's start_blocking_portal runs the loop on an executor thread,
        # which interpreter shutdown joins: the program hung after its last line.
        (tmp_path / "a.py").write_text("x = 1\n")
        script = (
            "import sys\n"
            "from dagctx import Session\n"
            "s = Session(sys.argv[1], budget=1000)\n"
            "s.text('a.py')\n"
            "s.tick()\n" + work + "print('ticked', flush=True)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "ticked\n"

    def test_run_timeout_cancels_the_task(self) -> None:
        runner = BackgroundRunner()
        cancelled = threading.Event()

        async def slow() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        try:
            with pytest.raises(TimeoutError):
                runner.run(slow(), timeout=0.1)
            assert cancelled.wait(5)
        finally:
            runner.close()


class TestIntake:
    def test_results_apply_in_order_and_paths_once_each(self) -> None:
        intake = Intake()
        applied: list[int] = []
        for i in range(3):
            intake.put(lambda i=i: applied.append(i))
        for path in ("b", "a", "b"):
            intake.add_path(path)
        while (apply := intake.next_result()) is not None:
            apply()
        assert applied == [0, 1, 2]
        assert intake.take_paths() == ["a", "b"] and intake.take_paths() == []

    def test_a_closed_intake_drops_what_it_held_and_what_comes_later(self) -> None:
        intake = Intake()
        intake.put(lambda: None)
        intake.add_path("a")
        intake.close()
        intake.put(lambda: None)
        intake.add_path("b")
        assert intake.next_result() is None and intake.take_paths() == []


def public_verbs() -> Iterator[tuple[str, object]]:
    for name, value in inspect.getmembers(Session):
        if not name.startswith("_") and callable(value):
            yield name, value


class TestTwinNames:
    def test_old_async_wait_names_are_aliases(self) -> None:
        assert Session.wait_async is Session.await_
        assert Session.wait_all_async is Session.await_all
        assert Session.wait_any_async is Session.await_any

    def test_every_twin_follows_the_rule(self) -> None:
        verbs = dict(public_verbs())
        aliases = {"wait_async", "wait_all_async", "wait_any_async"}
        for name, verb in verbs.items():
            if name in aliases:
                continue
            if inspect.iscoroutinefunction(verb):
                sync = name[1:].rstrip("_")  # atick → tick, await_ → wait
                if name.startswith("a") and sync in verbs:
                    assert not inspect.iscoroutinefunction(verbs[sync]), name
                else:  # natively async: its blocking twin is name + _sync
                    assert f"{name}_sync" in verbs, f"{name} has no twin named by the rule"
            elif name.endswith("_sync"):
                assert inspect.iscoroutinefunction(verbs[name.removesuffix("_sync")]), name
        assert {"atick", "await_", "await_all", "await_any", "mcp_connect_sync"} <= set(verbs)

    def test_async_twins_of_wait(self, tmp_path: Path) -> None:
        with Session(tmp_path) as s:

            async def main() -> tuple[object, object, object]:
                a = await s.await_(s.shell("echo", ["a"]), timeout=10)
                both = await s.await_all([s.shell("true"), s.shell("true")], timeout=10)
                first = await s.await_any([s.shell("sleep", ["30"]), s.shell("true")], 10)
                return a, both, first

            a, both, first = asyncio.run(main())
            assert getattr(a, "stdout", None) == "a\n"
            assert isinstance(both, list) and all(n.status == "completed" for n in both)
            assert getattr(first, "status", None) == "completed"
