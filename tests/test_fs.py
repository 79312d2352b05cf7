"""The file-system primitives written once (``dagctx._fs``): atomic writes, the binary
sniff, and reads inside a root that nothing swapped in can lead outside of."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagctx import _fs
from dagctx.context import Context
from dagctx.nodes.text import TextNode
from dagctx.tools import get_file_tools

SECRET = "top secret outside the root"
INSIDE = "inside the root"


def read_file(root: Path, path: str) -> str:
    ctx = Context("fs")
    ctx.state["working_dir"] = str(root)
    tool = get_file_tools()[0].bind(ctx)
    return asyncio.run(asyncio.wait_for(tool.execute(path=path), timeout=10))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/root with sub/f.txt and a.txt; tmp/outside with the same names holding SECRET."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    for base, text in ((root, INSIDE), (outside, SECRET)):
        (base / "sub").mkdir(parents=True)
        (base / "sub" / "f.txt").write_text(text)
        (base / "a.txt").write_text(text)
    return root


@contextlib.contextmanager
def swapping(action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` in a loop on another thread for the duration of the block, resting
    0.5 ms between runs in the state it restores: without the rest, a loaded machine
    could schedule the reads only while something was swapped, and never see the file."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            action()
            time.sleep(0.0005)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def for_a_while(seconds: float = 1.0) -> Iterator[int]:
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end or n < 50:
        yield n
        n += 1


class TestAtomicWrite:
    def test_replaces_the_file_and_fsyncs_file_and_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "out.md"
        target.write_text("old")
        synced: list[bool] = []
        real_fsync = os.fsync
        monkeypatch.setattr(
            _fs.os,
            "fsync",
            lambda fd: (synced.append(os.path.isdir(f"/proc/self/fd/{fd}")), real_fsync(fd)),
        )
        _fs.write_atomic(target, "new ✓", mode=0o644)
        assert target.read_text() == "new ✓"
        assert synced == [False, True]  # the file, then its directory
        assert target.stat().st_mode & 0o777 == 0o644
        assert [p.name for p in tmp_path.iterdir()] == ["out.md"]

    def test_a_failure_leaves_the_old_file_and_no_temporary(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "out.md"
        target.write_text("old")
        seen: list[str] = []

        def failing_replace(src: str, dst: Any) -> None:
            seen.append(os.path.basename(src))
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(_fs.os, "replace", failing_replace)
        with pytest.raises(OSError, match="No space"):
            _fs.write_atomic(target, "new")
        assert seen[0].startswith(".out.md.") and seen[0].endswith(".tmp")
        assert target.read_text() == "old"
        assert [p.name for p in tmp_path.iterdir()] == ["out.md"]

    def test_text_utf8_cannot_hold_raises_before_anything_is_written(self, tmp_path: Path) -> None:
        with pytest.raises(UnicodeEncodeError):
            _fs.write_atomic(tmp_path / "x", "lone \ud800")
        assert list(tmp_path.iterdir()) == []


class TestBinarySniff:
    @given(st.binary(max_size=_fs.SNIFF_BYTES * 2))
    def test_binary_means_a_nul_byte_in_the_first_8_kb(self, data: bytes) -> None:
        assert _fs.looks_binary(data) == (b"\x00" in data[: _fs.SNIFF_BYTES])

    def test_files(self, tmp_path: Path) -> None:
        (tmp_path / "late").write_bytes(b"a" * _fs.SNIFF_BYTES + b"\x00")
        (tmp_path / "early").write_bytes(b"a\x00")
        assert not _fs.is_binary_file(tmp_path / "late")
        assert _fs.is_binary_file(tmp_path / "early")
        assert _fs.is_binary_file(tmp_path / "missing")  # unreadable counts as binary


class TestResolveInside:
    @pytest.mark.parametrize("path", ["../outside/a.txt", "sub/../../outside/a.txt", "/etc"])
    def test_outside(self, tree: Path, path: str) -> None:
        with pytest.raises(_fs.OutsideRootError):
            _fs.resolve_inside(tree, path)

    def test_a_sibling_sharing_the_prefix_is_outside(self, tree: Path) -> None:
        (tree.parent / "root2").mkdir()
        with pytest.raises(_fs.OutsideRootError):
            _fs.resolve_inside(tree, "../root2")

    def test_inside(self, tree: Path) -> None:
        (tree / "alias").symlink_to(tree / "sub")
        assert _fs.resolve_inside(tree, "alias/f.txt") == (tree / "sub" / "f.txt", "sub/f.txt")
        assert _fs.resolve_inside(tree, ".") == (tree, ".")

    def test_a_symlink_loop_is_an_os_error(self, tree: Path) -> None:
        (tree / "loop").symlink_to(tree / "loop")
        with pytest.raises(OSError, match="symbolic links"):
            _fs.resolve_inside(tree, "loop")


class TestOpenInside:
    def read(self, root: Path, path: str) -> str:
        fd, _ = _fs.open_inside(root, path)
        with open(fd, encoding="utf-8") as handle:
            return handle.read()

    def test_reads_plain_and_in_root_symlinked_paths(self, tree: Path) -> None:
        (tree / "alias").symlink_to("sub")
        (tree / "alias.txt").symlink_to(tree / "a.txt")
        assert self.read(tree, "sub/f.txt") == INSIDE
        assert self.read(tree, "alias/f.txt") == INSIDE
        assert self.read(tree, "alias.txt") == INSIDE

    def test_refuses_symlinks_out_directories_and_fifos(self, tree: Path) -> None:
        (tree / "out").symlink_to(tree.parent / "outside")
        (tree / "out.txt").symlink_to(tree.parent / "outside" / "a.txt")
        os.mkfifo(tree / "pipe")
        for path in ("out/a.txt", "out.txt", "../outside/a.txt"):
            with pytest.raises(_fs.OutsideRootError):
                _fs.open_inside(tree, path)
        with pytest.raises(_fs.NotRegularFileError) as raised:
            _fs.open_inside(tree, "sub")
        assert raised.value.is_dir
        with pytest.raises(_fs.NotRegularFileError) as raised:
            _fs.open_inside(tree, "pipe")
        assert not raised.value.is_dir
        with pytest.raises(FileNotFoundError):
            _fs.open_inside(tree, "nope.txt")

    def test_a_parent_swapped_between_the_check_and_the_open_is_not_followed(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tree / "alias").symlink_to("sub")  # an in-root symlink: the path gets resolved
        real_resolve = _fs.resolve_inside

        def resolve_then_swap(root: Path, path: str) -> tuple[Path, str]:
            found = real_resolve(root, path)
            (tree / "sub").rename(tree / "sub-moved")
            (tree / "sub").symlink_to(tree.parent / "outside" / "sub")
            return found

        monkeypatch.setattr(_fs, "resolve_inside", resolve_then_swap)
        with pytest.raises(_fs.OutsideRootError):
            _fs.open_inside(tree, "alias/f.txt")


def swap_parent(root: Path) -> Callable[[], None]:
    """sub ⇄ a symlink to the outside tree's sub (each state held briefly)."""

    def swap() -> None:
        (root / "sub").rename(root / "sub-real")
        (root / "sub").symlink_to(root.parent / "outside" / "sub")
        (root / "sub").unlink()
        (root / "sub-real").rename(root / "sub")

    return swap


