"""Session.save under SIGKILL: the file always opens and holds the last session saved whole."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest
from session_file_worker import CRASH_BASE_NODES, write_crash_root

from dagctx import Session

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

WORKER = Path(__file__).with_name("session_file_worker.py")


def read_line(stream: IO[str]) -> str:
    line = stream.readline()
    assert line, "the writer harness exited early"
    return line.strip()


def check_whole(path: Path, root: Path) -> tuple[int, int]:
    """Load the file, check that every part agrees on one save, return its (trial, seq)."""
    with Session.load(path, root=root) as s:
        trial, seq = s.context.state["trial"], s.context.state["seq"]
        assert len(s.nodes()) == CRASH_BASE_NODES + seq + 1
        assert s.checkpoints() == [f"c{i}" for i in range(seq + 1)]
        assert s.turn == seq + 1
        assert len(s.get("group_1").children) == seq + 2
        assert s.project().tokens > 0
    return trial, seq


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


class TestKilledSave:
    TRIALS = 60

    @pytest.mark.slow
    def test_the_file_holds_the_last_whole_save_after_every_kill(self, tmp_path: Path) -> None:
        root = tmp_path / "tree"
        root.mkdir()
        write_crash_root(root)
        path = tmp_path / "session.db"
        rng = random.Random(20240612)
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), "crash", str(path), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        last: tuple[int, int] | None = None  # what the file must hold, at least
        mid_loop = 0
        try:
            for trial in range(self.TRIALS):
                proc.stdin.write(f"go {trial}\n")
                proc.stdin.flush()
                kind, pid = read_line(proc.stdout).split()
                assert kind == "child"
                reported: list[tuple[int, int]] = []
                # One kill in five lands while the writer builds its session or saves it
                # the first time; the others wait for a save, then hit a random moment.
                if last is not None and rng.random() < 0.2:
                    time.sleep(rng.uniform(0, 0.01))
                else:
                    _, t, seq = read_line(proc.stdout).split()
                    reported.append((int(t), int(seq)))
                    mid_loop += 1
                    time.sleep(rng.uniform(0, 0.03))
                os.kill(int(pid), signal.SIGKILL)
                while (line := read_line(proc.stdout)) != f"done {trial}":
                    _, t, seq = line.split()
                    reported.append((int(t), int(seq)))
                found = check_whole(path, root)
                if reported:
                    # The last reported save, or one more that committed before the kill.
                    assert found in (reported[-1], (trial, reported[-1][1] + 1))
                else:
                    assert found == last or found == (trial, 0)
                last = found
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        assert mid_loop >= self.TRIALS // 2
        assert integrity(path) == "ok"


class TestLoadWhileSaving:
    def test_a_load_during_another_process_save_sees_one_whole_session(
        self, tmp_path: Path
    ) -> None:
        root = tmp_path / "tree"
        root.mkdir()
        write_crash_root(root)
        path = tmp_path / "session.db"
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), "crash", str(path), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write("go 0\n")
            proc.stdin.flush()
            _, pid = read_line(proc.stdout).split()
            read_line(proc.stdout)  # the first save returned
            seen = [check_whole(path, root)[1] for _ in range(20)]
            os.kill(int(pid), signal.SIGKILL)
            while read_line(proc.stdout) != "done 0":
                pass
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        assert seen == sorted(seen) and seen[-1] > seen[0]  # saves went on meanwhile
