"""``dagctx viz`` in a real headless Chromium (Debian's ``chromium``, driven by Playwright
with ``executable_path``): the page of a fixture tree shows the figures of
``Projection.explain()``, a file edit arrives without a reload, and collapsing a node
from the panel moves the budget bar. A screenshot is saved under the test's tmp dir.

``make test`` installs chromium when it is missing (scripts/ensure_chromium.sh); these
tests skip only when there is still none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from dagctx.session import Session
from dagctx.watch.tracker import TreeTracker

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed and could not be"),
]
BUDGET = 4000
WAIT_MS = 30_000


def make_tree(root: Path) -> None:
    (root / "src").mkdir()
    for i in range(1, 4):
        (root / "src" / f"m{i}.py").write_text("".join(f"x{n} = {n}\n" for n in range(150)))
    (root / "README.md").write_text("# Fixture\n\nThe viz browser test's tree.\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root)
    return root


@pytest.fixture
def served(tree: Path) -> Iterator[str]:
    """``dagctx viz`` over ``tree``; yields the page's URL."""
    command = [sys.executable, "-m", "dagctx.cli", "viz", str(tree), "--budget", str(BUDGET)]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        url = None
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"viz page at (http://127\.0\.0\.1:\d+/)", line)
            if found:
                url = found.group(1)
                break
        assert url, "dagctx viz printed no URL"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def page(served: str, tmp_path: Path) -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page(viewport={"width": 1500, "height": 1000})
            tab.set_default_timeout(WAIT_MS)
            tab.goto(served)
            yield tab
            tab.screenshot(path=str(tmp_path / "viz.png"), full_page=True)
        finally:
            browser.close()


def twin_explained(tree: Path) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    """The totals of ``explain()`` and each section's tokens and rendered state, for a
    session like the server's (same tree, budget, first tick)."""
    with Session(tree, budget=BUDGET) as session:
        TreeTracker(session, ".").load(None)
        projection = session.tick().projection
        line = projection.explain().splitlines()[-1]
        found = re.search(r"total: (\d+)/(\d+) tokens .*; (\d+) sections", line)
        assert found, line
        used, budget, sections = map(int, found.groups())
        shown = {
            projection.labels[s.node_id]: (s.tokens, s.rendered_state.name)
            for s in projection.sections
        }
    return {"used": used, "budget": budget, "sections": sections}, shown


def figure(page: Page, ident: str) -> int:
    return int(page.get_attribute(f"#{ident}", "data-value") or "-1")


class TestTheLivePage:
    def test_the_treemap_and_budget_match_explain(self, page: Page, tree: Path) -> None:
        totals, shown = twin_explained(tree)
        assert {name: figure(page, name) for name in totals} == totals
        drawn = page.eval_on_selector_all(
            "#treemap g.node",
            "gs => gs.map(g => [g.dataset.label, +g.dataset.tokens, g.dataset.rendered,"
            " g.querySelector('rect').getBoundingClientRect().width *"
            " g.querySelector('rect').getBoundingClientRect().height])",
        )
        assert {label: (tokens, state) for label, tokens, state, _ in drawn} == shown
        # area follows tokens: the biggest section has the biggest rectangle
        assert max(drawn, key=lambda d: d[3])[1] == max(tokens for tokens, _ in shown.values())
        bar = page.eval_on_selector(".seg.used", "e => e.style.width")
        assert float(bar.rstrip("%")) == pytest.approx(100 * totals["used"] / totals["budget"])

    def test_an_edit_arrives_without_reload(self, page: Page, tree: Path) -> None:
        page.evaluate("window.notReloaded = true")
        page.wait_for_function("document.body.dataset.turn === '1'")
        assert page.locator("#treemap g.changed").count() == 0  # turn 1 built the graph
        (tree / "src" / "m2.py").write_text("def edited():\n    return 42\n")
        page.wait_for_function("document.body.dataset.turn === '2'")
        assert page.evaluate("window.notReloaded") is True
        changed = page.eval_on_selector_all(
            "#treemap g.changed", "gs => gs.map(g => g.dataset.label)"
        )
        assert changed == ["src/m2.py"]  # not its folder, which changed with it
        assert page.locator("#changed tr[data-node]").count() >= 1

    def test_collapse_from_the_panel_moves_the_budget_bar(self, page: Page) -> None:
        before = figure(page, "used")
        width = page.eval_on_selector(".seg.used", "e => e.style.width")
        page.click('#treemap g.node[data-label="src/m1.py"] rect')
        page.wait_for_selector("#node-more h3")  # the panel's renders arrived
        assert "src/" in (page.text_content("#node-more") or "")  # its parent
        page.click('#verbs button[data-state="collapsed"]')
        page.wait_for_function(f"+document.getElementById('used').dataset.value < {before}")
        assert page.eval_on_selector(".seg.used", "e => e.style.width") != width
        assert "COLLAPSED" in (page.text_content("#verb-result") or "")
        rendered = page.get_attribute('#treemap g.node[data-label="src/m1.py"]', "data-rendered")
        assert rendered == "COLLAPSED"


def test_a_screenshot_is_saved(page: Page, tmp_path: Path) -> None:
    started = time.perf_counter()
    page.wait_for_selector("#treemap g.node")
    page.screenshot(path=str(tmp_path / "viz-first.png"))
    assert (tmp_path / "viz-first.png").stat().st_size > 10_000
    assert time.perf_counter() - started < 30
