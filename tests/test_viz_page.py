"""`Projection.to_html`: one self-contained page whose figures are the projection's own
(the same as ``explain()``), whose treemap covers every token, and which stays a
bounded drawing at repo scale (small nodes aggregated)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dagctx.nodes.base import NodeState
from dagctx.projection import Projection
from dagctx.projection.result import Section
from dagctx.session import Session
from dagctx.viz.page import MIN_AREA, folder_of
from dagctx.viz.treemap import Folder, Rect, layout, squarify
from dagctx.watch.tracker import TreeTracker


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, in order."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.tags if name in a.get("class", "").split()]

    def by_id(self, ident: str) -> dict[str, str]:
        return next(a for _, a in self.tags if a.get("id") == ident)


def explained_totals(projection: Projection) -> dict[str, int]:
    """The figures of ``explain()``'s total line."""
    line = projection.explain().splitlines()[-1]
    found = re.search(
        r"total: (\d+)/(\d+) tokens .*; (\d+) sections, (\d+) degraded, (\d+) left out;"
        r" stable prefix (\d+) tokens",
        line,
    )
    assert found, line
    names = ("used", "budget", "sections", "degraded-count", "omitted-count", "prefix")
    return dict(zip(names, map(int, found.groups()), strict=True))


def make_tree(root: Path, files: int = 12) -> None:
    for i in range(files):
        folder = root / ("pkg" if i % 2 else "lib") / ("deep" if i % 3 == 0 else "")
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{n}(x):\n    return x + {n}\n\n" for n in range(20 + 10 * i))
        (folder / f"mod{i}.py").write_text(body)
    (root / "README.md").write_text("# Fixture\n\nA tree for the viz tests.\n")


def tick_tree(root: Path, budget: int) -> tuple[Session, Projection, list[str]]:
    session = Session(root, budget=budget)
    TreeTracker(session, ".").load(None)
    result = session.tick()
    return session, result.projection, [t.node_id for t in result.changes]


class TestFiguresMatchExplain:
    def test_budget_figures_and_lists_are_explains(self, tmp_path: Path) -> None:
        make_tree(tmp_path)
        session, projection, _ = tick_tree(tmp_path, 700)
        with session:
            page = Elements(projection.to_html())
            totals = explained_totals(projection)
            assert totals["degraded-count"] > 0  # the fixture is over budget
            shown = {name: int(page.by_id(name)["data-value"]) for name in totals}
            assert shown == totals
            assert int(page.by_id("free")["data-value"]) == projection.budget - projection.tokens
            degraded = [a["data-node"] for t, a in page.tags if t == "tr" and "data-node" in a]
            assert set(projection.degraded) <= set(degraded)

    def test_every_section_is_a_rectangle_with_its_figures(self, tmp_path: Path) -> None:
        make_tree(tmp_path)
        session, projection, _ = tick_tree(tmp_path, 700)
        with session:
            nodes = {a["data-node"]: a for a in Elements(projection.to_html()).with_class("node")}
            for s in projection.sections:
                if s.tokens == 0:
                    continue
                drawn = nodes[s.node_id]
                assert int(drawn["data-tokens"]) == s.tokens
                assert drawn["data-rendered"] == s.rendered_state.name
                assert drawn["data-requested"] == s.requested_state.name
                assert drawn["data-why"] == projection.reasons.get(s.node_id, "")
                score = projection.scores.get(s.node_id)
                assert drawn["data-score"] == (score.describe() if score else "")
            degraded = {n for n, a in nodes.items() if "degraded" in a["class"].split()}
            assert degraded == set(projection.degraded)

    def test_the_rectangles_hold_every_token(self, tmp_path: Path) -> None:
        make_tree(tmp_path)
        session, projection, _ = tick_tree(tmp_path, 700)
        with session:
            page = Elements(projection.to_html())
            drawn = page.with_class("node") + page.with_class("aggregate")
            assert sum(int(a["data-tokens"]) for a in drawn) == projection.tokens

    def test_left_out_nodes_are_listed_with_why(self, tmp_path: Path) -> None:
        make_tree(tmp_path, files=30)
        session, projection, _ = tick_tree(tmp_path, 120)
        with session:
            assert projection.omitted
            page = projection.to_html()
            omitted = page.split("<section id=omitted", 1)[1].split("</section>", 1)[0]
            assert f'data-count="{len(projection.omitted)}"' in omitted
            for node_id in projection.omitted[:5]:
                assert f'data-node="{node_id}"' in omitted
            assert projection.reasons.get(projection.omitted[0], "budget") in omitted

    def test_changed_nodes_are_highlighted(self, tmp_path: Path) -> None:
        make_tree(tmp_path)
        session, _, _ = tick_tree(tmp_path, 4000)
        with session:
            (tmp_path / "lib" / "mod2.py").write_text("def changed():\n    return 1\n")
            session.file_changed("lib/mod2.py")
            result = session.tick()
            changed = {t.node_id for t in result.changes}
            page = Elements(result.projection.to_html(changed=changed))
            highlighted = {a["data-node"] for a in page.with_class("changed")}
            edited = next(
                n for n, label in result.projection.labels.items() if label == "lib/mod2.py"
            )
            assert edited in highlighted
            assert highlighted <= changed
            assert int(page.by_id("changed")["data-count"]) == len(changed)


