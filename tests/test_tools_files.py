"""Specification of read_file: reads text inside working_dir and refuses everything else."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from dagctx.context import Context
from dagctx.tools import Tool, get_file_tools
from dagctx.tools.files import MAX_FILE_BYTES

SECRET = "top secret outside the working directory"


@pytest.fixture
def wd(tmp_path: Path) -> Path:
    """tmp/wd with a few files; tmp/secret.txt and tmp/wd2/secret.txt lie outside it."""
    root = tmp_path / "wd"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\nworld\n", encoding="utf-8")
    (root / "sub" / "nested.md").write_text("# nested", encoding="utf-8")
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "wd2").mkdir()
    (tmp_path / "wd2" / "secret.txt").write_text(SECRET, encoding="utf-8")
    return root


def read(working_dir: Path | str | None, path: Any) -> str:
    ctx = Context("t")
    if working_dir is not None:
        ctx.state.set("working_dir", working_dir)
    tool: Tool[Any] = get_file_tools()[0].bind(ctx)
    return asyncio.run(asyncio.wait_for(tool.execute(path=path), timeout=10))


def read_lines(working_dir: Path, path: str, *, limit: int | None = None, **lines: Any) -> str:
    ctx = Context("t")
    ctx.state.set("working_dir", working_dir)
    if limit is not None:
        ctx.state.set("read_limit", limit)
    tool: Tool[Any] = get_file_tools()[0].bind(ctx)
    return asyncio.run(asyncio.wait_for(tool.execute(path=path, **lines), timeout=10))


class TestLineRanges:
    """start_line / end_line: the lines an outline's ``[L12-30]`` or a cut's marker names."""

    def test_a_range_of_lines_with_their_line_ends(self, wd: Path) -> None:
        (wd / "five.py").write_bytes(b"one\r\ntwo\nthree\nfour\nfive")
        assert read_lines(wd, "five.py", start_line=2, end_line=3) == "two\nthree\n"
        assert read_lines(wd, "five.py", start_line=1, end_line=1) == "one\r\n"
        assert read_lines(wd, "five.py", start_line=4) == "four\nfive"  # to the end
        assert read_lines(wd, "five.py", end_line=2) == "one\r\ntwo\n"  # from the top
        assert read_lines(wd, "five.py", start_line=5, end_line=99) == "five"
        assert read_lines(wd, "hello.txt", start_line=2) == "world\n"

    def test_the_numbers_are_the_outlines(self, wd: Path) -> None:
        from dagctx.outline import outline

        text = "import os\n\n\ndef load(name):\n    return os.path.join(name)\n\n\nX = 1\n"
        (wd / "m.py").write_text(text, encoding="utf-8")
        (entry,) = outline("m.py", text).entries
        got = read_lines(wd, "m.py", start_line=entry.start, end_line=entry.end)
        assert got == "def load(name):\n    return os.path.join(name)\n"

    @pytest.mark.parametrize(
        ("lines", "message"),
        [
            ({"start_line": 0}, "start_line must be 1 or more, got 0."),
            ({"start_line": 3, "end_line": 2}, "end_line must be at least start_line (3), got 2."),
            ({"end_line": 0}, "end_line must be at least start_line (1), got 0."),
            ({"start_line": 3}, "'hello.txt' has 2 lines; start_line 3 is past it."),
        ],
    )
    def test_bad_ranges_are_messages(self, wd: Path, lines: dict[str, int], message: str) -> None:
        assert read_lines(wd, "hello.txt", **lines) == message

    def test_a_range_is_redacted_as_the_whole_file_is(self, wd: Path) -> None:
        key = "AKIA" + "IOSFODNN7EXAMPLE"
        (wd / "conf.py").write_text(f"A = 1\nKEY = '{key}'\nB = 2\n", encoding="utf-8")
        got = read_lines(wd, "conf.py", start_line=2, end_line=2)
        assert key not in got and got.startswith("KEY = ") and "REDACTED" in got


class TestReadLimit:
    """``ctx.state["read_limit"]``: a read over so many characters comes back in parts."""

    LINES = "".join(f"line {i:03d}\n" for i in range(1, 101))  # 100 lines of 9 characters

    def test_a_read_within_the_limit_is_whole(self, wd: Path) -> None:
        (wd / "long.txt").write_text(self.LINES, encoding="utf-8")
        assert read_lines(wd, "long.txt", limit=900) == self.LINES
        assert read_lines(wd, "long.txt", limit=45, start_line=96) == self.LINES[95 * 9 :]

    def test_a_longer_read_stops_at_a_whole_line_and_says_how_to_read_on(self, wd: Path) -> None:
        (wd / "long.txt").write_text(self.LINES, encoding="utf-8")
        first = read_lines(wd, "long.txt", limit=100)
        assert first == self.LINES[: 11 * 9] + (
            "[read_file: lines 1-11 of 100 of 'long.txt' shown (at most 100 characters a call);"
            " call read_file with start_line=12 to read on]"
        )
        ranged = read_lines(wd, "long.txt", limit=30, start_line=50, end_line=60)
        assert ranged.startswith("line 050\nline 051\nline 052\n[read_file: lines 50-52 of 100")
        assert ranged.endswith("call read_file with start_line=53 and end_line=60 to read on]")

    def test_reading_on_as_told_gives_the_whole_file(self, wd: Path) -> None:
        (wd / "long.txt").write_text(self.LINES, encoding="utf-8")
        parts, start = [], 1
        while True:
            text = read_lines(wd, "long.txt", limit=200, start_line=start)
            body, _, note = text.partition("[read_file: ")
            parts.append(body)
            if not note:
                break
            start = int(note.split("start_line=")[1].split()[0])
        assert "".join(parts) == self.LINES
        assert len(parts) == 5

    def test_a_line_longer_than_the_limit_shows_its_start(self, wd: Path) -> None:
        (wd / "min.js").write_text("x" * 500 + "\nnext\n", encoding="utf-8")
        assert read_lines(wd, "min.js", limit=100) == "x" * 100 + (
            "\n[read_file: line 1 of 'min.js' is 500 characters long; its first 100 shown;"
            " call read_file with start_line=2 to read on]"
        )
        alone = read_lines(wd, "min.js", limit=100, end_line=1)
        assert alone.endswith("its first 100 shown]")


class TestReads:
    def test_reads_text_file(self, wd: Path) -> None:
        assert read(wd, "hello.txt") == "hello\nworld\n"

    def test_reads_nested_file_and_accepts_str_working_dir(self, wd: Path) -> None:
        assert read(str(wd), "sub/nested.md") == "# nested"

    def test_dotdot_that_stays_inside_is_fine(self, wd: Path) -> None:
        assert read(wd, "sub/../hello.txt") == "hello\nworld\n"

    def test_symlink_inside_the_working_dir_is_followed(self, wd: Path) -> None:
        (wd / "alias.txt").symlink_to(wd / "hello.txt")
        assert read(wd, "alias.txt") == "hello\nworld\n"

    def test_working_dir_behind_a_symlink(self, wd: Path, tmp_path: Path) -> None:
        (tmp_path / "wd-link").symlink_to(wd, target_is_directory=True)
        assert read(tmp_path / "wd-link", "hello.txt") == "hello\nworld\n"

    def test_file_exactly_at_the_cap_is_read(self, wd: Path) -> None:
        (wd / "cap.txt").write_text("x" * MAX_FILE_BYTES, encoding="utf-8")
        assert len(read(wd, "cap.txt")) == MAX_FILE_BYTES

    def test_utf8_text(self, wd: Path) -> None:
        (wd / "u.txt").write_text("naïve café ✓", encoding="utf-8")
        assert read(wd, "u.txt") == "naïve café ✓"


class TestRefusals:
    def test_dotdot_escape(self, wd: Path) -> None:
        result = read(wd, "../secret.txt")
        assert result == "Refused '../secret.txt': it resolves outside the working directory."

    def test_deep_dotdot_escape(self, wd: Path) -> None:
        result = read(wd, "sub/../../secret.txt")
        assert "outside the working directory" in result and SECRET not in result

    def test_absolute_path(self, wd: Path) -> None:
        path = str(wd / "hello.txt")
        assert read(wd, path) == (
            f"Refused {path!r}: absolute paths are not allowed; "
            "give a path relative to the working directory."
        )

    def test_absolute_path_outside(self, wd: Path, tmp_path: Path) -> None:
        result = read(wd, str(tmp_path / "secret.txt"))
        assert "absolute paths are not allowed" in result and SECRET not in result

    def test_symlink_pointing_outside(self, wd: Path, tmp_path: Path) -> None:
        (wd / "escape.txt").symlink_to(tmp_path / "secret.txt")
        result = read(wd, "escape.txt")
        assert "outside the working directory" in result and SECRET not in result

    def test_symlinked_directory_pointing_outside(self, wd: Path, tmp_path: Path) -> None:
        (wd / "outdir").symlink_to(tmp_path, target_is_directory=True)
        result = read(wd, "outdir/secret.txt")
        assert "outside the working directory" in result and SECRET not in result

    def test_sibling_directory_sharing_the_prefix(self, wd: Path, tmp_path: Path) -> None:
        assert str(tmp_path / "wd2").startswith(str(wd))
        result = read(wd, "../wd2/secret.txt")
        assert "outside the working directory" in result and SECRET not in result
        (wd / "to-sibling").symlink_to(tmp_path / "wd2", target_is_directory=True)
        result = read(wd, "to-sibling/secret.txt")
        assert "outside the working directory" in result and SECRET not in result

    def test_nul_byte(self, wd: Path) -> None:
        assert read(wd, "hello.txt\x00.png") == (
            "Refused 'hello.txt\\x00.png': the path contains a NUL byte."
        )

    @pytest.mark.parametrize("path", ["sub", ".", "sub/"])
    def test_directory(self, wd: Path, path: str) -> None:
        assert read(wd, path) == f"Refused {path!r}: it is a directory, not a file."

    def test_file_over_the_size_cap(self, wd: Path) -> None:
        (wd / "big.txt").write_text("y" * (MAX_FILE_BYTES + 1), encoding="utf-8")
        result = read(wd, "big.txt")
        assert result == (
            f"Refused 'big.txt': the file is {MAX_FILE_BYTES + 1:,} bytes, over the size "
            f"limit of {MAX_FILE_BYTES:,} bytes for read_file."
        )

    def test_binary_file_with_nul_bytes(self, wd: Path) -> None:
        (wd / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        assert "binary file" in read(wd, "image.png")

    def test_binary_file_not_utf8(self, wd: Path) -> None:
        (wd / "latin1.bin").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
        assert "binary file (not valid UTF-8" in read(wd, "latin1.bin")

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
    def test_fifo_is_refused_without_blocking(self, wd: Path) -> None:
        os.mkfifo(wd / "pipe")
        assert read(wd, "pipe") == "Refused 'pipe': it is not a regular file."


class TestOtherMessages:
    def test_missing_file(self, wd: Path) -> None:
        assert read(wd, "nope.txt") == "File not found: 'nope.txt'."

    def test_empty_path(self, wd: Path) -> None:
        assert read(wd, "") == "Give a path relative to the working directory."

    def test_no_working_dir(self) -> None:
        assert read(None, "hello.txt").startswith("No working directory is set")

    def test_missing_working_dir(self, tmp_path: Path) -> None:
        message = read(tmp_path / "gone", "x.txt")
        assert message.startswith(
            f"The working directory {str(tmp_path / 'gone')!r} cannot be used"
        )

    def test_symlink_loop(self, wd: Path) -> None:
        (wd / "loop").symlink_to(wd / "loop")
        assert read(wd, "loop").startswith("Cannot resolve 'loop'")

    def test_path_must_be_a_string(self, wd: Path) -> None:
        assert "argument 'path' must be a string" in read(wd, ["hello.txt"])
