"""The benchmark scenarios of SPEC §11; each returns result rows for the table.

A row is a dict: ``scenario``, ``measured``, ``baseline`` (same unit, measured in the same
run; ``None`` when there is none), ``unit``, ``target`` (a number, or ``None`` for an
informational row), ``target_text`` (how the target reads in the table) and ``passed``
(``None`` for informational rows).
"""

from __future__ import annotations

import mimetypes
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.measure import collect, median_seconds, naive_turn, tiktoken_alone
from benchmarks.workloads import Graph100k, Repo, build_graph, rewrite, write_repo
from dagctx.nodes.base import NodeState
from dagctx.session import Session
from dagctx.tokens import get_encoding
from dagctx.watch.scan import scan_tree

UNLIMITED = 10**12
TURN_TARGET_MS = 5.0
TURN_SPEEDUP = 100.0
MANY_SPEEDUP = 10.0
GROWTH_TARGET = 3.0
COLD_TARGET = 1.3
CASCADE_TARGET_US = 50.0
CHECKPOINT_TARGET_MS = 100.0
UTILIZATION_TARGET = 0.95
MEMORY_TARGET = 1024.0
PRESSURE = 50  # content / budget in the heavy-pressure scenario

Row = dict[str, Any]


def row(
    scenario: str,
    measured: float,
    unit: str,
    *,
    baseline: float | None = None,
    target: float | None = None,
    target_text: str = "",
    passed: bool | None = None,
) -> Row:
    """A result row; ``passed`` defaults to ``measured <= target`` when a target is set."""
    if passed is None and target is not None:
        passed = measured <= target
    return {
        "scenario": scenario,
        "measured": measured,
        "baseline": baseline,
        "ratio": (measured / baseline) if baseline else None,
        "unit": unit,
        "target": target,
        "target_text": target_text or (f"≤ {target:g} {unit}" if target is not None else ""),
        "passed": passed,
    }


@dataclass
class Bench:
    """Workloads shared by the scenarios of one run (generated once, in a temp dir)."""

    quick: bool
    tmp: Path
    repos: dict[int, Repo] = field(default_factory=dict)
    sessions: dict[int, Session] = field(default_factory=dict)
    naive: dict[int, float] = field(default_factory=dict)
    graph: Graph100k | None = None

    @property
    def repeats(self) -> int:
        return 15 if self.quick else 41

    def repo(self, depth: int) -> Repo:
        """The generated tree with ``10**depth`` files (depth 3 is repo-10k)."""
        if depth not in self.repos:
            self.repos[depth] = write_repo(self.tmp / f"repo-{depth}", depth=depth)
        return self.repos[depth]

    def session(self, depth: int, budget: int) -> Session:
        """The scanned session over :meth:`repo`, switched to ``budget`` and ticked once
        (its plan for each budget is kept, so switching back is a normal turn)."""
        session = self.sessions.get(depth)
        if session is None:
            session = Session(self.repo(depth).root, budget=budget)
            scan_tree(session, ".")
            self.sessions[depth] = session
        if session.budget != budget or session.turn == 0:
            session.set_budget(budget)
            session.tick()
        return session

    def naive_seconds(self, depth: int) -> float:
        """The naive full re-render + re-count of :meth:`repo` (same for every budget)."""
        if depth not in self.naive:
            session = self.session(depth, 128_000)
            self.naive[depth] = median_seconds(lambda: naive_turn(session), 1 if self.quick else 3)
        return self.naive[depth]

    def graph100k(self) -> Graph100k:
        if self.graph is None:
            self.graph = build_graph()
        return self.graph

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()


@contextmanager
def bench(quick: bool) -> Iterator[Bench]:
    with tempfile.TemporaryDirectory(prefix="dagctx-bench-") as tmp:
        b = Bench(quick, Path(tmp))
        try:
            yield b
        finally:
            b.close()


# -- cold build -----------------------------------------------------------------------


COLD_BUDGETS = (8000, 128_000)  # the CLI's default budget; the README tour's and turns'


