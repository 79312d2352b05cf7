"""A cold projection under budget pressure counts what it may show, not the whole tree.

Observable through public counters: ``SectionCache.renders_at`` (renders per state; an
outline is a SUMMARY render) and ``TokenCounter`` statistics. The exactness of what is
shown is covered by the projection properties (tests/test_projection.py).
"""

from __future__ import annotations

import pytest

from benchmarks.workloads import Repo, write_repo
from dagctx import NodeState, Session
from dagctx.tokens import get_encoding
from dagctx.watch.scan import scan_tree

ENC = get_encoding()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """500 generated source files of about 1 KB in nested directories."""
    return write_repo(
        tmp_path_factory.mktemp("lazy") / "repo", depth=2, files_per_dir=5, file_bytes=1024
    )


def cold(repo: Repo, budget: int) -> tuple[Session, int]:
    s = Session(repo.root, budget=budget)
    scan_tree(s, ".")
    return s, s.cache.renders_at[NodeState.SUMMARY]


class TestColdRender:
    def test_outlines_only_the_files_it_may_show(self, repo: Repo) -> None:
        s, before = cold(repo, 2000)
        with s:
            p = s.project()
            made = s.cache.renders_at[NodeState.SUMMARY] - before
            outlined = sum(sec.rendered_state == NodeState.SUMMARY for sec in p.sections)
        assert len(ENC.encode_ordinary(p.text)) == p.tokens <= 2000
        assert p.omitted or p.degraded
        assert outlined <= made <= outlined + 40 < len(repo.files) // 5
