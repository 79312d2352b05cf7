"""``Projection.explain()`` at repository scale: a summary by default (by state, by
directory, the top nodes, degraded / left-out / held-back nodes grouped by directory and
reason), every row on request (``full=True``, a node glob, ``--explain=full|GLOB``),
labels cut with an ellipsis; the JSON account carries labels; ``dagctx watch`` rewrites
``projection.json`` only when it changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagctx.cli.watch_view import Outputs
from dagctx.projection import Projection
from dagctx.projection.explain import CELL_WIDTH, directory_of, shorten
from dagctx.session import Session
from dagctx.watch.scan import scan_tree

LONG = "a_rather_long_directory_name/with_a_deeper_folder/and_a_long_file_name.py"


def make_tree(root: Path, folders: int = 12, files: int = 25) -> None:
    """``folders`` × ``files`` small Python files under ``src/`` and ``tests/``."""
    for f in range(folders):
        folder = root / ("src" if f % 2 else "tests") / f"part{f}"
        folder.mkdir(parents=True)
        for i in range(files):
            body = "".join(f"def f{i}_{n}(x):\n    return x + {n}\n\n" for n in range(8))
            (folder / f"mod{i}.py").write_text(body)
    (root / LONG).parent.mkdir(parents=True)
    (root / LONG).write_text("x = 1\n" * 400)
    (root / ".env").write_text("TOKEN=abc\n")


def render(root: Path, budget: int = 1500) -> Projection:
    with Session(root, budget=budget) as session:
        scan_tree(session, ".")
        return session.project()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Projection]:
    root = tmp_path_factory.mktemp("big")
    make_tree(root)
    return root, render(root)


class TestSummary:
    def test_stays_a_screenful_however_many_nodes(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        summary, full = p.explain(), p.explain(full=True)
        assert len(p.omitted) > 100
        assert len(summary.splitlines()) < 70 < len(full.splitlines())

    def test_totals_by_state_add_up(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        lines = p.explain().splitlines()
        by_state = lines[1 : lines.index("")]
        tokens = {row.split()[0]: int(row.split()[-2].replace(",", "")) for row in by_state}
        assert sum(tokens.values()) == sum(s.tokens for s in p.sections)
        assert f"OMITTED {len(p.omitted)} nodes" in " ".join(" ".join(by_state).split())

    def test_directories_top_nodes_and_groups(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        summary = p.explain()
        assert "by directory (2 levels deep), most tokens first:" in summary
        assert "  src/part1/ " in summary and "  tests/part0/ " in summary
        top = max((s for s in p.sections if not s.reference), key=lambda s: s.tokens)
        assert f"#{top.node_id}" in summary.split("top 10 nodes by tokens:")[1]
        assert "level " in summary and "tier " in summary  # relevance score parts
        left = summary.split(f"left out: {len(p.omitted)} nodes, by directory and reason:")[1]
        assert "×  inside a collapsed parent (budget)" in left or "×  left out: budget" in left
        assert "(priority" not in left  # reasons grouped without each node's priority
        assert "held back for safety: 1 node" in summary and "withheld: environment" in summary
        assert summary.splitlines()[-2].startswith("total: ")  # then the secrets line

    def test_every_node_is_counted_once(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        lines = p.explain().splitlines()
        start = lines.index(next(x for x in lines if x.startswith("by directory")))
        rows = lines[start + 1 : lines.index("", start)]
        left = 0
        for row in rows:
            words = row.replace(",", "").split()
            if words[0] == "and":
                left += int(words[-3])
                continue
            left += int(words[7])
        assert len([r for r in rows if not r.strip().startswith("and")]) == 10
        assert left == len(p.omitted)


class TestFull:
    def test_every_node_in_text_order(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        full = p.explain(full=True)
        assert full.splitlines()[0].split()[:2] == ["node", "label"]
        assert full.count("OMITTED") == len(p.omitted)
        assert full.splitlines()[-2] == p.explain().splitlines()[-2]  # the same totals

    def test_labels_are_cut_with_an_ellipsis(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        row = next(x for x in p.explain(full=True).splitlines() if "and_a_long_file_name" in x)
        assert "…" + LONG[-(CELL_WIDTH - 1) :] in row

    def test_a_glob_selects_the_rows(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        rows = p.explain(nodes="src/part1/*").splitlines()
        picked = [r for r in rows[1:-3] if "src/part1/" in r]
        assert len(picked) == 26  # the folder and its 25 files
        assert rows[-3] == "26 nodes match 'src/part1/*'"
        some = p.sections[0].node_id
        assert len(p.explain(nodes=f"#{some}").splitlines()) == 5  # head, row, count, totals


class TestJson:
    def test_sections_and_omitted_carry_labels(self, big: tuple[Path, Projection]) -> None:
        _, p = big
        data = json.loads(p.to_json())
        assert {s["label"] for s in data["sections"]} >= {"src/part1/"}
        omitted = data["omitted"][0]
        assert omitted["node_id"] == p.omitted[0]
        assert omitted["label"] == p.labels[p.omitted[0]]
        assert omitted["reason"] == p.reasons[p.omitted[0]]


class TestCli:
    def test_explain_full_and_a_glob(self, big: tuple[Path, Projection]) -> None:
        root, p = big

        def explain(value: str) -> str:
            return subprocess.run(
                [sys.executable, "-m", "dagctx.cli", "render", str(root), "--budget", "1500",
                 value],
                capture_output=True, text=True, timeout=120, check=True,
            ).stderr  # fmt: skip

        assert explain("--explain").startswith("by rendered state:")
        assert explain("--explain=full").count("OMITTED") == len(p.omitted)
        assert "nodes match 'tests/part0/*'" in explain("--explain=tests/part0/*")


class TestWatchJson:
    def test_written_only_when_it_changed(self, tmp_path: Path) -> None:
        (tmp_path / "a.py").write_text("a = 1\n")
        (tmp_path / "b.py").write_text("b = 1\n")
        with Session(tmp_path, budget=2000) as session:
            scan_tree(session, ".")
            outputs = Outputs.for_session(session, None)
            outputs.write(session, session.tick())  # the stable prefix: none yet
            outputs.write(session, session.tick())
            first = outputs.json.stat().st_ino
            outputs.write(session, session.tick())
            assert outputs.json.stat().st_ino == first  # nothing changed: not rewritten
            assert json.loads(outputs.json.read_text())["turn"] == 2
            (tmp_path / "a.py").write_text("a = 2\n")
            session.file_changed("a.py")
            outputs.write(session, session.tick())
            assert outputs.json.stat().st_ino != first
            account = json.loads(outputs.json.read_text())
            assert account["turn"] == 4 and "a = 2" in account["text"]
            assert account["changes"] and account["explain"].startswith("by rendered state:")


@given(st.text(min_size=0, max_size=80), st.integers(min_value=2, max_value=60), st.booleans())
def test_shorten_keeps_within_width_and_marks_the_cut(text: str, width: int, end: bool) -> None:
    cut = shorten(text, width, keep_end=end)
    assert len(cut) <= max(width, len(text) if len(text) <= width else 0)
    if len(text) <= width:
        assert cut == text
    else:
        assert len(cut) == width
        assert cut == ("…" + text[-(width - 1) :] if end else text[: width - 1] + "…")


@pytest.mark.parametrize(
    ("label", "depth", "directory"),
    [
        ("a/b/c/d.py", 2, "a/b/"),
        ("a/b/c/d.py", 1, "a/"),
        ("a/b/", 3, "a/b/"),
        ("top.py", 2, "./"),
        ("user message", 2, "./"),
    ],
)
def test_directory_of(label: str, depth: int, directory: str) -> None:
    assert directory_of(label, depth) == directory
