"""A cold projection under budget pressure counts what it may show, not the whole tree.

Observable through public counters: ``SectionCache.renders_at`` (renders per state; an
outline is a SUMMARY render) and ``TokenCounter.encoded_chars``. What is decided with
lower bounds instead of counts must be what exact counts decide: a cold projection is
byte-identical to one made after everything was counted.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workloads import Repo, write_repo
from dagctx import DagctxError, NodeState, Session
from dagctx.projection import SectionCache, build_projection
from dagctx.tokens import TokenCounter, get_encoding
from dagctx.watch.scan import scan_tree

ENC = get_encoding()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """500 generated source files of about 1 KB in nested directories."""
    return write_repo(
        tmp_path_factory.mktemp("lazy") / "repo", depth=2, files_per_dir=5, file_bytes=1024
    )


def tree_bytes(repo: Repo) -> int:
    return sum(len((repo.root / f).read_text()) for f in repo.files)


class TestColdRender:
    def test_outlines_only_the_files_it_may_show(self, repo: Repo) -> None:
        with Session(repo.root, budget=2000) as s:
            scan_tree(s, ".")
            before = s.cache.renders_at[NodeState.SUMMARY]
            p = s.project()
            made = s.cache.renders_at[NodeState.SUMMARY] - before
            outlined = sum(sec.rendered_state == NodeState.SUMMARY for sec in p.sections)
        assert len(ENC.encode_ordinary(p.text)) == p.tokens <= 2000
        assert p.omitted or p.degraded
        assert outlined <= made <= outlined + 40 < len(repo.files) // 5

    @pytest.mark.parametrize("budget", [1000, 2000])
    def test_tokenizes_a_small_part_of_the_tree(self, repo: Repo, budget: int) -> None:
        """Where the tree is far larger than the budget (lengths prove it)."""
        with Session(repo.root, budget=budget) as s:
            scan_tree(s, ".")
            before = s.counter.encoded_chars
            p = s.project()
            encoded = s.counter.encoded_chars - before
        assert len(ENC.encode_ordinary(p.text)) == p.tokens <= budget
        assert encoded < tree_bytes(repo) // 4

    def test_renders_in_full_only_the_files_it_may_show(self, repo: Repo) -> None:
        """A file's length bounds its count in full (TextNode.least_chars): the files
        that cannot all fit are not each rendered at DETAILS to learn it (before: every
        file once, and the counted ones again)."""
        with Session(repo.root, budget=2000) as s:
            scan_tree(s, ".")
            s.project(budget=10**7)  # every file read (and counted) once
            cache = SectionCache(s.counter)
            p = build_projection(s.graph, cache, 2000)
            whole = sum(sec.rendered_state >= NodeState.DETAILS for sec in p.sections)
        assert p.omitted or p.degraded
        # those shown whole, and those counted exactly to find where the degrade stops
        assert whole <= cache.renders_at[NodeState.DETAILS] < len(repo.files) // 3

    def test_everything_is_counted_when_it_may_all_fit(self, repo: Repo) -> None:
        with Session(repo.root, budget=10**7) as s:
            scan_tree(s, ".")
            p = s.project()
            assert not p.omitted and not p.degraded
            assert len(ENC.encode_ordinary(p.text)) == p.tokens


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], int]:
    """Files (lines, width, priority) mostly longer than the lower-bound threshold,
    groups as (parent group, child) and a budget."""
    files = draw(
        st.lists(
            st.tuples(st.integers(0, 120), st.integers(1, 60), st.integers(0, 3)),
            min_size=1,
            max_size=10,
        )
    )
    links = draw(
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, len(files) + 2)), max_size=10)
    )
    return files, links, draw(st.integers(1, 600) | st.integers(1, 8000))


class TestLowerBoundsDecideAsCounts:
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(spec=trees())
    def test_cold_projection_equals_one_with_everything_counted(
        self, tmp_path: Path, spec: tuple[list[tuple[int, int, int]], list[tuple[int, int]], int]
    ) -> None:
        files, links, budget = spec
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        with Session(root, budget=budget) as s:
            nodes = []
            for i, (lines, width, priority) in enumerate(files):
                (root / f"f{i}.py").write_text(
                    "".join(f"def f{j}(x):\n    return {'x' * width}\n" for j in range(lines))
                )
                nodes.append(s.text(f"f{i}.py", priority=priority))
            groups = [s.group(title=f"g{k}") for k in range(3)]
            nodes += groups
            for parent, child in links:
                with contextlib.suppress(DagctxError):  # cycles and self-links are skipped
                    s.link(groups[parent], nodes[child % len(nodes)])
            cold = build_projection(s.graph, SectionCache(TokenCounter()), budget)
            warm_cache = SectionCache(TokenCounter())
            build_projection(s.graph, warm_cache, 10**9)  # counts every requested section
            warm = build_projection(s.graph, warm_cache, budget)
        assert cold.text == warm.text
        assert len(ENC.encode_ordinary(cold.text)) == cold.tokens <= budget
