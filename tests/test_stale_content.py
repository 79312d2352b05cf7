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
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

from dagctx import NodeState, Session

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
