"""Writer harness for tests/test_robust_crash.py (not a test module).

Run as ``python robust_crash_worker.py DB ROOT``. The harness imports dagctx, loads the
encoding and builds a session of :data:`BASE_NODES` nodes over ROOT once (its background
loop is never started, so forking it is safe). Then, for each ``go TRIAL`` line on stdin,
it forks a writer. The writer prints ``child PID`` (its own, before anything else), opens
a :class:`~dagctx.checkpoint.SQLiteCheckpointStore` on the same file DB and repeats until
it is killed: change the session (one more text node, the context state, a structure
checkpoint), print ``begin TRIAL SEQ``, ``Session.save(DB)``, print ``saved TRIAL SEQ``,
save a checkpoint to the store, print ``stored VERSION TRIAL SEQ``. Each line is one
unbuffered write, printed only after the call before it returned. The harness reaps the
writer and prints ``done TRIAL``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from dagctx.checkpoint import SQLiteCheckpointStore
from dagctx.session import Session
from dagctx.tokens import get_encoding

FILES = 20
BASE_NODES = 160  # text nodes and groups the session has before a writer's loop
TASK_ID = "crash-robust"
MAX_SAVES = 100_000  # a writer the test forgot to kill still ends


def write_root(root: Path) -> None:
    for i in range(FILES):
        (root / f"m{i}.py").write_text(
            "".join(f"def f{i}_{j}():\n    return {j}\n" for j in range(30))
        )


def base_session(root: str) -> Session:
    s = Session(root, budget=4000)
    groups = [s.group(title=f"part {g}") for g in range(10)]
    for n in range(BASE_NODES - len(groups)):
        s.text(f"m{n % FILES}.py", lines=(1 + n % 30, 2 + n % 30), parent=groups[n % 10])
    return s


def payload(trial: int, seq: int) -> dict[str, Any]:
    return {"trial": trial, "seq": seq, "text": f"{trial}:{seq}:" + "xyz" * 400}


def say(line: str) -> None:
    os.write(1, f"{line}\n".encode())


def write_until_killed(s: Session, path: str, trial: int) -> None:
    say(f"child {os.getpid()}")
    store = SQLiteCheckpointStore(path, TASK_ID)
    for seq in range(MAX_SAVES):
        s.text(f"m{seq % FILES}.py")
        s.context.state.update(trial=trial, seq=seq)
        s.checkpoint(f"c{seq}")
        say(f"begin {trial} {seq}")
        s.save(path)
        say(f"saved {trial} {seq}")
        cp = store.save(payload(trial, seq), {"input_tokens": seq}, metadata={"trial": trial})
        say(f"stored {cp.version} {trial} {seq}")


def main() -> None:
    path, root = sys.argv[1], sys.argv[2]
    get_encoding().encode("warm")
    s = base_session(root)
    for line in iter(sys.stdin.readline, ""):
        trial = int(line.split()[1])
        pid = os.fork()
        if pid == 0:
            try:
                write_until_killed(s, path, trial)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        say(f"done {trial}")


if __name__ == "__main__":
    main()
