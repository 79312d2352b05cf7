"""Stale content (issue 14 item 21): a text node reads its file again whenever the file's
identity changes, not only its mtime and size.

- A file unreadable at the first read shows its content once a chmod makes it readable
  (and the placeholder again after a chmod takes that away). The tests run as root here,
  and root reads everything, so this runs in a child process whose bounding set lacks
  ``CAP_DAC_OVERRIDE`` / ``CAP_DAC_READ_SEARCH`` (dropped before ``exec``): root then
  obeys file modes like any user.
- A file replaced by a symlink (to a file of the same size and mtime, inside or outside
  the root) shows what the symlink leads to, or the outside-the-root placeholder.
- A file rewritten in place with its size and mtime put back is read again.
- A markdown document gets the same treatment.
- The stat key packs mtime, size and identity into one int exactly; each kind of change
  above changes it.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagctx import GraphError, NodeState, Session
from dagctx.nodes.base import Node
from dagctx.nodes.text import TextNode, lstat_key, pack_stat, unpack_stat

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2

# Runs in the child: a session over argv[1], a text node and a markdown node on files
# that start unreadable; chmod them readable, tick; chmod them unreadable again, tick.
CHILD = """
import json, os, sys
from dagctx import NodeState, Session
root = sys.argv[1]
out = []
with Session(root) as s:
    text, doc = s.text("notes.txt"), s.markdown("doc.md")
    show = lambda: [text.render(NodeState.DETAILS), s.project().text]
    out.append(show())
    for name in ("notes.txt", "doc.md"):
        os.chmod(os.path.join(root, name), 0o644)
    s.tick()
    out.append(show())
    for name in ("notes.txt", "doc.md"):
        os.chmod(os.path.join(root, name), 0o000)
    s.tick()
    out.append(show())
print(json.dumps(out))
"""


def _unprivileged() -> None:
    """preexec_fn: the child obeys file modes even as root."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def same_size_and_mtime(path: Path, like: Path) -> None:
    st = like.stat()
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


class TestPermissions:
    def test_a_file_made_readable_is_read_and_one_made_unreadable_is_not(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "notes.txt").write_text("the secret plan\n")
        (tmp_path / "doc.md").write_text("# Plan\n\nstep one\n")
        for name in ("notes.txt", "doc.md"):
            (tmp_path / name).chmod(0o000)
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_unprivileged,
        )
        assert child.returncode == 0, child.stderr
        before, readable, unreadable = json.loads(child.stdout)
        assert all("[file unreadable" in shown for shown in before)  # modes are obeyed
        assert "the secret plan" in readable[0] and "step one" in readable[1]
        assert all("[file unreadable" in shown for shown in unreadable)
        assert "the secret plan" not in unreadable[0]


