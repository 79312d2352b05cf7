"""ShellNode and the shell verbs: real subprocesses, process groups, capped output,
results applied at tick, waiting, cancelling, rendering and serialization."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dagctx.errors import DagctxError, NodeNotFoundError, PathError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.shell import ShellError, ShellNode
from dagctx.runtime.processes import CappedBuffer, CommandResult
from dagctx.session import Session

PY = sys.executable
VISIBLE = [NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL]

# The leader optionally ignores SIGTERM, then starts a grandchild that ignores SIGTERM and
# publishes its pid (atomically) once its handler is in place; both sleep.
FAMILY = """
import os, signal, subprocess, sys, time
pid_file, leader_mode = sys.argv[1], sys.argv[2]
if leader_mode == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", '''
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
''', pid_file])
time.sleep(60)
"""


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = Session(tmp_path, budget=8000)
    yield s
    s.close()


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def tick_until(s: Session, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    def ticked() -> bool:
        s.tick()
        return condition()

    eventually(ticked, timeout)


def gone(pid: int) -> bool:
    """The process no longer exists or is a zombie (dead, waiting to be reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def read_pid(path: Path) -> int:
    eventually(path.exists)
    return int(path.read_text())


class TestTickIntake:
    def test_result_is_applied_at_the_next_tick_not_before(self, session: Session) -> None:
        node = session.shell("echo", ["hello world"])
        eventually(lambda: session.ready(node))
        assert node.status == "pending" and node.version == 0 and node.stdout == ""
        result = session.tick()
        assert node.status == "completed"
        assert node.exit_code == 0 and node.signal is None
        assert node.stdout == "hello world\n"
        assert node.duration is not None and 0 <= node.duration < 10
        descriptions = [t.description for t in result.changes if t.node_id == node.id]
        assert descriptions[0].startswith("running (pid ")
        assert descriptions[-1].startswith("completed (exit 0")

    def test_running_is_shown_while_the_command_runs(self, session: Session) -> None:
        node = session.shell(PY, ["-c", "import time; time.sleep(0.6)"])
        tick_until(session, lambda: node.status != "pending")
        assert node.status == "running"
        assert isinstance(node.pid, int) and not node.finished
        session.wait(node, timeout=10)
        assert node.status == "completed" and node.duration is not None
        assert node.duration >= 0.5

    def test_wait_applies_results_without_starting_a_turn(self, session: Session) -> None:
        node = session.shell("echo", ["x"])
        assert session.wait(node, timeout=10) is node
        assert node.status == "completed" and session.turn == 0
        changes = session.tick().changes
        assert any(t.node_id == node.id and "completed" in t.description for t in changes)

    def test_nonzero_exit_is_failed_with_its_code(self, session: Session) -> None:
        node = session.wait(session.shell(PY, ["-c", "import sys; sys.exit(3)"]), timeout=10)
        assert node.status == "failed" and node.exit_code == 3 and node.error is None

    def test_stdout_and_stderr_are_captured_separately(self, session: Session) -> None:
        code = "import sys; print('out'); print('err', file=sys.stderr)"
        node = session.wait(session.shell(PY, ["-c", code]), timeout=10)
        assert (node.stdout, node.stderr) == ("out\n", "err\n")

    def test_cwd_and_env_are_used(self, session: Session, tmp_path: Path) -> None:
        (tmp_path / "sub").mkdir()
        code = "import os; print(os.getcwd()); print(os.environ['DAGCTX_T'], 'PATH' in os.environ)"
        node = session.shell(PY, ["-c", code], cwd="sub", env={"DAGCTX_T": "42"})
        session.wait(node, timeout=10)
        assert node.stdout.splitlines() == [str((tmp_path / "sub").resolve()), "42 True"]

    def test_default_cwd_is_the_session_root(self, session: Session, tmp_path: Path) -> None:
        node = session.wait(session.shell(PY, ["-c", "import os; print(os.getcwd())"]), 10)
        assert node.stdout.strip() == str(tmp_path.resolve())

    def test_no_shell_unless_asked(self, session: Session) -> None:
        plain = session.shell("echo", ["a", "&&", "echo", "b"])
        shelled = session.shell("echo a && echo $((2 + 3))", shell=True)
        session.wait_all([plain, shelled], timeout=10)
        assert plain.stdout == "a && echo b\n"
        assert shelled.stdout == "a\n5\n"

    def test_own_process_group(self, session: Session) -> None:
        code = "import os; print(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())"
        node = session.wait(session.shell(PY, ["-c", code]), timeout=10)
        assert node.stdout == "True True\n"
        assert os.getpgid(0) != node.pid


class TestStartFailures:
    def test_missing_executable_fails_with_a_clear_message(self, session: Session) -> None:
        node = session.shell("dagctx-no-such-program", ["x"])
        eventually(lambda: session.ready(node))
        session.tick()  # must not raise
        assert node.status == "failed" and node.exit_code is None
        assert node.error == "executable 'dagctx-no-such-program' not found on PATH"
        assert "not found" in node.render(NodeState.COLLAPSED)

    def test_missing_cwd_fails_with_a_clear_message(self, session: Session) -> None:
        node = session.wait(session.shell("echo", ["x"], cwd="not-there"), timeout=10)
        assert node.status == "failed"
        assert node.error is not None and "not-there" in node.error
        assert "does not exist" in node.error

    def test_file_that_is_not_executable_fails(self, session: Session, tmp_path: Path) -> None:
        script = tmp_path / "script.sh"
        script.write_text("echo hi\n")
        script.chmod(0o644)
        node = session.wait(session.shell(str(script)), timeout=10)
        assert node.status == "failed" and node.error is not None
        assert "permission denied" in node.error


class TestBadArguments:
    @pytest.mark.parametrize(
        ("kwargs", "named"),
        [
            ({"cmd": 123}, "123"),
            ({"cmd": "  "}, "'  '"),
            ({"cmd": "echo", "args": "abc"}, "'abc'"),
            ({"cmd": "echo", "args": ["ok", 7]}, "7"),
            ({"cmd": "echo", "timeout": -1}, "-1"),
            ({"cmd": "echo", "timeout": 0}, "0"),
            ({"cmd": "echo", "timeout": float("nan")}, "nan"),
            ({"cmd": "echo", "timeout": True}, "True"),
            ({"cmd": "echo", "output_cap": 0}, "0"),
            ({"cmd": "echo", "env": {"A": 1}}, "1"),
            ({"cmd": "echo", "env": {"A=B": "x"}}, "'A=B'"),
            ({"cmd": "echo", "shell": "yes"}, "'yes'"),
        ],
    )
    def test_malformed_argument_raises_naming_it(
        self, session: Session, kwargs: dict[str, object], named: str
    ) -> None:
        with pytest.raises(ShellError, match=re.escape(named)):
            session.shell(**kwargs)  # type: ignore[arg-type]
        assert session.nodes() == []

    @pytest.mark.parametrize("cwd", ["..", "/", "../elsewhere"])
    def test_cwd_outside_the_root_is_refused(self, session: Session, cwd: str) -> None:
        with pytest.raises(PathError, match=re.escape(repr(cwd))):
            session.shell("echo", cwd=cwd)
        assert session.nodes() == []

    def test_unknown_parent_starts_nothing(self, session: Session, tmp_path: Path) -> None:
        with pytest.raises(NodeNotFoundError):
            session.shell("touch", ["made"], parent="group_99")
        time.sleep(0.3)
        assert session.nodes() == [] and not (tmp_path / "made").exists()

    def test_errors_are_dagctx_errors(self) -> None:
        assert issubclass(ShellError, DagctxError)


class TestTimeout:
    @pytest.mark.slow
    def test_timeout_kills_the_whole_group(self, session: Session, tmp_path: Path) -> None:
        pid_file = tmp_path / "grandchild.pid"
        started = time.monotonic()
        node = session.shell(PY, ["-c", FAMILY, str(pid_file), "default"], timeout=2.5)
        grandchild = read_pid(pid_file)
        assert not gone(grandchild)
        session.wait(node, timeout=20)
        assert node.status == "timeout"
        assert node.signal == signal.SIGTERM and node.exit_code is None
        assert node.duration is not None and 2.5 <= node.duration < 12
        assert time.monotonic() - started < 20
        eventually(lambda: gone(grandchild), timeout=5)

    def test_timeout_status_renders(self, session: Session) -> None:
        node = session.wait(session.shell("sleep", ["30"], timeout=0.3), timeout=10)
        assert node.status == "timeout"
        assert re.fullmatch(
            r"\$ sleep 30 → timeout \(signal SIGTERM, \d+(\.\d)? m?s\)",
            node.render(NodeState.COLLAPSED),
        )


class TestLeftovers:
    def test_a_background_process_holding_the_pipes_does_not_stall_the_result(
        self, session: Session
    ) -> None:
        started = time.monotonic()
        node = session.wait(session.shell("sleep 30 & echo $!", shell=True), timeout=20)
        assert node.status == "completed" and node.exit_code == 0
        assert time.monotonic() - started < 8
        eventually(lambda: gone(int(node.stdout)), timeout=5)


class TestCancel:
    def test_cancel_stops_a_running_command(self, session: Session) -> None:
        node = session.shell("sleep", ["30"])
        tick_until(session, lambda: node.status == "running")
        assert session.cancel(node) is True
        started = time.monotonic()
        session.wait(node, timeout=10)
        assert node.status == "cancelled" and node.signal == signal.SIGTERM
        assert time.monotonic() - started < 5
        assert node.pid is not None and gone(node.pid)

    @pytest.mark.slow
    def test_cancel_kills_children_that_ignore_sigterm(
        self, session: Session, tmp_path: Path
    ) -> None:
        pid_file = tmp_path / "grandchild.pid"
        node = session.shell(PY, ["-c", FAMILY, str(pid_file), "ignore"])
        grandchild = read_pid(pid_file)
        assert session.cancel(node) is True
        session.wait(node, timeout=20)
        assert node.status == "cancelled"
        assert node.signal == signal.SIGKILL  # the leader ignored SIGTERM too
        eventually(lambda: gone(grandchild), timeout=5)

    def test_cancel_right_away(self, session: Session) -> None:
        node = session.shell("sleep", ["30"])
        assert session.cancel(node) is True
        session.wait(node, timeout=10)
        assert node.status == "cancelled"

    def test_cancel_after_the_end_returns_false(self, session: Session) -> None:
        node = session.wait(session.shell("true"), timeout=10)
        assert session.cancel(node) is False
        assert node.status == "completed"

    def test_cancel_refuses_other_nodes(self, session: Session) -> None:
        lock = session.lock("x")
        with pytest.raises(ShellError, match=lock.id):
            session.cancel(lock.id)

    def test_close_stops_running_commands(self, tmp_path: Path) -> None:
        s = Session(tmp_path)
        pid_file = tmp_path / "grandchild.pid"
        node = s.shell(PY, ["-c", FAMILY, str(pid_file), "default"])
        grandchild = read_pid(pid_file)
        tick_until(s, lambda: node.status == "running")
        leader = node.pid
        assert leader is not None
        s.close()
        eventually(lambda: gone(leader) and gone(grandchild), timeout=10)


class TestOutputCap:
    def test_big_output_keeps_head_and_tail_with_a_marker(self, session: Session) -> None:
        code = "import sys; sys.stdout.write('HEAD' + 'x' * 3_000_000 + 'TAIL')"
        node = session.wait(session.shell(PY, ["-c", code], output_cap=1000), timeout=20)
        assert node.status == "completed"
        assert node.stdout_bytes == 3_000_008 and node.stdout_cut == 3_000_008 - 1000
        assert node.stdout.startswith("HEAD") and node.stdout.endswith("TAIL")
        assert "[… 2,999,008 bytes of stdout cut;" in node.stdout
        assert node.stdout.count("x") == 1000 - 8
        assert "2,999,008 bytes of stdout cut" in node.render(NodeState.DETAILS)

    def test_output_under_the_cap_is_whole(self, session: Session) -> None:
        code = "print('a' * 99)"
        node = session.wait(session.shell(PY, ["-c", code], output_cap=100), timeout=10)
        assert node.stdout == "a" * 99 + "\n" and node.stdout_cut == 0

    def test_buffer_never_holds_more_than_the_cap(self) -> None:
        buffer = CappedBuffer(101)
        fed = bytearray()
        for i in range(2000):
            chunk = bytes([65 + i % 26]) * (i % 97 + 1)
            buffer.feed(chunk)
            fed += chunk
            assert len(buffer.head) + len(buffer.tail) <= 101
        assert buffer.total == len(fed)
        assert bytes(buffer.head) == fed[:50] and bytes(buffer.tail) == fed[-51:]
        assert buffer.cut == len(fed) - 101

    def test_memory_does_not_grow_with_output(self, session: Session) -> None:
        code = "import sys; [sys.stdout.buffer.write(b'y' * 65536) for _ in range(320)]"
        tracemalloc.start()
        try:
            node = session.wait(session.shell(PY, ["-c", code], output_cap=4096), timeout=30)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert node.stdout_bytes == 320 * 65536  # about 21 MB went through
        assert peak < 3_000_000


class TestWait:
    def test_wait_all_waits_for_every_node(self, session: Session) -> None:
        nodes = [session.shell(PY, ["-c", f"print({i})"]) for i in range(4)]
        assert session.wait_all(nodes, timeout=20) == nodes
        assert [n.stdout for n in nodes] == ["0\n", "1\n", "2\n", "3\n"]

    def test_wait_any_returns_the_first_finished(self, session: Session) -> None:
        slow = session.shell("sleep", ["30"])
        fast = session.shell("echo", ["quick"])
        assert session.wait_any([slow, fast], timeout=10) is fast
        assert fast.status == "completed" and not slow.finished
        session.cancel(slow)

    def test_wait_any_times_out_with_none(self, session: Session) -> None:
        slow = session.shell("sleep", ["30"])
        started = time.monotonic()
        assert session.wait_any([slow], timeout=0.2) is None
        assert time.monotonic() - started < 3
        session.cancel(slow)

    def test_wait_timeout_returns_the_node_unfinished(self, session: Session) -> None:
        node = session.shell("sleep", ["30"])
        started = time.monotonic()
        assert session.wait(node, timeout=0.2) is node
        assert not node.finished and time.monotonic() - started < 3
        session.cancel(node)

    def test_wait_by_id_and_unknown_ids(self, session: Session) -> None:
        node = session.shell("true")
        assert session.wait(node.id, timeout=10) is node
        with pytest.raises(NodeNotFoundError, match="shell_99"):
            session.wait("shell_99")
        with pytest.raises(DagctxError, match="-1"):
            session.wait(node, timeout=-1)
        with pytest.raises(DagctxError, match="at least one"):
            session.wait_any([])

    def test_async_twins(self, session: Session) -> None:
        async def main() -> tuple[ShellNode, ShellNode | None]:
            a = session.shell("echo", ["a"])
            done = await session.wait_async(a, timeout=10)
            b = session.shell("echo", ["b"])
            return done, await session.wait_any_async([b], timeout=10)

        a, b = asyncio.run(main())
        assert a.stdout == "a\n" and b is not None and b.stdout == "b\n"

    def test_blocking_wait_on_the_session_loop_is_refused(self, session: Session) -> None:
        node = session.shell("true")

        async def inside() -> object:
            return session.wait(node)

        with pytest.raises(DagctxError, match="wait_async"):
            session.background.run(inside())


def finished_node(**result: object) -> ShellNode:
    node = ShellNode("echo", ["hi there"], cwd="/work", env={"MODE": "test"}, id="shell_1")
    node.apply_started(4242, 1_700_000_000.0)
    fields: dict[str, object] = {"started_at": 1_700_000_000.0, "duration": 0.2, **result}
    node.apply_result(CommandResult(**fields))  # type: ignore[arg-type]
    return node


class TestRender:
    OUT = "".join(f"line {i}\n" for i in range(1, 21))

    def completed(self) -> ShellNode:
        return finished_node(
            status="completed", exit_code=0, stdout=self.OUT, stdout_bytes=len(self.OUT),
            stderr="warn: careful\n", stderr_bytes=14,
        )  # fmt: skip

    def test_collapsed(self) -> None:
        node = self.completed()
        assert node.render(NodeState.COLLAPSED) == "$ echo 'hi there' → completed (exit 0, 0.2 s)"

    def test_summary_shows_the_last_lines(self) -> None:
        text = self.completed().render(NodeState.SUMMARY)
        assert text.startswith("### $ echo 'hi there' → completed (exit 0, 0.2 s) (#shell_1)")
        assert "line 20" in text and "line 16" in text and "line 15" not in text
        assert "warn: careful" in text

    def test_details_shows_the_captured_output(self) -> None:
        text = self.completed().render(NodeState.DETAILS)
        assert all(f"line {i}\n" in text for i in range(1, 20))
        assert "stderr (14 bytes):" in text and "cwd:" not in text

    def test_all_adds_cwd_env_and_timing(self) -> None:
        text = self.completed().render(NodeState.ALL)
        assert self.completed().render(NodeState.DETAILS) in text
        for fact in ("cwd: /work", "env: MODE=test", "pid: 4242", "duration: 0.200 s",
                     "started: 2023-11-14T22:13:20.000+00:00", "timeout: 30.0 s"):  # fmt: skip
            assert fact in text

    def test_each_state_is_distinct(self) -> None:
        node = self.completed()
        renders = [node.render(state) for state in VISIBLE]
        assert len(set(renders)) == 4
        assert node.render(NodeState.HIDDEN) == ""

    @pytest.mark.parametrize(
        ("result", "expected"),
        [
            ({"status": "failed", "exit_code": 2}, "failed (exit 2, 0.2 s)"),
            ({"status": "timeout", "signal": 15}, "timeout (signal SIGTERM, 0.2 s)"),
            ({"status": "cancelled", "signal": 9}, "cancelled (signal SIGKILL, 0.2 s)"),
            ({"status": "failed", "error": "executable 'x' not found on PATH", "duration": None},
             "failed (executable 'x' not found on PATH)"),
        ],
    )  # fmt: skip
    def test_collapsed_per_status(self, result: dict[str, object], expected: str) -> None:
        node = finished_node(**result)
        assert node.render(NodeState.COLLAPSED) == f"$ echo 'hi there' → {expected}"

    def test_pending_and_running(self) -> None:
        node = ShellNode("make", ["test"], id="shell_7")
        assert node.render(NodeState.COLLAPSED) == "$ make test → pending"
        node.apply_started(99, 0.0)
        assert node.render(NodeState.COLLAPSED) == "$ make test → running (pid 99)"
        assert "output appears when it ends" in node.render(NodeState.DETAILS)

    def test_fences_survive_backticks_in_output(self) -> None:
        node = finished_node(status="completed", exit_code=0, stdout="```\ncode\n```\n")
        assert "````\n```\ncode\n```\n````" in node.render(NodeState.DETAILS)

    def test_shown_in_the_projection(self, session: Session) -> None:
        node = session.wait(session.shell("echo", ["projected"]), timeout=10)
        text = session.tick().projection.text
        assert f"(#{node.id})" in text and "projected" in text


class TestSerialization:
    def test_round_trip_of_a_real_run(self, session: Session) -> None:
        code = "import sys; print('o'); print('e', file=sys.stderr); sys.exit(1)"
        node = session.wait(session.shell(PY, ["-c", code], env={"K": "v"}), timeout=10)
        copy = Node.from_dict(node.to_dict())
        assert isinstance(copy, ShellNode) and copy is not node
        assert copy.to_dict() == node.to_dict()
        assert [copy.render(s) for s in VISIBLE] == [node.render(s) for s in VISIBLE]

    def test_round_trip_of_a_pending_node(self) -> None:
        node = ShellNode("ls", ["-l"], cwd="/tmp", timeout=None, shell=True, id="shell_3")
        copy = Node.from_dict(node.to_dict())
        assert isinstance(copy, ShellNode)
        assert copy.to_dict() == node.to_dict() and copy.status == "pending"

    def test_malformed_data_is_refused(self) -> None:
        data = ShellNode("ls", id="shell_1").to_dict()
        data["data"]["status"] = "exploded"
        with pytest.raises(DagctxError, match="exploded"):
            Node.from_dict(data)
