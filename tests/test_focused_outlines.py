"""Outlines under a focus: a long file shown as an outline keeps the definitions the focus
matches (with their class lines) where its outline without a focus would leave them out;
without a focus it is the outline it always was; a focus change counts again only the
outlines that read otherwise; every turn is what a projection built from scratch shows."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scratch_support import from_scratch

from dagctx import NodeState, Session
from dagctx.nodes.text import TextNode
from dagctx.projection import Projection, SectionCache, build_projection
from dagctx.tokens import TokenCounter
from dagctx.watch.scan import scan_tree

BUDGET = 2400
# file → its late method: four for each focus (the best of them get focused cuts, the
# others show outlines)
LATE = {k: "restore_snapshot" if k < 4 else "network_colors" for k in range(8)}


def module(part: int, classes: int = 6, methods: int = 12, late: str | None = None) -> str:
    """``classes`` classes of ``methods`` three-line methods; with ``late``, the method
    before the last of the last class is named so (an outline without a focus leaves it
    out: it shows every class line and the first class's first methods)."""
    parts = []
    for c in range(classes):
        parts.append(f"class Part{part}{c}:\n    '''Part{part} number {c}.'''\n")
        for m in range(methods):
            name = late if late and (c, m) == (classes - 1, methods - 2) else f"method_{c}_{m}"
            parts.append(
                f"    def {name}(self, value: int) -> int:\n"
                "        value += 1\n        return value\n"
            )
        parts.append("\n\n")
    return "".join(parts)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path)


