"""The graph owns its data: ContextGraph.dump / load, incremental trace saves, and the
graph's private fields staying inside dagctx/graph/."""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dagctx
from dagctx.errors import CycleError, GraphLoadError
from dagctx.graph import ContextGraph, GraphData
from dagctx.nodes.group import GroupNode
from dagctx.session import Session
from dagctx.session.file import read_session_file


def picture(g: ContextGraph) -> dict[str, object]:
    return {
        "nodes": [n.id for n in g],
        "children": {n.id: [c.id for c in g.children(n)] for n in g},
        "parents": {n.id: [p.id for p in g.parents(n)] for n in g},
        "roots": [r.id for r in g.roots()],
        "checkpoints": g.checkpoints(),
        "clock": g.clock,
        "traces": list(g.traces),
        "trace_start": g.traces.start,
    }


def reloaded(g: ContextGraph) -> ContextGraph:
    """A new graph loaded from ``g``'s dump, with fresh copies of the nodes."""
    data = g.dump()
    copies = {n.id: GroupNode(n.title, id=n.id) for n in data.nodes}  # type: ignore[attr-defined]
    fresh = ContextGraph()
    fresh.load(replace(data, nodes=list(copies.values())))
    return fresh


@st.composite
def graphs(draw: st.DrawFn) -> ContextGraph:
    g = ContextGraph()
    nodes = [g.add(GroupNode(f"g{i}")) for i in range(draw(st.integers(1, 7)))]
    for _ in range(draw(st.integers(0, 20))):
        a, b = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        where = draw(st.integers(0, 3))
        with contextlib.suppress(CycleError):
            g.link(a, b, index=where if where < 3 else None)
        if draw(st.booleans()) and g.children(a):
            g.unlink(a, draw(st.sampled_from(g.children(a))))
    if draw(st.booleans()):
        g.checkpoint("c")
    return g