def cold_build(b: Bench) -> list[Row]:
    """Scan repo-10k and project it once, at each budget users run (:data:`COLD_BUDGETS`)
    and with room for everything (every node counted), vs tiktoken alone counting the
    same files on two threads; each build is paired with baseline runs right after it,
    and the median of the pairs' ratios counts (wall time, as tiktoken's threads run).

    The target (SPEC §11, ≤ 1.3× tiktoken) applies at the budgets users run: issue 15
    item 2 asks a cold build to count exactly only what can be shown, so at 8k or 128k
    it must not tokenize every byte. Counting every node (a budget above the tree's
    5M tokens, which no model takes) is shown beside them, informational: it measures
    what the engine adds per byte when everything must be counted. The baseline is
    tiktoken's batch API, ``encode_ordinary_batch`` with two threads; the last row
    compares the count-all build with the texts split into two chunks on two threads,
    the fastest way we know to run tiktoken alone.
    """
    repo = b.repo(3)
    texts = [(repo.root / f).read_text() for f in repo.files]
    get_encoding()  # loading the encoding is once per process, not part of a build
    mimetypes.init()
    budgets = (*COLD_BUDGETS, UNLIMITED)
    builds: dict[int, list[float]] = {budget: [] for budget in budgets}
    batches: dict[int, list[float]] = {budget: [] for budget in budgets}
    chunks: list[float] = []
    for _ in range(1 if b.quick else 3):
        for budget in budgets:
            collect()
            started = time.perf_counter()
            with Session(repo.root, budget=budget) as session:
                scan_tree(session, ".")
                projection = session.project()
                builds[budget].append(time.perf_counter() - started)
                assert projection.tokens <= budget
                assert budget != UNLIMITED or not (projection.omitted or projection.degraded)
                encoding = session.counter.encoding
            collect()
            batch, chunked = tiktoken_alone(encoding, texts)
            batches[budget].append(batch)
            if budget == UNLIMITED:
                chunks.append(chunked)

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    def ratio(budget: int) -> float:
        return median([m / base for m, base in zip(builds[budget], batches[budget], strict=True)])

    rows = [
        row(
            f"cold build repo-10k at {budget:,} tokens: scan + first projection vs tiktoken's"
            " encode_ordinary_batch of every file (2 threads)",
            median(builds[budget]),
            "s",
            baseline=median(batches[budget]),
            target=COLD_TARGET * median(batches[budget]),
            target_text=f"≤ {COLD_TARGET}× tiktoken ({ratio(budget):.2f}×)",
            passed=ratio(budget) <= COLD_TARGET,
        )
        for budget in COLD_BUDGETS
    ]
    strict = median([m / base for m, base in zip(builds[UNLIMITED], chunks, strict=True)])
    return [
        *rows,
        row(
            f"  scan + count all ({repo.nodes:,} nodes, every byte) vs the same"
            " (no budget users run)",
            median(builds[UNLIMITED]),
            "s",
            baseline=median(batches[UNLIMITED]),
            target_text=f"{ratio(UNLIMITED):.2f}× (informational)",
        ),
        row(
            "  count all vs tiktoken on two chunks in two threads (its fastest here)",
            median(builds[UNLIMITED]),
            "s",
            baseline=median(chunks),
            target_text=f"{strict:.2f}× (informational)",
        ),
    ]


# -- turns ----------------------------------------------------------------------------


class _Turns:
    """Edits files of a generated tree and times ``file_changed`` + ``tick``."""

    def __init__(self, b: Bench, depth: int, budget: int, changes: int) -> None:
        self.repo = b.repo(depth)
        self.session = b.session(depth, budget)
        self.budget, self.changes = budget, changes
        self.rng = random.Random(depth * 1_000_003 + budget + changes)
        self.turn = 0

    def one(self) -> float:
        """Seconds of one turn after ``changes`` files were rewritten."""
        self.turn += 1
        batch = self.rng.sample(self.repo.files, self.changes)
        for rel in batch:
            rewrite(self.repo, rel, self.turn)
        session = self.session
        if session.budget != self.budget:
            session.set_budget(self.budget)
        started = time.perf_counter()
        for rel in batch:
            session.file_changed(rel)
        result = session.tick()
        elapsed = time.perf_counter() - started
        assert result.projection.tokens <= self.budget
        return elapsed


