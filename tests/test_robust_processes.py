"""Processes under stress: what ``test_shell.py`` and ``test_lock.py`` leave open.

- A command that ignores SIGTERM and forks children (one of them orphaned by a double
  fork, still in the command's process group) is killed whole when it times out.
- A shell job that starts ``setsid sleep 300 &`` (a new session: outside the job's
  process group, reparented when the shell exits) loses that sleep at its timeout, and a
  job that finished leaving one behind loses it when the session closes.
- A command writing 200 KB/s for 3 s keeps at most ``output_cap`` bytes, counts every
  byte, and the session's memory does not grow while it runs.
- 8 processes take one LockNode 100 times each: never two holders, exactly 800 holds.
- Processes already waiting for a lock whose holder is SIGKILLed get it at once, long
  before their timeout.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from dagctx import Session
from dagctx.runtime.processes import KILL_GRACE

PY = sys.executable
LOCK_WORKER = Path(__file__).with_name("lock_worker.py")

# The leader ignores SIGTERM and forks three children that ignore it too; the last one
# double-forks a grandchild (reparented, still in the group). Every process writes its
# pid to PIDS (one line each, appended), then sleeps.
FAMILY = """
import os, signal, sys, time
pids = sys.argv[1]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def publish():
    with open(pids, "a") as out:
        out.write(f"{os.getpid()}\\n")
publish()
for n in range(3):
    if os.fork() == 0:
        if n == 2 and os.fork() != 0:
            os._exit(0)  # the grandchild lives on without its parent
        publish()
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""

# Writes 20 KB every 0.1 s for 3 s (200 KB/s, 600 KB in all) to stdout.
STEADY = """
import sys, time
chunk = b"z" * 20_000
for _ in range(30):
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
    time.sleep(0.1)
"""


def gone(pid: int) -> bool:
    """The process no longer exists or is a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def eventually(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def published(path: Path, count: int) -> list[int]:
    eventually(lambda: path.exists() and len(path.read_text().split()) >= count, 10)
    return [int(pid) for pid in path.read_text().split()]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="reads /proc")
class TestTimeoutKillsEverything:
    def test_a_family_ignoring_sigterm_is_killed_at_the_timeout(self, tmp_path: Path) -> None:
        pids_file = tmp_path / "pids"
        with Session(tmp_path) as s:
            started = time.monotonic()
            node = s.shell(PY, ["-c", FAMILY, str(pids_file)], timeout=0.5)
            pids = published(pids_file, 4)
            assert not any(gone(pid) for pid in pids)
            s.wait(node, timeout=20)
            assert node.status == "timeout"
            assert node.signal == signal.SIGKILL  # SIGTERM was ignored
            assert time.monotonic() - started < 0.5 + KILL_GRACE + 5
            eventually(lambda: all(gone(pid) for pid in pids), 5)
            assert "timeout (signal SIGKILL" in s.tick().projection.text


def escapee(node_stdout: str) -> int:
    """The pid the job printed (``echo $!`` after ``setsid sleep 300 &``)."""
    return int(node_stdout.split()[0])


def session_id(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="reads /proc")
class TestSetsidEscapees:
    def test_a_setsid_child_is_killed_at_the_timeout(self, tmp_path: Path) -> None:
        pid_file = tmp_path / "pid"
        with Session(tmp_path) as s:
            node = s.shell(
                f"setsid sleep 300 & echo $! > {pid_file}; sleep 60", shell=True, timeout=3
            )
            eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 10)
            pid = int(pid_file.read_text())
            eventually(lambda: session_id(pid) == pid, 5)  # it left the job's group and session
            s.wait(node, timeout=20)
            assert node.status == "timeout"
            eventually(lambda: gone(pid), 5)

    def test_a_setsid_child_of_a_finished_job_is_killed_at_close(self, tmp_path: Path) -> None:
        s = Session(tmp_path)
        try:
            node = s.shell("setsid sleep 300 >/dev/null 2>&1 & echo $!", shell=True, timeout=30)
            s.wait(node, timeout=20)
            assert node.status == "completed"
            pid = escapee(node.stdout)
            eventually(lambda: session_id(pid) == pid, 5)
            time.sleep(0.2)
            assert not gone(pid)  # the job is over; its escapee still runs ...
        finally:
            s.close()
        eventually(lambda: gone(pid), 5)  # ... until the session closes

    def test_a_job_left_running_at_close_takes_its_escapee_with_it(self, tmp_path: Path) -> None:
        pid_file = tmp_path / "pid"
        s = Session(tmp_path)
        try:
            s.shell(f"setsid sleep 300 & echo $! > {pid_file}; sleep 60", shell=True, timeout=120)
            eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 10)
            pid = int(pid_file.read_text())
        finally:
            s.close()
        eventually(lambda: gone(pid), 5)


class TestSteadyOutput:
    @pytest.mark.slow
    def test_200_kb_per_second_is_capped_without_memory_growth(self, tmp_path: Path) -> None:
        with Session(tmp_path, budget=2000) as s:
            tracemalloc.start()
            try:
                node = s.shell(PY, ["-c", STEADY], output_cap=4096, timeout=30)
                samples = []
                while not node.finished:
                    time.sleep(0.25)
                    samples.append(tracemalloc.get_traced_memory()[0])
                    s.tick()
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert node.status == "completed"
            assert node.stdout_bytes == 600_000 and node.stdout_cut == 600_000 - 4096
            assert node.stdout.count("z") == 4096
            assert len(samples) >= 8  # it ran for seconds, sampled as it went
            middle, late = samples[len(samples) // 3], max(samples[len(samples) // 3 :])
            assert late - middle < 256_000  # output after the first second adds nothing kept
            assert peak < 2_000_000
            assert s.project().tokens <= 2000


def contend(root: Path, rounds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, str(LOCK_WORKER), "contend", str(root), str(rounds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class TestLockContention:
    @pytest.mark.slow
    def test_8_processes_100_holds_each_never_overlap(self, tmp_path: Path) -> None:
        workers = [contend(tmp_path, 100) for _ in range(8)]
        outputs = [w.communicate(timeout=110) for w in workers]
        assert [w.returncode for w in workers] == [0] * 8, outputs
        assert not (tmp_path / "violations").exists()  # never two holders at once
        assert (tmp_path / "counter").read_text() == "800"  # every hold counted, none lost

    @pytest.mark.slow
    def test_waiters_get_a_lock_at_once_when_its_holder_is_killed(self, tmp_path: Path) -> None:
        holder = subprocess.Popen(
            [PY, str(LOCK_WORKER), "hold", str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        waiters: list[subprocess.Popen[str]] = []
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().split()[0] == "acquired"
            waiters = [contend(tmp_path, 3) for _ in range(3)]  # they wait up to 30 s each
            time.sleep(1.0)  # long enough for every waiter to be polling for the lock
            assert not (tmp_path / "counter").exists()
            killed = time.monotonic()
            holder.send_signal(signal.SIGKILL)
            outputs = [w.communicate(timeout=30) for w in waiters]
            elapsed = time.monotonic() - killed
        finally:
            holder.kill()
            holder.wait(timeout=10)
            for w in waiters:
                w.kill()
        assert [w.returncode for w in waiters] == [0] * 3, outputs
        assert elapsed < 10  # far below the 30 s the waiters would have waited
        assert (tmp_path / "counter").read_text() == "9"
        assert not (tmp_path / "violations").exists()
