"""The section cache's counts per node (dagctx.projection.sections.SectionCache): what it
keeps per node, and the form a saved session holds them in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx import NodeState
from dagctx.nodes.base import Node
from dagctx.nodes.text import TextNode
from dagctx.projection import SectionCache
from dagctx.tokens import TokenCounter

_STATES = list(NodeState)[1:]
_UNKNOWN = (1 << 32) - 1  # a count field of the saved form: all ones, not counted


class _Lines(Node):
    """A node whose render grows with the state (a count per state)."""

    type_name: ClassVar[str] = "test_section_lines"
    __slots__ = ()

    def render_state(self, state: NodeState) -> str:
        return "\n".join(f"line {k} of {self.id}" for k in range(3 * state))

    def data_dict(self) -> dict[str, Any]:
        return {}


def _saved_form(version: int, counts: dict[int, int]) -> int:
    """What a session file holds for counts at ``version``: ``version << 128`` and each
    visible state's count in 32 bits, all ones for a state not counted."""
    packed = version << 128
    for state in _STATES:
        packed |= counts.get(state, _UNKNOWN) << (32 * (state - 1))
    return packed


class TestCountsPerNode:
    def test_a_file_counted_by_name_holds_a_small_int(self, tmp_path: Path) -> None:
        # most files of a large tree are counted at their first state only
        (tmp_path / "a.py").write_text("x = 1\n" * 50)
        node = TextNode("a.py", root=tmp_path, id="text_1")
        cache = SectionCache(TokenCounter())
        assert cache.tokens(node, NodeState.COLLAPSED) > 0
        assert sys.getsizeof(cache._counts["text_1"]) <= 32  # was 44: all four fields

    def test_an_unchanged_file_counted_by_name_holds_an_int_python_keeps_one_of(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "a.py").write_text("x = 1\n" * 50)
        node = TextNode("a.py", root=tmp_path, id="text_1")
        cache = SectionCache(TokenCounter())
        count = cache.tokens(node, NodeState.COLLAPSED)
        assert cache._counts["text_1"] == count + 1 <= 256  # no int object per file
        node.version = 1  # a changed file's counts are kept above its version
        assert cache.counted(node, NodeState.COLLAPSED) == -1
        assert cache.tokens(node, NodeState.COLLAPSED) == count
        assert cache._counts["text_1"] == 1 << 128 | count + 1

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(
            st.one_of(
                st.tuples(st.just("count"), st.sampled_from(_STATES)),
                st.tuples(
                    st.just("version"),
                    st.one_of(st.integers(0, 3), st.integers(2**32 - 2, 2**32 + 2)),
                ),
            ),
            min_size=1,
            max_size=12,
        )
    )
    def test_counts_are_the_current_versions_and_saved_in_the_files_form(
        self, ops: list[tuple[str, int]]
    ) -> None:
        node = _Lines(id="n1")
        cache = SectionCache(TokenCounter())
        known: dict[int, int] = {}
        for op, value in ops:
            if op == "version":
                if value > node.version:  # versions only grow
                    node.version, known = value, {}
            else:
                count = cache.tokens(node, value)
                assert count == cache.count(cache.text(node, value))
                if node.version < 2**32:  # a version past 32 bits keeps no counts
                    known[value] = count
            for state in _STATES:
                assert cache.counted(node, state) == known.get(state, -1)
            if node.version < 2**32 and known:
                saved = cache.saved("n1")
                assert saved == _saved_form(node.version, known)
                again = SectionCache(TokenCounter())
                again.restore(node, saved)
                for state in _STATES:
                    assert again.counted(node, state) == known.get(state, -1)

    @given(
        version=st.integers(0, 2**32 - 1),
        fields=st.lists(
            st.sampled_from([0, 1, 2**31 - 1, 2**31, _UNKNOWN - 1, _UNKNOWN])
            | st.integers(0, _UNKNOWN),
            min_size=4,
            max_size=4,
        ),
    )
    def test_any_saved_counts_come_back_as_saved(self, version: int, fields: list[int]) -> None:
        """Every field of the saved form, up to the largest count, is taken back as that
        count (all ones: not counted), whatever the fields beside it hold."""
        node = _Lines(id="n1")
        node.version = version
        known = {s: f for s, f in zip(_STATES, fields, strict=True) if f != _UNKNOWN}
        saved = _saved_form(version, known)
        cache = SectionCache(TokenCounter())
        cache.restore_many([(node, saved)])
        for state in _STATES:
            assert cache.counted(node, state) == known.get(state, -1)
        assert cache.saved("n1") == saved
