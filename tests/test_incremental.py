"""Engine paths added for performance (SPEC §11) behave like the plain ones they replace.

The incremental projection keeps its walk, allocation and sections between turns; the
property here is that a turn after any sequence of changes gives exactly what a projection
built from scratch gives for the same graph.
"""

from __future__ import annotations

import contextlib
import tempfile
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx import CycleError, DagctxError, NodeState, Session
from dagctx.graph import ContextGraph
from dagctx.nodes.group import GroupNode
from dagctx.projection import Projection, SectionCache, allocation, build_projection
from dagctx.projection._segtree import MinTree, PrefixTree
from dagctx.projection.assembly import Body, Fenwick
from dagctx.projection.bands import STABLE, ends
from dagctx.projection.prefix import stable_prefix
from dagctx.projection.result import Section
from dagctx.projection.sections import unsafe_start
from dagctx.projection.walk import walk
from dagctx.tokens import get_encoding
from dagctx.watch.scan import scan_tree

ENC = get_encoding()
STATES = ["COLLAPSED", "SUMMARY", "DETAILS", "ALL", "HIDDEN"]


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


def fresh(s: Session, budget: int, changes: list) -> Projection:  # type: ignore[type-arg]
    """A projection of the same graph built from scratch (a new cache and projector)."""
    return build_projection(s.graph, SectionCache(s.counter), budget, changes=changes)


def same(a: Projection, b: Projection) -> None:
    assert a.text == b.text
    assert a.tokens == b.tokens == len(ENC.encode_ordinary(a.text))
    assert a.sections == b.sections
    assert a.omitted == b.omitted
    assert a.degraded == b.degraded
    assert a.reasons == b.reasons
    assert a.labels == b.labels


def content(seed: int, lines: int) -> str:
    return "".join(
        f"{'def f' if j % 7 == 0 else '    x'}_{seed}_{j} = {seed * j % 97}\n" for j in range(lines)
    )


OPS = st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 50), st.integers(0, 120)),
    st.tuples(st.just("state"), st.integers(0, 50), st.sampled_from(STATES)),
    st.tuples(st.just("priority"), st.integers(0, 50), st.integers(0, 100)),
    st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("unlink"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("budget"), st.integers(0, 50), st.integers(20, 9000)),
)


class TestIncrementalEqualsFromScratch:
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        files=st.lists(st.integers(0, 90), min_size=1, max_size=10),
        groups=st.lists(
            st.tuples(st.lists(st.integers(0, 40), max_size=4), st.sampled_from(STATES[:4])),
            max_size=4,
        ),
        budget=st.integers(20, 9000),
        ops=st.lists(OPS, min_size=1, max_size=10),
    )
    def test_every_turn_matches_a_projection_built_from_scratch(
        self,
        tmp_path: Path,
        files: list[int],
        groups: list[tuple[list[int], str]],
        budget: int,
        ops: list[tuple[str, int, object]],
    ) -> None:
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        for i, lines in enumerate(files):
            (root / f"f{i}.py").write_text(content(i, lines))
        with Session(root, budget=budget) as s:
            nodes = [s.text(f"f{i}.py") for i in range(len(files))]
            for members, state in groups:
                kids = {nodes[m % len(nodes)].id: nodes[m % len(nodes)] for m in members}
                nodes.append(s.group(*kids.values(), state=state))
            for op, a, b in ops:
                node = nodes[a % len(nodes)]
                if op == "edit" and node.id.startswith("text"):
                    (root / node.path).write_text(content(a * 31 + int(b), int(b)))  # type: ignore[attr-defined]
                    s.file_changed(node.path)  # type: ignore[attr-defined]
                elif op == "state":
                    node.set_state(str(b))
                elif op == "priority":
                    node.priority = int(b)  # type: ignore[assignment]
                elif op in ("link", "unlink") and node.id.startswith("group"):
                    other = nodes[int(b) % len(nodes)]
                    with contextlib.suppress(DagctxError):
                        (s.link if op == "link" else s.unlink)(node, other)
                elif op == "budget":
                    s.set_budget(int(b))
                r = s.tick()
                p = r.projection
                assert p.tokens <= s.budget
                shown = r.changes if r.turn > 1 else []  # turn 1 lists no changes
                same(p, fresh(s, s.budget, shown))
                visible = {e.node.id for e in walk(s.graph, lambda n: n.state)}
                assert visible == {x.node_id for x in p.sections} | set(p.omitted)


