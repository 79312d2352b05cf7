"""Worker process for the inter-process lock tests (not a test module).

``python lock_worker.py contend ROOT N``: take the lock on ``shared.txt`` N times through
``Session.lock``; inside each hold, claim ``holder`` with an exclusive create (a second
holder would find it there and record a violation in ``violations``), increment
``counter`` with a read-sleep-write that loses updates unless holds are exclusive, then
release. Exits 2 if an acquisition does not succeed.

``python lock_worker.py hold ROOT``: take the lock, print ``held PID`` and sleep until
killed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from dagctx.session import Session

LOCKED = "shared.txt"


def contend(root: Path, rounds: int) -> int:
    with Session(root) as session:
        for _ in range(rounds):
            lock = session.wait(session.lock(LOCKED, timeout=30))
            if lock.status != "acquired":
                print(f"not acquired: {lock.status} {lock.error}", flush=True)
                return 2
            try:
                fd = os.open(root / "holder", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                with open(root / "violations", "a") as out:
                    out.write(f"{os.getpid()} found another holder\n")
                fd = -1
            counter = root / "counter"
            value = int(counter.read_text() or 0) if counter.exists() else 0
            time.sleep(0.001)
            counter.write_text(str(value + 1))
            if fd >= 0:
                os.close(fd)
                os.unlink(root / "holder")
            session.release(lock)
            session.remove(lock)
    return 0


def hold(root: Path) -> int:
    session = Session(root)
    lock = session.wait(session.lock(LOCKED, timeout=30))
    print(f"{lock.status} {os.getpid()}", flush=True)
    time.sleep(120)
    return 0


if __name__ == "__main__":
    mode, where = sys.argv[1], Path(sys.argv[2])
    sys.exit(contend(where, int(sys.argv[3])) if mode == "contend" else hold(where))