def _median_turn(b: Bench, depth: int, budget: int, changes: int, repeats: int) -> float:
    turns = _Turns(b, depth, budget, changes)
    turns.one()  # the first turn after a budget switch catches up: not timed
    collect()
    return statistics.median(turns.one() for _ in range(repeats))


def turns(b: Bench) -> list[Row]:
    """One turn after one file change (128k and 8k) and after 100 changes, vs naive."""
    rows = []
    repo = b.repo(3)
    naive = b.naive_seconds(3)
    for budget in (128_000, 8_000):
        measured = _median_turn(b, 3, budget, 1, b.repeats)
        ok = measured * 1000 <= TURN_TARGET_MS and naive / measured >= TURN_SPEEDUP
        rows.append(
            row(
                f"turn after 1 file change, repo-10k ({repo.nodes:,} nodes), {budget // 1000}k",
                measured * 1000,
                "ms",
                baseline=naive * 1000,
                target=TURN_TARGET_MS,
                target_text=f"≤ {TURN_TARGET_MS:g} ms, ≥ {TURN_SPEEDUP:g}× faster",
                passed=ok,
            )
        )
    measured = _median_turn(b, 3, 128_000, 100, 3 if b.quick else 7)
    rows.append(
        row(
            "turn after 100 file changes, repo-10k, 128k",
            measured * 1000,
            "ms",
            baseline=naive * 1000,
            target=naive * 1000 / MANY_SPEEDUP,
            target_text=f"≥ {MANY_SPEEDUP:g}× faster",
        )
    )
    return rows


FOCUS_TARGET_MS = 50.0
FIRST_FOCUS_TARGET_S = 3.0  # SPEC §11's cold render: `dagctx render --focus` pays this tick
FOCUSES = ("render the summary cache", "module 4321 entry", "graph trace version")


def focus_changes(b: Bench) -> list[Row]:
    """At repo-10k, 8k, against the naive full re-render + re-count of the same run: the
    first tick after a focus is set (the BM25 index and the reference graph are built
    over every file), a turn after the focus changes, and the 1-change turn while a focus
    is set."""
    naive = b.naive_seconds(3)
    session = b.session(3, 8_000)
    timed: list[float] = []
    for k in range(b.repeats):
        session.focus(FOCUSES[k % len(FOCUSES)])
        collect()
        started = time.perf_counter()
        session.tick()
        timed.append(time.perf_counter() - started)
    first, measured = timed[0], statistics.median(timed[1:])
    with_focus = _median_turn(b, 3, 8_000, 1, b.repeats)
    session.focus(None)
    session.tick()
    nodes = b.repo(3).nodes
    return [
        row(
            f"first tick after a focus is set, repo-10k ({nodes:,} nodes), 8k",
            first,
            "s",
            baseline=naive,
            target=FIRST_FOCUS_TARGET_S,
        ),
        row(
            f"turn after a focus change, repo-10k ({nodes:,} nodes), 8k",
            measured * 1000,
            "ms",
            baseline=naive * 1000,
            target=FOCUS_TARGET_MS,
        ),
        row(
            f"turn after 1 file change with a focus set, repo-10k ({nodes:,} nodes), 8k",
            with_focus * 1000,
            "ms",
            baseline=naive * 1000,
            target=TURN_TARGET_MS,
        ),
    ]