class TestTurnCost:
    def test_a_turn_after_one_change_renders_only_what_changed(self, tmp_path: Path) -> None:
        for i in range(60):
            (tmp_path / f"m{i}.py").write_text(content(i, 40))
        with Session(tmp_path, budget=2000) as s:
            nodes = [s.text(f"m{i}.py") for i in range(60)]
            s.group(*nodes, state=NodeState.DETAILS)
            s.tick()
            (tmp_path / "m7.py").write_text(content(700, 40))
            s.file_changed("m7.py")
            renders = s.cache.renders
            p = s.tick().projection
            assert p.tokens <= 2000 and p.degraded
            # the changed node at its states and its group: a handful, not the graph
            assert s.cache.renders - renders <= 12

    def test_the_top_file_is_followed_not_searched_each_turn(self, tmp_path: Path) -> None:
        """The allocation keeps the slot of the most important whole file between turns
        (changed nodes only move up); after edits that move, empty and refill files it is
        the slot a fresh search finds."""
        for i in range(40):
            (tmp_path / f"m{i}.py").write_text(content(i, 30))
        with Session(tmp_path, budget=1500) as s:
            nodes = [s.text(f"m{i}.py") for i in range(40)]
            s.group(*nodes[:20], state=NodeState.DETAILS)
            s.group(*nodes[20:], state=NodeState.DETAILS)
            s.tick()
            projector = s.cache.projector
            assert projector is not None
            for turn in range(40):
                k = (turn * 7) % 40
                body = "" if turn % 5 == 0 else content(turn + 100, 10 + turn % 23)
                (tmp_path / f"m{k}.py").write_text(body)
                s.file_changed(f"m{k}.py")
                s.tick()
                alloc = projector._plans[1500].alloc  # type: ignore[attr-defined]
                kept = alloc._top_file_slot()
                alloc.top = None  # search again
                assert alloc._top_file_slot() == kept

    def test_no_top_file_in_the_scanned_slots_is_followed_too(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When no whole file is among the last slots (directories fill them), entries
        moving one slot on do not make the allocation search those slots again: only the
        one that came in from below is looked at; the answer is a fresh search's."""
        monkeypatch.setattr(allocation, "TOP_FILE_SCAN", 8)  # entries: the 9 groups are last
        for d in range(8):
            (tmp_path / f"d{d}").mkdir()
            for i in range(10):
                (tmp_path / f"d{d}" / f"m{i}.py").write_text(content(i + d, 30))
        searches = 0
        search = allocation.Allocation._top_file_slot
        caches: list[SectionCache] = []

        def counted(self: allocation.Allocation) -> int:
            nonlocal searches
            searches += self.top is None and self.cache in caches  # not fresh()'s
            return search(self)

        monkeypatch.setattr(allocation.Allocation, "_top_file_slot", counted)
        with Session(tmp_path, budget=1500) as s:
            scan_tree(s, ".")
            s.tick()
            projector = s.cache.projector
            assert projector is not None
            caches.append(s.cache)
            for turn in range(30):
                rel = f"d{turn % 8}/m{turn * 3 % 10}.py"
                (tmp_path / rel).write_text(content(turn + 100, 20 + turn % 7))
                s.file_changed(rel)
                r = s.tick()
                alloc = projector._plans[1500].alloc  # type: ignore[attr-defined]
                assert alloc.top == -1  # directories fill the last 8 entries' slots
                same(r.projection, fresh(s, 1500, r.changes))
            assert searches <= 4  # after the slots were laid out again, not every turn

    def test_many_turns_of_changes_match_from_scratch(self, tmp_path: Path) -> None:
        """Enough turns that the degrade order runs out of room and is laid out again."""
        for i in range(12):
            (tmp_path / f"m{i}.py").write_text(content(i, 30))
        with Session(tmp_path, budget=700) as s:
            nodes = [s.text(f"m{i}.py") for i in range(12)]
            inner = s.group(*nodes[:6], state=NodeState.DETAILS)
            s.group(inner, *nodes[6:], state=NodeState.DETAILS)
            for turn in range(60):
                k = (turn * 5) % 12
                (tmp_path / f"m{k}.py").write_text(content(turn + 100, 20 + turn % 17))
                s.file_changed(f"m{k}.py")
                r = s.tick()
                same(r.projection, fresh(s, 700, r.changes if r.turn > 1 else []))


# an entry shown (band, tokens, version) or not (None); its text's length is its tokens
ENTRY = st.one_of(
    st.none(), st.tuples(st.integers(STABLE, STABLE + 3), st.integers(1, 9), st.integers(0, 2))
)


def _shown(entry: tuple[int, int, int] | None, i: int) -> tuple[Section, str] | None:
    if entry is None:
        return None
    band, tokens, version = entry
    # a node's band changes only with its version, as a file's at its first edit
    section = Section(f"n{i}", NodeState.ALL, NodeState.ALL, tokens, version=version * 4 + band)
    return section, chr(97 + i % 26) * tokens


LEAF = st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(0, 1))


