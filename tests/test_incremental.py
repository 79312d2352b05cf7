"""Engine paths added for performance (SPEC §11) behave like the plain ones they replace."""

from __future__ import annotations

from dagctx.graph import ContextGraph
from dagctx.nodes.group import GroupNode


class TestBatchCascade:
    def test_a_changed_ancestor_of_another_changed_node_is_notified_once(self) -> None:
        g = ContextGraph()
        top, mid, leaf = (g.add(GroupNode(t)) for t in ("top", "mid", "leaf"))
        g.link(top, mid)
        g.link(mid, leaf)
        versions = {n.id: n.version for n in (top, mid, leaf)}
        with g.batch():
            leaf.mark_changed("edited leaf")
            top.mark_changed("edited top")
        # mid and top are ancestors of a changed node: each notified (a derived change)
        assert mid.version == versions[mid.id] + 1
        assert top.version == versions[top.id] + 2
        derived = [t.node_id for t in g.traces if t.derived][-2:]
        assert derived == [mid.id, top.id]
