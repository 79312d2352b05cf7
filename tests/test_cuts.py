"""Focused cuts: a file too long for its share of the budget shows the definitions that
match the focus in full and the rest as outline, every elided range marked with its line
numbers (real grammars, no mocks); without a focus its structure comes before bodies.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx import NodeState, Session
from dagctx.outline import Outline, outline
from dagctx.outline.cut import partition
from dagctx.tokens import get_encoding

ENC = get_encoding()


def exact(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def body(name: str, n: int, word: str) -> str:
    """A function ``name`` of ``n`` + 2 lines whose lines mention ``word``."""
    lines = [f"def {name}(value):", f'    """Handle {word}."""']
    lines += [f"    value = value + {i}  # {word} step" for i in range(n)]
    return "\n".join(lines) + "\n"


PY = (
    '"""Checkpoint helpers."""\n'
    "import json\n"
    "import os\n"
    "\n"
    "LIMIT = 10\n"
    "PATHS = ['a', 'b']\n"
    "\n\n"
    + body("render_page", 30, "html")
    + "\n\n"
    + body("restore_checkpoint", 6, "restore the saved checkpoint")
    + "\n\n"
    + body("colors", 30, "palette")
    + "\n\n"
    + "class Store:\n"
    + '    """A store."""\n'
    + "\n"
    + "".join("    " + line + "\n" for line in body("save", 20, "disk").splitlines())
)


def line_of(text: str, needle: str) -> int:
    """The 1-based number of the first line holding ``needle`` (lines end at "\\n")."""
    return text[: text.index(needle)].count("\n") + 1


def end_of(text: str, name: str, n: int) -> int:
    return line_of(text, f"def {name}(") + n + 1


def write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)


class TestFocusedCut:
    def test_the_matching_function_whole_the_rest_marked_with_its_lines(
        self, tmp_path: Path
    ) -> None:
        write(tmp_path, "cp.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("cp.py")
            cut = node._units()
            assert cut is not None
            focus = "how are checkpoints restored"
            ladder = node._ladder(cut, focus)
            assert cut.units[ladder.order[0]].name == "restore_checkpoint"
            outline_layout = ladder.hits + len(ladder.starts)
            text, kept = node.render_focused_cut(NodeState.DETAILS, outline_layout, focus)
        restore = PY[PY.index("def restore_checkpoint") : PY.index("\n\n\ndef colors")]
        assert restore in text  # whole
        render_start, colors_start = line_of(PY, "def render_page("), line_of(PY, "def colors(")
        render_end = end_of(PY, "render_page", 30)
        marker = (
            f'… lines {render_start}–{render_end} elided: def render_page(value):  "Handle html."'
        )
        assert marker in text
        assert f"… lines {colors_start}–{end_of(PY, 'colors', 30)} elided" in text
        save = line_of(PY, "    def save(")
        assert f"    … lines {save}–{save + 21} elided: def save(value):" in text
        assert "class Store:" in text  # the container's first line stays
        assert "value = value + 29  # html" not in text and "# palette step" not in text
        assert f"{kept} of {PY.count(chr(10))} lines" in text
        assert "in full: restore_checkpoint" in text

    def test_numbered_lines_are_the_files(self, tmp_path: Path) -> None:
        write(tmp_path, "cp.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("cp.py", state="ALL")
            cut = node._units()
            assert cut is not None
            ladder = node._ladder(cut, "restore")
            step = ladder.hits + len(ladder.starts) + 1  # the outline, the head in full too
            text, _ = node.render_focused_cut(NodeState.ALL, step, "restore")
        numbered = re.findall(r"^ *(\d+) (.*)$", text, re.MULTILINE)
        lines = PY.split("\n")
        assert len(numbered) > 8
        for number, line in numbered:
            assert lines[int(number) - 1] == line

    def test_a_projection_cuts_the_focused_file_to_its_matching_function(
        self, tmp_path: Path
    ) -> None:
        write(tmp_path, "cp.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("cp.py")
            full = s.project().tokens
            s.set_budget(full * 2 // 3)
            s.focus("restore the checkpoint")
            p = s.tick().projection
            section = next(x for x in p.sections if x.node_id == node.id)
            assert section.cut_lines > 0, p.explain()
            assert "def restore_checkpoint(value):" in p.text
            assert "    value = value + 5  # restore the saved checkpoint step" in p.text
            assert "… lines" in p.text and " elided" in p.text
            assert exact(p.text) == p.tokens <= s.budget

    def test_without_focus_structure_comes_before_bodies(self, tmp_path: Path) -> None:
        write(tmp_path, "cp.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("cp.py")
            cut = node._units()
            assert cut is not None
            ladder = node._ladder(cut, None)
            assert cut.units[ladder.order[0]].kind == "head" and ladder.hits == 0
            step = len(ladder.starts)  # the outline and the head in full
            text, _ = node.render_focused_cut(NodeState.DETAILS, step, None)
            s.set_budget(s.project().tokens // 2)
            p = s.project()
        assert "import os\n" in text and "LIMIT = 10" in text  # the head in full
        for name in ("render_page", "restore_checkpoint", "colors"):
            assert f"elided: def {name}(value):" in text
        assert "value = value + 0" not in text  # no body before the structure
        # the projection's cut marks the last function too: not the first N lines
        assert "elided: def save(value):" in p.text, p.explain()

    def test_a_file_without_definitions_is_cut_to_its_first_lines(self, tmp_path: Path) -> None:
        write(tmp_path, "data.py", "".join(f"x_{i} = {i}\n" for i in range(400)))
        with Session(tmp_path, budget=300) as s:
            node = s.text("data.py")
            assert node.cut_steps(None) == 0
            p = s.project()
        assert "more lines cut to fit the budget" in p.text and "x_0 = 0\n" in p.text

    def test_go(self, tmp_path: Path) -> None:
        funcs = [
            ("Render", "page html", 25),
            ("RestoreCheckpoint", "restore a checkpoint", 5),
            ("Colors", "palette", 25),
        ]
        parts = ["package store", "", 'import "fmt"', ""]
        for name, words, n in funcs:
            parts.append(f"// {name} handles {words}.")
            parts.append(f"func {name}(v int) int {{")
            parts += [f'\tfmt.Println("{words}", {i})' for i in range(n)]
            parts += ["\treturn v", "}", ""]
        go = "\n".join(parts)
        write(tmp_path, "store.go", go)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("store.go")
            cut = node._units()
            assert cut is not None
            ladder = node._ladder(cut, "restore checkpoint")
            step = ladder.hits + len(ladder.starts)
            text, _ = node.render_focused_cut(NodeState.DETAILS, step, "restore checkpoint")
        start = line_of(go, "// RestoreCheckpoint")
        whole = go[go.index("// RestoreCheckpoint") : go.index("// Colors")].rstrip()
        assert whole in text
        render = line_of(go, "func Render(")  # its doc comment is elided with it
        doc = line_of(go, "// Render handles")
        assert f"… lines {doc}–{render + 27} elided: func Render(v int) int" in text
        assert "// Render handles" not in text and "// Colors handles" not in text
        assert f"… lines {start}" not in text
        assert 'fmt.Println("palette", 3)' not in text

    def test_markdown_sections(self, tmp_path: Path) -> None:
        md = "# Guide\n\nIntro.\n\n## Install\n" + "pip install x\n" * 20
        md += "\n## Restore a checkpoint\n" + "Run restore.\n" * 5 + "\n## Colors\n" + "red\n" * 20
        write(tmp_path, "guide.md", md)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("guide.md")
            cut = node._units()
            assert cut is not None
            ladder = node._ladder(cut, "restore")
            step = ladder.hits + len(ladder.starts)
            text, _ = node.render_focused_cut(NodeState.DETAILS, step, "restore")
        assert "## Restore a checkpoint\n" + "Run restore.\n" * 5 in text
        install = line_of(md, "## Install")
        assert f"… lines {install}–{install + 21} elided: ## Install" in text


class TestSteps:
    def test_hits_first_then_the_outline_then_more_each_step_showing_more(self) -> None:
        lines = PY.split("\n")[:-1]
        cut = partition(outline("x.py", PY), lines)
        assert cut is not None
        scores = [1.0 if u.name == "restore_checkpoint" else 0.0 for u in cut.units]
        ladder = cut.ladder(lines, scores)
        assert ladder.hits == 1
        kept = [cut.render(lines, ladder, k)[1] for k in range(ladder.steps)]
        assert kept == sorted(kept) and kept[-1] < len(lines)
        assert cut.render(lines, ladder, 0)[:2] == ([lines[0], f"… lines 2–{len(lines)} elided"], 1)
        out, _, names = cut.render(lines, ladder, 1)  # the hit alone, the rest two markers
        start = line_of(PY, "def restore_checkpoint(")
        end = start + 7
        assert names == ["restore_checkpoint"]
        assert out[0] == f"… lines 1–{start - 1} elided"
        assert out[1:-1] == lines[start - 1 : end]
        assert out[-1] == f"… lines {end + 1}–{len(lines)} elided"
        out, _, _ = cut.render(lines, ladder, 2)  # the outline layout begins
        assert out[0] == lines[0] and out[1] == f"… lines 2–{start - 1} elided"

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_no_step_shows_the_whole_file(self, data: st.DataObject) -> None:
        """Whatever matches (every unit included), each step shows less than the file: a
        one-section markdown file whose heading matches is not "cut" to all its lines."""
        text = data.draw(st.sampled_from([PY, "## Fish completions\n\nSee the guide.\n\n"]))
        name = "x.py" if text == PY else "fish.md"
        lines = text.split("\n")[:-1]
        cut = partition(outline(name, text), lines)
        assert cut is not None
        scores = data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.5]), min_size=len(cut.units),
                                    max_size=len(cut.units)))  # fmt: skip
        ladder = cut.ladder(lines, scores)
        for step in range(ladder.steps):
            assert cut.render(lines, ladder, step)[1] < len(lines), step

    def test_without_hits_the_least_cut_shows_the_first_line(self) -> None:
        lines = PY.split("\n")[:-1]
        cut = partition(outline("x.py", PY), lines)
        assert cut is not None
        ladder = cut.ladder(lines, [0.0] * len(cut.units))
        out, kept, _ = cut.render(lines, ladder, 0)
        assert out == [lines[0], f"… lines 2–{len(lines)} elided"] and kept == 1


class TestDocCommentsGoWithTheirDefinition:
    """A comment block written right above a definition is part of the definition's unit:
    shown in full with it, elided with it, never shown alone while its definition is a
    marker."""

    GO = (
        'package store\n\nimport "fmt"\n\n'
        "// Render draws the page.\n// It uses fmt.\nfunc Render(v int) int {\n"
        + "".join(f"\tfmt.Println({i})\n" for i in range(6))
        + "\treturn v\n}\n\n"
        "/*\n Fish quotes the args\n of a completion.\n*/\nfunc Fish(v int) int {\n"
        + "".join(f"\tfmt.Println({i})\n" for i in range(6))
        + "\treturn v\n}\n"
    )

    def units(self, name: str, text: str) -> list[tuple[int, int, str]]:
        lines = text.split("\n")[:-1]
        cut = partition(outline(name, text), lines)
        assert cut is not None
        return [(u.start, u.end, u.kind) for u in cut.units]

    def test_line_and_block_comments_join_the_unit(self) -> None:
        go = self.GO
        render_doc, fish_doc = line_of(go, "// Render draws") - 1, line_of(go, "/*") - 1
        render_end = line_of(go, "func Fish") - 7  # the "}" closing Render
        assert self.units("x.go", go) == [
            (render_doc, render_end, "entry"),
            (fish_doc, go.count("\n") - 1, "entry"),
        ]

    def test_a_marker_never_leaves_its_comment_behind(self) -> None:
        lines = self.GO.split("\n")[:-1]
        cut = partition(outline("x.go", self.GO), lines)
        assert cut is not None
        ladder = cut.ladder(lines, [1.0 if u.name == "Fish" else 0.0 for u in cut.units])
        for step in range(ladder.steps):
            out, _, names = cut.render(lines, ladder, step)
            text = "\n".join(out)
            assert ("// Render draws the page." in text) == ("func Render(v int) int {" in text)
            if "Fish" in names:
                assert "Fish quotes the args" in text and "func Fish(v int) int {" in text

    def test_a_blank_line_or_code_ends_the_block(self) -> None:
        c = (
            "#include <stdio.h>\n#define N 3\nint main(void) {\n  int a = 1;\n  return a;\n}\n"
            "// unrelated note\n\nint other(void) {\n  int b = 2;\n  return b;\n}\n"
        )
        assert self.units("x.c", c) == [(2, 5, "entry"), (8, 11, "entry")]

    def test_python_comments_and_the_first_line(self) -> None:
        py = "# tool.py: a module comment\ndef a():\n    x = 1\n    return x\n"
        py += "\n# helper\ndef b():\n    y = 2\n    return y\n"
        assert self.units("x.py", py) == [(1, 3, "entry"), (5, 8, "entry")]

    # express writes every JSDoc block with a blank line before its function
    JS = (
        "'use strict';\n\n/**\n * Module dependencies.\n * @private\n */\n\n"
        "var send = require('send');\n\n"
        "/**\n * Send a response.\n *\n * @public\n */\n\n"
        "res.send = function send(body) {\n"
        + "".join(f"  body = body + {i};\n" for i in range(6))
        + "  return body;\n};\n\n"
        "/* not a doc comment */\n\n"
        "res.json = function json(obj) {\n"
        + "".join(f"  obj = obj + {i};\n" for i in range(6))
        + "  return obj;\n};\n"
    )

    def test_a_jsdoc_block_one_blank_line_above_joins_the_unit(self) -> None:
        js = self.JS
        doc, end = line_of(js, " * Send a response.") - 2, line_of(js, "/* not a doc") - 3
        json = line_of(js, "res.json = ") - 1
        units = self.units("res.js", js)
        assert (doc, end, "entry") in units  # from "/**" to the "};" closing send
        assert (json, js.count("\n") - 1, "entry") in units  # a plain /* */ stays out
        lines = js.split("\n")[:-1]
        cut = partition(outline("res.js", js), lines)
        assert cut is not None
        ladder = cut.ladder(lines, [0.0 if u.name == "send" else 1.0 for u in cut.units])
        for step in range(ladder.steps):
            text = "\n".join(cut.render(lines, ladder, step)[0])
            assert (" * Send a response." in text) == ("res.send = function send(body) {" in text)

    def test_markdown_is_left_alone(self) -> None:
        md = "# T\n\nIntro.\n* a bullet\n## Part\n" + "text\n" * 5
        units = self.units("x.md", md)
        assert (4, 9, "entry") in units


class TestNoCutSaysLessThanTheOutline:
    def test_adds_needs_a_definition_in_full_or_more_lines_than_the_outline(self) -> None:
        lines = PY.split("\n")
        cut = partition(outline("m.py", PY), lines)
        assert cut is not None
        entries = sum(1 for u in cut.units if u.kind == "entry")
        ladder = cut.ladder(lines, [0.0] * len(cut.units))
        assert not cut.adds(ladder, 0, 1)  # the first line and markers: the outline says more
        assert cut.adds(ladder, 0, entries + 2)
        last = ladder.steps - 1  # every definition but one in full
        assert cut.adds(ladder, last, 1)

    def test_a_projection_never_shows_a_cut_made_of_markers(self, tmp_path: Path) -> None:
        # Six long functions, none about the focus (the file is unrelated to it): at any
        # budget, a cut of this file shows a definition in full or more lines than its
        # outline has definitions; else the file keeps its outline or name.
        text = "".join(body(f"step_{k}", 40, "paint") + "\n\n" for k in range(6))
        write(tmp_path, "m.py", text)
        write(tmp_path, "restore.py", body("restore_checkpoint", 60, "restore"))
        cut = partition(outline("m.py", text), text.split("\n"))
        assert cut is not None
        entries = sum(1 for u in cut.units if u.kind == "entry")
        for budget in range(150, 1400, 50):
            with Session(tmp_path, budget=budget) as s:
                node = s.text("m.py")
                s.text("restore.py")
                s.focus("restore the checkpoint")
                p = s.tick().projection
            section = next(x for x in p.sections if x.node_id == node.id)
            if section.cut_lines:
                note = re.search(
                    r"cut to fit the budget: (\d+) of \d+ lines of m\.py[^\]]*", p.text
                )
                assert note is not None, p.text
                assert "in full:" in note.group(0) or int(note.group(1)) > 1 + entries, p.text


class TestTheLeastCut:
    """Step 0 of a focused cut is the cut by lines that keeps the first line, so the
    projection knows the smallest cut of a file without outlining it."""

    def test_step_0_is_the_cut_by_lines_to_the_first_line(self, tmp_path: Path) -> None:
        write(tmp_path, "cp.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            node = s.text("cp.py")
            for focus in ("restore the checkpoint", "nothing here matches", None):
                assert node.cut_steps(focus) > 1
                for state in (NodeState.DETAILS, NodeState.ALL):
                    text, kept = node.render_focused_cut(state, 0, focus)
                    assert (text, kept) == (node.render_cut(state, 1), 1)
                    assert not node.cut_adds(0, focus, kept)
        assert PY.splitlines()[0] in text and "more lines cut to fit the budget" in text

    def test_a_markdown_document_is_cut_by_its_preamble_lines(self, tmp_path: Path) -> None:
        write(tmp_path, "guide.md", "# Guide\n\nIntro.\n\n## Install\n" + "pip install x\n" * 9)
        with Session(tmp_path, budget=100_000) as s:
            doc = s.markdown("guide.md")
            assert s.text("guide.md").cut_steps(None) > 0  # the file has an outline
            assert doc.cut_steps(None) == 0  # the document shows its preamble: cut by lines

    def test_files_shown_as_names_are_not_outlined(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import dagctx.nodes.text as text_module

        parsed: list[str] = []

        def counting(path: str, text: str, *, first_line: int = 1) -> Outline:
            parsed.append(path)
            return outline(path, text, first_line=first_line)

        monkeypatch.setattr(text_module, "outline", counting)
        for k in range(60):
            write(tmp_path, f"m{k:02}.py", PY)
        with Session(tmp_path, budget=100_000) as s:
            nodes = [s.text(f"m{k:02}.py") for k in range(60)]
            s.set_budget(3000)
            for focus in (None, "restore the checkpoint", "colors palette"):
                parsed.clear()
                s.focus(focus)
                p = s.tick().projection
                assert exact(p.text) == p.tokens <= 3000
                by_id = {x.node_id: x for x in p.sections}
                named = [n for n in nodes if n.id not in by_id or by_id[n.id].rendered_state
                         == NodeState.COLLAPSED]  # fmt: skip
                assert len(named) > 30, p.explain()
                # parsed: the files shown as outlines or cuts, not the ones shown as names
                assert len(set(parsed)) <= 60 - len(named) + 2, (len(set(parsed)), len(named))


class TestLongDocCommentsAreTrimmed:
    """A definition shown in full in a cut keeps the first paragraph of a long doc comment
    or docstring (at most DOC_LINES lines that say something) and its closing line; the
    rest is one marker with its line range, so the code takes the room."""

    JAVA = (
        "package g;\n\npublic class Adapter {\n"
        "  /**\n   * Writes one value.\n   *\n   * @param v the value\n   */\n"
        "  public void write(int v) {\n    v = v + 1;\n  }\n\n"
        "  /**\n   * Makes this adapter null tolerant.\n   *\n"
        + "".join(f"   * Example line {i} of the nulls.\n" for i in range(20))
        + "   */\n  public final Adapter nullSafe() {\n    return this;\n  }\n\n"
        "  /**\n   * Writes it again.\n   *\n   * @param v the value\n   */\n"
        "  public void write2(int v) {\n    v = v + 1;\n  }\n\n"
        "  public void read(int v) {\n"
        + "".join(f"    v = v + {i};\n" for i in range(20))
        + "  }\n}\n"
    )

    PY_DOC = (
        "import os\n\n\n"
        "def register(app, name):\n"
        '    """Register a blueprint on the app. Keyword\n'
        "    arguments override the defaults.\n\n"
        + "".join(f"    :param p{i}: option {i} of the blueprints.\n" for i in range(15))
        + '    """\n'
        "    app.blueprints[name] = name\n    return app\n\n\n"
        "class Blueprint:\n"
        '    """Represents a blueprint, a collection of routes and other\n'
        "    app-related functions that can be registered on a real application\n"
        "    later.\n\n"
        + "".join(f"    See line {i} of the blueprint docs.\n" for i in range(12))
        + '    """\n\n    name = "bp"\n\n'
        "    def make(self):\n        x = 1\n        return x\n"
    )

    def render_full(self, name: str, text: str, hit: str) -> str:
        """The cut of ``text`` showing the definition ``hit`` alone in full."""
        lines = text.split("\n")[:-1]
        cut = partition(outline(name, text), lines)
        assert cut is not None
        ladder = cut.ladder(lines, [1.0 if u.name == hit else 0.0 for u in cut.units])
        out, _, names = cut.render(lines, ladder, 1)
        assert names == [hit]
        return "\n".join(out)

    def test_a_javadoc_keeps_its_first_paragraph_and_its_close(self) -> None:
        java = self.JAVA
        text = self.render_full("Adapter.java", java, "nullSafe")
        first, last = line_of(java, "   *\n   * Example line 0"), line_of(java, "line 19 of")
        assert (
            "  /**\n   * Makes this adapter null tolerant.\n"
            f"   … lines {first}–{last} elided\n"
            "   */\n  public final Adapter nullSafe() {\n    return this;\n  }"
        ) in text
        assert "Example line" not in text

    def test_a_short_doc_comment_stays_whole(self) -> None:
        """Its paragraphs after the first take fewer than MIN_LINES lines: a marker would
        save nothing."""
        java = self.JAVA
        text = self.render_full("Adapter.java", java, "write2")
        assert "   * Writes it again.\n   *\n   * @param v the value\n   */" in text

    def test_a_docstring_keeps_its_first_paragraph_and_its_close(self) -> None:
        py = self.PY_DOC
        text = self.render_full("bp.py", py, "register")
        first, last = line_of(py, "    :param p0:"), line_of(py, "    :param p14:")
        assert (
            'def register(app, name):\n    """Register a blueprint on the app. Keyword\n'
            "    arguments override the defaults.\n"
            f"    … lines {first - 1}–{last} elided\n"
            '    """\n    app.blueprints[name] = name'
        ) in text

    def test_a_class_docstring_in_its_head_is_trimmed_too(self) -> None:
        py = self.PY_DOC
        lines = py.split("\n")[:-1]
        cut = partition(outline("bp.py", py), lines)
        assert cut is not None
        ladder = cut.ladder(lines, [0.0] * len(cut.units))
        out, _, _ = cut.render(lines, ladder, ladder.steps - 1)  # all but one unit in full
        text = "\n".join(out)
        first, last = line_of(py, "    See line 0"), line_of(py, "    See line 11")
        assert (
            '    """Represents a blueprint, a collection of routes and other\n'
            "    app-related functions that can be registered on a real application\n"
            "    later.\n"
            f"    … lines {first - 1}–{last} elided\n"
            '    """'
        ) in text

    def test_only_in_cuts(self, tmp_path: Path) -> None:
        """The whole file, where it fits, shows every doc line."""
        write(tmp_path, "bp.py", self.PY_DOC)
        with Session(tmp_path, budget=100_000) as s:
            s.text("bp.py")
            s.focus("register the blueprint")
            p = s.tick().projection
        assert self.PY_DOC.rstrip("\n") in p.text

    @settings(max_examples=60, deadline=None)
    @given(
        docs=st.lists(st.integers(0, 14), min_size=1, max_size=5),
        style=st.sampled_from(["python", "java", "go"]),
        data=st.data(),
    )
    def test_every_line_is_shown_or_inside_one_marker(
        self, docs: list[int], style: str, data: st.DataObject
    ) -> None:
        """At every step, numbered: each shown line is the file's line of that number, and
        every line of the file not shown is blank or in exactly one marker's range."""
        parts: list[str] = []
        for k, n in enumerate(docs):
            said = [f"doc line {i} of f{k}." if i % 4 else "" for i in range(n)]
            if style == "python":
                doc = [f'    """f{k} does things.', *[f"    {s}".rstrip() for s in said]]
                parts += [f"def f{k}(v):", *doc, '    """', "    v = v + 1", "    return v", ""]
            elif style == "java":
                doc = ["  /**", f"   * f{k} does things.", *[f"   * {s}".rstrip() for s in said]]
                parts += [*doc, "   */", f"  int f{k}(int v) {{", "    v = v + 1;", "    return v;"]
                parts += ["  }", ""]
            else:
                doc = [f"// f{k} does things.", *[f"// {s}".rstrip() for s in said]]
                parts += [*doc, f"func f{k}(v int) int {{", "\tv = v + 1", "\treturn v", "}", ""]
        if style == "java":
            parts = ["class A {", *parts, "}"]
        if style == "go":
            parts = ["package a", "", *parts]
        text = "\n".join(parts) + "\n"
        name = {"python": "a.py", "java": "A.java", "go": "a.go"}[style]
        lines = text.split("\n")[:-1]
        cut = partition(outline(name, text), lines)
        assert cut is not None
        scores = data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.5]), min_size=len(cut.units),
                                    max_size=len(cut.units)))  # fmt: skip
        ladder = cut.ladder(lines, scores)
        for step in range(ladder.steps):
            out, kept, _ = cut.render(lines, ladder, step, numbered=True)
            covered = [0] * len(lines)
            shown = 0
            for line in out:
                marker = re.fullmatch(r"\s*… lines (\d+)–(\d+) elided(: .*)?", line)
                if marker:
                    for i in range(int(marker.group(1)), int(marker.group(2)) + 1):
                        covered[i - 1] += 1
                    continue
                number, _, rest = line.strip(" ").partition(" ")
                assert lines[int(number) - 1] == line[len(line) - len(rest) :] if rest else True
                covered[int(number) - 1] += 1
                shown += 1
            assert kept == shown
            for i, times in enumerate(covered):
                assert times == 1 or (times == 0 and not lines[i].strip()), (step, i, out)