class TestShiftedLeaves:
    """Entries moved one slot on by the degrade order take their leaves along: the trees
    after a shift equal trees loaded with the shifted leaves."""

    @settings(max_examples=100, deadline=None)
    @given(st.lists(LEAF, min_size=1, max_size=40), st.data())
    def test_a_shift_equals_a_load(
        self, leaves: list[tuple[int, int, int]], data: st.DataObject
    ) -> None:
        cap = 1 << len(leaves).bit_length()  # a power of two above the leaves
        lo = data.draw(st.integers(0, len(leaves) - 1))
        hi = data.draw(st.integers(lo + 2, len(leaves) + 1))
        moved = leaves[: lo + 1] + leaves[lo : hi - 1] + leaves[hi:]
        prefix, again = PrefixTree(cap), PrefixTree(cap)
        prefix.load(leaves)
        prefix.shift(lo, hi)
        again.load(moved)
        assert (prefix.sum, prefix.mn, prefix.trig) == (again.sum, again.mn, again.trig)
        keys, fresh_keys = MinTree(cap), MinTree(cap)
        keys.load([a for a, _, _ in leaves])
        keys.shift(lo, hi)
        fresh_keys.load([a for a, _, _ in moved])
        assert keys.mn == fresh_keys.mn


class TestDeferredLeaves:
    """A long move of the degrade's stop sets the search trees' leaves of the entries it
    changed once, at its end (MinTree.set_many): every turn is what setting each leaf at
    each change gives."""

    def test_a_long_move_sets_the_leaves_at_its_end(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for i in range(30):
            (tmp_path / f"f{i}.py").write_text(content(i, 20 + i))
        batches: list[int] = []
        real = MinTree.set_many

        def counting(self: MinTree, leaves: dict[int, int]) -> None:
            batches.append(len(leaves))
            real(self, leaves)

        monkeypatch.setattr(MinTree, "set_many", counting)
        monkeypatch.setattr(allocation, "BATCH_SLOTS", 4)
        with Session(tmp_path, budget=300) as s:
            scan_tree(s, ".")
            p = s.tick().projection
        assert batches and max(batches) > 4
        with monkeypatch.context() as m:
            m.setattr(allocation, "BATCH_SLOTS", 10**9)
            assert fresh(s, 300, []).text == p.text

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        files=st.lists(st.integers(0, 90), min_size=1, max_size=12),
        budget=st.integers(20, 4000),
        ops=st.lists(OPS, min_size=1, max_size=8),
    )
    def test_every_turn_matches_leaves_set_one_by_one(
        self, tmp_path: Path, files: list[int], budget: int, ops: list[tuple[str, int, object]]
    ) -> None:
        from unittest import mock

        root = Path(tempfile.mkdtemp(dir=tmp_path))
        for i, lines in enumerate(files):
            (root / f"f{i}.py").write_text(content(i, lines))
        with mock.patch.object(allocation, "BATCH_SLOTS", 0), Session(root, budget=budget) as s:
            nodes = [s.text(f"f{i}.py") for i in range(len(files))]
            for op, a, b in ops:
                node = nodes[a % len(nodes)]
                if op == "edit":
                    (root / node.path).write_text(content(a * 31 + int(b), int(b)))  # type: ignore[arg-type]
                    s.file_changed(node.path)
                elif op == "state":
                    node.set_state(str(b))
                elif op == "priority":
                    node.priority = int(b)  # type: ignore[assignment,arg-type]
                elif op == "budget":
                    s.set_budget(int(b))  # type: ignore[arg-type]
                r = s.tick()
                shown = r.changes if r.turn > 1 else []
                with mock.patch.object(allocation, "BATCH_SLOTS", 10**9):
                    same(r.projection, fresh(s, s.budget, shown))


