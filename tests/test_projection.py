"""Projection guarantees (SPEC §4): hard budget, fidelity, degradation order,
determinism, cache-friendly prefix, incrementality — as examples and as properties."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import pickle
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx import DagctxError, NodeState, Session
from dagctx.projection import Projection, Section
from dagctx.projection.prefix import stable_prefix
from dagctx.tokens import get_encoding

ENC = get_encoding()


def exact(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def write_files(root: Path, n: int, lines: int = 40) -> list[str]:
    names = []
    for i in range(n):
        name = f"mod_{i}.py"
        body = "\n".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}" for j in range(lines))
        (root / name).write_text(body + "\n")
        names.append(name)
    return names


class TestFits:
    def test_everything_fits_renders_at_requested_states(self, project: Path) -> None:
        with Session(project, budget=100_000) as s:
            a = s.text("src/auth.py")
            g = s.group(a, s.text("src/db.py"), title="src", state="DETAILS")
            p = s.project()
            assert p.degraded == {} and p.omitted == []
            assert [x.node_id for x in p.sections] == [g.id, a.id, "text_2"]
            assert "def login(user):" in p.text
            assert p.tokens == exact(p.text) <= p.budget

    def test_fidelity_text_equals_unbudgeted_render(self, project: Path) -> None:
        with Session(project, budget=100_000) as s:
            s.group(s.text("src/auth.py"), s.text("README.md"), state="DETAILS")
            assert s.project().text == s.project(10**9).text


class TestDegradation:
    def test_lowest_priority_degrades_first(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 3)
        with Session(tmp_path, budget=100_000) as s:
            low, mid, high = (s.text(n) for n in names)
            low.priority, mid.priority, high.priority = 10, 20, 30
            full = s.project()
            budget = full.tokens - 50
            p = s.project(budget)
            assert p.tokens <= budget
            assert low.id in p.degraded
            assert mid.id not in p.degraded and high.id not in p.degraded

    def test_reasons_name_each_priority_as_it_was_projected(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 40)
        with Session(tmp_path, budget=300) as s:
            nodes = [s.text(n) for n in names]
            nodes[-1].priority = 7
            nodes[-2].priority = 50
            s.tick()
            first = s.project()
            nodes[-1].priority = None
            nodes[-2].priority = 3
            nodes[-3].priority = 4
            s.tick()
            second = s.project()
            default = nodes[0].priority
            for p, own in ((first, {-1: 7, -2: 50}), (second, {-2: 3, -3: 4})):
                for k in (-1, -2, -3, -4):
                    why = p.reasons[nodes[k].id]
                    assert why.startswith(("left out: budget", "degraded for budget")), why
                    assert why.endswith(f"(priority {own.get(k, default)})"), why

    def test_long_text_is_cut_to_whole_lines_with_a_marker(self, tmp_path: Path) -> None:
        (tmp_path / "big.py").write_text("".join(f"line_{i} = {i}\n" for i in range(2000)))
        with Session(tmp_path, budget=500) as s:
            node = s.text("big.py")
            p = s.project()
            section = next(x for x in p.sections if x.node_id == node.id)
            assert section.cut_lines > 0
            assert f"{section.cut_lines} more lines cut" in p.text
            assert "line_0 = 0\n" in p.text
            assert p.tokens <= 500 and p.tokens >= 0.95 * 500

    def test_omitted_nodes_are_listed_in_the_text_and_the_result(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 40)
        with Session(tmp_path, budget=300) as s:
            nodes = [s.text(n) for n in names]
            p = s.project()
            assert p.omitted, "40 files cannot all fit in 300 tokens"
            assert "left out" in p.text
            shown = {x.node_id for x in p.sections}
            assert shown | set(p.omitted) == {n.id for n in nodes}
            assert p.explain(full=True).count("OMITTED") == len(p.omitted)

    def test_collapsed_group_covers_its_children(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 20)
        with Session(tmp_path, budget=120) as s:
            g = s.group(*(s.text(n) for n in names), title="mods", state="DETAILS")
            p = s.project()
            assert p.tokens <= 120
            assert g.id in {x.node_id for x in p.sections}
            for child in g.children:
                assert child.id in p.omitted or child.id in {x.node_id for x in p.sections}

    def test_tiny_budget_yields_empty_text(self, project: Path) -> None:
        with Session(project, budget=1) as s:
            s.text("src/auth.py")
            p = s.project()
            assert p.tokens <= 1 and p.omitted == ["text_1"]


class TestMultiParent:
    def test_shared_node_renders_once_then_as_reference(self, project: Path) -> None:
        with Session(project, budget=10_000) as s:
            v = s.text("src/auth.py")
            g1 = s.group(v, title="one", state="DETAILS")
            g2 = s.group(v, title="two", state="DETAILS")
            p = s.project()
            assert p.text.count("def login(user):") == 1
            assert f"(see #{v.id} above" in p.text
            assert [x.reference for x in p.sections if x.node_id == v.id] == [False, True]
            assert {g1.id, g2.id} <= {x.node_id for x in p.sections}


class TestStability:
    def test_change_keeps_the_prefix_before_it(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 4, lines=5)
        with Session(tmp_path, budget=50_000) as s:
            nodes = [s.text(n) for n in names]
            first = s.tick().projection
            (tmp_path / names[2]).write_text("changed = True\n")
            second = s.tick().projection
            # its first change moves it to the changed band (projection/bands.py): the
            # text before the place it leaves stays
            index = first.text.index(f"#{nodes[2].id}")
            prefix = second.text[: first.text.rindex("###", 0, index)]
            assert first.text.startswith(prefix)
            stable = sum(x.tokens for x in second.sections[:2])
            assert second.stable_prefix_tokens == stable

    def test_explain_names_the_section_that_ended_the_stable_prefix(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 4, lines=5)
        with Session(tmp_path, budget=50_000) as s:
            nodes = [s.text(n) for n in names]
            first = s.tick().projection
            assert first.prefix_break == "no previous projection"
            (tmp_path / names[2]).write_text("changed = True\n")
            second = s.tick().projection
            assert second.prefix_break == f"#{nodes[2].id} ({nodes[2].label()})"
            assert (
                second.explain()
                .splitlines()[-1]
                .endswith(
                    f"stable prefix {second.stable_prefix_tokens} tokens"
                    f" (ended by #{nodes[2].id} ({nodes[2].label()}))"
                )
            )
            assert second.to_dict()["prefix_break"] == second.prefix_break

    def test_an_identical_text_is_stable_in_full(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 3, lines=5)
        with Session(tmp_path, budget=50_000) as s:
            for n in names:
                s.text(n)
            s.tick()
            again = s.tick().projection
            assert (again.stable_prefix_tokens, again.prefix_break) == (again.tokens, "")

    @settings(max_examples=80, deadline=None)
    @given(
        st.lists(st.text("ab\n#", min_size=1, max_size=6), min_size=1, max_size=8),
        st.lists(st.text("ab\n#", min_size=1, max_size=6), max_size=8),
    )
    def test_stable_prefix_counts_the_leading_sections_the_old_text_starts_with(
        self, texts: list[str], old_texts: list[str]
    ) -> None:
        sections = [Section(f"n{i}", NodeState.ALL, NodeState.ALL, 1) for i in range(len(texts))]
        text, old = "".join(texts), "".join(old_texts)
        previous = Projection(old, len(old_texts), 100, [])
        lengths = [len(t) for t in texts]
        tokens, broken = stable_prefix(text, 99, sections, lengths, previous, lambda n: "L")
        if text == old:
            assert (tokens, broken) == (99, "")
            return
        k = 0
        while k < len(texts) and old.startswith("".join(texts[: k + 1])):
            k += 1
        assert tokens == k
        assert broken == (
            f"#n{k} (L)" if k < len(texts) else "the changes since last turn or the left-out footer"
        )

    def test_changes_section_comes_last(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 2, lines=3)
        with Session(tmp_path, budget=50_000) as s:
            s.text(names[0])
            s.tick()
            (tmp_path / names[0]).write_text("x = 1\n")
            text = s.tick().projection.text
            assert text.rstrip().endswith("content changed (v0→v1)")

    def test_unchanged_content_is_not_retokenized(self, tmp_path: Path) -> None:
        names = write_files(tmp_path, 10, lines=5)
        with Session(tmp_path, budget=50_000) as s:
            for n in names:
                s.text(n)
            s.tick()
            renders, encodings = s.cache.renders, s.counter.encodings
            (tmp_path / names[3]).write_text("y = 2\n")
            s.tick()
            assert s.cache.renders - renders == 1
            assert s.counter.encodings - encodings <= 2  # the node + the changes section


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[tuple[int, int, str]], int]:
    """Files (lines, width), groups (parent, child, state) and a budget."""
    files = draw(
        st.lists(st.tuples(st.integers(0, 80), st.integers(1, 60)), min_size=1, max_size=8)
    )
    n_groups = draw(st.integers(0, 4))
    edges = draw(
        st.lists(
            st.tuples(
                st.integers(0, max(0, n_groups - 1)),
                st.integers(0, len(files) + n_groups - 1),
                st.sampled_from(["COLLAPSED", "SUMMARY", "DETAILS", "ALL", "HIDDEN"]),
            ),
            max_size=12,
        )
        if n_groups
        else st.just([])
    )
    budget = draw(st.integers(1, 6000))
    return files, edges, budget


def build(
    root: Path, spec: tuple[list[tuple[int, int]], list[tuple[int, int, str]], int]
) -> Session:
    files, edges, budget = spec
    s = Session(root, budget=budget)
    nodes = []
    for i, (lines, width) in enumerate(files):
        (root / f"f{i}.txt").write_text(
            "".join(f"{'w' * (width % 17)} {j} {'x' * width}\n" for j in range(lines))
        )
        nodes.append(s.text(f"f{i}.txt"))
    groups = [s.group(title=f"g{k}") for k in range(len({e[0] for e in edges}) if edges else 0)]
    nodes += groups
    for parent, child, state in edges:
        if parent < len(groups):
            g = groups[parent]
            target = nodes[child % len(nodes)]
            with contextlib.suppress(DagctxError):  # cycles and self-links are skipped
                s.link(g, target)
            g.set_state(state)
    return s


class TestProperties:
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(spec=graphs())
    def test_hard_budget_determinism_and_accounting(self, tmp_path: Path, spec) -> None:  # type: ignore[no-untyped-def]
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        with build(root, spec) as s:
            p = s.project()
            assert exact(p.text) == p.tokens <= p.budget
            assert s.project().text == p.text  # determinism
            visible = {
                e.node.id
                for e in __import__("dagctx.projection.walk", fromlist=["walk"]).walk(
                    s.graph, lambda n: n.state
                )
            }
            rendered = {x.node_id for x in p.sections}
            assert visible == rendered | set(p.omitted)
            assert not (rendered & set(p.omitted))
            unbudgeted = s.project(10**9)
            if unbudgeted.tokens <= p.budget:  # fidelity
                assert p.text == unbudgeted.text and not p.degraded and not p.omitted

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        sizes=st.lists(
            st.lists(st.integers(1, 40), min_size=1, max_size=6), min_size=1, max_size=5
        ),
        budget=st.integers(30, 5000),
        focus=st.sampled_from([None, "restore", "render page", "restore render"]),
        state=st.sampled_from(["DETAILS", "ALL"]),
        doc=st.integers(0, 12),
    )
    def test_hard_budget_under_focus_and_focused_cuts(
        self,
        tmp_path: Path,
        sizes: list[list[int]],
        budget: int,
        focus: str | None,
        state: str,
        doc: int,
    ) -> None:
        """Also with docstrings of ``doc`` lines, which a cut trims."""
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        words = ("restore", "render", "page", "colors")
        for i, functions in enumerate(sizes):
            code = ['"""A module."""', "import os", ""]
            for j, n in enumerate(functions):
                word = words[(i + j) % len(words)]
                code.append(f"def {word}_{j}(value):")
                if doc:
                    code.append(f'    """{word.title()} it.')
                    code += [f"    About {word} {k}." for k in range(doc)] + ['    """']
                code += [f"    value = value + {k}  # {word}" for k in range(n)]
                code.append("")
            (root / f"m{i}.py").write_text("\n".join(code))
        with Session(root, budget=budget) as s:
            for i in range(len(sizes)):
                s.text(f"m{i}.py", state=state)
            s.focus(focus)
            p = s.tick().projection
            assert exact(p.text) == p.tokens <= budget, p.explain()
            fresh = s.project()
            assert fresh.text == p.text  # determinism
            for x in p.sections:
                if x.cut_lines:  # a cut marks what it leaves out, with line numbers
                    assert re.search(r"… lines [0-9]+–[0-9]+ elided", p.text) or re.search(
                        r"… [0-9]+ more lines cut", p.text
                    )

    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(budget=st.integers(1000, 16000), n=st.integers(5, 40))
    def test_utilization_when_content_exceeds_budget(
        self, tmp_path: Path, budget: int, n: int
    ) -> None:
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        names = write_files(root, n, lines=60)
        with Session(root, budget=budget) as s:
            for name in names:
                s.text(name)
            p = s.project()
            if s.project(10**9).tokens > budget:
                assert p.tokens >= 0.95 * budget, p.explain()

    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        budget=st.integers(50, 3000),
        priorities=st.lists(st.integers(0, 100), min_size=3, max_size=6),
    )
    def test_higher_priority_is_never_worse_off(
        self, tmp_path: Path, budget: int, priorities: list[int]
    ) -> None:
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        names = write_files(root, len(priorities), lines=30)
        with Session(root, budget=budget) as s:
            nodes = [s.text(n, priority=pr) for n, pr in zip(names, priorities, strict=True)]
            p = s.project()
            shown = {x.node_id: x.rendered_state for x in p.sections if not x.cut_lines}
            level = {n.id: shown.get(n.id, NodeState.HIDDEN) for n in nodes}
            for a in nodes:
                for b in nodes:
                    if a.priority > b.priority and a.id in shown and b.id in shown:
                        assert level[a.id] >= level[b.id], p.explain()


