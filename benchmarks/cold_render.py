"""Cold render rows of SPEC §11: ``dagctx render <tree> --budget 8000`` in a fresh
interpreter (≤ 3 s wall for 10k files, never slower than tiktoken alone), beside tiktoken
alone counting the same files in a fresh interpreter of its own (the encoding loaded the
same way, ``encode_ordinary_batch`` on two threads), in the same run. Wall and CPU
(children's user + system) are both shown; the comparison with tiktoken is on CPU, which
a loaded machine does not inflate.

The generated repo-10k always runs; a real repository runs too when
``DAGCTX_BENCH_REPO`` names a checkout or a bare mirror (cloned into the run's temp dir).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.scenarios import Bench, Row, row

RENDER_TARGET_S = 3.0
BUDGET = 8000
_TIKTOKEN_ALONE = """
import os, sys
from dagctx.tokens import get_encoding
texts = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d != ".git"]
    for name in files:
        with open(os.path.join(top, name), encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
print(sum(map(len, get_encoding().encode_ordinary_batch(texts, num_threads=2))))
"""


def _timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of running ``argv`` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _median_pair(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    walls = sorted(p[0] for p in pairs)
    cpus = sorted(p[1] for p in pairs)
    return walls[len(walls) // 2], cpus[len(cpus) // 2]


def _rows(name: str, root: Path, runs: int) -> list[Row]:
    render = [sys.executable, "-m", "dagctx.cli", "render", str(root), "--budget", str(BUDGET)]
    alone = [sys.executable, "-c", _TIKTOKEN_ALONE, str(root)]
    renders, bases = [], []
    for _ in range(runs):  # each render paired with a baseline right after it
        renders.append(_timed(render))
        bases.append(_timed(alone))
    wall, cpu = _median_pair(renders)
    base_wall, base_cpu = _median_pair(bases)
    return [
        row(
            f"cold `dagctx render --budget {BUDGET}` {name}: wall vs tiktoken alone",
            wall,
            "s",
            baseline=base_wall,
            target=RENDER_TARGET_S,
        ),
        row(
            "  CPU vs tiktoken alone (CPU)",
            cpu,
            "s",
            baseline=base_cpu,
            target=base_cpu,
            target_text="≤ 1× tiktoken",
        ),
    ]


def _real_repo(b: Bench) -> Path | None:
    """The checkout ``DAGCTX_BENCH_REPO`` names (a bare mirror is cloned first)."""
    named = os.environ.get("DAGCTX_BENCH_REPO")
    if not named:
        return None
    path = Path(named)
    if (path / "HEAD").is_file() and (path / "objects").is_dir():  # bare
        checkout = b.tmp / "real-repo"
        if not checkout.exists():
            subprocess.run(["git", "clone", "-q", str(path), str(checkout)], check=True)
        return checkout
    return path


def cold_render(b: Bench) -> list[Row]:
    """Cold renders of repo-10k (and of ``DAGCTX_BENCH_REPO``) beside tiktoken alone."""
    runs = 1 if b.quick else 3
    repo = b.repo(3)
    rows = _rows(f"repo-10k ({len(repo.files):,} files)", repo.root, runs)
    real = _real_repo(b)
    if real is not None:
        count = sum(len(files) for _, _, files in os.walk(real))
        rows += _rows(f"{real.name} ({count:,} files)", real, runs)
    return rows