class TestDumpLoad:
    @settings(max_examples=60, deadline=None)
    @given(graphs())
    def test_a_loaded_graph_has_the_same_orders_roots_clock_and_traces(
        self, g: ContextGraph
    ) -> None:
        assert picture(reloaded(g)) == picture(g)

    def test_orders_no_one_by_one_insertion_gives_load_as_saved(self) -> None:
        """Node b's children are [d, c] and e's [c, d], while c's parents are [b, e] and
        d's [e, b]: linking with index= makes it, and each order asks for an edge of the
        other first, so inserting the saved edges one at a time cannot rebuild both. The
        load raised "the edges close a cycle" on a graph that has none (hypothesis
        found it in the test above): a session saved so could not be loaded."""
        g = ContextGraph()
        b, c, d, e = (g.add(GroupNode(name)) for name in "bcde")
        g.link(e, d)
        g.link(b, d)
        g.link(b, c)
        g.link(e, c, index=0)
        assert [n.title for n in g.children(b)] == ["d", "c"]
        assert [n.title for n in g.children(e)] == ["c", "d"]
        assert [n.title for n in g.parents(c)] == ["b", "e"]
        assert [n.title for n in g.parents(d)] == ["e", "b"]
        assert picture(reloaded(g)) == picture(g)

    def test_id_counters_survive_so_removed_ids_are_not_reused(self) -> None:
        g = ContextGraph()
        gone = g.add(GroupNode("a"))
        g.remove(gone)
        fresh = reloaded(g)
        assert fresh.add(GroupNode("b")).id != gone.id

    def test_load_adds_nodes_a_session_did_not_add_first(self) -> None:
        g = ContextGraph()
        a, b = g.add(GroupNode("a")), g.add(GroupNode("b"))
        g.link(a, b)
        data = g.dump()
        copies = [GroupNode("a", id="group_1"), GroupNode("b", id="group_2")]
        fresh = ContextGraph()
        fresh.add(copies[1])  # the session indexes some nodes itself, then loads
        fresh.load(replace(data, nodes=copies))
        assert [c.id for c in fresh.children("group_1")] == ["group_2"]
        assert [r.id for r in fresh.roots()] == ["group_1"]

    @pytest.mark.parametrize(
        ("change", "value"),
        [
            (lambda d: d.edges.append(("group_1", 9, "ghost_1", 0)), "ghost_1"),
            (lambda d: d.edges.append(("group_1", 9, "group_2", 1)), ("group_1", "group_2")),
            (lambda d: d.edges.append(("group_2", 0, "group_1", 0)), None),  # a cycle
            (lambda d: d.roots.append("group_2"), ["group_1", "group_2"]),
            (lambda d: setattr(d, "clock", -1), -1),
            (lambda d: d.id_counters.update(group=2**62), 2**62),
            (lambda d: setattr(d, "trace_start", True), True),
        ],
    )
    def test_bad_data_raises_naming_the_value_and_changes_nothing(
        self, change: object, value: object
    ) -> None:
        g = ContextGraph()
        a, b = g.add(GroupNode("a")), g.add(GroupNode("b"))
        g.link(a, b)
        data = g.dump()
        data = replace(data, nodes=[GroupNode("a", id="group_1"), GroupNode("b", id="group_2")])
        change(data)  # type: ignore[operator]
        fresh = ContextGraph()
        with pytest.raises(GraphLoadError) as caught:
            fresh.load(data)
        if value is not None:
            assert caught.value.value == value
        else:
            assert "cycle" in str(caught.value)
        assert len(fresh) == 0 and fresh.clock == 0

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(0, 40), min_size=1, max_size=60))
    def test_a_forest_loads_as_linked_one_edge_at_a_time(self, picks: list[int]) -> None:
        """A forest (each node one parent at most: a watched tree) is loaded in bulk:
        the same orders, rows and shared tuples of parents as linking edge by edge."""
        g = ContextGraph()
        nodes = [g.add(GroupNode(f"g{i}")) for i in range(len(picks) + 1)]
        for i, pick in enumerate(picks, start=1):  # node i under an earlier node
            g.link(nodes[pick % i], nodes[i], index=0 if pick % 3 == 0 else None)
        fresh = reloaded(g)
        assert picture(fresh) == picture(g)
        for node in g:
            assert type(fresh._adj.succ[node.id]) is type(g._adj.succ[node.id])
            kids = [fresh._nodes[c] for c in fresh._adj.succ[node.id]]
            assert all(k._parent_ids is kids[0]._parent_ids for k in kids)

    @pytest.mark.parametrize(
        "edges",
        [
            [("group_1", 0, "group_2", 0), ("group_1", 0, "group_3", 0)],  # one position
            [("group_1", 0, "group_2", 0), ("group_2", 0, "group_1", 0)],  # a cycle
            [("group_1", 0, "group_2", 0), ("group_3", 0, "group_2", 0)],  # rank 0 twice
            [("group_1", 0, "group_2", 0), ("group_1", 1, "group_2", 0)],  # the edge twice
            [
                ("group_1", 0, "group_2", 0),
                ("group_2", 0, "group_3", 0),
                ("group_3", 0, "group_2", 1),  # a cycle below a second parent
            ],
        ],
    )
    def test_edges_that_are_no_forest_are_checked_one_by_one(
        self, edges: list[tuple[str, int, str, int]]
    ) -> None:
        nodes = [GroupNode(t, id=f"group_{i}") for i, t in enumerate("abc", start=1)]
        roots = [n.id for n in nodes if n.id not in {c for _, _, c, _ in edges}]
        fresh = ContextGraph()
        with pytest.raises(GraphLoadError, match=r"repeated|cycle|roots"):
            fresh.load(GraphData(nodes=nodes, edges=edges, roots=roots))
        assert len(fresh) == 0

    def test_load_refuses_a_graph_that_is_not_new(self) -> None:
        g = ContextGraph()
        g.link(g.add(GroupNode("a")), g.add(GroupNode("b")))
        with pytest.raises(GraphLoadError, match="new graph"):
            g.load(GraphData(nodes=list(g), edges=[], roots=[]))


def traces_in(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT position, description FROM session_traces ORDER BY position"
        ).fetchall()


@pytest.fixture
def edited(tmp_path: Path) -> Session:
    (tmp_path / "a.txt").write_text("0\n")
    session = Session(tmp_path, budget=500)
    session.text("a.txt")
    return session


