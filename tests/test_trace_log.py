"""The trace log: absolute positions, cursors, bounded retention (dagctx.graph.traces)."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.errors import GraphError, TracesDroppedError
from dagctx.graph import ContextGraph, TraceLog
from dagctx.graph.traces import RECENT
from dagctx.nodes.base import Trace
from dagctx.nodes.group import GroupNode


def trace(i: int) -> Trace:
    return Trace(f"text_{i % 7}", i, i + 1, f"change {i}", 0.0)


def filled(n: int, log: TraceLog | None = None) -> TraceLog:
    log = TraceLog() if log is None else log
    for i in range(len(log), len(log) + n):
        log.append(trace(i))
    return log


class TestPositions:
    def test_positions_are_absolute_and_survive_drops(self) -> None:
        log = filled(10 * RECENT)
        assert len(log) == 10 * RECENT
        assert log.start > 0  # no cursor: only the recent window is kept
        assert log[len(log) - 1] == log[-1] == trace(len(log) - 1)
        assert log[log.start] == trace(log.start)
        assert log[log.start - 3 : log.start + 2] == [trace(log.start), trace(log.start + 1)]
        assert log[len(log) :] == []

    def test_a_dropped_position_is_an_error_not_a_wrong_answer(self) -> None:
        log = filled(10 * RECENT)
        with pytest.raises(IndexError, match="no trace at position 0"):
            log[0]
        with pytest.raises(TracesDroppedError) as caught:
            log.since(0)
        assert isinstance(caught.value, GraphError)
        assert (caught.value.position, caught.value.start) == (0, log.start)


class TestRetention:
    def test_without_cursors_only_a_bounded_recent_window_is_kept(self) -> None:
        log = filled(50 * RECENT)
        assert RECENT <= len(list(log)) <= 2 * RECENT + 1
        assert list(log) == log[log.start :]

    def test_a_cursor_keeps_everything_after_it_until_it_moves(self) -> None:
        log = filled(3)
        cursor = log.cursor()
        filled(10 * RECENT, log)
        assert log.start <= 3
        assert log.take(cursor) == [trace(i) for i in range(3, 3 + 10 * RECENT)]
        assert cursor.position == len(log)
        moved_to = cursor.position
        filled(30 * RECENT, log)
        assert log.start == moved_to  # the old ones are dropped, the new ones are held

    def test_a_reader_that_is_gone_keeps_nothing(self) -> None:
        log = filled(3)
        cursor = log.cursor()
        del cursor
        gc.collect()
        filled(10 * RECENT, log)
        assert log.start > 3

    def test_a_released_cursor_keeps_nothing(self) -> None:
        log = filled(3)
        cursor = log.cursor()
        log.release(cursor)
        filled(10 * RECENT, log)
        assert log.start > 3

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3 * RECENT)), max_size=8))
    def test_every_trace_after_a_live_cursor_and_the_recent_ones_are_kept(
        self, steps: list[tuple[int, int]]
    ) -> None:
        log = TraceLog()
        cursors = [log.cursor() for _ in range(4)]
        widest = 0  # the most traces the cursors ever held
        for which, appended in steps:
            filled(appended, log)
            widest = max(widest, len(log) - min(c.position for c in cursors))
            log.take(cursors[which])
            for cursor in cursors:
                kept = [t.old_version for t in log.since(cursor.position)]
                assert kept == list(range(cursor.position, len(log)))
            recent = max(0, len(log) - RECENT)
            assert [t.old_version for t in log[recent:]] == list(range(recent, len(log)))
            # Bounded: twice what the cursors held at most (trims are amortized).
            assert len(list(log)) <= 2 * max(widest, RECENT)


class TestGraphReaders:
    def test_a_live_checkpoint_restores_states_after_its_changes_were_dropped(self) -> None:
        g = ContextGraph()
        nodes = [g.add(GroupNode(f"g{i}")) for i in range(3)]
        g.checkpoint("c")
        nodes[1].set_state("hidden")
        for _ in range(5 * RECENT):  # push the state change out of the log
            nodes[2].set_state("details")
            nodes[2].set_state("summary")
        assert g.traces.start > 0
        g.restore("c")
        assert [n.state for n in nodes] == [n.default_state for n in nodes]

    def test_a_live_checkpoint_keeps_its_changes_while_fewer_than_its_nodes(self) -> None:
        g = ContextGraph()
        nodes = [g.add(GroupNode(f"g{i}")) for i in range(3 * RECENT)]
        g.checkpoint("c")
        taken = len(g.traces)
        for _ in range(RECENT):  # 2 * RECENT changes: fewer than the 3 * RECENT nodes
            nodes[0].set_state("hidden")
            nodes[0].set_state("details")
        assert g.traces.start <= taken
        for _ in range(2 * RECENT):  # now more than the nodes: comparing all is cheaper
            nodes[1].set_state("hidden")
            nodes[1].set_state("details")
        assert g.traces.start > taken
        nodes[2].set_state("hidden")
        g.restore("c")
        assert {n.state for n in nodes} == {GroupNode.default_state}
