"""Hostile files: binary, 100 MB (sparse), not UTF-8, vanished, unreadable, special.

None of them is an error. A text node shows a one-line placeholder (never a crash, never
the whole file in memory), the projection stays within budget and keeps every other
node, ``read_file`` answers with a message and ``open_file`` opens the node with its
placeholder. A file that goes bad after its node was made is noticed at the next tick.
"""

from __future__ import annotations

import asyncio
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from dagctx import Session
from dagctx.context import Context
from dagctx.nodes.base import NodeState
from dagctx.tokens import get_encoding
from dagctx.tools import get_file_tools, get_graph_tools

HUGE = 100 * 2**20
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write_sparse(path: Path) -> None:
    path.write_bytes(b"")
    os.truncate(path, HUGE)  # 100 MB of zeros that take no disk space


def write_huge_text(path: Path) -> None:
    path.write_text("".join(f"line {i}\n" for i in range(2000)))
    os.truncate(path, HUGE)


def write_bytes(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


NOT_UTF8 = "[not UTF-8 text (byte {})"
# name → (how to make it, the placeholder the text node shows, what read_file says)
FILES: dict[str, tuple[Callable[[Path], object], str, str]] = {
    "binary": (write_bytes(b"\x7fELF\x00\x01" * 100), "[binary file, 600 bytes", "binary"),
    "sparse-100mb": (write_sparse, "[binary file, 104,857,600 bytes", "over the size limit"),
    "latin-1": (write_bytes("café\n".encode("latin-1")), NOT_UTF8.format(3), "valid UTF-8"),
    "shift-jis": (write_bytes("東京\n".encode("shift_jis")), NOT_UTF8.format(0), "valid UTF-8"),
    "utf-16": (write_bytes("hello\n".encode("utf-16")), "[binary file", "binary"),
    "stray-byte": (write_bytes(b"ok\n\x80\n"), NOT_UTF8.format(3), "valid UTF-8"),
    "fifo": (os.mkfifo, "[not a regular file]", "not a regular file"),
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text("def ok():\n    return 1\n")
    return tmp_path


def read_file(root: Path, path: str) -> str:
    ctx = Context("files")
    ctx.state["working_dir"] = str(root)
    return asyncio.run(get_file_tools()[0].bind(ctx).execute(path=path))


def open_file(s: Session, path: str) -> str:
    tool = next(t for t in get_graph_tools() if t.name == "open_file").bind(s)
    return asyncio.run(tool.execute(path=path))


def check_projection(s: Session, good_id: str, budget: int = 500) -> str:
    p = s.project(budget)
    assert len(get_encoding().encode_ordinary(p.text)) == p.tokens <= budget
    assert "def ok():" in p.text and good_id not in p.omitted
    return p.text


class TestHostileFiles:
    @pytest.mark.parametrize("kind", list(FILES))
    def test_a_placeholder_a_message_and_a_budgeted_projection(self, tree: Path, kind: str) -> None:
        make, placeholder, message = FILES[kind]
        make(tree / "bad.dat")
        with Session(tree, budget=2000) as s:
            good = s.text("good.py")
            if kind == "fifo":  # Session.text refuses what is not a regular file
                (tree / "plain.dat").write_text("plain\n")
                node = s.text("plain.dat")
                (tree / "plain.dat").unlink()
                (tree / "bad.dat").rename(tree / "plain.dat")
                s.tick()
            else:
                node = s.text("bad.dat")
            assert node.placeholder is not None and node.placeholder.startswith(placeholder)
            for state in (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.ALL):
                assert node.placeholder in node.render(state)
            check_projection(s, good.id)
            assert message in read_file(tree, node.path)
        if kind != "fifo":
            with Session(tree) as fresh:
                assert "shows only [" in open_file(fresh, "bad.dat")

    def test_a_100_mb_text_file_is_never_loaded_whole(self, tree: Path) -> None:
        write_huge_text(tree / "huge.log")
        with Session(tree, budget=1500) as s:
            good = s.text("good.py")
            tracemalloc.start()
            try:
                node = s.text("huge.log")
                ranged = s.text("huge.log", lines=(1500, 1510))
                far = s.text("huge.log", lines=(3000, 3010))  # inside the 100 MB "line"
                text = check_projection(s, good.id, 1500)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 12 * 2**20
            assert node.notice is not None and "104,857,600 bytes" in node.notice
            assert ranged.lines == [f"line {i}" for i in range(1499, 1510)]
            assert far.lines == []
            assert "line 0" in text
        assert "over the size limit" in read_file(tree, "huge.log")


class TestFilesGoingBad:
    def test_a_vanished_file_is_a_placeholder_at_the_next_tick(self, tree: Path) -> None:
        (tree / "gone.py").write_text("x = 1\n")
        with Session(tree) as s:
            good, node = s.text("good.py"), s.text("gone.py")
            (tree / "gone.py").unlink()
            result = s.tick()
            assert node.placeholder == "[file deleted]"
            assert [(t.node_id, t.description) for t in result.changes] == [
                (node.id, "file deleted")
            ]
            check_projection(s, good.id)
            assert "File not found" in read_file(tree, "gone.py")
            assert "File not found" in open_file(s, "gone.py")

    def test_a_file_replaced_by_a_directory(self, tree: Path) -> None:
        (tree / "swap").write_text("x = 1\n")
        with Session(tree) as s:
            good, node = s.text("good.py"), s.text("swap")
            (tree / "swap").unlink()
            (tree / "swap").mkdir()
            s.tick()
            assert node.placeholder == "[not a regular file]"
            check_projection(s, good.id)

    @pytest.mark.skipif(AS_ROOT, reason="root reads a chmod 000 file anyway")
    def test_a_file_without_read_permission(self, tree: Path) -> None:
        (tree / "locked.py").write_text("x = 1\n")
        with Session(tree) as s:
            good, node = s.text("good.py"), s.text("locked.py")
            (tree / "locked.py").chmod(0)
            try:
                os.utime(tree / "locked.py", (1, 1))  # a new mtime makes the tick re-read it
                s.tick()
                assert node.placeholder is not None
                assert node.placeholder.startswith("[file unreadable")
                check_projection(s, good.id)
                assert "Cannot read" in read_file(tree, "locked.py")
            finally:
                (tree / "locked.py").chmod(0o644)

    def test_a_file_that_becomes_binary_and_back(self, tree: Path) -> None:
        path = tree / "flip.py"
        path.write_text("x = 1\n")
        with Session(tree) as s:
            node = s.text("flip.py")
            path.write_bytes(b"\x00" * 10)
            s.tick()
            assert node.placeholder is not None and node.lines == []
            path.write_text("y = 2\n")
            s.tick()
            assert node.placeholder is None and node.lines == ["y = 2"]
            assert node.version == 2