@pytest.mark.parametrize("budget", [0, -5, 1.5, "100", True])
def test_bad_budgets_are_refused(project: Path, budget: object) -> None:
    from dagctx import BudgetError

    with Session(project, budget=100) as s, pytest.raises(BudgetError, match="budget"):
        s.project(budget)  # type: ignore[arg-type]


class TestMultiParentUnderPressure:
    def test_shared_node_moving_to_its_second_parent_stays_within_budget(
        self, tmp_path: Path
    ) -> None:
        names = write_files(tmp_path, 3, lines=40)
        with Session(tmp_path, budget=100_000) as s:
            shared = s.text(names[0])
            low = s.group(shared, s.text(names[1]), title="low", state="DETAILS", priority=1)
            high = s.group(shared, s.text(names[2]), title="high", state="DETAILS", priority=99)
            full = s.project()
            for budget in range(50, full.tokens, max(1, full.tokens // 40)):
                p = s.project(budget)
                assert exact(p.text) == p.tokens <= budget
                shown = [x for x in p.sections if x.node_id == shared.id]
                assert [x.reference for x in shown] in ([], [False], [False, True])
                for ref in (x for x in p.sections if x.reference):
                    assert ref.node_id not in p.omitted
            assert {low.id, high.id} <= {x.node_id for x in full.sections}


def test_the_footer_names_left_out_files_by_directory() -> None:
    from dagctx.projection.assembly import left_out_names

    left = [
        ("text_1", "README.md"),
        ("text_2", "tests/a.py"),
        ("group_3", "src/"),
        ("text_3", "src/x.py"),
        ("text_4", "tests/b.py"),
        ("text_5", "docs/only.md"),
        ("text_6", "tests/c.py"),
        ("text_7", "src/y.py"),
    ]
    assert left_out_names(left) == [
        ("3 in tests/", 3),
        ("2 in src/", 2),
        ("#text_1 (README.md)", 1),
        ("#group_3 (src/)", 1),
        ("#text_5 (docs/only.md)", 1),
    ]


def test_the_footer_names_a_nested_directory_once() -> None:
    # gin's testdata/ at 8k: its two subdirectories were counted as "2 in testdata/" and
    # then named again by their own counts. A directory below the top goes with its
    # files; the count names the files, and orders the names.
    from dagctx.projection.assembly import LeftOut, left_out_names

    left = [
        ("group_2", "testdata/"),
        ("group_5", "testdata/certificate/"),
        ("text_6", "testdata/certificate/cert.pem"),
        ("text_7", "testdata/certificate/key.pem"),
        ("group_8", "testdata/template/"),
        ("text_9", "testdata/template/hello.tmpl"),
        ("group_10", "testdata/proto/"),
        ("text_12", "lib/util/a.go"),
        ("text_13", "lib/util/b.go"),
        ("text_14", "lib/util/c.go"),
    ]
    names = [  # most files first
        ("3 in lib/util/", 3),
        ("2 in testdata/certificate/", 3),
        ("1 in testdata/template/", 2),
        ("#group_2 (testdata/)", 1),
        ("#group_10 (testdata/proto/)", 1),
    ]
    assert left_out_names(left) == names
    ids = {int(nid.split("_")[1]): (nid, label) for nid, label in left}
    kept = LeftOut.of((i, label) for i, (_, label) in sorted(ids.items()))
    assert kept.names(lambda i: ids[i][0], lambda i: ids[i][1]) == names


@pytest.fixture(scope="module")
def footer_caches() -> Iterator[dict[str, Any]]:
    """A section cache per encoding whose counts add up (loaded once: o200k is slow)."""
    from tokens_support import other_encodings

    from dagctx.projection.sections import SectionCache
    from dagctx.tokens import TokenCounter

    with other_encodings():
        yield {
            name: SectionCache(TokenCounter(name))
            for name in ("cl100k_base", "p50k_base", "o200k_base")
        }


class TestFooterCounts:
    """The footer's lines are counted from their parts, each name's count kept between
    turns (:func:`~dagctx.projection.assembly.footer` with ``sizes``): the same line and
    count as measuring every line, in each encoding whose counts add up."""

    @pytest.mark.parametrize("encoding", ["cl100k_base", "p50k_base", "o200k_base"])
    @settings(
        max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        names=st.lists(
            st.tuples(
                st.text(st.sampled_from("aAs/_#() 01,.:'-é…+]\\\n\t"), min_size=1, max_size=24),
                st.integers(1, 30),
            ),
            max_size=40,
        ),
        extra=st.integers(0, 500),
        limit=st.integers(0, 900),
    )
    def test_the_line_and_count_of_measuring_each_line(
        self,
        footer_caches: dict[str, Any],
        encoding: str,
        names: list[tuple[str, int]],
        extra: int,
        limit: int,
    ) -> None:
        from dagctx.projection.assembly import footer

        cache = footer_caches[encoding]
        count = sum(n for _, n in names) + extra  # extra 0: every node named
        sizes: dict[str, int] = {}
        measured = footer(count, names, cache, 128_000, limit)
        assert footer(count, names, cache, 128_000, limit, sizes) == measured
        assert footer(count, names, cache, 128_000, limit, sizes) == measured  # sizes kept
        text, tokens = measured
        assert not text or cache.counter.count_exact(text) + cache.junction == tokens

    def test_a_long_footer_is_not_encoded_whole(self) -> None:
        from dagctx.projection.assembly import FOOTER_NAMES, footer
        from dagctx.projection.sections import SectionCache
        from dagctx.tokens import TokenCounter

        counter = TokenCounter()
        cache = SectionCache(counter)
        encoded: list[int] = []

        class Counting:
            def __init__(self, encoding: Any) -> None:
                self.inner = encoding

            def encode_ordinary(self, text: str) -> list[int]:
                encoded.append(len(text))
                return list(self.inner.encode_ordinary(text))

        counter.encoding = Counting(counter.encoding)  # type: ignore[assignment]
        names = [(f"{k % 9 + 2} in pkg_{k}/sub_{k % 7}/", k % 9 + 2) for k in range(FOOTER_NAMES)]
        count = sum(n for _, n in names) + 1000
        sizes: dict[str, int] = {}
        footer(count, names, cache, 128_000, 2000, sizes)  # counts each name once
        for limit in (1000, 1500, 2500):
            encoded.clear()
            text, tokens = footer(count, names, cache, 128_000, limit, sizes)
            assert len(text) > 1000 and sum(encoded) < len(text) // 4  # not the line
            assert tokens <= limit and exact(text) + cache.junction == tokens


_LABELS = ("README.md", "/abs", "src/", "src/x.py", "src/y.py", "src/sub/", "src/sub/z.py",
           "tests/a.py", "tests/b.py", "docs/only.md", "a/b/c/", "a/b/c/d.py")  # fmt: skip


class TestLeftOutCounts:
    """The footer's names kept per directory as entries are hidden and shown
    (:class:`~dagctx.projection.assembly.LeftOut`) equal a fresh count."""

    @settings(max_examples=200, deadline=None)
    @given(
        labels=st.lists(st.sampled_from(_LABELS), min_size=1, max_size=40),
        flips=st.lists(st.integers(0, 39), max_size=120),
        start=st.integers(0, 2**40 - 1),
        most=st.sampled_from([1, 2, 3, 200]),
    )
    def test_kept_counts_name_what_a_fresh_count_names(
        self, labels: list[str], flips: list[int], start: int, most: int
    ) -> None:
        from unittest import mock

        from dagctx.projection import assembly
        from dagctx.projection.assembly import LeftOut, left_out_names

        left = {i for i in range(len(labels)) if start >> i & 1}
        kept = LeftOut.of((i, labels[i]) for i in sorted(left))

        def node_id(i: int) -> str:
            return f"n{i}"

        with mock.patch.object(assembly, "FOOTER_NAMES", most):
            for k in [None, *flips]:
                if k is not None:
                    i = k % len(labels)
                    if i in left:
                        left.discard(i)
                        kept.remove(i, labels[i])
                    else:
                        left.add(i)
                        kept.add(i, labels[i])
                fresh = left_out_names((node_id(i), labels[i]) for i in sorted(left))
                assert kept.names(node_id, labels.__getitem__) == fresh
                again = LeftOut.of((i, labels[i]) for i in sorted(left))
                assert again.names(node_id, labels.__getitem__) == fresh

    def test_left_out_entries_cost_a_few_bytes_each_not_an_object(self) -> None:
        # under a tight budget nearly every file of a tree is left out
        import gc
        import tracemalloc

        from dagctx.projection.assembly import LeftOut

        labels = [f"src/pkg_{i % 100}/mod_{i}.py" for i in range(20_000)]
        gc.collect()
        tracemalloc.start()
        try:  # walk positions made as the pass finds them (as the projector's does)
            kept = LeftOut.of((i + 300, label) for i, label in enumerate(labels))
            gc.collect()
            used = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert kept.names(str, labels.__getitem__)[0] == ("200 in src/pkg_0/", 200)
        assert used < 12 * len(labels)  # an int object and a list slot each: 36 B


class TestSection:
    """A section reads back every field it was made with, compares and hashes by them,
    cannot be changed, and holds them in four slots (a projection keeps thousands)."""

    @given(
        st.text(max_size=12),
        st.sampled_from(list(NodeState)),
        st.sampled_from(list(NodeState)),
        st.integers(0, 2**40),
        st.integers(0, 2**40),
        st.booleans(),
        st.integers(0, 2**70),
    )
    def test_fields_read_back(
        self,
        node_id: str,
        requested: NodeState,
        rendered: NodeState,
        tokens: int,
        cut_lines: int,
        reference: bool,
        version: int,
    ) -> None:
        s = Section(node_id, requested, rendered, tokens, cut_lines, reference, version)
        fields = (node_id, requested, rendered, tokens, cut_lines, reference, version)
        assert (
            s.node_id,
            s.requested_state,
            s.rendered_state,
            s.tokens,
            s.cut_lines,
            s.reference,
            s.version,
        ) == fields
        assert type(s.requested_state) is NodeState and type(s.reference) is bool
        twin = Section(*fields)
        assert s == twin and hash(s) == hash(twin)
        assert copy.copy(s) == s == pickle.loads(pickle.dumps(s))
        match s:
            case Section(nid, req, ren, tok, cut, ref, ver):
                assert (nid, req, ren, tok, cut, ref, ver) == fields

    def test_each_field_tells_sections_apart(self) -> None:
        fields = ("a", NodeState.ALL, NodeState.SUMMARY, 5, 0, False, 1)
        base = Section(*fields)
        others = ("b", NodeState.DETAILS, NodeState.ALL, 6, 1, True, 2)
        for k, other in enumerate(others):
            changed = list(fields)
            changed[k] = other
            assert Section(*changed) != base
        assert base != fields and base != ("a", 5, 1)

    def test_immutable(self) -> None:
        s = Section("a", NodeState.ALL, NodeState.ALL, 5)
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.tokens = 6  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del s.node_id
        assert s.tokens == 5
        assert repr(s) == (
            "Section(node_id='a', requested_state=<NodeState.ALL: 4>,"
            " rendered_state=<NodeState.ALL: 4>, tokens=5, cut_lines=0, reference=False,"
            " version=0)"
        )

    def test_four_slots(self) -> None:
        s = Section("a", NodeState.ALL, NodeState.COLLAPSED, 700, 12, True, 3)
        assert sys.getsizeof(s) <= sys.getsizeof(object()) + 4 * 8 + 16
