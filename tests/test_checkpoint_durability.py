"""Checkpoint stores across processes: concurrent writers (SQLite and PostgreSQL) and
SQLite writers killed mid-save."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import IO

import pytest
from checkpoint_crash_writer import TASK_ID, payload

from dagctx.checkpoint import SQLiteCheckpointStore, open_checkpoint_store

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

WRITER = textwrap.dedent(
    """
    import sys
    from dagctx.checkpoint import open_checkpoint_store

    path, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open_checkpoint_store("shared", path) as store:
        for seq in range(count):
            cp = store.save({"writer": writer, "seq": seq}, {"input_tokens": seq})
            print(cp.version, flush=True)
    """
)


class TestConcurrentWriters:
    @pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
    def test_writers_in_several_processes_never_share_a_version(
        self, tmp_path: Path, backend: str, request: pytest.FixtureRequest
    ) -> None:
        path = (
            request.getfixturevalue("pg_url") if backend == "postgresql" else tmp_path / "shared.db"
        )
        writers, count = 4, 25
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(path), str(writer), str(count)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for writer in range(writers)
        ]
        returned: list[int] = []
        for proc in procs:
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0
            returned += [int(line) for line in out.split()]
        total = writers * count
        assert sorted(returned) == list(range(1, total + 1))
        with open_checkpoint_store("shared", path) as store:
            assert store.list_versions() == list(range(1, total + 1))
            written = {(cp.values["writer"], cp.values["seq"]) for cp in map(store.get, returned)}
            assert written == {(w, s) for w in range(writers) for s in range(count)}


def read_line(stream: IO[str]) -> str:
    line = stream.readline()
    assert line, "the writer harness exited early"
    return line.strip()


class TestKilledWriter:
    TRIALS = 60

    def test_every_checkpoint_whose_save_returned_survives_sigkill(self, tmp_path: Path) -> None:
        path = tmp_path / "crash.db"
        harness = Path(__file__).with_name("checkpoint_crash_writer.py")
        rng = random.Random(20240611)
        reported: dict[int, tuple[int, int]] = {}  # version -> (trial, seq) after save returned
        in_loop_trials = 0

        def record(line: str) -> None:
            _, version, trial, seq = line.split()
            reported[int(version)] = (int(trial), int(seq))

        proc = subprocess.Popen(
            [sys.executable, str(harness), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for trial in range(self.TRIALS):
                proc.stdin.write(f"go {trial}\n")
                proc.stdin.flush()
                kind, pid = read_line(proc.stdout).split()
                assert kind == "child"
                # One kill in five lands while the writer opens the file; the others wait for
                # its first save, then hit a random point of the save loop.
                if rng.random() < 0.2:
                    time.sleep(rng.uniform(0, 0.002))
                else:
                    record(read_line(proc.stdout))
                    in_loop_trials += 1
                    time.sleep(rng.uniform(0, 0.01))
                os.kill(int(pid), signal.SIGKILL)
                while (line := read_line(proc.stdout)) != f"done {trial}":
                    record(line)
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)

        assert in_loop_trials >= self.TRIALS // 2
        assert len(reported) >= in_loop_trials
        assert db_integrity(path) == "ok"
        with SQLiteCheckpointStore(path, TASK_ID) as store:
            versions = store.list_versions()
            # No gaps, and at most one checkpoint per trial committed but never reported.
            assert versions == list(range(1, len(versions) + 1))
            assert max(reported) <= len(versions) <= max(reported) + self.TRIALS
            for version, (trial, seq) in reported.items():
                cp = store.get(version)
                assert cp.values == payload(trial, seq)
                assert cp.token_usage == {"input_tokens": seq}
                assert cp.metadata == {"trial": trial}
            for version in versions:  # unreported ones are whole too
                store.get(version)


def db_integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()
