"""Hostile trees against the real ``dagctx`` command (issue 14, items 7, 16, 17, 18).

Every attack is made with real files and a real ``dagctx`` subprocess:

- a repository that ships ``.dagctx`` (or ``.dagctx/locks``) as a symlink out of the root:
  nothing is ever written through it (``_fs.make_state_dir``);
- file and directory names that are not UTF-8: ``render``, ``watch --once`` and a live
  watcher show them with ``\\xNN`` escapes and keep serving;
- Ctrl-C (a real SIGINT) during the first scan of a large tree: the watcher stops within
  0.5 s and leaves no temporary file;
- a directory and a file the user cannot read, and a read-only tree: the run goes on, the
  projection names the real paths and says why they are not shown, and ``watch`` says
  where it keeps its state.

The tests run as root here; root reads everything, so the commands that must meet
"permission denied" run without ``CAP_DAC_OVERRIDE`` / ``CAP_DAC_READ_SEARCH`` (dropped
from the bounding set before ``exec``), which makes root obey file modes like any user.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagctx._fs import STATE_DIR, StateDirError, display_path, make_state_dir
from dagctx.errors import CheckpointError, CoordinationError
from dagctx.session import Session

WAIT = 20.0
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _unprivileged() -> None:
    """preexec_fn: the child obeys file modes even as root; Ctrl-C as in a terminal."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dagctx(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "dagctx.cli", *args],
        capture_output=True,
        timeout=120,
        preexec_fn=_unprivileged,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},  # strict stdout
    )


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dagctx.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_unprivileged,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )


def lines_of(process: subprocess.Popen[bytes]) -> queue.Queue[tuple[float, str]]:
    """(arrival time, line) of the process's stdout, read by a thread."""
    lines: queue.Queue[tuple[float, str]] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.put((time.monotonic(), raw.decode("utf-8").rstrip("\n")))

    threading.Thread(target=read, daemon=True).start()
    return lines


