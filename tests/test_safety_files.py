"""Issue 14, items 1-4 and 10: full disks, second writers, foreign --out files and a vanishing
state directory, attacked with real files, real processes and a real small tmpfs.

The disk-full tests mount a tmpfs of :data:`DISK` bytes (as root; elsewhere they skip) and
fill it with a filler file until the kernel says ENOSPC.
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagctx import Session, SessionConflictError
from dagctx.cli import main

DISK = 4 * 1024 * 1024
STARTUP = 60.0  # a busy machine may take long to start a Python process
WAIT = 15.0


def _dagctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "dagctx.cli", *args]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _make_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return 1\n")
    (root / "README.md").write_text("# Demo\n")
    return root


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A mounted tmpfs of DISK bytes, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill the file system of ``disk`` until ENOSPC; return the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # big blocks first, then the last partial page
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _lines(stream: object) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for(lines: queue.Queue[str], needle: str, timeout: float = WAIT) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"no line with {needle!r} within {timeout}s; saw {seen}")


def _until(check: object, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


class _Watcher:
    """A live ``dagctx watch`` process with its stdout and stderr lines."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            _dagctx("watch", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out = _lines(self.process.stdout)
        self.err = _lines(self.process.stderr)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def _run_once(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _dagctx("watch", str(root), "--budget", "2000", "--once", *extra),
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )


