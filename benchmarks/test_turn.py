"""pytest-benchmark versions of the main SPEC §11 figures (``pytest benchmarks/``).

Not part of ``make test`` (which runs ``tests/`` only): these generate repo-10k and
graph-100k and take a minute. ``python -m benchmarks`` prints the same figures against
their targets.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.measure import naive_turn
from benchmarks.workloads import Graph100k, Repo, build_graph, rewrite, write_repo
from dagctx.nodes.base import NodeState
from dagctx.session import Session
from dagctx.watch.scan import scan_tree


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return write_repo(Path(tmp_path_factory.mktemp("repo-10k")))


@pytest.fixture(scope="module")
def session(repo: Repo) -> Iterator[Session]:
    with Session(repo.root, budget=128_000) as s:
        scan_tree(s, ".")
        s.tick()
        yield s


@pytest.fixture(scope="module")
def graph() -> Graph100k:
    return build_graph()


@pytest.mark.parametrize("budget", [128_000, 8_000])
def test_turn_after_one_file_change(benchmark, repo: Repo, session: Session, budget: int) -> None:  # type: ignore[no-untyped-def]
    session.set_budget(budget)
    session.tick()
    files = itertools.cycle(repo.files[::97])
    turn = itertools.count()

    def edit() -> tuple[tuple[str], dict[str, object]]:
        rel = next(files)
        rewrite(repo, rel, next(turn))
        return (rel,), {}

    def tick(rel: str) -> None:
        session.file_changed(rel)
        assert session.tick().projection.tokens <= budget

    benchmark.pedantic(tick, setup=edit, rounds=30)


def test_naive_full_rerender_and_recount(benchmark, session: Session) -> None:  # type: ignore[no-untyped-def]
    benchmark.pedantic(naive_turn, args=(session,), rounds=2)


def test_cascade_from_a_leaf_ten_deep(benchmark, graph: Graph100k) -> None:  # type: ignore[no-untyped-def]
    leaf = graph.leaf_at_depth(10)
    benchmark(leaf.mark_changed, "edited")


def test_checkpoint_and_restore(benchmark, graph: Graph100k) -> None:  # type: ignore[no-untyped-def]
    g = graph.graph
    nodes = graph.nodes

    def round_trip() -> None:
        g.checkpoint("bench")
        for node in nodes[1000:1100]:
            node.set_state(NodeState.COLLAPSED)
        g.restore("bench")

    benchmark.pedantic(round_trip, rounds=5)