def write_tree(tmp_path: Path) -> Path:
    """Two small modules, one matching "restore the snapshot" best, the other "network
    colors"; eight long ones with a late method named by one of those focuses; and one
    whose first method the first focus names (its outline shows it anyway)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "store.py").write_text(
        "def restore(name):\n    '''Restore the snapshot.'''\n    return load_snapshot(name)\n"
    )
    (tmp_path / "pkg" / "net.py").write_text(
        "def network(colors):\n    '''Network colors.'''\n    return paint_network(colors)\n"
    )
    for k in range(8):
        (tmp_path / "pkg" / f"big{k}.py").write_text(module(k, late=LATE[k]))
    early = module(8).replace("method_0_0", "restore_snapshot")
    (tmp_path / "pkg" / "big8.py").write_text(early)
    return tmp_path


def section_texts(p: Projection) -> dict[str, str]:
    """Label → the text of its section, for the files shown as outlines."""
    out: dict[str, str] = {}
    for chunk in p.text.split("\n### ")[1:]:
        label = chunk.split(" (#", 1)[0]
        if "; outline)" in chunk.split("\n", 2)[1]:
            end = chunk.index("\n```", chunk.index("```") + 3) + 4  # the closing fence
            out[label] = "### " + chunk[:end]
    return out


class _Recording(TokenCounter):
    """The real counter, noting each text it encodes (not those it had counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def count(self, text: str, *, remember: bool = True) -> int:
        before = self.encodings
        n = super().count(text, remember=remember)
        if self.encodings > before:
            self.texts.append(text)
        return n

    def count_many(
        self, texts: Sequence[str], *, threads: int = 2, remember: bool = True
    ) -> list[int]:
        return [self.count(t, remember=remember) for t in texts]


class TestOutlineUnderFocus:
    def test_an_outline_keeps_the_late_method_the_focus_names(self, tree: Path) -> None:
        with Session(tree, budget=BUDGET) as s:
            scan_tree(s, ".")
            s.focus("restore the snapshot")
            p = s.tick().projection
            outlines = section_texts(p)
            nodes = {n.path: n for n in s.nodes() if isinstance(n, TextNode)}
            big0 = outlines["pkg/big0.py"]
            assert "\nclass Part05:  [L" in big0
            assert "\n  def restore_snapshot(self, value: int) -> int:  [L" in big0
            assert big0.index("class Part05") < big0.index("restore_snapshot")
            assert "  … 10 more definitions (lines " in big0  # the methods before it
            assert "restore_snapshot" not in nodes["pkg/big0.py"].render(NodeState.SUMMARY)
            # the files the focus names nothing of show their outline without a focus
            for path in ("pkg/big5.py", "pkg/big6.py"):
                assert outlines[path].rstrip() == nodes[path].render(NodeState.SUMMARY)
            fresh = build_projection(s.graph, SectionCache(s.counter), BUDGET)
            assert p.text == fresh.text and p.tokens <= BUDGET

    def test_without_a_focus_every_outline_is_the_one_without(self, tree: Path) -> None:
        with Session(tree, budget=BUDGET) as s:
            scan_tree(s, ".")
            s.focus("restore the snapshot")
            s.tick()
            s.focus(None)
            result = s.tick()
            p = result.projection
            nodes = {n.path: n for n in s.nodes() if isinstance(n, TextNode)}
            outlines = section_texts(p)
            assert outlines
            for label, text in outlines.items():
                assert text.rstrip() == nodes[label].render(NodeState.SUMMARY)
            fresh = build_projection(
                s.graph, SectionCache(s.counter), BUDGET, changes=result.changes
            )
            assert p.text == fresh.text

    def test_a_focus_change_counts_again_only_the_outlines_that_change(self, tree: Path) -> None:
        """Outlines counted without a focus, then under one that names a late method of
        four files, the first method of another (big8: its outline shows it anyway) and
        nothing of the rest: the focus names the files whose outline may read otherwise
        (here any file may), and only the four outlines are counted again; the same
        under the other focus; a focus taken again counts none."""
        counter = _Recording()
        cache = SectionCache(counter)
        with Session(tree, budget=BUDGET) as s:
            scan_tree(s, ".")
            nodes = {n.path: n for n in s.nodes() if isinstance(n, TextNode)}

            def counted(focus: str | None) -> tuple[dict[str, int], list[str]]:
                counter.texts.clear()
                maybe = cache.refocus(focus)
                assert focus is None or set(maybe) == {n.id for n in nodes.values()}
                tokens = {path: cache.tokens(n, NodeState.SUMMARY) for path, n in nodes.items()}
                return tokens, sorted(t.split(" (#")[0][4:] for t in counter.texts)

            plain = {path: cache.tokens(n, NodeState.SUMMARY) for path, n in nodes.items()}
            restore, new = counted("restore the snapshot")
            assert new == [f"pkg/big{k}.py" for k in range(4)]
            assert "restore_snapshot" in cache.text(nodes["pkg/big1.py"], NodeState.SUMMARY)
            assert {p for p in nodes if restore[p] != plain[p]} <= set(new)
            big8 = nodes["pkg/big8.py"]
            assert "restore_snapshot" in cache.text(big8, NodeState.SUMMARY)
            network, new = counted("network colors")
            assert new == [f"pkg/big{k}.py" for k in range(4, 8)]
            assert counted("restore the snapshot") == (restore, [])
            assert counted(None) == (plain, [])
            assert counted("network colors") == (network, [])

    def test_going_back_to_a_focus_counts_no_outline(self, tree: Path) -> None:
        """Focuses taken in turn: a focus taken again counts no outline; each projection
        is what one built from scratch shows, with the focused outlines of its focus."""
        counter = _Recording()
        cache = SectionCache(counter)
        with Session(tree, budget=BUDGET) as s:
            scan_tree(s, ".")
            s.focus("restore the snapshot")
            s.tick()
            first = section_texts(build_projection(s.graph, cache, BUDGET))
            assert "restore_snapshot" in first["pkg/big0.py"]
            counted: list[list[str]] = []
            for focus in ("network colors", "restore the snapshot", "network colors"):
                s.focus(focus)
                s.tick()
                counter.texts.clear()
                p = build_projection(s.graph, cache, BUDGET)
                counted.append(
                    [t.split(" (#")[0][4:] for t in counter.texts if "; outline)" in t[:200]]
                )
                fresh = build_projection(s.graph, SectionCache(s.counter), BUDGET)
                assert p.text == fresh.text
                outlines = section_texts(p)
                if focus == "network colors":
                    assert first["pkg/big0.py"] not in p.text
                else:
                    assert outlines["pkg/big0.py"] == first["pkg/big0.py"]
            assert counted[0] and counted[1] == [] and counted[2] == []


class TestIncrementalOutlines:
    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        lates=st.lists(
            st.sampled_from([None, "restore_snapshot", "net_colors", "restore_net"]),
            min_size=3,
            max_size=7,
        ),
        budget=st.integers(600, 4000),
        outlined=st.lists(st.booleans(), min_size=7, max_size=7),
        ops=st.lists(
            st.one_of(
                st.tuples(
                    st.just("focus"),
                    st.integers(0, 9),
                    st.sampled_from(["restore snapshot", "net colors", "restore net", ""]),
                ),
                st.tuples(st.just("edit"), st.integers(0, 9), st.sampled_from(["restore_x", "y"])),
                st.tuples(
                    st.just("state"), st.integers(0, 9), st.sampled_from(["SUMMARY", "DETAILS"])
                ),
                st.tuples(st.just("budget"), st.integers(0, 9), st.integers(300, 4000)),
            ),
            min_size=1,
            max_size=7,
        ),
    )
    def test_every_turn_matches_a_projection_built_from_scratch(
        self,
        tmp_path: Path,
        lates: list[str | None],
        budget: int,
        outlined: list[bool],
        ops: list[tuple[str, int, object]],
    ) -> None:
        """Long files whose late methods the focuses name, some of them asked to be shown
        as outlines (SUMMARY) from the start: outlines change with the focus (and with
        edits and states), and each turn's projection is what one built from scratch
        shows."""
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        (root / "pkg").mkdir()
        for k, late in enumerate(lates):
            (root / "pkg" / f"m{k}.py").write_text(module(k, 3 + k % 3, 10, late))
        with Session(root, budget=budget) as s:
            scan_tree(s, ".")
            files = sorted((n for n in s.nodes() if isinstance(n, TextNode)), key=lambda n: n.path)
            for node, summary in zip(files, outlined, strict=False):
                if summary:
                    node.set_state("SUMMARY")
            for op, a, b in ops:
                node = files[a % len(files)]
                if op == "edit":
                    (root / node.path).write_text(module(a, 4, 10, str(b)))
                    s.file_changed(node.path)
                elif op == "focus":
                    s.focus(str(b) or None)
                elif op == "state":
                    node.set_state(str(b))
                else:
                    s.set_budget(int(str(b)))
                result = s.tick()
                p = result.projection
                fresh = from_scratch(s, result)
                assert p.text == fresh.text
                assert p.sections == fresh.sections and p.omitted == fresh.omitted
                assert p.tokens <= s.budget