class TestFenwick:
    """Prefix sums of any values, kept in 32 bits until one does not fit (then in 64:
    a load or an add past 2**31 - 1 moves the tree, values kept)."""

    values = st.integers(-(2**40), 2**40) | st.integers(-100, 100)

    @given(
        st.lists(values, min_size=1, max_size=40),
        st.lists(st.tuples(st.integers(0, 39), values), max_size=30),
    )
    def test_prefix_sums_after_loads_and_adds(
        self, start: list[int], adds: list[tuple[int, int]]
    ) -> None:
        tree = Fenwick(len(start))
        tree.load(start)
        now = list(start)
        for i, delta in adds:
            i %= len(now)
            tree.add(i, delta)
            now[i] += delta
            assert [tree.prefix(k) for k in range(len(now) + 1)] == [
                sum(now[:k]) for k in range(len(now) + 1)
            ]
        assert [tree.prefix(k) for k in range(len(now) + 1)] == [
            sum(now[:k]) for k in range(len(now) + 1)
        ]

    def test_32_bits_until_a_sum_does_not_fit(self) -> None:
        tree = Fenwick(4)
        tree.load([5, 6, 7, 8])
        assert tree.tree.itemsize == 4
        tree.add(1, 2**31)
        assert tree.tree.itemsize == 8
        assert [tree.prefix(k) for k in range(5)] == [0, 5, 11 + 2**31, 18 + 2**31, 26 + 2**31]