def interrupt(process: subprocess.Popen[bytes]) -> int:
    """Send Ctrl-C and return the exit status; a process that does not stop in time is
    killed (never left running) and the test fails."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("dagctx did not stop after Ctrl-C") from None


def next_line(lines: queue.Queue[tuple[float, str]], prefix: str) -> tuple[float, str]:
    deadline = time.monotonic() + WAIT
    while True:
        at, line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line.startswith(prefix):
            return at, line


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    return root


# -- item 7: a shipped .dagctx symlink ------------------------------------------------------


class TestStateDirectorySymlink:
    @pytest.fixture
    def outside(self, tmp_path: Path, tree: Path) -> Path:
        outside = tmp_path / "outside"
        outside.mkdir()
        (tree / ".dagctx").symlink_to(outside)
        return outside

    def test_state_dir_refuses_a_symlink_and_writes_nothing(
        self, tree: Path, outside: Path
    ) -> None:
        with pytest.raises(StateDirError, match="symlink") as caught:
            make_state_dir(tree / STATE_DIR)
        assert caught.value.filename == str(tree / ".dagctx")
        assert list(outside.iterdir()) == []

    def test_a_symlinked_subdirectory_is_refused_too(self, tmp_path: Path, tree: Path) -> None:
        (tree / ".dagctx").mkdir()
        (tree / ".dagctx" / "locks").symlink_to(tmp_path)
        with pytest.raises(StateDirError, match="symlink"):
            make_state_dir(tree / STATE_DIR, "locks")

    def test_state_dir_makes_real_directories(self, tree: Path) -> None:
        made = make_state_dir(tree / STATE_DIR, "locks")
        assert made == tree / ".dagctx" / "locks" and made.is_dir() and not made.is_symlink()
        assert make_state_dir(tree / STATE_DIR, "locks") == made  # idempotent
        assert (tree / ".dagctx" / ".gitignore").read_text() == "*\n"

    def test_watch_refuses_and_writes_nothing_outside(self, tree: Path, outside: Path) -> None:
        result = dagctx("watch", str(tree), "--budget", "500", "--once")
        assert result.returncode == 1
        err = result.stderr.decode()
        assert err.count("\n") == 1 and "symlink" in err and str(tree / ".dagctx") in err
        assert list(outside.iterdir()) == []

    def test_session_save_lock_and_coordination_refuse_it(self, tree: Path, outside: Path) -> None:
        with Session(tree) as session:
            with pytest.raises(CheckpointError, match="symlink"):
                session.save()
            lock = session.wait(session.lock("src/app.py", timeout=1), timeout=10)
            assert lock.status == "error" and "symlink" in (lock.error or "")
            with pytest.raises(CoordinationError, match="symlink"):
                session.work_on("edit", "src/app.py")
        assert list(outside.iterdir()) == []


# -- item 16: names that are not UTF-8 ------------------------------------------------------


BAD_FILE = b"n\xff.py"
BAD_DIR = b"d\xfe"


def _bad_names(root: Path) -> None:
    base = os.fsencode(root)
    with open(os.path.join(base, BAD_FILE), "w") as handle:
        handle.write("odd = 1\n")
    os.mkdir(os.path.join(base, BAD_DIR))
    with open(os.path.join(base, BAD_DIR, b"inner.py"), "w") as handle:
        handle.write("inner = 2\n")


class TestNamesThatAreNotUtf8:
    def test_display_path_escapes_only_what_is_not_utf8(self) -> None:
        assert display_path(os.fsdecode(b"d\xfe/n\xff.py")) == "d\\xfe/n\\xff.py"
        assert display_path("ünïcode/ok.py") == "ünïcode/ok.py"
        assert display_path("\ud800") == "\\ud800"  # a surrogate no decoder made

    def test_render_shows_them_escaped(self, tree: Path) -> None:
        _bad_names(tree)
        result = dagctx("render", str(tree), "--budget", "2000")
        assert result.returncode == 0, result.stderr
        text = result.stdout.decode("utf-8")  # valid UTF-8
        assert "### n\\xff.py" in text and "odd = 1" in text
        assert "### d\\xfe/inner.py" in text and "inner = 2" in text
        as_json = dagctx("render", str(tree), "--budget", "2000", "--format", "json")
        assert as_json.returncode == 0, as_json.stderr
        assert "n\\xff.py" in json.loads(as_json.stdout)["text"]

    def test_watch_once_writes_and_resumes(self, tree: Path) -> None:
        _bad_names(tree)
        for _ in range(2):
            result = dagctx("watch", str(tree), "--budget", "2000", "--once")
            assert result.returncode == 0, result.stderr
        assert b"resuming after turn 1" in result.stderr
        text = (tree / ".dagctx" / "projection.md").read_text(encoding="utf-8")
        assert "### n\\xff.py" in text and "### d\\xfe/inner.py" in text
        account = json.loads((tree / ".dagctx" / "projection.json").read_bytes())
        assert account["text"] == text

    def test_a_live_watcher_keeps_serving(self, tree: Path) -> None:
        os.mkdir(os.path.join(os.fsencode(tree), BAD_DIR))  # before the watcher starts
        process = start("watch", str(tree), "--budget", "2000")
        lines = lines_of(process)
        try:
            next_line(lines, "turn 1:")
            with open(os.path.join(os.fsencode(tree), BAD_FILE), "w") as handle:
                handle.write("odd = 1\n")
            _, line = next_line(lines, "turn ")
            assert "n\\xff.py: file created" in line
            (tree / "src" / "app.py").write_text("def main():\n    return 2\n")
            _, line = next_line(lines, "turn ")
            assert "src/app.py: content changed" in line
            assert process.poll() is None
            text = (tree / ".dagctx" / "projection.md").read_text(encoding="utf-8")
            assert "return 2" in text and "### n\\xff.py" in text
        finally:
            code = interrupt(process)
        assert code == 0
        assert process.stderr is not None and b"Traceback" not in process.stderr.read()


# -- item 17: Ctrl-C during the first scan --------------------------------------------------


@pytest.fixture(scope="module")
def large_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8,000 files, 20 MB: a render of it takes about twice the CPU of a render of an
    empty tree (0.9 s and 0.4 s where these tests were tuned)."""
    root = tmp_path_factory.mktemp("large")
    body = "".join(f"def f{i}(x):\n    return x * {i} + {i / 7:.6f}\n" for i in range(60))
    for d in range(80):
        package = root / f"pkg{d}"
        package.mkdir()
        for f in range(100):
            (package / f"mod{f}.py").write_text(f"# {d}/{f}\n{body}")
    return root