class TestFullDiskAtRestart:
    """Item 1: a good session file that cannot be read on a full disk is never moved,
    emptied or overwritten, and the next start on a freed disk resumes it."""

    def test_a_full_disk_at_restart_loses_nothing(self, disk: Path) -> None:
        root = _make_tree(disk / "repo")
        assert _run_once(root).returncode == 0
        saved = root / ".dagctx" / "session.db"
        before = _digest(saved)
        filler = _fill(disk)

        _run_once(root)  # may fail to write the projection; it must not touch the session

        assert _digest(saved) == before
        assert not list(saved.parent.glob("session.db.unreadable*"))
        filler.unlink()
        again = _run_once(root)
        assert again.returncode == 0, again.stderr
        assert "resuming after turn 1" in again.stderr

    def test_a_failed_first_save_on_a_full_disk_leaves_no_empty_file(self, disk: Path) -> None:
        root = _make_tree(disk / "repo")
        (root / ".dagctx").mkdir()
        _fill(disk)
        with Session(root, budget=500) as session, pytest.raises(Exception) as failed:
            session.save()
        assert "full" in str(failed.value) or "space" in str(failed.value)
        assert not (root / ".dagctx" / "session.db").exists()

    def test_set_aside_copies_are_never_overwritten(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        state = root / ".dagctx"
        state.mkdir()
        for damage in (b"first damaged file " * 300, b"second damaged file " * 300):
            (state / "session.db").write_bytes(damage)
            run = _run_once(root)
            assert run.returncode == 0, run.stderr
            assert "moved it to" in run.stderr
            (state / "session.db").unlink()
        assert (state / "session.db.unreadable").read_bytes().startswith(b"first")
        assert (state / "session.db.unreadable.2").read_bytes().startswith(b"second")


_HOLDER = textwrap.dedent(
    """
    import sys
    from dagctx import Session
    with Session(sys.argv[1], budget=500) as session:
        session.save()
        print("saved", flush=True)
        sys.stdin.readline()
    """
)


class TestSecondWriter:
    """Item 2: two live writers on one session file; the second is refused, never silent."""

    def test_a_save_while_another_process_writes_the_file_is_refused(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "saved"
            saved = root / ".dagctx" / "session.db"
            before = _digest(saved)
            with Session(root, budget=500) as mine:
                with pytest.raises(SessionConflictError, match="another process"):
                    mine.save()
                assert _digest(saved) == before
                holder.stdin.write("\n")
                holder.stdin.flush()
                assert holder.wait(timeout=WAIT) == 0
                mine.save()  # the other writer is gone: its lock went with it
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()

    def test_the_watchers_save_never_overwrites_a_librarys_checkpoints(
        self, tmp_path: Path
    ) -> None:
        root = _make_tree(tmp_path / "repo")
        saved = root / ".dagctx" / "session.db"
        with Session(root, budget=2000) as first:
            first.save()
        watcher = _Watcher(str(root), "--budget", "2000")
        try:
            _wait_for(watcher.err, "resuming", STARTUP)
            _wait_for(watcher.out, "turn ", STARTUP)
            with Session.load(saved, root=root) as library:
                library.graph.checkpoint("library-work")
                library.save()
            assert watcher.stop() == 0
            _wait_for(watcher.err, "was saved by another process")
        finally:
            watcher.stop()
        with Session.load(saved, root=root) as after:
            assert "library-work" in after.graph.checkpoints()


class TestForeignOutFile:
    """Item 3: --out never replaces a file dagctx did not write, and never reads back
    what it wrote."""

    def test_an_existing_project_file_is_refused_and_kept(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        notes = root / "NOTES.md"
        notes.write_text("# my own notes\n")
        run = _run_once(root, "--out", str(notes))
        assert run.returncode == 1
        assert "did not write" in run.stderr
        assert notes.read_text() == "# my own notes\n"

    def test_its_own_outputs_are_rewritten_and_never_read_back(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        first, second = root / "ctx-a.md", root / "ctx-b.md"
        for out in (first, first, second, second):
            run = _run_once(root, "--out", str(out))
            assert run.returncode == 0, run.stderr
        for out in (first, second):
            text = out.read_text()
            assert "ctx-a.md" not in text and "ctx-b.md" not in text
            assert text.count("def login(user):") == 1


class TestTransientWriteFailure:
    """Item 4: a full disk while the watch writes its projection keeps the last good file,
    reports, and the watch writes again once there is room."""

    def test_the_watch_survives_enospc_and_writes_again(self, disk: Path) -> None:
        root = _make_tree(disk / "repo")
        projection = root / ".dagctx" / "projection.md"
        watcher = _Watcher(str(root), "--budget", "2000")
        try:
            _wait_for(watcher.out, "turn 1:", STARTUP)
            good = projection.read_text()
            filler = _fill(disk)
            (root / "src" / "auth.py").write_text("def login(user):\n    return 2\n")
            _wait_for(watcher.err, "the projection is not written")
            assert watcher.process.poll() is None
            assert projection.read_text() == good
            filler.unlink()
            (root / "src" / "auth.py").write_text("def login(user):\n    return 3\n")
            _wait_for(watcher.err, "the projection is written again")
            assert "return 3" in projection.read_text()
        finally:
            assert watcher.stop() == 0


class TestStateDirectory:
    """Item 10: ``.dagctx`` is git-ignored, and a watch survives it vanishing."""

    def test_git_ignores_the_state_directory(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
        assert main(["watch", str(root), "--budget", "2000", "--once"]) == 0
        with Session(root, budget=500) as session:
            session.save()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert ".dagctx" not in status
        assert (root / ".dagctx" / ".gitignore").read_text() == "*\n"

    def test_a_watch_survives_git_clean_taking_the_state_directory(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        state = root / ".dagctx"
        watcher = _Watcher(str(root), "--budget", "2000")
        try:
            _wait_for(watcher.out, "turn 1:", STARTUP)
            subprocess.run(["rm", "-rf", str(state)], check=True)
            (root / "src" / "auth.py").write_text("def login(user):\n    return 2\n")
            _wait_for(watcher.out, "turn 2:")
            assert "return 2" in (state / "projection.md").read_text()
            assert (state / ".gitignore").read_text() == "*\n"
            assert watcher.process.poll() is None
        finally:
            assert watcher.stop() == 0
        assert (state / "session.db").is_file()  # the exit save made it again


class TestSetAside:
    """Item 1, the primitive: ``_fs.set_aside`` never overwrites and keeps the WAL."""

    def test_the_write_ahead_log_moves_along_and_names_are_never_reused(
        self, tmp_path: Path
    ) -> None:
        from dagctx._fs import set_aside

        saved = tmp_path / "session.db"
        for round_ in ("one", "two"):
            saved.write_bytes(f"main {round_}".encode())
            Path(f"{saved}-wal").write_bytes(f"wal {round_}".encode())
            Path(f"{saved}-shm").write_bytes(b"shm")
            set_aside(saved, ".unreadable")
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "session.db.unreadable",
            "session.db.unreadable-wal",
            "session.db.unreadable.2",
            "session.db.unreadable.2-wal",
        ]
        assert (tmp_path / "session.db.unreadable").read_bytes() == b"main one"
        assert (tmp_path / "session.db.unreadable-wal").read_bytes() == b"wal one"
        assert (tmp_path / "session.db.unreadable.2-wal").read_bytes() == b"wal two"


_NO_DESCRIPTORS = textwrap.dedent(
    """
    import os, resource, sys
    from dagctx import Session, SessionFileUnavailableError
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    used = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (used - 1, hard))  # none left to open it
    try:
        Session.load(sys.argv[1])
    except SessionFileUnavailableError as exc:
        print("unavailable:", exc)
    except Exception as exc:
        print("other:", type(exc).__name__, exc)
    """
)


class TestFileThatCannotBeOpenedNow:
    """Item 1, the other transient causes: a good file that cannot be opened now (here:
    no file descriptor left, RLIMIT_NOFILE in a real process) is reported as unavailable,
    not as damaged, so no caller sets it aside."""

    def test_no_descriptor_left_is_unavailable_not_damage(self, tmp_path: Path) -> None:
        root = _make_tree(tmp_path / "repo")
        with Session(root, budget=500) as session:
            saved = session.save()
        before = _digest(saved)
        done = subprocess.run(
            [sys.executable, "-c", _NO_DESCRIPTORS, str(saved)],
            capture_output=True,
            text=True,
            timeout=STARTUP,
        )
        assert done.stdout.startswith("unavailable:"), done.stdout + done.stderr
        assert _digest(saved) == before