def growth(b: Bench) -> list[Row]:
    """The single-change turn at 128k as the graph grows from ~1k to ~100k nodes.

    The sizes take turns (one turn each per round), so that load on the machine falls
    on all of them alike.
    """
    depths = (2, 3) if b.quick else (2, 3, 4)
    runs = {d: _Turns(b, d, 128_000, 1) for d in depths}
    for run in runs.values():
        run.one()
    collect()
    times: dict[int, list[float]] = {d: [] for d in depths}
    for _ in range(b.repeats):
        for d, run in runs.items():
            times[d].append(run.one())
    median = {d: statistics.median(t) for d, t in times.items()}
    rows = [
        row(f"  turn after 1 change, {b.repo(d).nodes:,} nodes, 128k", median[d] * 1000, "ms")
        for d in depths
    ]
    if 4 in b.sessions:  # the 100k session is large; free it once measured
        b.sessions.pop(4).close()
    small, large = depths[0], depths[-1]
    rows.insert(
        0,
        row(
            f"growth of the 1-change turn, {b.repo(small).nodes:,} → {b.repo(large).nodes:,} nodes",
            median[large] / median[small],
            "×",
            target=GROWTH_TARGET,
        ),
    )
    return rows


# -- graph-100k -----------------------------------------------------------------------


def cascade(b: Bench) -> list[Row]:
    """``mark_changed`` on a leaf 10 levels deep in graph-100k: version, trace, and every
    ancestor notified once."""
    g = b.graph100k()
    leaf = g.leaf_at_depth(10)
    ancestors = len(g.graph.ancestors(leaf))
    collect()
    measured = median_seconds(lambda: leaf.mark_changed("edited"), 501 if not b.quick else 201)
    return [
        row(
            f"cascade from a leaf 10 deep, graph-100k ({ancestors} ancestors)",
            measured * 1e6,
            "µs",
            target=CASCADE_TARGET_US,
        )
    ]


