"""A long session stays flat: 20,000 edits, ticked and saved periodically as ``dagctx
watch`` does, keep the trace log's memory, the process's allocations, the session file
and the time of a save flat (within 20 % between an early and a late measurement)."""

from __future__ import annotations

import gc
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import pytest

from dagctx.nodes.text import TextNode
from dagctx.session import Session

EDITS = 20_000
TICK_EVERY = 10  # edits per tick
EARLY = 2_000  # edits before the early measurement (the trace log is full by then)
SAVES = 9  # saves per measurement (their median is compared)
SAVE_EVERY = 70  # edits between two saves of a measurement
WINDOW = SAVES * SAVE_EVERY  # edits per measurement: more than one trim period of the log
FLAT = 1.2


def trace_log_bytes(session: Session) -> int:
    """Memory the kept traces take: the objects, their descriptions, one slot each."""
    traces = list(session.graph.traces)
    return sum(sys.getsizeof(t) + sys.getsizeof(t.description) + 8 for t in traces)


class Edits:
    """One text node re-read with new content each edit; a tick every TICK_EVERY edits."""

    def __init__(self, root: Path) -> None:
        self.file = root / "notes.txt"
        self.file.write_text("start\n")
        self.session = Session(root, budget=2000)
        self.node: TextNode = self.session.text("notes.txt")
        self.session.group(self.node, title="notes")
        self.session.session_node()
        self.db = root / ".dagctx" / "session.db"
        self.done = 0

    def run(self, edits: int) -> None:
        for _ in range(edits):
            self.done += 1
            self.file.write_text(f"edit {self.done}\n" * (1 + self.done % 3))
            assert self.node.recompute()
            if self.done % TICK_EVERY == 0:
                self.session.tick()

    def measure(self) -> tuple[float, int, int]:
        """Median CPU time of SAVES saves (CPU, not wall: a save's fsync waits on a shared
        disk), the largest trace log seen over WINDOW edits, and allocated blocks."""
        seconds: list[float] = []
        largest = 0
        for _ in range(SAVES):
            for _ in range(SAVE_EVERY // TICK_EVERY):
                self.run(TICK_EVERY)
                largest = max(largest, trace_log_bytes(self.session))
            started = time.process_time()
            self.session.save(self.db)
            seconds.append(time.process_time() - started)
        gc.collect()
        return statistics.median(seconds), largest, sys.getallocatedblocks()


@pytest.mark.slow
def test_twenty_thousand_edits_keep_memory_and_save_time_flat(tmp_path: Path) -> None:
    edits = Edits(tmp_path)
    try:
        edits.run(EARLY)
        edits.session.save(edits.db)  # the first save writes everything; later ones append
        early_save, early_log, early_blocks = edits.measure()
        edits.run(EDITS - edits.done - WINDOW)
        late_save, late_log, late_blocks = edits.measure()
        assert edits.done == EDITS
        if late_save > FLAT * early_save:  # a noisy neighbour: measure both again, alike
            again_save = edits.measure()[0]
            (tmp_path / "fresh").mkdir()
            fresh = Edits(tmp_path / "fresh")
            try:
                fresh.run(EARLY)
                fresh.session.save(fresh.db)
                early_save = max(early_save, fresh.measure()[0])
            finally:
                fresh.session.close()
            late_save = min(late_save, again_save)
        assert late_log <= FLAT * early_log, (early_log, late_log)
        assert late_blocks <= FLAT * early_blocks, (early_blocks, late_blocks)
        assert late_save <= FLAT * early_save, (early_save, late_save)
        with sqlite3.connect(edits.db) as conn:
            (rows,) = conn.execute("SELECT COUNT(*) FROM session_traces").fetchone()
        assert rows == len(list(edits.session.graph.traces)) < EDITS // 4
    finally:
        edits.session.close()