class TestReplacedBySymlink:
    def test_a_symlink_to_a_file_of_the_same_size_and_mtime(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("old text\n")
        (tmp_path / "b.txt").write_text("new text\n")
        same_size_and_mtime(tmp_path / "b.txt", tmp_path / "a.txt")
        with Session(tmp_path) as s:
            node = s.text("a.txt")
            assert node.content == "old text"
            (tmp_path / "a.txt").unlink()
            (tmp_path / "a.txt").symlink_to("b.txt")
            s.tick()
            assert node.content == "new text"
            assert "new text" in s.project().text and "old text" not in s.project().text

    def test_a_symlink_out_of_the_root(self, tmp_path: Path) -> None:
        root, outside = tmp_path / "root", tmp_path / "outside.txt"
        root.mkdir()
        (root / "a.txt").write_text("old text\n")
        outside.write_text("outside\n\n")
        same_size_and_mtime(outside, root / "a.txt")
        with Session(root) as s:
            node = s.text("a.txt")
            (root / "a.txt").unlink()
            (root / "a.txt").symlink_to(outside)
            s.tick()
            shown = node.render(NodeState.DETAILS)
            assert "[outside the session root" in shown and "old text" not in shown
            assert "outside" not in s.project().text.replace("outside the session root", "")

    def test_the_target_of_a_symlink_rewritten_in_place(self, tmp_path: Path) -> None:
        (tmp_path / "b.txt").write_text("first\n")
        (tmp_path / "a.txt").symlink_to("b.txt")
        with Session(tmp_path) as s:
            node = s.text("a.txt")
            assert node.content == "first"
            saved = (tmp_path / "b.txt").stat()
            (tmp_path / "b.txt").write_text("again\n")
            os.utime(tmp_path / "b.txt", ns=(saved.st_atime_ns, saved.st_mtime_ns))
            s.tick()
            assert node.content == "again"


class TestRewrittenInPlace:
    def test_same_size_and_mtime_put_back(self, tmp_path: Path) -> None:
        path = tmp_path / "a.txt"
        path.write_text("alpha\n")
        with Session(tmp_path) as s:
            node = s.text("a.txt")
            saved = path.stat()
            path.write_text("omega\n")
            os.utime(path, ns=(saved.st_atime_ns, saved.st_mtime_ns))
            s.tick()
            assert node.content == "omega"

    def test_an_untouched_file_is_not_read_again(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        with Session(tmp_path) as s:
            node = s.text("a.txt")
            version = node.version
            for _ in range(3):
                s.tick()
            assert node.version == version
            os.chmod(tmp_path / "a.txt", 0o600)  # read again, same content: no change
            s.tick()
            assert node.version == version

    def test_a_markdown_document_replaced_by_a_symlink(self, tmp_path: Path) -> None:
        (tmp_path / "doc.md").write_text("# Old\n\nold body\n")
        (tmp_path / "new.md").write_text("# New\n\nnew body\n")
        same_size_and_mtime(tmp_path / "new.md", tmp_path / "doc.md")
        with Session(tmp_path) as s:
            doc = s.markdown("doc.md")
            (tmp_path / "doc.md").unlink()
            (tmp_path / "doc.md").symlink_to("new.md")
            s.tick()
            text = s.project().text
            assert "new body" in text and "old body" not in text
            assert "New" in doc.render(NodeState.SUMMARY)


class TestStatKey:
    """The key a text node compares before reading: mtime, size and identity packed into
    one int, exactly (any field that changes changes the key)."""

    @given(
        mtime=st.integers(-(2**94), 2**94),
        size=st.integers(0, 2**63 - 1),
        identity=st.integers(-(2**600), 2**600),
    )
    def test_the_packed_fields_come_back_exactly(
        self, mtime: int, size: int, identity: int
    ) -> None:
        assert unpack_stat(pack_stat(mtime, size, identity)) == (mtime, size, identity)

    @given(
        dev=st.integers(0, 2**64 - 1),
        ino=st.integers(0, 2**64 - 1),
        mode=st.integers(0, 2**32 - 1),
        ctime=st.integers(-(2**63), 2**63 - 1),
        mtime=st.integers(-(2**63), 2**63 - 1),
        size=st.integers(0, 2**63 - 1),
    )
    def test_a_stat_results_key_is_the_packed_key_of_its_fields(
        self, dev: int, ino: int, mode: int, ctime: int, mtime: int, size: int
    ) -> None:
        result = SimpleNamespace(
            st_dev=dev, st_ino=ino, st_mode=mode, st_ctime_ns=ctime, st_mtime_ns=mtime, st_size=size
        )
        identity = (((dev << 64 | ino) << 32 | mode) << 64) | ctime
        key = lstat_key(result)  # type: ignore[arg-type]
        assert key == pack_stat(mtime, size, identity)
        assert unpack_stat(key) == (mtime, size, identity)

    @given(
        mtime=st.integers(0, 2**94),
        size=st.integers(0, 2**63 - 1),
        high=st.integers(-(2**600), 2**600),
    )
    def test_an_identity_whose_ctime_is_the_mtime_comes_back_exactly(
        self, mtime: int, size: int, high: int
    ) -> None:
        identity = high << 64 | mtime
        assert unpack_stat(pack_stat(mtime, size, identity)) == (mtime, size, identity)

    def test_a_key_takes_the_bits_its_fields_need(self) -> None:
        mtime = 1_795_555_827_574_668_482  # 2026, in ns
        identity = ((65024 << 64 | 5_804_399) << 32 | 0o100644) << 64 | mtime  # ctime = mtime
        key = pack_stat(mtime, 2408, identity)
        # 1 + 7 + 12 (size) + 7 + 62 (mtime) + 112 (device, inode, mode); at the widest a
        # stat result can hold (a 96-bit mtime, a 64-bit size, a 64-bit ctime): 336
        assert key.bit_length() == 201
        assert pack_stat(mtime, 2408, identity + 1).bit_length() == 201 + 64  # ctime kept

    def test_fields_a_stat_result_cannot_hold_are_refused(self) -> None:
        for mtime, size in ((0, -1), (0, 2**64), (2**95, 0), (-(2**95) - 1, 0)):
            with pytest.raises(ValueError, match="mtime and size"):
                pack_stat(mtime, size, 0)

    def test_each_kind_of_change_is_seen_by_the_key_alone(self, tmp_path: Path) -> None:
        # a bare node: no OS notifications, only its stat key says whether to read
        path = tmp_path / "a.txt"
        path.write_text("alpha\n")
        (tmp_path / "twin.txt").write_text("gamma\n")
        same_size_and_mtime(tmp_path / "twin.txt", path)
        node = TextNode("a.txt", root=tmp_path)
        assert not node.changed_on_disk() and not node.recompute()
        time.sleep(0.05)  # past a coarse filesystem clock's tick: the ctime moves
        saved = path.stat()
        path.write_text("omega\n")  # same size, mtime put back: only the ctime differs
        os.utime(path, ns=(saved.st_atime_ns, saved.st_mtime_ns))
        assert node.changed_on_disk() and node.recompute() and node.content == "omega"
        os.chmod(path, 0o600)  # metadata only: read again, the same content
        assert node.changed_on_disk() and not node.recompute()
        assert not node.changed_on_disk()
        os.replace(tmp_path / "twin.txt", path)  # another file, same size and mtime
        assert node.changed_on_disk() and node.recompute() and node.content == "gamma"
        path.write_text("a longer text\n")
        assert node.recompute() and node.content == "a longer text"
        path.unlink()
        assert node.recompute() and node.placeholder == "[file deleted]"
        assert not node.changed_on_disk()

    def test_the_snapshot_keeps_the_three_fields_and_refuses_impossible_ones(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "a.txt"
        path.write_text("alpha\n")
        node = TextNode("a.txt", root=tmp_path)
        snapshot = node.snapshot()
        assert snapshot is not None
        st_ = path.stat()
        mtime, size, _ = snapshot["stat"]
        assert (mtime, size, snapshot["bytes"]) == (st_.st_mtime_ns, st_.st_size, 6)
        restored = TextNode.from_snapshot(node.data_dict(), snapshot)
        assert not restored.changed_on_disk() and restored.content == "alpha"
        columns = TextNode.to_columns([(node, snapshot)])
        (again,) = TextNode.from_columns(columns)
        assert isinstance(again, TextNode) and again.snapshot() == snapshot
        for bad in ([mtime, -1, 0], [2**95, size, 0], [mtime, 2**64, 0]):
            data = {**node.to_dict(), "snapshot": {**snapshot, "stat": bad}}
            with pytest.raises(GraphError, match="stat"):
                Node.from_dict(data)
            with pytest.raises(GraphError, match="stat"):
                TextNode.from_columns({**columns, "stat": [bad]})
