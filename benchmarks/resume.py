"""Resume row of SPEC §11: resuming a watch session of repo-10k from its ``session.db``
costs ≤ 20 % of a cold start of the same tree, both measured in the same run.

Each start runs in a fresh interpreter (no cache of the other is warm) and times what a
``dagctx watch`` start does after its imports and the encoding's load, which the two
share: a **cold** start scans the tree (:class:`~dagctx.watch.tracker.TreeTracker`) and
ticks once, then saves the session (not timed); a **resume** loads that
``session.db``, compares it with the disk and ticks once (not saved, so every resume
resumes the same file). Each cold start is paired with the resume right after it, and
the median of the pairs' ratios counts. A second row does the same after 100 files were
edited, 20 created and 20 deleted while nothing watched (informational).

``python -m benchmarks.resume [--quick]`` prints the rows alone.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from benchmarks.scenarios import Bench, Row, row

RESUME_TARGET = 0.20
BUDGET = 8000
_START = """
import json, sys, time
from pathlib import Path
from dagctx.session import Session
from dagctx.tokens import get_encoding
from dagctx.watch.tracker import TreeTracker
mode, root, budget = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
get_encoding()  # as a watch start does before it scans or loads; shared by both
started = time.perf_counter()
if mode == "cold":
    session = Session(root, budget=budget)
else:
    session = Session.load(root=root)
    session.set_budget(budget)
TreeTracker(session, ".").load()
result = session.tick()
seconds = time.perf_counter() - started
changes = sum(not t.derived for t in result.changes)
if mode == "cold":
    session.save()
session.close()
print(json.dumps({"seconds": seconds, "changes": changes, "tokens": result.projection.tokens}))
"""


def _start(mode: str, root: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _START, mode, str(root), str(BUDGET)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _offline_edits(root: Path, files: list[str], seed: int) -> None:
    """Edit 100 files, create 20 and delete 20 (as while nothing watched)."""
    rng = random.Random(seed)
    chosen = rng.sample(files, 140)
    for rel in chosen[:100]:
        with (root / rel).open("a") as handle:
            handle.write(f"\nOFFLINE_EDIT = {seed}\n")
    for rel in chosen[100:120]:
        (root / rel).unlink()
    for k, rel in enumerate(chosen[120:]):
        (root / rel).with_name(f"offline_{seed}_{k}.py").write_text(f"CREATED = {k}\n")


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def resume(b: Bench) -> list[Row]:
    """Cold start vs resume of repo-10k (a copy of its own: the edits stay there)."""
    source = b.repo(3)
    root = b.tmp / "resume-10k"
    if not root.exists():
        subprocess.run(["cp", "-r", str(source.root), str(root)], check=True)
    runs = 1 if b.quick else 3
    colds, resumes, ratios = [], [], []
    for _ in range(runs):
        cold = _start("cold", root)
        again = _start("resume", root)
        if again["changes"] or again["tokens"] != cold["tokens"]:
            raise RuntimeError(f"resume of an unchanged tree differs: {cold} vs {again}")
        colds.append(cold["seconds"])
        resumes.append(again["seconds"])
        ratios.append(again["seconds"] / cold["seconds"])
    _start("cold", root)
    _offline_edits(root, source.files, seed=runs)
    edited = _start("resume", root)
    fresh = _start("cold", root)  # the edited tree, cold (and saved again)
    rows = [
        row(
            f"resume of a watch of repo-10k ({len(source.files):,} files, unchanged)"
            " vs its cold start (scan + first tick)",
            _median(resumes),
            "s",
            baseline=_median(colds),
            target=RESUME_TARGET * _median(colds),
            target_text=f"≤ {RESUME_TARGET:.0%} of cold ({_median(ratios):.0%})",
            passed=_median(ratios) <= RESUME_TARGET,
        ),
        row(
            f"  after 140 offline edits ({edited['changes']:.0f} changes listed)"
            " vs the edited tree's cold start",
            edited["seconds"],
            "s",
            baseline=fresh["seconds"],
            target_text=f"{edited['seconds'] / fresh['seconds']:.0%} of cold (informational)",
        ),
    ]
    return rows


if __name__ == "__main__":
    from benchmarks.scenarios import bench

    with bench("--quick" in sys.argv[1:]) as bench_run:
        for result_row in resume(bench_run):
            print(result_row)
