"""SessionNode: figures recomputed every turn, rendered in the volatile tail, never listed
as a change; idempotent creation; detached after a round trip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_copy import renders

from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.session_node import SessionNode
from dagctx.session import Session


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Session]:
    (tmp_path / "a.py").write_text("x = 1\n")
    with Session(tmp_path, budget=4000) as session:
        yield session


class TestCreation:
    def test_session_node_is_collapsed_volatile_and_idempotent(self, s: Session) -> None:
        node = s.session_node()
        assert isinstance(node, SessionNode)
        assert (node.state, node.volatile, node.session) == (NodeState.COLLAPSED, True, s)
        assert s.session_node() is node
        assert [n for n in s.nodes() if isinstance(n, SessionNode)] == [node]

    def test_a_state_can_be_asked_for(self, s: Session) -> None:
        assert s.session_node(state="DETAILS").state == NodeState.DETAILS


class TestFigures:
    def test_turn_and_token_usage_follow_the_ticks(self, s: Session) -> None:
        s.text("a.py")
        node = s.session_node()
        assert node.stats.turn == 1
        tokens = []
        for turn in range(1, 4):
            result = s.tick()
            assert result.turn == node.stats.turn == turn
            assert node.stats.last_tokens == (tokens[-1] if tokens else 0)
            assert node.stats.total_tokens == sum(tokens)
            assert f"turn {turn}," in result.projection.text
            tokens.append(result.projection.tokens)

    def test_counts_by_type_and_depth(self, s: Session) -> None:
        t = s.topic("t")
        s.message("user", "hi")
        inner = s.group(s.text("a.py"), title="inner")
        s.group(inner, title="outer")
        node = s.session_node()
        s.tick()
        assert dict(node.stats.counts) == {
            "group": 2, "message": 1, "session": 1, "text": 1, "topic": 1,
        }  # fmt: skip
        assert (node.stats.nodes, node.stats.depth) == (6, 3)
        s.remove(t)
        s.tick()
        assert "topic" not in dict(node.stats.counts)

    def test_recent_actions_are_the_last_direct_changes(self, s: Session) -> None:
        node = s.session_node(state="DETAILS")
        a = s.artifact("v1", title="patch")
        for i in range(2, 9):
            s.update_artifact(a, f"v{i}")
        s.tick()
        assert len(node.stats.recent) == 7
        assert node.stats.recent[-1] == f"#{a.id}: content updated (1 line)"
        shown = node.render(NodeState.DETAILS)
        assert shown.count(f"#{a.id}: content updated") == 5
        assert node.render(NodeState.ALL).count(f"#{a.id}: content updated") == 7

    def test_it_is_recomputed_every_turn_but_never_listed_as_a_change(self, s: Session) -> None:
        node = s.session_node()
        versions = []
        for _ in range(3):
            result = s.tick()
            versions.append(node.version)
            assert node.id in result.recomputed
            mine = [c for c in result.changes if c.node_id == node.id]
            assert mine and all(c.derived for c in mine)
            assert "## Changes" not in result.projection.text
        assert versions == sorted(set(versions))

    def test_it_renders_after_the_body(self, s: Session) -> None:
        node = s.session_node()
        s.text("a.py")
        s.artifact("print(2)")
        sections = s.tick().projection.sections
        assert sections[-1].node_id == node.id

    def test_a_closed_session_stops_recomputing(self, s: Session) -> None:
        node = s.session_node()
        s.close()
        assert node.recompute() is False


class TestRendering:
    def test_renders_distinctly_at_each_state(self, s: Session) -> None:
        node = s.session_node()
        s.artifact("x")
        s.tick()
        s.tick()
        collapsed, summary, details, full = renders(node)
        assert len({collapsed, summary, details, full}) == 4
        assert collapsed.startswith(f"[session #{node.id}: turn 2, ")
        assert "nodes by type: artifact 1, session 1" not in summary
        assert "nodes by type: artifact 1, session 1" in details
        assert "budget 4,000 tokens; encoding cl100k_base" in full
        assert "budget" not in details


class TestSerialization:
    def test_a_rebuilt_node_is_detached_and_shows_its_saved_figures(self, s: Session) -> None:
        node = s.session_node()
        s.tick()
        twin = Node.from_dict(node.to_dict())
        assert isinstance(twin, SessionNode)
        assert twin.session is None
        assert twin.stats == node.stats
        assert renders(twin) == renders(node)
        assert twin.recompute() is False

    def test_session_node_attaches_a_detached_one(self, s: Session) -> None:
        node = s.session_node()
        s.tick()
        twin = Node.from_dict(node.to_dict())
        s.remove(node)
        s.add(twin)
        assert s.session_node() is twin
        assert twin.session is s
        s.tick()
        assert twin.stats.turn == 2