class TestAssemblyKeepsItsSums:
    """The body's band ends and the characters and tokens before each place are kept as
    sections come and go, not summed over every shown section each turn."""

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(ENTRY, min_size=1, max_size=12),
        st.lists(st.lists(st.tuples(st.integers(0, 11), ENTRY), max_size=5), max_size=8),
    )
    def test_a_patched_body_equals_a_rebuilt_one(
        self,
        entries: list[tuple[int, int, int] | None],
        turns: list[list[tuple[int, tuple[int, int, int] | None]]],
    ) -> None:
        n = len(entries)
        body = Body(n)
        body.rebuild(n, lambda i: (_shown(entries[i], i), entries[i][0] if entries[i] else 0))
        for changes in turns:
            for i, entry in changes:
                entries[i % n] = entry
            body.patch(
                sorted({i % n for i, _ in changes}),
                lambda i: None if entries[i] is None else _shown(entries[i], i)[0],  # type: ignore[index]
                lambda i, _: _shown(entries[i], i)[1],  # type: ignore[index]
                lambda i: entries[i][0],  # type: ignore[index]
            )
            fresh = Body(n)
            fresh.rebuild(n, lambda i: (_shown(entries[i], i), entries[i][0] if entries[i] else 0))
            sections, pieces, lengths, offsets = body.ordered()
            assert (sections, pieces, lengths, offsets) == fresh.ordered()
            text = "".join(pieces)
            starts = [sum(lengths[:k]) for k in range(len(lengths))]
            texts = [text[a : a + n] for a, n in zip(starts, lengths, strict=True)]
            bands = [STABLE] * len(body.sections) + [
                b for b, _, _ in sorted(e for e in entries if e is not None and e[0] != STABLE)
            ]
            assert offsets == ends(texts, sorted(bands))
            for first in [-1, *range(n)]:
                before = [i for i in range(first if first >= 0 else n) if body.shown[i] == 1]
                assert body.before(first) == (
                    len(before),
                    sum(len(_shown(entries[i], i)[1]) for i in before),  # type: ignore[index]
                    sum(_shown(entries[i], i)[0].tokens for i in before),  # type: ignore[index]
                )

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(ENTRY, min_size=1, max_size=12),
        st.lists(st.lists(st.tuples(st.integers(0, 11), ENTRY), max_size=5), max_size=8),
        st.text("x\n/ ", max_size=4),
    )
    def test_each_sections_text_reads_right_from_the_one_text_held(
        self,
        entries: list[tuple[int, int, int] | None],
        turns: list[list[tuple[int, tuple[int, int, int] | None]]],
        after: str,
    ) -> None:
        """The body holds the stable band's text once, in the projection's text (which
        goes on past it, as the changes and the footer do): after any patches each
        section's text, read by the lengths, is its own (empty ones and ones starting
        with a space or "/" among them), and the unsafe starts are counted."""
        kinds = ("", " indented\n\n", "/path\n\n", "word\n\n")

        def shown(i: int) -> tuple[Section, str] | None:
            entry = entries[i]
            if entry is None:
                return None
            band, tokens, version = entry
            section = Section(
                f"n{i}", NodeState.ALL, NodeState.ALL, tokens, version=version * 4 + band
            )
            return section, f"{kinds[(i + tokens + version) % 4]}{i}" * (tokens % 3)

        n = len(entries)
        body = Body(n)
        body.rebuild(n, lambda i: (shown(i), entries[i][0] if entries[i] else 0))  # type: ignore[index]
        for changes in [[], *turns]:
            for i, entry in changes:
                entries[i % n] = entry
            body.patch(
                sorted({i % n for i, _ in changes}),
                lambda i: None if entries[i] is None else shown(i)[0],  # type: ignore[index]
                lambda i, _: shown(i)[1],  # type: ignore[index]
                lambda i: entries[i][0],  # type: ignore[index]
            )
            sections, pieces, lengths, _ = body.ordered()
            text = "".join(pieces)
            body.keep(text + after)
            placed = sorted((e[0], i) for i, e in enumerate(entries) if e is not None and shown(i))
            wanted = [shown(i) for _, i in placed]
            offsets = [sum(lengths[:k]) for k in range(len(lengths) + 1)]
            assert [text[a:b] for a, b in pairwise(offsets)] == [t for _, t in wanted]  # type: ignore[misc]
            assert sections == [sec for sec, _ in wanted]  # type: ignore[misc]
            assert body.unsafe == sum(unsafe_start(t) for _, t in wanted)  # type: ignore[misc]

    def test_each_turns_stable_prefix_is_the_one_compared_from_the_start(
        self, tmp_path: Path
    ) -> None:
        """The prefix a turn measures from what it knows did not change is the one found
        by comparing every section with the previous text, and the band and block ends
        are a fresh projection's."""
        for i in range(30):
            (tmp_path / f"m{i}.py").write_text(content(i, 12 + i % 9))
        with Session(tmp_path, budget=1200) as s:
            nodes = [s.text(f"m{i}.py") for i in range(30)]
            s.group(*nodes[:15], state=NodeState.DETAILS)
            s.group(*nodes[15:], state=NodeState.DETAILS)
            s.topic("talk")
            previous = s.tick().projection
            projector = s.cache.projector
            for turn in range(25):
                k = (turn * 7) % 30
                (tmp_path / f"m{k}.py").write_text(content(turn + 50, 5 + turn % 13))
                s.file_changed(f"m{k}.py")
                if turn % 6 == 5:
                    s.message("user", f"message {turn}")
                r = s.tick()
                p = r.projection
                sections, _, lengths, _ = projector._plans[1200].body.ordered()  # type: ignore[attr-defined]
                label = projector._label  # type: ignore[attr-defined]
                assert (p.stable_prefix_tokens, p.prefix_break) == stable_prefix(
                    p.text, p.tokens, sections, lengths, previous, label
                )
                again = fresh(s, 1200, r.changes)
                assert (p.band_ends, p.block_ends) == (again.band_ends, again.block_ends)
                previous = p


