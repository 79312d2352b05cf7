"""Resume row of SPEC §11: resuming a watch session of repo-10k from its ``session.db``
costs ≤ 20 % of a cold start of the same tree, both measured in the same run.

Each start runs in a fresh interpreter (no cache of the other is warm) and times what a
``dagctx watch`` start does after its imports and the encoding's load, which the two
share: a **cold** start scans the tree (:class:`~dagctx.watch.tracker.TreeTracker`,
leaving out the watch's default projection files as it does) and ticks once, then saves
the session (not timed); a **resume** loads that
``session.db``, compares it with the disk and ticks once (not saved, so every resume
resumes the same file). Each cold start is paired with the resume right after it, and
the median of the pairs' CPU-time ratios counts (process CPU, which a loaded machine
does not inflate as it does wall time; the cold start counts tokens on two threads, so
its CPU time is above its wall time on a quiet machine); the wall-time ratio is shown
beside it, and where each start's CPU time goes: a resume's load of the file, its
survey of the disk (in the tick), its first projection and the rest; a cold start's scan,
first projection and the rest (informational). A row resumes after 100 files were
edited, 20 created and 20 deleted while nothing watched, and a last one resumes a session
with a focus set (``dagctx watch --focus``, given again at the resume as the watch is),
which saves no projection but what the ranking read of each file (its terms and names,
taken back for the files that did not change), against its focused cold start (both
informational). Every resume of an unchanged tree must project the text of its cold
start, byte for byte.

``python -m benchmarks.resume [--quick]`` prints the rows alone.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.scenarios import FOCUSES, Bench, Row, row

RESUME_TARGET = 0.20
BUDGET = 8000
FOCUS = FOCUSES[0]
_START = """
import hashlib, json, sys, time
from pathlib import Path
from dagctx.session import Session, core
from dagctx.tokens import get_encoding
from dagctx.watch.tracker import TreeTracker
mode, root, budget = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
focus = sys.argv[4] if len(sys.argv) > 4 else None
phases = dict.fromkeys(("load", "scan", "survey", "projection"), 0.0)

def timed(phase, call):
    def run(*args, **kwargs):
        began = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            phases[phase] += time.process_time() - began
    return run

core.build_projection = timed("projection", core.build_projection)
TreeTracker.apply_resume = timed("survey", TreeTracker.apply_resume)
get_encoding()  # as a watch start does before it scans or loads; shared by both
started, cpu = time.perf_counter(), time.process_time()
if mode == "cold":
    session = Session(root, budget=budget)
else:
    session = Session.load(root=root)
    session.set_budget(budget)
phases["load"] = time.process_time() - cpu
if focus is not None:
    session.focus(focus)  # as dagctx watch --focus does at every start
outputs = [root / ".dagctx" / name for name in ("projection.md", "projection.json")]
timed("scan", TreeTracker(session, ".", ignore=outputs).load)()  # as dagctx watch does
result = session.tick()
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
phases["rest"] = cpu - sum(phases.values())
changes = sum(not t.derived for t in result.changes)
if mode == "cold":
    session.save()
session.close()
tokens = result.projection.tokens
text = hashlib.blake2b(result.projection.text.encode()).hexdigest()
out = {"seconds": seconds, "cpu": cpu, "changes": changes, "tokens": tokens, "text": text, **phases}
print(json.dumps(out))
"""


def _start(mode: str, root: Path, focus: str | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _START, mode, str(root), str(BUDGET)]
        + ([] if focus is None else [focus]),
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
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
    colds, resumes = [], []
    for _ in range(runs):
        cold = _start("cold", root)
        again = _start("resume", root)
        if again["changes"] or again["text"] != cold["text"]:
            raise RuntimeError(f"resume of an unchanged tree differs: {cold} vs {again}")
        colds.append(cold)
        resumes.append(again)
    _start("cold", root)
    _offline_edits(root, source.files, seed=runs)
    edited = _start("resume", root)
    fresh = _start("cold", root)  # the edited tree, cold (and saved again)
    focused_cold = _start("cold", root, FOCUS)
    focused = _start("resume", root, FOCUS)
    if focused["changes"] or focused["text"] != focused_cold["text"]:
        raise RuntimeError(f"focused resume differs: {focused_cold} vs {focused}")

    def median(starts: list[dict[str, float]], key: str) -> float:
        return sorted(s[key] for s in starts)[len(starts) // 2]

    def ms(starts: list[dict[str, float]], key: str) -> str:
        return f"{key} {median(starts, key) * 1000:.0f}"

    cpu_ratio = _median([r["cpu"] / c["cpu"] for c, r in zip(colds, resumes, strict=True)])
    wall_ratio = _median([r["seconds"] / c["seconds"] for c, r in zip(colds, resumes, strict=True)])
    return [
        row(
            f"resume of a watch of repo-10k ({len(source.files):,} files, unchanged)"
            " vs its cold start (scan + first tick), CPU",
            median(resumes, "cpu"),
            "s",
            baseline=median(colds, "cpu"),
            target=RESUME_TARGET * median(colds, "cpu"),
            target_text=f"≤ {RESUME_TARGET:.0%} of cold ({cpu_ratio:.0%})",
            passed=cpu_ratio <= RESUME_TARGET,
        ),
        row(
            "  the same, wall",
            median(resumes, "seconds"),
            "s",
            baseline=median(colds, "seconds"),
            target_text=f"{wall_ratio:.0%} of cold (informational)",
        ),
        row(
            "  where the CPU goes, ms (medians): resume "
            + ", ".join(ms(resumes, k) for k in ("load", "survey", "projection", "rest"))
            + "; cold "
            + ", ".join(ms(colds, k) for k in ("scan", "projection", "rest")),
            median(resumes, "projection"),
            "s",
            baseline=median(colds, "projection"),
            target_text="the first projection vs the cold one's (informational)",
        ),
        row(
            f"  after 140 offline edits ({edited['changes']:.0f} changes listed)"
            " vs the edited tree's cold start, CPU",
            edited["cpu"],
            "s",
            baseline=fresh["cpu"],
            target_text=f"{edited['cpu'] / fresh['cpu']:.0%} of cold (informational)",
        ),
        row(
            f"  with a focus ({FOCUS!r}: no projection saved, each file's terms taken back)"
            " vs its focused cold start,"
            f" CPU; resume load {focused['load'] * 1000:.0f} ms, survey"
            f" {focused['survey'] * 1000:.0f}, projection {focused['projection'] * 1000:.0f}",
            focused["cpu"],
            "s",
            baseline=focused_cold["cpu"],
            target_text=f"{focused['cpu'] / focused_cold['cpu']:.0%} of cold (informational)",
        ),
    ]


if __name__ == "__main__":
    from benchmarks.scenarios import bench

    with bench("--quick" in sys.argv[1:]) as bench_run:
        for result_row in resume(bench_run):
            print(result_row)