@pytest.fixture(scope="module")
def startup_cpu(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The CPU seconds a render of an empty tree takes here (imports, opening, output):
    Ctrl-C sent this long plus a quarter second into a run lands inside its scan or
    count, on a slow machine as on a fast one."""
    empty = tmp_path_factory.mktemp("empty")
    before = os.times()
    subprocess.run([sys.executable, "-m", "dagctx.cli", "render", str(empty)], check=True,
                   capture_output=True)  # fmt: skip
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def _cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """The user and system CPU time a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_for(condition: object, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


@pytest.mark.slow
class TestCtrlCDuringTheFirstScan:
    def test_watch_stops_within_half_a_second(self, large_tree: Path, startup_cpu: float) -> None:
        state = large_tree / ".dagctx"
        process = start("watch", str(large_tree), "--budget", "8000")
        lines = lines_of(process)
        try:
            # Inside the first scan: past the imports and the session's opening, in CPU
            # time, so that a loaded machine does not move the moment.
            moment = startup_cpu + 0.25
            _wait_for(lambda: process.poll() is not None or _cpu_seconds(process) >= moment)
            assert process.poll() is None and state.is_dir()
            sent = time.monotonic()
            process.send_signal(signal.SIGINT)
            stopped, _ = next_line(lines, "dagctx watch: stopped")
            assert process.wait(timeout=WAIT) == 0
        finally:
            if process.poll() is None:
                process.kill()
        assert stopped - sent <= 0.5, f"stopped {stopped - sent:.2f} s after Ctrl-C"
        # No temporary file, and no half-scanned session saved.
        assert sorted(p.name for p in state.iterdir()) == [".gitignore"]

    @pytest.mark.parametrize("command", [["watch", "--once"], ["render"]])
    def test_once_and_render_exit_at_once(
        self, large_tree: Path, startup_cpu: float, command: list[str]
    ) -> None:
        name, *options = command
        process = start(name, str(large_tree), "--budget", "8000", *options)
        try:
            # Inside the scan or the count: past the imports and opening, well short of the
            # CPU the whole run takes (CPU time, so a loaded machine does not skew it).
            moment = startup_cpu + 0.25
            _wait_for(lambda: process.poll() is not None or _cpu_seconds(process) >= moment)
            assert process.poll() is None
            sent = time.monotonic()
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=WAIT)
            exited = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
        assert code in (0, 130)
        assert exited <= 1.0, f"exited {exited:.2f} s after Ctrl-C"  # ~0.3 s is shutdown
        leftovers = [p for p in large_tree.rglob("*.tmp")]
        assert leftovers == []


# -- item 18: unreadable parts and read-only trees ------------------------------------------


@pytest.fixture
def guarded(tree: Path) -> Iterator[Path]:
    (tree / "locked").mkdir()
    (tree / "locked" / "hidden.py").write_text("hidden = 1\n")
    (tree / "secret.py").write_text("secret = 1\n")
    (tree / "locked").chmod(0)
    (tree / "secret.py").chmod(0)
    yield tree
    (tree / "locked").chmod(0o755)
    (tree / "secret.py").chmod(0o644)


class TestUnreadableParts:
    def test_render_skips_and_reports_them(self, guarded: Path) -> None:
        result = dagctx("render", str(guarded), "--budget", "2000", "--explain")
        assert result.returncode == 0, result.stderr
        text, err = result.stdout.decode(), result.stderr.decode()
        assert "## locked/" in text and "[directory unreadable: Permission denied" in text
        assert "### secret.py" in text and "[file unreadable: Permission denied]" in text
        assert "def main():" in text and "hidden = 1" not in text and "secret = 1" not in text
        explained = err.splitlines()
        assert any("secret.py" in row for row in explained)
        assert any("locked/" in row for row in explained)
        assert "pyvenv.cfg" not in err + text

    def test_watch_once_and_a_live_watch_report_them(self, guarded: Path) -> None:
        once = dagctx("watch", str(guarded), "--budget", "2000", "--once")
        assert once.returncode == 0, once.stderr
        text = (guarded / ".dagctx" / "projection.md").read_text()
        assert "[directory unreadable: Permission denied" in text
        assert "[file unreadable: Permission denied]" in text
        process = start("watch", str(guarded), "--budget", "2000")
        lines = lines_of(process)
        try:
            next_line(lines, "turn ")
            (guarded / "src" / "app.py").write_text("def main():\n    return 3\n")
            _, line = next_line(lines, "turn ")
            assert "src/app.py: content changed" in line
        finally:
            code = interrupt(process)
        assert code == 0
        assert process.stderr is not None and b"error" not in process.stderr.read()

    def test_a_read_only_tree_renders_and_watch_says_where_its_state_is(
        self, tree: Path, tmp_path: Path
    ) -> None:
        home = tmp_path / "state-home"
        tree.chmod(0o555)
        try:
            rendered = dagctx("render", str(tree), "--budget", "2000")
            assert rendered.returncode == 0, rendered.stderr
            assert b"def main():" in rendered.stdout
            env = {"XDG_STATE_HOME": str(home)}
            once = dagctx("watch", str(tree), "--budget", "2000", "--once", env=env)
            assert once.returncode == 0, once.stderr
            (state,) = (home / "dagctx").iterdir()
            assert f"keeping its state in {state}" in once.stderr.decode()
            assert "def main():" in (state / "projection.md").read_text()
            with sqlite3.connect(state / "session.db") as conn:
                assert conn.execute("SELECT count(*) FROM dagctx_meta").fetchone()[0] >= 1
            again = dagctx("watch", str(tree), "--budget", "2000", "--once", env=env)
            assert b"resuming after turn 1" in again.stderr
            assert not (tree / ".dagctx").exists()
        finally:
            tree.chmod(0o755)