def checkpoints(b: Bench) -> list[Row]:
    """Structure checkpoint and restore of graph-100k (after 200 random edits)."""
    g = b.graph100k()
    graph = g.graph
    rng = random.Random(7)
    groups = [n for n in g.nodes if graph.child_ids(n.id)]
    saves, restores = [], []
    for i in range(3 if b.quick else 7):
        collect()
        started = time.perf_counter()
        graph.checkpoint(f"cp{i}")
        saves.append(time.perf_counter() - started)
        for _ in range(100):  # structural edits and state changes, undone by restore
            parent = rng.choice(groups)
            kids = graph.child_ids(parent.id)
            graph.unlink(parent, kids[rng.randrange(len(kids))]) if kids else None
            rng.choice(g.nodes).set_state(rng.choice([NodeState.COLLAPSED, NodeState.SUMMARY]))
        collect()
        started = time.perf_counter()
        graph.restore(f"cp{i}")
        restores.append(time.perf_counter() - started)
    med = sorted(saves)[len(saves) // 2], sorted(restores)[len(restores) // 2]
    return [
        row("structure checkpoint, graph-100k", med[0] * 1000, "ms", target=CHECKPOINT_TARGET_MS),
        row("structure restore, graph-100k", med[1] * 1000, "ms", target=CHECKPOINT_TARGET_MS),
    ]


# -- pressure -------------------------------------------------------------------------


def pressure(b: Bench) -> list[Row]:
    """Projection with content ~50× the budget: tokens / budget at budgets 1k..128k."""
    budgets = (1_000, 8_000, 128_000) if b.quick else tuple(1_000 * 2**k for k in range(8))
    repo = b.repo(3)
    full = b.session(3, 128_000)
    rows, worst = [], 1.0
    tokens_per_file = _tokens_per_file(full)
    for budget in budgets:
        if budget == 128_000:
            session, own = full, False
        else:
            wanted = PRESSURE * budget
            files, total = [], 0
            for rel in repo.files:
                files.append(rel)
                total += tokens_per_file[rel]
                if total >= wanted:
                    break
            session, own = Session(repo.root, budget=budget), True
            by_dir: dict[str, list[str]] = {}
            for rel in files:
                by_dir.setdefault(rel.rpartition("/")[0], []).append(rel)
            for directory, members in by_dir.items():
                session.group(*(session.text(m) for m in members), title=directory, state="DETAILS")
        projection = session.project()
        content = session.project(UNLIMITED).tokens
        utilization = projection.tokens / budget
        worst = min(worst, utilization)
        rows.append(
            row(
                f"  content {content / budget:.0f}× the budget at {budget // 1000}k: tokens/budget",
                utilization,
                "",
                target=None,
            )
        )
        if own:
            session.close()
    rows.insert(
        0,
        row(
            f"utilization under {PRESSURE}× pressure, budgets 1k..128k (worst)",
            worst,
            "",
            target=UTILIZATION_TARGET,
            target_text=f"≥ {UTILIZATION_TARGET:g}",
            passed=worst >= UTILIZATION_TARGET,
        ),
    )
    return rows


def _text_nodes(session: Session) -> list[Any]:
    from dagctx.nodes.text import TextNode

    return [n for n in session.nodes() if isinstance(n, TextNode)]


def _tokens_per_file(session: Session) -> dict[str, int]:
    return {n.path: session.cache.tokens(n, n.state) for n in _text_nodes(session)}


# -- memory ---------------------------------------------------------------------------


def memory(b: Bench) -> list[Row]:
    """Engine memory beyond content: traced allocations of a scanned session over the
    generated tree with its 128k projection, minus the bytes of the files it holds, per
    node, at repo-10k and (full runs) at 100k files. Also shown at repo-10k: the same minus
    the text nodes themselves built alone (the objects that hold the content), i.e. what
    the graph, traces, caches and projection state add."""
    get_encoding()  # loaded once per process: not per-node memory
    mimetypes.init()
    _projected_session(b.repo(2)).close()  # modules imported on first use: not per node
    rows = []
    for depth in (3,) if b.quick else (3, 4):
        repo = b.repo(depth)
        content = sum((repo.root / f).stat().st_size for f in repo.files)
        session_bytes = _traced(lambda repo=repo: _projected_session(repo))
        name = "repo-10k" if depth == 3 else f"{len(repo.files):,} files"
        rows.append(
            row(
                f"engine memory beyond content, {name} + 128k projection ({repo.nodes:,} nodes)",
                (session_bytes - content) / repo.nodes,
                "B/node",
                target=MEMORY_TARGET,
            )
        )
        if depth == 3:
            saved = b.tmp / "memory-session.db"
            _projected_session(repo, saved)
            resumed = _traced(lambda repo=repo, saved=saved: _resumed_session(repo, saved))
            rows.append(
                row(
                    "  the same resumed from its session file, each file read (informational)",
                    (resumed - content) / repo.nodes,
                    "B/node",
                )
            )
        if depth == 3 and not b.quick:
            nodes_bytes = _traced(lambda repo=repo: _standalone_nodes(repo))
            rows.append(
                row(
                    "  of which beyond the text nodes themselves (graph, caches, projection)",
                    (session_bytes - nodes_bytes) / repo.nodes,
                    "B/node",
                )
            )
    return rows


def _traced(build: Any) -> int:
    """Bytes still allocated after ``build()`` (whose result is kept alive meanwhile)."""
    collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del kept
    return used


def _projected_session(repo: Repo, save: Path | None = None) -> Session:
    session = Session(repo.root, budget=128_000)
    scan_tree(session, ".")
    session.tick()
    if save is not None:
        session.save(save)
    session.close()
    return session


def _resumed_session(repo: Repo, saved: Path) -> Session:
    """The session saved at ``saved`` resumed as a watch resumes it and ticked at 128k,
    then every file node rendered (so that it holds its file's text, as a scanned one)."""
    from dagctx.nodes.text import TextNode
    from dagctx.watch.tracker import TreeTracker

    session = Session.load(saved, root=repo.root)
    TreeTracker(session, ".").load()
    session.tick()
    for node in session.nodes():
        if isinstance(node, TextNode):
            node.render(NodeState.DETAILS)
    session.close()
    return session


def _standalone_nodes(repo: Repo) -> list[Any]:
    from dagctx.nodes.text import TextNode

    return [TextNode(rel, root=repo.root) for rel in repo.files]


SCENARIOS = (cold_build, turns, focus_changes, growth, cascade, checkpoints, pressure, memory)
