"""SIGKILL inside ``Session.save``, with a checkpoint store writing to the same file.

``test_persistence_durability.py`` kills a writer at random moments of a loop that ticks
and saves a small session; ``test_checkpoint_durability.py`` does the same for
``SQLiteCheckpointStore`` alone. Here every kill is aimed *into* a save: the writer
announces each ``Session.save`` of a 160-node session before it starts, and the test kills
it a random fraction of a save's duration later, 60 times. The session file is shared
with a checkpoint store that the writer saves to between session saves. After every kill:

- the file opens, passes SQLite's integrity check, and loads as one whole session: the
  last one whose save returned, or the one being saved if its commit made it;
- every checkpoint whose ``store.save`` returned is there, unchanged, versions gapless.

The writer is forked from a warm harness (``robust_crash_worker.py``), so a trial costs
a few milliseconds plus the saves.
"""

from __future__ import annotations

import contextlib
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
from robust_crash_worker import BASE_NODES, TASK_ID, payload, write_root

from dagctx import CheckpointError, Session
from dagctx.checkpoint import SQLiteCheckpointStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

WORKER = Path(__file__).with_name("robust_crash_worker.py")
TRIALS = 60


def read_line(stream: IO[str]) -> list[str]:
    line = stream.readline()
    assert line, "the writer harness exited early"
    return line.split()


def loaded(path: Path, root: Path) -> tuple[int, int]:
    """Load the session file; check its parts agree on one save; return its (trial, seq)."""
    with Session.load(path, root=root) as s:
        trial, seq = s.context.state["trial"], s.context.state["seq"]
        assert len(s.nodes()) == BASE_NODES + seq + 1
        assert s.checkpoints()[-1] == f"c{seq}" and len(s.checkpoints()) >= seq + 1
        assert len(s.graph.roots()) == 10 + seq + 1  # the groups, and each new text node
        assert s.project().tokens > 0
    return trial, seq


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


class TestKilledInsideSave:
    @pytest.mark.slow
    def test_the_session_and_every_stored_checkpoint_survive(self, tmp_path: Path) -> None:
        root = tmp_path / "tree"
        root.mkdir()
        write_root(root)
        path = tmp_path / "shared.db"
        rng = random.Random(20240613)
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(path), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stored: dict[int, tuple[int, int]] = {}  # version → (trial, seq), once save returned
        durations: list[float] = []  # how long saves took, to aim the kills
        found: tuple[int, int] | None = None
        inside, pid = 0, ""
        try:
            for trial in range(TRIALS):
                proc.stdin.write(f"go {trial}\n")
                proc.stdin.flush()
                kind, pid = read_line(proc.stdout)
                assert kind == "child"
                aim = rng.randrange(3)  # kill inside the first, second or third save
                begun: list[tuple[int, int]] = []
                saved: list[tuple[int, int]] = []
                started = time.monotonic()
                while True:
                    word, *rest = read_line(proc.stdout)
                    if word == "stored":
                        stored[int(rest[0])] = (int(rest[1]), int(rest[2]))
                        continue
                    entry = (int(rest[0]), int(rest[1]))
                    if word == "saved":
                        saved.append(entry)
                        durations.append(time.monotonic() - started)
                        continue
                    started = time.monotonic()
                    begun.append(entry)
                    if len(begun) > aim:
                        break
                typical = sorted(durations)[len(durations) // 2] if durations else 0.01
                time.sleep(rng.uniform(0, typical))
                os.kill(int(pid), signal.SIGKILL)
                inside += time.monotonic() - started < typical
                while (line := read_line(proc.stdout)) != ["done", str(trial)]:
                    if line[0] == "stored":
                        stored[int(line[1])] = (int(line[2]), int(line[3]))
                    elif line[0] == "saved":
                        saved.append((int(line[1]), int(line[2])))
                    else:
                        begun.append((int(line[1]), int(line[2])))
                if found is None and not saved:  # killed in the very first save:
                    try:  # before it committed there is no session yet,
                        found = loaded(path, root)
                    except CheckpointError:
                        continue
                    assert found == begun[-1]  # after it, the one being saved
                    continue
                now = loaded(path, root)
                if saved:
                    assert now in (saved[-1], begun[-1])  # the last returned, or the next
                else:
                    assert now in (found, begun[-1])
                found = now
        finally:
            if pid:  # a writer left running by a failed assertion
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            proc.stdin.close()
            proc.wait(timeout=30)
        assert inside >= TRIALS // 2  # most kills landed while a save ran
        assert integrity(path) == "ok"
        with SQLiteCheckpointStore(path, TASK_ID) as store:
            versions = store.list_versions()
            assert versions == list(range(1, len(versions) + 1))
            assert max(stored) <= len(versions) <= max(stored) + TRIALS
            for version, (trial, seq) in stored.items():
                cp = store.get(version)
                assert (cp.values, cp.token_usage) == (payload(trial, seq), {"input_tokens": seq})
