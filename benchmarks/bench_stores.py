"""``python -m benchmarks.bench_stores [--url URL] [--rounds N]``: coordination latency,
SQLite on one machine vs PostgreSQL over loopback (issue 19). Prints one table.

Two rows per backend, medians (and 95th percentiles) over ``--rounds`` rounds (200):

- **claim → conflict seen**: agent B holds a write claim on a file and waits with
  ``wait_for_change``; agent A (its own store: its own connection) claims the same file;
  the time from the start of A's ``put`` until B has listed the claims and found the
  conflict. SQLite: B polls the file's ``data_version`` every 20 ms; PostgreSQL: B wakes
  on ``LISTEN/NOTIFY``.
- **lock hand-over**: a holder releases a lock another agent is blocked on; the time from
  the start of ``release`` until the waiter's ``acquire`` returns. SQLite: an ``flock``
  polled every 10 ms; PostgreSQL: an advisory lock the server grants at once.

Without ``--url`` (or ``DAGCTX_STORE``) a throwaway PostgreSQL server is started for the
run (``tests/pg_server.py``, as the tests do).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dagctx import _postgres
from dagctx.nodes.lock import LockHandle, lock_file_for
from dagctx.nodes.lock_pg import PostgresLockHandle, advisory_key
from dagctx.runtime.coordination import (
    Agent,
    BaseCoordinationStore,
    Claim,
    CoordinationStore,
    WorkBoard,
    find_conflicts,
)
from dagctx.runtime.coordination_pg import PostgresCoordinationStore


@contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    path = Path(__file__).resolve().parent.parent / "tests" / "pg_server.py"
    spec = importlib.util.spec_from_file_location("pg_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.PostgresServer()
    try:
        server.start()
        yield str(server.url)
    finally:
        server.close()


def _watch(b: BaseCoordinationStore, mine: Claim, seen: list[float]) -> None:
    """B's side: wait for changes until the store shows a claim conflicting with ``mine``."""
    while not (b.wait_for_change(5.0) and find_conflicts(mine, b.active())):
        pass
    seen.append(time.perf_counter())


def claim_to_conflict(
    a: BaseCoordinationStore, b: BaseCoordinationStore, root: Path, rounds: int
) -> list[float]:
    """Seconds from A's put until B, waiting on its store, has seen the conflict."""
    target = (root / "src" / "shared.py").as_posix()
    board_a, board_b = WorkBoard(a, Agent.new("a")), WorkBoard(b, Agent.new("b"))
    mine = board_b.new_claim("b works", [target], "write")
    board_b.put(mine)
    b.wait_for_change(0.01)  # start listening
    times: list[float] = []
    for _ in range(rounds):
        seen: list[float] = []
        waiter = threading.Thread(target=_watch, args=(b, mine, seen))
        waiter.start()
        time.sleep(0.005 + random.uniform(0, 0.02))  # B waits; any phase of its polling
        claim = board_a.new_claim("a works", [target], "write")
        started = time.perf_counter()
        board_a.put(claim)
        waiter.join(10)
        times.append(seen[0] - started)
        board_a.release(claim.claim_id)
    board_b.release(mine.claim_id)
    return times


def _acquire(handle: LockHandle | PostgresLockHandle, done: list[float]) -> None:
    handle.acquire(10)
    done.append(time.perf_counter())


def hand_over(make: Callable[[], LockHandle | PostgresLockHandle], rounds: int) -> list[float]:
    """Seconds from the holder's release until the blocked waiter holds the lock."""
    times: list[float] = []
    for _ in range(rounds):
        holder, waiter = make(), make()
        assert holder.acquire(5).status == "acquired"
        done: list[float] = []
        thread = threading.Thread(target=_acquire, args=(waiter, done))
        thread.start()
        time.sleep(0.02 + random.uniform(0, 0.01))  # blocked; any phase of a polling wait
        started = time.perf_counter()
        holder.release()
        thread.join()
        assert waiter.held
        times.append(done[0] - started)
        waiter.release()
    return times


def _row(name: str, backend: str, times: list[float]) -> tuple[str, str, str, str]:
    q = statistics.quantiles(times, n=20)
    return name, backend, f"{statistics.median(times) * 1000:.2f} ms", f"{q[18] * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a postgresql:// URL (default: a throwaway server)")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, _server(_postgres.store_url(args.url)) as url:
        root = Path(tmp)
        a, b = CoordinationStore(root / "c.db"), CoordinationStore(root / "c.db")
        rows.append(_row("claim → conflict seen", "SQLite (one machine)",
                         claim_to_conflict(a, b, root, args.rounds)))  # fmt: skip
        a.close()
        b.close()
        repo = f"bench-{uuid.uuid4().hex}"
        pa = PostgresCoordinationStore(url, root=root, repo_id=repo)
        pb = PostgresCoordinationStore(url, root=root, repo_id=repo)
        rows.append(_row("claim → conflict seen", "PostgreSQL (loopback)",
                         claim_to_conflict(pa, pb, root, args.rounds)))  # fmt: skip
        pa.close()
        pb.close()
        lock_file = lock_file_for(root, "src/shared.py")
        rows.append(_row("lock hand-over", "SQLite (one machine)",
                         hand_over(lambda: LockHandle(lock_file), args.rounds)))  # fmt: skip
        key = advisory_key(repo, "src/shared.py")
        rows.append(_row("lock hand-over", "PostgreSQL (loopback)",
                         hand_over(lambda: PostgresLockHandle(url, key), args.rounds)))  # fmt: skip
    print(f"| measure ({args.rounds} rounds) | backend | median | p95 |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
