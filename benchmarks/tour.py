"""The README-tour rows of SPEC §11 (issue 15): a turn after one edit when the files are
running text nodes made with ``s.text`` and nothing calls ``file_changed``.

Each generated tree (1k and 10k files; 100k in a full run) becomes one session: a text
node per file (``Session.text``: running, every turn), a group per leaf directory at
DETAILS, 128k budget. A turn rewrites one random file and times ``tick()`` alone; the
sizes take turns, so load on the machine falls on all of them alike. The baseline is the
naive full re-render + re-count of the 10k session (:func:`~benchmarks.measure.naive_turn`)
in the same run. Also shown: building the session (``s.text`` per file, the groups, the
first tick) and how the session learned of the edits (:meth:`Session.file_watch`).
"""

from __future__ import annotations

import random
import statistics
import time

from benchmarks.measure import collect, median_seconds, naive_turn
from benchmarks.scenarios import GROWTH_TARGET, TURN_SPEEDUP, TURN_TARGET_MS, Bench, Row, row
from benchmarks.workloads import Repo, rewrite
from dagctx.nodes.text import TextNode
from dagctx.session import Session

BUDGET = 128_000


class TourSession:
    """A README-tour session over ``repo``: a running text node per file, grouped by leaf
    directory at DETAILS, ticked once."""

    def __init__(self, repo: Repo, seed: int) -> None:
        self.repo = repo
        started = time.perf_counter()
        self.session = Session(repo.root, budget=BUDGET)
        by_dir: dict[str, list[str]] = {}
        for rel in repo.files:
            by_dir.setdefault(rel.rpartition("/")[0], []).append(rel)
        self.nodes: dict[str, TextNode] = {}
        for directory, members in by_dir.items():
            texts = [self.session.text(rel) for rel in members]
            self.nodes.update(zip(members, texts, strict=True))
            self.session.group(*texts, title=directory, state="DETAILS")
        self.session.tick()
        self.build_seconds = time.perf_counter() - started
        self.rng = random.Random(seed)
        self.turn = 0

    def one(self) -> float:
        """Seconds of ``tick()`` after one file was rewritten (checked to be seen)."""
        self.turn += 1
        rel = self.rng.choice(self.repo.files)
        rewrite(self.repo, rel, 100_000 + self.turn)
        started = time.perf_counter()
        result = self.session.tick()
        elapsed = time.perf_counter() - started
        assert self.nodes[rel].id in result.recomputed, f"the edit of {rel} was not seen"
        assert result.projection.tokens <= BUDGET
        return elapsed


def tour(b: Bench) -> list[Row]:
    """The tour turn at 1k and 10k files (and 100k in a full run) vs the naive turn."""
    depths = (2, 3) if b.quick else (2, 3, 4)
    runs = {d: TourSession(b.repo(d), seed=d) for d in depths}
    try:
        for run in runs.values():
            run.one()  # the first turn after the build settles caches: not timed
        collect()
        times: dict[int, list[float]] = {d: [] for d in depths}
        for _ in range(b.repeats):
            for d, run in runs.items():
                times[d].append(run.one())
        median = {d: statistics.median(t) for d, t in times.items()}
        ten_k = runs[3].session
        naive = median_seconds(lambda: naive_turn(ten_k), 1 if b.quick else 3)
        info = {d: run.session.file_watch() for d, run in runs.items()}
        build = {d: run.build_seconds for d, run in runs.items()}
    finally:
        for run in runs.values():
            run.session.close()
    files = {d: len(b.repo(d).files) for d in depths}
    measured = median[3]
    rows = [
        row(
            f"README tour: turn after 1 edit, {files[3]:,} running s.text nodes, no"
            f" file_changed, groups at DETAILS, {BUDGET // 1000}k",
            measured * 1000,
            "ms",
            baseline=naive * 1000,
            target=TURN_TARGET_MS,
            target_text=f"≤ {TURN_TARGET_MS:g} ms, ≥ {TURN_SPEEDUP:g}× faster",
            passed=measured * 1000 <= TURN_TARGET_MS and naive / measured >= TURN_SPEEDUP,
        )
    ]
    small, large = depths[0], depths[-1]
    rows.append(
        row(
            f"  growth of the tour turn, {files[small]:,} → {files[large]:,} files",
            median[large] / median[small],
            "×",
            target=GROWTH_TARGET,
        )
    )
    for d in depths:
        watch = info[d]
        how = (
            f"{watch.mode}: {watch.watched_dirs:,} directories watched,"
            f" {watch.polled_files:,} files polled"
        )
        rows.append(row(f"  tour turn, {files[d]:,} files ({how})", median[d] * 1000, "ms"))
        built = f"  tour build: s.text × {files[d]:,} + groups + first tick"
        rows.append(row(built, build[d], "s"))
    return rows
