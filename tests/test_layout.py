"""Layout: each node's first entry, read from the node (Layout.first)."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx import Session
from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.group import GroupNode
from dagctx.projection.layout import Layout
from dagctx.projection.projector import Projector
from dagctx.watch.scan import scan_tree

# (parent, child) pairs of node numbers (a link from a lower to a higher number: acyclic)
LINKS = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=30)
HIDDEN = st.sets(st.integers(0, 11), max_size=4)


def build(links: list[tuple[int, int]], hidden: set[int]) -> tuple[ContextGraph, list[Node]]:
    g = ContextGraph()
    nodes: list[Node] = [g.add(GroupNode(f"g{k}", state="DETAILS")) for k in range(12)]
    for a, b in links:
        if a < b and nodes[b] not in g.children(nodes[a]):
            g.link(nodes[a], nodes[b])
    for k in hidden:
        nodes[k].state = NodeState.HIDDEN
    return g, nodes


def firsts(layout: Layout) -> dict[str, int]:
    """What Layout.first must say: each node's entry that is not a reference."""
    return {n.id: i for i, n in enumerate(layout.nodes) if not layout.ref[i]}


def check(layout: Layout, nodes: list[Node]) -> None:
    want = firsts(layout)
    assert len(layout.first) == len(want)
    assert dict(layout.first) == want == layout.first.table()
    for node in nodes:
        assert layout.first.index(node.id) == want.get(node.id, -1)
        assert (node.id in layout.first) == (node.id in want)
    assert layout.first.index("no_such_node") == -1 and "no_such_node" not in layout.first


class TestFirstEntries:
    @settings(max_examples=80, deadline=None)
    @given(LINKS, HIDDEN, LINKS, HIDDEN)
    def test_each_node_first_entry_also_after_a_second_layout(
        self,
        links: list[tuple[int, int]],
        hidden: set[int],
        more: list[tuple[int, int]],
        hide: set[int],
    ) -> None:
        g, nodes = build(links, hidden)
        layout = Layout(g)
        check(layout, nodes)
        for a, b in more:  # the graph changes and a second layout is built of it
            if a < b and nodes[b] not in g.children(nodes[a]):
                g.link(nodes[a], nodes[b])
        for k in hide:
            nodes[k].state = NodeState.HIDDEN
        second = Layout(g)
        check(second, nodes)
        check(layout, nodes)  # the first still answers for its own entries
        third = Layout(g)  # the same walk again: the nodes hold its indices
        check(third, nodes)
        check(second, nodes)

    def test_a_layout_keeps_no_dict_until_asked_for_one(self) -> None:
        g, nodes = build([(k, k + 1) for k in range(11)], set())
        layout = Layout(g)
        assert layout.first[nodes[5].id] == 5
        assert layout.first._table is None
        assert sys.getsizeof(layout.first) < 100
        assert layout.first.table() == firsts(layout)


class TestSessionLayout:
    def test_turns_without_a_focus_make_no_dict_of_entries(self, tmp_path: Path) -> None:
        for d in range(4):
            (tmp_path / f"pkg{d}").mkdir()
            for f in range(30):
                (tmp_path / f"pkg{d}" / f"m{f}.py").write_text(f"def f{f}():\n    return {d}\n")
        with Session(tmp_path, budget=2_000) as s:
            scan_tree(s, ".")
            s.tick()
            for turn in range(3):
                (tmp_path / "pkg1" / f"m{turn}.py").write_text(f"x = {turn}\n")
                s.file_changed(f"pkg1/m{turn}.py")
                s.tick()
            projector = s.cache.projector
            assert isinstance(projector, Projector) and projector.layout is not None
            first = projector.layout.first
            assert first._table is None
            assert dict(first) == firsts(projector.layout)