class TestSelfContained:
    def test_nothing_is_fetched(self, tmp_path: Path) -> None:
        make_tree(tmp_path)
        session, projection, _ = tick_tree(tmp_path, 700)
        with session:
            page = projection.to_html()
        tags = Elements(page).tags
        assert not [a for t, a in tags if "src" in a or (t == "link")]
        assert "http://" not in page and "https://" not in page
        assert page.count("<script>") == 1 and page.count("<style>") == 1

    def test_labels_are_escaped(self) -> None:
        section = Section("text_1", NodeState.DETAILS, NodeState.DETAILS, 5)
        label = "a/<script>alert(1)</script>.py"
        projection = Projection("x", 5, 10, [section], labels={"text_1": label})
        page = projection.to_html()
        assert "<script>alert" not in page
        assert Elements(page).with_class("node")[0]["data-label"] == label


def many_sections(count: int) -> Projection:
    sections = [
        Section(f"text_{i}", NodeState.DETAILS, NodeState.COLLAPSED, 3 + i % 40)
        for i in range(count)
    ]
    labels = {f"text_{i}": f"d{i % 37}/e{i % 11}/f{i}.py" for i in range(count)}
    total = sum(s.tokens for s in sections)
    return Projection("x", total, total, sections, labels=labels)


class TestRepoScale:
    def test_eleven_thousand_nodes_draw_a_bounded_number_of_boxes(self) -> None:
        projection = many_sections(11_000)
        page = Elements(projection.to_html())
        boxes = page.with_class("node") + page.with_class("aggregate")
        assert len(boxes) + len(page.with_class("folder")) < 2_000
        assert page.with_class("aggregate")
        assert sum(int(a["data-tokens"]) for a in boxes) == projection.tokens
        assert int(page.by_id("treemap")["data-boxes"]) < 2_000


class TestTreemap:
    @given(st.lists(st.integers(1, 10_000), min_size=1, max_size=60))
    def test_squarify_tiles_the_rectangle_in_proportion(self, weights: list[int]) -> None:
        weights.sort(reverse=True)
        area = Rect(0, 0, 300, 200)
        rects = squarify([float(w) for w in weights], area)
        total = sum(weights)
        for weight, r in zip(weights, rects, strict=True):
            assert abs(r.area - area.area * weight / total) < 1e-6 * area.area
            assert r.x >= -1e-6 and r.y >= -1e-6
            assert r.x + r.w <= 300 + 1e-6 and r.y + r.h <= 200 + 1e-6

    @given(st.lists(st.tuples(st.sampled_from(["", "a", "a/b", "c"]), st.integers(0, 500))))
    def test_layout_keeps_every_weight(self, items: list[tuple[str, int]]) -> None:
        root: Folder[int] = Folder()
        for i, (path, weight) in enumerate(items):
            root.add(path, i, weight)
        boxes = layout(root, Rect(0, 0, 400, 300), MIN_AREA / 10)
        leaves = [b for b in boxes if not b.frame]
        assert sum(b.weight for b in leaves) == sum(w for _, w in items)

    def test_folders_come_from_labels(self) -> None:
        assert folder_of("a/b/c.py") == "a/b"
        assert folder_of("a/b/") == "a/b"
        assert folder_of("README.md") == ""

    def test_a_folder_of_one_is_drawn_as_its_item(self) -> None:
        root: Folder[str] = Folder()
        root.add("", "big", 10_000)
        root.add("tiny/deeper", "alone", 1)
        boxes = layout(root, Rect(0, 0, 400, 300), 1.0)
        assert [(b.item, b.weight) for b in boxes] == [("big", 10_000), ("alone", 1)]
