"""An agent process for the PostgreSQL fault test (not a test module).

``python pg_agent.py URL CHECKOUT SHARED NAME ROUNDS [VICTIM_ROUND]``: a session on
CHECKOUT with ``store=URL`` runs ROUNDS rounds; round ``r`` claims ``src/f{r % 3}.py``,
locks it, and inside the lock creates ``SHARED/holder-f{n}`` exclusively (a marker left
by a live process means two holders: it appends to ``SHARED/violations``; one left by a
killed process is taken over), checks with a tick that the lock is still held, adds one
to ``SHARED/counter-f{n}`` with a read-sleep-write (which loses updates unless holds are
exclusive), removes the marker and releases. Then it saves a checkpoint of task NAME and
prints ``cp VERSION`` once the save returned, and ``round R`` when the round is done.
Any store failure (the server restarting) makes it retry the round. With VICTIM_ROUND it
prints ``holding`` inside the lock of that round and sleeps until killed.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import suppress
from pathlib import Path

from dagctx.checkpoint import PostgresCheckpointStore
from dagctx.errors import DagctxError
from dagctx.session import Session


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def enter(marker: Path, shared: Path) -> None:
    while True:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(marker.read_text() or "0")
            except (OSError, ValueError):
                continue
            if pid and alive(pid):
                with open(shared / "violations", "a") as out:
                    out.write(f"{os.getpid()} found {pid} holding {marker.name}\n")
                return
            marker.unlink(missing_ok=True)  # a killed holder's marker
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return


def one_round(s: Session, shared: Path, r: int, victim: bool) -> bool:
    name = f"f{r % 3}"
    work = s.work_on(f"round {r}", f"src/{name}.py")
    lock = s.wait(s.lock(f"src/{name}.py", timeout=60), timeout=90)
    try:
        if lock.status != "acquired":
            return False
        if victim:
            print("holding", flush=True)
            time.sleep(3600)
        marker = shared / f"holder-{name}"
        enter(marker, shared)
        try:
            s.tick()
            if lock.status != "acquired":
                return False  # lost: another agent may hold it now
            counter = shared / f"counter-{name}"
            value = int(counter.read_text() or 0) if counter.exists() else 0
            time.sleep(0.001)
            counter.write_text(str(value + 1))
            return True
        finally:
            marker.unlink(missing_ok=True)
    finally:
        s.release(lock)
        with suppress(DagctxError):  # the server is away: the claim expires, or goes
            s.work_done(work)  # when the session closes


def main() -> None:
    url, checkout, shared_dir, name, rounds = sys.argv[1:6]
    victim_round = int(sys.argv[6]) if len(sys.argv) > 6 else -1
    shared = Path(shared_dir)
    with Session(checkout, store=url) as s:
        s.use_coordination(agent_name=name, stale_after=10)
        store = PostgresCheckpointStore(url, name)
        r = 0
        while r < int(rounds):
            try:
                done = one_round(s, shared, r, r == victim_round)
            except DagctxError as exc:
                print(f"retry {r}: {type(exc).__name__}", flush=True)
                time.sleep(0.1)
                continue
            if not done:
                continue
            while True:
                try:
                    cp = store.save({"round": r}, {})
                    break
                except DagctxError:
                    time.sleep(0.1)
            print(f"cp {cp.version}", flush=True)
            print(f"round {r}", flush=True)
            r += 1
        store.close()


if __name__ == "__main__":
    main()
