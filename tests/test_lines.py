"""One definition of a line (issue 14 item 20): only "\\n" (or "\\r\\n") ends a line.

Form feed, vertical tab, ``\\x1c``, U+2028 and a lone ``"\\r"`` are characters inside a
line for every part that numbers, counts or reads lines: a file's numbered lines (ALL),
its line ranges, its outline, artifacts and shell output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagctx import NodeState, Session
from dagctx._lines import split_lines
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.text import TextNode
from dagctx.outline import outline

INSIDE = ["\f", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]


class TestSplitLines:
    @pytest.mark.parametrize("mark", INSIDE)
    def test_only_newline_ends_a_line(self, mark: str) -> None:
        assert split_lines(f"a{mark}b\nc\n") == [f"a{mark}b", "c"]

    def test_crlf_is_one_line_end(self) -> None:
        assert split_lines("a\r\nb\r\n") == ["a", "b"]
        assert split_lines("a\r\r\nb") == ["a\r", "b"]

    def test_like_splitlines_at_the_ends(self) -> None:
        for text in ["", "\n", "a", "a\n", "a\n\n", "\na"]:
            assert split_lines(text) == text.splitlines()

    @given(st.text(alphabet=["a", "\n", "\r", "\f", "\u2028", "\x1c"], max_size=40))
    def test_lines_are_what_readline_reads(self, text: str) -> None:
        import io

        read = [line.removesuffix("\n").removesuffix("\r") if line.endswith("\n") else line
                for line in io.StringIO(text, newline="\n")]  # fmt: skip
        assert split_lines(text) == read


def numbered(node: TextNode) -> dict[int, str]:
    """Line number → text, from the node's ALL render (numbered lines in a fence)."""
    body = node.render(NodeState.ALL).split("```", 2)[1].split("\n")[1:]
    out = {}
    for line in body:
        m = re.match(r"\s*(\d+) (.*)", line, re.S)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def content() -> str:
    lines = [f"line {k}{mark}still line {k}" for k, mark in enumerate(INSIDE, 1)]
    return "\r\n".join(lines[:3]) + "\r\n" + "\n".join(lines[3:]) + "\nlast\n"


class TestTextNode:
    def test_numbers_at_all_are_the_numbers_of_line_ranges(self, tmp_path: Path) -> None:
        (tmp_path / "odd.txt").write_bytes(content().encode())
        with Session(tmp_path) as s:
            whole = s.text("odd.txt")
            shown = numbered(whole)
            assert len(shown) == len(INSIDE) + 1 == whole.cuttable_lines()
            for k, text in shown.items():
                one = s.text("odd.txt", lines=(k, k))
                assert one.lines == [text]
                assert text.startswith(f"line {k}") or (k, text) == (len(INSIDE) + 1, "last")

    def test_a_cut_names_the_lines_a_range_would_show(self, tmp_path: Path) -> None:
        (tmp_path / "odd.txt").write_bytes(content().encode())
        with Session(tmp_path) as s:
            node = s.text("odd.txt")
            cut = node.render_cut(NodeState.DETAILS, 4)
            m = re.search(r"lines (\d+)-(\d+) of", cut)
            assert m is not None and (int(m.group(1)), int(m.group(2))) == (5, len(INSIDE) + 1)
            rest = s.text("odd.txt", lines=(5, None))
            assert rest.lines[0].startswith("line 5") and len(rest.lines) == len(INSIDE) - 3

    def test_outline_line_numbers_are_file_lines(self, tmp_path: Path) -> None:
        source = "x = 1\f\n\x0b\n# \u2028 note\ndef target():\n    return 1\n"
        (tmp_path / "m.py").write_text(source)
        with Session(tmp_path) as s:
            node = s.text("m.py", lines=(4, 4))
            assert node.lines == ["def target():"]
        entry = next(e for e in outline("m.py", source).entries if e.name == "target")
        assert entry.start == 4


class TestOtherNodes:
    def test_artifact_lines(self) -> None:
        node = ArtifactNode("a\fb\u2028c\nd\r\ne", kind="output")
        assert node.cuttable_lines() == 3

    def test_shell_output_tail_counts_newlines_only(self, tmp_path: Path) -> None:
        with Session(tmp_path) as s:
            job = s.shell("printf 'one\\ftwo\\nthree\\n'", shell=True, timeout=30)
            s.wait(job, timeout=20)
            summary = job.render(NodeState.SUMMARY)
        assert "one\ftwo" in summary

    def test_markdown_sections_split_where_the_lines_say(self) -> None:
        from dagctx.nodes.markdown import parse_sections

        preamble, sections = parse_sections(["a\rb", "# Head", "body"])
        assert preamble == ["a\rb"]
        assert [(s.heading, s.body) for s in sections] == [("Head", ["body"])]