def swap_file(root: Path, make: Callable[[Path], None]) -> Callable[[], None]:
    """a.txt ⇄ something else made by ``make`` (renamed over it atomically)."""
    (root / "a-real.txt").write_text(INSIDE)

    def swap() -> None:
        make(root / "a-new")
        os.replace(root / "a-new", root / "a.txt")
        os.link(root / "a-real.txt", root / "a-back")
        os.replace(root / "a-back", root / "a.txt")

    return swap


def symlink_out(root: Path) -> Callable[[Path], None]:
    return lambda at: at.symlink_to(root.parent / "outside" / "a.txt")


class TestRaces:
    """A second thread swaps things under the root while reads run: nothing outside the
    root is ever returned, and no read blocks."""

    def test_read_file_with_a_parent_directory_swapped_for_a_symlink(self, tree: Path) -> None:
        answers = set()
        with swapping(swap_parent(tree)):
            for _ in for_a_while():
                answers.add(read_file(tree, "sub/f.txt"))
        assert not any(SECRET in answer for answer in answers)
        assert INSIDE in answers

    def test_read_file_with_the_file_swapped_for_a_symlink(self, tree: Path) -> None:
        answers = set()
        with swapping(swap_file(tree, symlink_out(tree))):
            for _ in for_a_while():
                answers.add(read_file(tree, "a.txt"))
        assert not any(SECRET in answer for answer in answers)

    def test_text_node_with_the_file_or_a_parent_swapped_for_a_symlink(self, tree: Path) -> None:
        shown = set()
        with swapping(swap_file(tree, symlink_out(tree))):
            for _ in for_a_while(0.5):
                shown.add(TextNode("a.txt", root=tree).render())
        with swapping(swap_parent(tree)):
            for _ in for_a_while(0.5):
                shown.add(TextNode("sub/f.txt", root=tree).render())
        assert not any(SECRET in text for text in shown)
        assert any(INSIDE in text for text in shown)

    @pytest.mark.parametrize("reader", ["text node", "read_file"])
    def test_a_fifo_swapped_in_never_blocks_a_read(self, tree: Path, reader: str) -> None:
        read: Callable[[], str] = (
            (lambda: TextNode("a.txt", root=tree).render())
            if reader == "text node"
            else (lambda: read_file(tree, "a.txt"))
        )
        answers: set[str] = set()
        done = threading.Event()

        def reads() -> None:
            for _ in for_a_while():
                answers.add(read())
            done.set()

        with swapping(swap_file(tree, os.mkfifo)):
            thread = threading.Thread(target=reads, daemon=True)
            thread.start()
            assert done.wait(timeout=30), "a read blocked on a FIFO"
        assert any("not a regular file" in answer for answer in answers) or all(
            INSIDE in answer for answer in answers
        )