def edit(session: Session, times: int) -> None:
    for _ in range(times):
        path = session.root / "a.txt"
        path.write_text(str(int(path.read_text()) + 1) + "\n")
        session.file_changed("a.txt")
        session.tick()


class TestIncrementalSave:
    def test_a_save_appends_new_traces_and_keeps_rows_already_written(
        self, edited: Session, tmp_path: Path
    ) -> None:
        db = tmp_path / "s.db"
        edit(edited, 3)
        edited.save(db)
        with sqlite3.connect(db) as conn:  # mark a row the next save must not rewrite
            conn.execute("UPDATE session_traces SET description = 'kept' WHERE position = 0")
        edit(edited, 2)
        edited.save(db)
        rows = traces_in(db)
        assert rows[0] == (0, "kept")
        assert [p for p, _ in rows] == list(range(len(edited.graph.traces)))

    def test_dropped_traces_are_deleted_from_the_file(
        self, edited: Session, tmp_path: Path
    ) -> None:
        db = tmp_path / "s.db"
        edited.save(db)
        edit(edited, 1100)
        edited.save(db)
        data = read_session_file(db)
        log = edited.graph.traces
        assert log.start > 0
        assert (data.traces.start, data.traces.traces) == (log.start, list(log))

    def test_a_file_written_by_another_session_gets_a_full_write(
        self, edited: Session, tmp_path: Path
    ) -> None:
        db = tmp_path / "s.db"
        edit(edited, 3)
        edited.save(db)
        with Session(tmp_path, budget=500) as other:
            other.text("a.txt")
            edit(other, 1)
            other.save(db)
        edit(edited, 1)
        edited.save(db)
        assert [d for _, d in traces_in(db)] == [t.description for t in edited.graph.traces]
        with Session.load(db) as back:
            assert list(back.graph.traces) == list(edited.graph.traces)

    def test_a_file_replaced_by_an_older_copy_is_completed(
        self, edited: Session, tmp_path: Path
    ) -> None:
        db, old = tmp_path / "s.db", tmp_path / "old.db"
        edit(edited, 2)
        edited.save(db)
        shutil.copy(db, old)
        edit(edited, 2)
        edited.save(db)
        edit(edited, 2)
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.copy(old, db)
        edited.save(db)
        with Session.load(db) as back:
            assert list(back.graph.traces) == list(edited.graph.traces)

    def test_a_loaded_session_writes_in_full_once_then_appends(
        self, edited: Session, tmp_path: Path
    ) -> None:
        db = tmp_path / "s.db"
        edit(edited, 2)
        edited.save(db)
        with Session.load(db) as back:
            edit(back, 1)
            back.save(db)
            edit(back, 1)
            back.save(db)
            assert [d for _, d in traces_in(db)] == [t.description for t in back.graph.traces]


class TestLastProjection:
    def test_it_is_none_before_the_first_tick_then_the_last_ticks(self, edited: Session) -> None:
        assert edited.last_projection is None
        result = edited.tick()
        assert edited.last_projection is result.projection
        edited.project()  # not a tick
        assert edited.last_projection is result.projection


class TestPrivateFields:
    def test_no_module_outside_graph_touches_the_graphs_private_fields(self) -> None:
        package = Path(dagctx.__file__).parent
        private = re.compile(r"graph\._[a-z]|\._adj\b|\._succ\b|\._pred\b|\._dag\b")
        offenders = [
            f"{path.relative_to(package)}: {line.strip()}"
            for path in package.rglob("*.py")
            if "graph" not in path.relative_to(package).parts[:1]
            for line in path.read_text().splitlines()
            if private.search(line)
        ]
        assert offenders == []

    def test_only_the_adjacency_module_reads_networkx_private_dicts(self) -> None:
        graph = Path(dagctx.__file__).parent / "graph"
        private = re.compile(r"[.\"']_(succ|pred)\b")
        readers = [p.name for p in graph.glob("*.py") if private.search(p.read_text())]
        assert readers == ["_adjacency.py"]
