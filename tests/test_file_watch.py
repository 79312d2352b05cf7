"""Running file nodes hear from the OS (issue 15 item 1): a tick looks only at the files
that changed, never misses a write that completed before it, and polls where
notifications are not available, saying so."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagctx.nodes.base import TickFrequency
from dagctx.nodes.text import TextNode
from dagctx.session import Session
from dagctx.session.parts.files import mount_types

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

DIRS = ("a", "a/b", "c", "c/d/e")


def _tree(root: Path, per_dir: int = 4) -> list[str]:
    files = []
    for d in DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
        for k in range(per_dir):
            rel = f"{d}/f{k}.py"
            (root / rel).write_text(f"x = {k}\n")
            files.append(rel)
    return files


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[Session, dict[str, TextNode]]]:
    files = _tree(tmp_path)
    with Session(tmp_path, budget=100_000) as s:
        nodes = {rel: s.text(rel) for rel in files}
        s.tick()
        yield s, nodes


def _count_stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the path of every stat-key check a text node makes."""
    seen: list[str] = []
    original = TextNode._key

    def counted(self: TextNode) -> object:
        seen.append(self.path)
        return original(self)

    monkeypatch.setattr(TextNode, "_key", counted)
    return seen


class TestNotified:
    def test_a_tick_without_changes_checks_no_file(
        self, tree: tuple[Session, dict[str, TextNode]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        s, nodes = tree
        seen = _count_stats(monkeypatch)
        assert s.tick().recomputed == []
        assert seen == []
        assert s.file_watch().mode == "notify"
        assert s.file_watch().watched_files == len(nodes)

    def test_a_tick_reads_only_the_changed_file(
        self, tree: tuple[Session, dict[str, TextNode]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        s, nodes = tree
        seen = _count_stats(monkeypatch)
        (s.root / "a/b/f1.py").write_text("changed = True\n")
        result = s.tick()
        assert result.recomputed == [nodes["a/b/f1.py"].id]
        assert set(seen) == {"a/b/f1.py"}
        assert nodes["a/b/f1.py"].content == "changed = True"

    def test_1000_write_then_tick_rounds(self, tree: tuple[Session, dict[str, TextNode]]) -> None:
        """Every write that completed before tick() is seen by that tick: rewrites of the
        same size (a coarse clock keeps the stat key), atomic replaces, writes into a file
        still open, appends, deletes and re-creations, several files at once."""
        s, nodes = tree
        rng = random.Random(15)
        files = sorted(nodes)
        held = None
        for turn in range(1000):
            for rel in rng.sample(files, rng.choice((1, 1, 1, 2, 5))):
                path = s.root / rel
                text = f"v = {turn:06d}  # {rel}\n"
                how = rng.random()
                if how < 0.4:
                    path.write_text(text)
                elif how < 0.6:
                    tmp = path.with_suffix(".tmp")
                    tmp.write_text(text)
                    os.replace(tmp, path)
                elif how < 0.75:
                    if held is not None:
                        held.close()
                    held = open(path, "w")  # noqa: SIM115 (kept open over the tick)
                    held.write(text)
                    held.flush()
                elif how < 0.9:
                    with open(path, "a") as handle:
                        handle.write(text)
                else:
                    path.unlink()
            s.tick()
            for rel in files:
                path = s.root / rel
                node = nodes[rel]
                if path.exists():
                    assert node.content == path.read_text().rstrip("\n"), (turn, rel)
                else:
                    assert node.placeholder == "[file deleted]", (turn, rel)
                    path.write_text(f"back = {turn}\n")  # seen by the next tick
        if held is not None:
            held.close()
        assert s.file_watch().mode == "notify"
        assert s.file_watch().polled_files == 0

    def test_a_write_by_another_process_is_seen(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        s, nodes = tree
        for k in range(5):
            code = f"open('c/d/e/f2.py', 'w').write('from_child = {k}\\n')"
            subprocess.run([sys.executable, "-c", code], cwd=s.root, check=True)
            s.tick()
            assert nodes["c/d/e/f2.py"].content == f"from_child = {k}"

    def test_a_directory_moved_away_and_replaced(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        """The watch follows the directory's inode: after ``mv c c.old`` and a new ``c``,
        writes in the new tree are seen, writes in the old one are not."""
        s, nodes = tree
        os.rename(s.root / "c", s.root / "c.old")
        (s.root / "c/d/e").mkdir(parents=True)
        (s.root / "c/d/e/f0.py").write_text("new tree\n")
        s.tick()
        assert nodes["c/d/e/f0.py"].content == "new tree"
        assert nodes["c/d/e/f1.py"].placeholder == "[file deleted]"
        (s.root / "c.old/d/e/f1.py").write_text("old tree\n")
        (s.root / "c/d/e/f1.py").write_text("again\n")
        s.tick()
        assert nodes["c/d/e/f1.py"].content == "again"

    def test_a_directory_deleted_and_created_again(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        s, nodes = tree
        for rel in [r for r in nodes if r.startswith("a/b/")]:
            (s.root / rel).unlink()
        (s.root / "a/b").rmdir()
        s.tick()
        assert nodes["a/b/f0.py"].placeholder == "[file deleted]"
        (s.root / "a/b").mkdir()
        s.tick()
        (s.root / "a/b/f0.py").write_text("recreated\n")
        s.tick()
        assert nodes["a/b/f0.py"].content == "recreated"

    def test_a_full_event_queue_checks_every_file(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        """More events than the kernel queues (fs.inotify.max_queued_events) drop the
        later ones, the last write's among them: the overflow makes the tick check every
        file."""
        s, nodes = tree
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        one, two = (
            os.open(s.root / rel, os.O_WRONLY | os.O_APPEND) for rel in ("a/f0.py", "a/f1.py")
        )
        try:
            for _ in range(limit // 2 + 10):  # alternating: no two events merge
                os.write(one, b"#\n")
                os.write(two, b"#\n")
        finally:
            os.close(one)
            os.close(two)
        (s.root / "c/d/e/f3.py").write_text("after the overflow\n")
        s.tick()
        assert nodes["c/d/e/f3.py"].content == "after the overflow"
        assert nodes["a/f0.py"].content.endswith("#")
        (s.root / "c/f0.py").write_text("watched again\n")
        assert s.tick().recomputed == [nodes["c/f0.py"].id]

    def test_a_node_added_later_sees_writes_before_its_first_tick(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        s, _ = tree
        (s.root / "late").mkdir()
        (s.root / "late/new.py").write_text("one\n")
        node = s.text("late/new.py")
        (s.root / "late/new.py").write_text("two\n")
        s.tick()
        assert node.content == "two"
        (s.root / "late/new.py").write_text("three\n")
        s.tick()
        assert node.content == "three"

    def test_paused_and_removed_nodes_are_left_alone(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        s, nodes = tree
        paused, removed = nodes["a/f0.py"], nodes["a/f1.py"]
        paused.pause()
        s.remove(removed)
        (s.root / "a/f0.py").write_text("while paused\n")
        (s.root / "a/f1.py").write_text("while removed\n")
        assert s.tick().recomputed == []
        assert paused.content == "x = 0"
        paused.run()
        s.tick()
        assert paused.content == "while paused"

    def test_a_period_node_keeps_its_change_until_due(self, tmp_path: Path) -> None:
        (tmp_path / "p.py").write_text("first\n")
        with Session(tmp_path) as s:
            node = s.text("p.py", frequency=TickFrequency.period(3600))
            s.tick()
            (tmp_path / "p.py").write_text("second\n")
            s.tick()
            assert node.content == "first"
            node.last_run = 0.0  # an hour has passed
            s.tick()
            assert node.content == "second"

    def test_markdown_sections_follow_notifications(self, tmp_path: Path) -> None:
        (tmp_path / "doc.md").write_text("# Doc\n\n## One\n\nfirst\n")
        with Session(tmp_path) as s:
            doc = s.markdown("doc.md")
            s.tick()
            (tmp_path / "doc.md").write_text("# Doc\n\n## One\n\nfirst\n\n## Two\n\nsecond\n")
            s.tick()
            assert [sec.heading for sec in doc.sections] == ["Doc", "One", "Two"]

    def test_a_file_replaced_by_a_symlink_is_polled(
        self, tree: tuple[Session, dict[str, TextNode]]
    ) -> None:
        """A change to a symlink's target elsewhere is not reported in the link's
        directory, so such a file is stat-checked at every tick."""
        s, nodes = tree
        (s.root / "target.py").write_text("target 1\n")
        tmp = s.root / "a/link.tmp"
        tmp.symlink_to(s.root / "target.py")
        os.replace(tmp, s.root / "a/f2.py")
        s.tick()
        assert nodes["a/f2.py"].content == "target 1"
        (s.root / "target.py").write_text("target 2 longer\n")
        s.tick()
        assert nodes["a/f2.py"].content == "target 2 longer"
        info = s.file_watch()
        assert info.mode == "notify" and info.polled_files == 1
        assert "a/f2.py is a symlink" in (info.reason or "")

    def test_a_directory_behind_a_symlink_is_polled(self, tmp_path: Path) -> None:
        (tmp_path / "real").mkdir()
        (tmp_path / "real/f.py").write_text("one\n")
        (tmp_path / "link").symlink_to(tmp_path / "real")
        with Session(tmp_path) as s:
            node = s.add(TextNode("link/f.py", root=tmp_path))  # s.text resolves the link
            s.tick()
            (tmp_path / "real/f.py").write_text("two\n")
            s.tick()
            assert node.content == "two"
            info = s.file_watch()
        assert info.polled_files == 1
        assert info.reason == f"{tmp_path}/link is not a directory (a symlink?)"


class TestFallback:
    def test_directories_beyond_the_watch_limit_are_polled(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        files = _tree(tmp_path)
        with Session(tmp_path) as s:
            s._files.max_watches = 2  # the root and one more directory
            nodes = {rel: s.text(rel) for rel in files}
            with caplog.at_level(logging.WARNING, logger="dagctx"):
                s.tick()
                for turn in range(3):
                    for rel in files:
                        (tmp_path / rel).write_text(f"turn {turn} {rel}\n")
                    s.tick()
                    assert all(nodes[r].content == f"turn {turn} {r}" for r in files)
            info = s.file_watch()
        assert info.mode == "notify"
        assert info.watched_dirs == 2
        assert info.polled_files > 0 and info.watched_files + info.polled_files == len(files)
        assert info.reason == "the limit of 2 watched directories is reached"
        warnings = [r for r in caplog.records if "polled at every tick" in r.getMessage()]
        assert len(warnings) == 1

    def test_a_network_filesystem_is_polled(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Files on a network filesystem (here: a mount table that says so) are polled:
        inotify does not report what other machines write there."""
        (tmp_path / "local").mkdir()
        (tmp_path / "net/sub").mkdir(parents=True)
        for rel in ("local/a.py", "net/b.py", "net/sub/c.py"):
            (tmp_path / rel).write_text("one\n")
        table = {"/": "ext4", str(tmp_path / "net"): "nfs4"}
        monkeypatch.setattr("dagctx.session.parts.files.mount_types", lambda: table)
        with Session(tmp_path) as s:
            nodes = [s.text(rel) for rel in ("local/a.py", "net/b.py", "net/sub/c.py")]
            with caplog.at_level(logging.WARNING, logger="dagctx"):
                s.tick()
            for rel in ("local/a.py", "net/b.py", "net/sub/c.py"):
                (tmp_path / rel).write_text("two\n")
            s.tick()
            assert [n.content for n in nodes] == ["two"] * 3
            info = s.file_watch()
        assert (info.mode, info.watched_files, info.polled_files) == ("notify", 1, 2)
        assert info.reason == (
            f"{tmp_path}/net is on a nfs4 filesystem (changes made elsewhere are not reported)"
        )
        assert [r.getMessage() for r in caplog.records] == [
            f"dagctx: some file nodes are polled at every tick instead of watched: {info.reason}"
        ]

    def test_the_mount_table_is_read_with_its_escapes(self, tmp_path: Path) -> None:
        table = tmp_path / "mountinfo"
        table.write_bytes(
            b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
            b"40 22 0:35 / /mnt/my\\040share rw - nfs4 server:/export rw\n"
            b"41 22 0:36 / /home/u/remote rw - fuse.sshfs u@h:/ rw\n"
        )
        assert mount_types(str(table)) == {
            "/": "ext4",
            "/mnt/my share": "nfs4",
            "/home/u/remote": "fuse.sshfs",
        }
        assert mount_types(str(tmp_path / "missing")) == {}

    def test_no_inotify_instance_falls_back_to_polling(self, tmp_path: Path) -> None:
        """A real refusal: the process has no file descriptor left when the first tick
        opens the instance (RLIMIT_NOFILE), so every file node is polled, and said once."""
        _tree(tmp_path)
        script = textwrap.dedent(
            """
            import os, resource, sys
            from dagctx.session import Session
            s = Session(sys.argv[1])
            nodes = [s.text(f"a/f{k}.py") for k in range(4)]
            s.background.run(__import__("asyncio").sleep(0))  # the loop's own descriptors
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            held = []
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
            try:
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
            s.tick()
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            for turn in range(3):
                with open(os.path.join(sys.argv[1], "a/f1.py"), "w") as f:
                    f.write(f"turn {turn}\\n")
                s.tick()
                assert nodes[1].content == f"turn {turn}", nodes[1].content
            info = s.file_watch()
            print(info.mode, info.polled_files, info.reason)
            s.close()
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("polling 4 no OS notifications: Too many open files")
        assert done.stderr.count("polled at every tick") == 1

    def test_no_inotify_on_the_platform(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "f.py").write_text("one\n")
        monkeypatch.setattr(sys, "platform", "darwin")
        with Session(tmp_path) as s:
            node = s.text("f.py")
            s.tick()
            (tmp_path / "f.py").write_text("two\n")
            s.tick()
            assert node.content == "two"
            info = s.file_watch()
        assert (info.mode, info.polled_files, info.reason) == (
            "polling",
            1,
            "no OS notifications: no inotify on darwin",
        )


class TestClose:
    def test_closing_sessions_leaks_no_descriptor_and_no_thread(self, tmp_path: Path) -> None:
        import threading

        files = _tree(tmp_path, per_dir=1)

        def open_fds() -> int:
            return len(os.listdir("/proc/self/fd"))

        gc.collect()
        before, threads = open_fds(), threading.active_count()
        for _ in range(20):
            with Session(tmp_path) as s:
                for rel in files:
                    s.text(rel)
                s.tick()
        assert open_fds() <= before  # (an earlier test's garbage may close some)
        assert threading.active_count() <= threads

    def test_a_session_without_running_file_nodes_opens_no_instance(self, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("one\n")

        def instances() -> int:
            found = 0
            for fd in os.listdir("/proc/self/fd"):
                with contextlib.suppress(FileNotFoundError):  # the one listdir used
                    found += "inotify" in os.readlink(f"/proc/self/fd/{fd}")
            return found

        gc.collect()  # an earlier test's unclosed session closes its instance now
        before = instances()
        with Session(tmp_path) as s:
            s.text("f.py", frequency=TickFrequency.never())
            s.tick()
            assert instances() == before
            s.text("f.py")
            s.tick()
            assert instances() == before + 1
        assert instances() == before

    def test_a_closed_session_watches_nothing(self, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("one\n")
        s = Session(tmp_path)
        s.text("f.py")
        s.tick()
        s.close()
        assert s._files.due(0.0) == ([], [])