class TestCopyOnWriteCheckpoints:
    def tree(self) -> tuple[ContextGraph, list[GroupNode]]:
        g = ContextGraph()
        nodes = [g.add(GroupNode(f"n{i}")) for i in range(8)]
        for parent, child in ((0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (5, 6), (0, 7)):
            g.link(nodes[parent], nodes[child])
        return g, nodes

    def shape(self, g: ContextGraph) -> tuple[object, ...]:
        return (
            [n.id for n in g.roots()],
            {n.id: [c.id for c in g.children(n)] for n in g},
            {n.id: n.state for n in g},
        )

    def test_restore_after_removals_links_and_states_gives_back_the_saved_shape(self) -> None:
        g, n = self.tree()
        before = self.shape(g)
        saved = g.checkpoint("start")
        assert saved.live
        g.remove(n[1])
        g.link(n[7], n[6])
        g.unlink(n[0], n[2])
        g.link(n[0], n[5], index=0)
        n[6].set_state(NodeState.COLLAPSED)
        extra = g.add(GroupNode("extra"))
        g.link(extra, n[3])
        assert g.restore("start") == [extra.id]
        shape = self.shape(g)
        assert shape[1] == {**before[1], extra.id: []}  # type: ignore[dict-item]
        assert shape[0] == [*before[0], extra.id]  # type: ignore[misc]
        assert {k: v for k, v in shape[2].items() if k != extra.id} == before[2]  # type: ignore[attr-defined]

    def test_reading_the_children_ends_copy_on_write_and_restore_still_works(self) -> None:
        g, n = self.tree()
        before = self.shape(g)
        saved = g.checkpoint("start")
        g.unlink(n[1], n[3])
        children = saved.children
        assert not saved.live
        assert children[n[1].id] == (n[3].id, n[4].id)
        g.link(n[4], n[3])
        g.restore("start")
        assert self.shape(g) == before

    def test_two_live_checkpoints_restore_in_any_order(self) -> None:
        g, n = self.tree()
        first = self.shape(g)
        g.checkpoint("a")
        g.unlink(n[0], n[7])
        g.link(n[6], n[7])
        second = self.shape(g)
        g.checkpoint("b")
        g.remove(n[2])
        g.restore("a")
        assert self.shape(g) == first
        g.restore("b")
        assert self.shape(g) == second
        g.restore("a")
        assert self.shape(g) == first


class TestExtend:
    def test_children_are_appended_in_order_as_one_change(self) -> None:
        g = ContextGraph()
        parent, a, b, c = (g.add(GroupNode(t)) for t in "pabc")
        g.link(parent, b)
        version = parent.version
        g.extend(parent, [a, b, c, a])
        assert [n.id for n in g.children(parent)] == [b.id, a.id, c.id]
        assert parent.version == version + 1
        assert g.traces[-1].description == "linked 2 children"
        assert [n.id for n in g.roots()] == [parent.id]

    def test_a_cycle_links_nothing(self) -> None:
        g = ContextGraph()
        top, mid, other = (g.add(GroupNode(t)) for t in ("top", "mid", "other"))
        g.link(top, mid)
        with pytest.raises(CycleError):
            g.extend(mid, [other, top])
        assert g.children(mid) == []
