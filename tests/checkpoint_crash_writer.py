"""Writer harness for the crash-safety test of SQLiteCheckpointStore (not a test module).

Run as ``python checkpoint_crash_writer.py DB_PATH``. dagctx is imported once; then for
each ``go TRIAL`` line on stdin the harness forks a writer and prints ``child PID``. The
writer opens the store and saves checkpoints in a loop, printing ``saved VERSION TRIAL SEQ``
(one unbuffered write) after each ``save`` has returned, until the test kills it with
SIGKILL. The harness reaps it and prints ``done TRIAL``. Forking from a warm process keeps
each trial to a few milliseconds however heavy the package import becomes.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from dagctx.checkpoint import SQLiteCheckpointStore

TASK_ID = "crash-test"
MAX_SAVES = 100_000  # a writer the test forgot to kill still ends


def payload(trial: int, seq: int) -> dict[str, Any]:
    """The values the writer saves as checkpoint ``seq`` of ``trial`` (a few KB)."""
    return {
        "trial": trial,
        "seq": seq,
        "items": list(range(seq % 50)),
        "text": f"{trial}:{seq}:" + "abcdefghij" * 300,
    }


def write_until_killed(path: str, trial: int) -> None:
    store = SQLiteCheckpointStore(path, TASK_ID)
    for seq in range(MAX_SAVES):
        cp = store.save(payload(trial, seq), {"input_tokens": seq}, metadata={"trial": trial})
        os.write(1, f"saved {cp.version} {trial} {seq}\n".encode())


def main() -> None:
    path = sys.argv[1]
    for line in iter(sys.stdin.readline, ""):
        trial = int(line.split()[1])
        pid = os.fork()
        if pid == 0:
            try:
                write_until_killed(path, trial)
            finally:
                os._exit(0)
        sys.stdout.write(f"child {pid}\n")
        sys.stdout.flush()
        os.waitpid(pid, 0)
        sys.stdout.write(f"done {trial}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
