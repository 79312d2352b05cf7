"""``Session.watch`` and ``dagctx watch`` on small real trees with real watchfiles events.

Waits are generous (an expected tick may take up to ``WAIT`` seconds) so a slow machine
does not fail them; a test that expects *no* tick writes the ignored files first, lets
them settle, then makes one visible change and checks that the next tick is that change.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import watchfiles
from rich.console import Console

from dagctx.cli import main
from dagctx.cli.watch_view import LiveView, Outputs
from dagctx.errors import DagctxError
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode
from dagctx.session import Session, TickResult
from dagctx.watch.scan import scan_tree

pytestmark = pytest.mark.anyio
WAIT = 10.0
# nothing else, no temp files (.gitignore: git leaves the state directory alone, issue 14 item 10)
OUTPUTS = [".gitignore", "projection.json", "projection.md", "session.db"]
STARTUP = 60.0  # a busy machine may take long to start a Python process
SETTLE = 0.4  # longer than a batch's quiet time (50 ms): earlier events are flushed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return True\n")
    (root / "src" / "db.py").write_text("class Store:\n    rows = []\n")
    (root / "README.md").write_text("# Demo\n")
    return root


@dataclass
class Watching:
    session: Session
    results: AsyncGenerator[TickResult, None]
    first: TickResult

    async def next(self) -> TickResult:
        return await asyncio.wait_for(anext(self.results), WAIT)

    async def until(self, done: Callable[[], bool]) -> list[TickResult]:
        """The results of the ticks it took for ``done()`` to hold (none if it holds)."""
        seen: list[TickResult] = []
        deadline = time.monotonic() + WAIT
        while not done():
            remaining = deadline - time.monotonic()
            seen.append(await asyncio.wait_for(anext(self.results), max(0.01, remaining)))
        return seen

    def node(self, path: str) -> TextNode:
        (node,) = self.session.text_nodes(path)
        return node


@asynccontextmanager
async def watching(root: Path, budget: int = 4000, **options: object) -> AsyncIterator[Watching]:
    with Session(root, budget=budget) as session:
        async with aclosing(session.watch(**options)) as results:  # type: ignore[arg-type]
            first = await asyncio.wait_for(anext(results), WAIT)
            yield Watching(session, results, first)


def described(result: TickResult) -> list[tuple[str, str]]:
    return [(t.node_id, t.description) for t in result.changes if not t.derived]


def directory_group(node: TextNode | GroupNode) -> str | None:
    parents = [p for p in node.parents if isinstance(p, GroupNode)]
    return parents[0].title if parents else None


class TestLibraryApi:
    async def test_first_result_is_the_tick_after_the_scan(self, tree: Path) -> None:
        async with watching(tree) as w:
            assert w.first.turn == 1
            assert {n.path for n in w.session.nodes() if isinstance(n, TextNode)} == {
                "README.md",
                "src/auth.py",
                "src/db.py",
            }
            assert "def login(user):" in w.first.projection.text

    async def test_a_tree_already_in_the_session_is_adopted_and_resurveyed(
        self, tree: Path
    ) -> None:
        with Session(tree, budget=4000) as session:
            scan_tree(session, ".")
            before = len(session.nodes())
            (tree / "src" / "late.py").write_text("LATE = 1\n")  # after the scan
            async with aclosing(session.watch()) as results:
                first = await asyncio.wait_for(anext(results), WAIT)
            assert len(session.nodes()) == before + 1  # no second copy of the tree
            (late,) = session.text_nodes("src/late.py")
            assert (late.id, "file created") in described(first)

    @pytest.mark.parametrize("options", [{"step_ms": 0}, {"debounce_ms": "50"}])
    async def test_bad_timing_options_are_refused(
        self, tree: Path, options: dict[str, object]
    ) -> None:
        (value,) = options.values()
        with Session(tree) as session, pytest.raises(DagctxError, match=repr(value)):
            await anext(session.watch(**options))  # type: ignore[arg-type]


class TestCtrlC:
    def test_an_interrupt_inside_the_starting_watcher_leaves_no_task_traceback(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        # dagctx watch's Ctrl-C raises KeyboardInterrupt wherever the main thread is during
        # the first scan, also inside the task starting watchfiles (it cannot be timed
        # from here, so the watcher raises it itself)
        async def interrupted_awatch(*args: object, **kwargs: object) -> AsyncIterator[set[Any]]:
            raise KeyboardInterrupt
            yield set()  # an async generator, as watchfiles.awatch is

        monkeypatch.setattr(watchfiles, "awatch", interrupted_awatch)
        (tmp_path / "a.txt").write_text("a\n")
        session = Session(tmp_path, budget=1000)

        async def watch() -> None:
            async with aclosing(session.watch()) as ticks:
                await anext(ticks)
                await anext(ticks)

        with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(KeyboardInterrupt):
            asyncio.run(watch())
        gc.collect()
        assert "never retrieved" not in caplog.text
        session.close()


class TestFileEvents:
    async def test_a_modified_file_is_reread(self, tree: Path) -> None:
        async with watching(tree) as w:
            node = w.node("src/auth.py")
            (tree / "src" / "auth.py").write_text("def login(user):\n    return False\n")
            result = await w.next()
            assert (node.id, "content changed") in described(result)
            assert "return False" in result.projection.text

    async def test_a_created_file_joins_its_directory_group_in_name_order(self, tree: Path) -> None:
        async with watching(tree) as w:
            (tree / "src" / "cache.py").write_text("CACHE = {}\n")
            result = await w.next()
            node = w.node("src/cache.py")
            assert (node.id, "file created") in described(result)
            assert directory_group(node) == "src/"
            (src,) = node.parents
            assert [c.path for c in src.children if isinstance(c, TextNode)] == [
                "src/auth.py",
                "src/cache.py",
                "src/db.py",
            ]
            assert "CACHE = {}" in result.projection.text

    async def test_a_file_in_new_directories_gets_the_missing_groups(self, tree: Path) -> None:
        async with watching(tree) as w:
            deep = tree / "pkg" / "sub" / "leaf"
            deep.mkdir(parents=True)
            (deep / "mod.py").write_text("X = 1\n")
            await w.until(lambda: bool(w.session.text_nodes("pkg/sub/leaf/mod.py")))
            node = w.node("pkg/sub/leaf/mod.py")
            chain = []
            parent: TextNode | GroupNode = node
            while parent.parents:
                (up,) = parent.parents
                assert isinstance(up, GroupNode)
                chain.append(up.title)
                parent = up
            assert chain == ["pkg/sub/leaf/", "pkg/sub/", "pkg/", "repo/"]

    async def test_a_directory_of_directories_gets_its_heading_with_a_file(
        self, tree: Path
    ) -> None:
        deep = tree / "pkg" / "sub" / "leaf"
        deep.mkdir(parents=True)
        (deep / "mod.py").write_text("X = 1\n")
        async with watching(tree) as w:
            text = w.first.projection.text
            assert "## pkg/sub/leaf/ (#" in text and "X = 1" in text
            assert "## pkg/ (#" not in text and "## pkg/sub/ (#" not in text
            (tree / "pkg" / "sub" / "own.py").write_text("Y = 2\n")
            await w.until(lambda: bool(w.session.text_nodes("pkg/sub/own.py")))
            text = w.session.project().text
            assert "## pkg/sub/ (#" in text and "Y = 2" in text
            assert "## pkg/ (#" not in text

    async def test_a_deleted_file_shows_deleted_then_is_removed_at_the_next_tick(
        self, tree: Path
    ) -> None:
        async with watching(tree) as w:
            node = w.node("src/db.py")
            (tree / "src" / "db.py").unlink()
            result = await w.next()
            assert (node.id, "file deleted") in described(result)
            assert node.placeholder == "[file deleted]"
            assert node in w.session.nodes()
            (tree / "README.md").write_text("# Demo, edited\n")  # any change: the next tick
            await w.next()
            assert node not in w.session.nodes()
            assert w.session.text_nodes("src/db.py") == []

    async def test_a_file_that_comes_back_before_removal_keeps_its_node(self, tree: Path) -> None:
        async with watching(tree) as w:
            node = w.node("src/db.py")
            (tree / "src" / "db.py").unlink()
            await w.next()
            (tree / "src" / "db.py").write_text("class Store:\n    rows = [1]\n")
            await w.until(lambda: node.placeholder is None)
            assert w.node("src/db.py") is node
            assert "rows = [1]" in node.content

    async def test_a_rename_keeps_the_node_and_moves_it_to_the_new_directory(
        self, tree: Path
    ) -> None:
        async with watching(tree) as w:
            node = w.node("src/db.py")
            (tree / "lib").mkdir()
            (tree / "src" / "db.py").rename(tree / "lib" / "store.py")
            await w.until(lambda: node.path == "lib/store.py")
            assert w.node("lib/store.py") is node
            assert w.session.text_nodes("src/db.py") == []
            assert directory_group(node) == "lib/"
            assert "### lib/store.py (#" + node.id + ")" in w.session.project().text

    async def test_a_rename_carries_other_text_nodes_of_the_file_with_their_parents(
        self, tree: Path
    ) -> None:
        async with watching(tree) as w:
            excerpt = w.session.text("src/db.py", lines=(1, 1))
            pinned = w.session.group(excerpt, title="pinned")
            markdown = w.session.markdown("README.md")
            (tree / "src" / "db.py").rename(tree / "src" / "store.py")
            (tree / "README.md").rename(tree / "README.txt")
            await w.until(lambda: excerpt.path == "src/store.py")
            await w.until(lambda: bool(w.session.text_nodes("README.txt")))
            assert excerpt.parents == [pinned]
            assert excerpt.lines == ["class Store:"]
            assert markdown.path == "README.md"  # not a plain text node: left, shown deleted
            assert markdown.placeholder == "[file deleted]"

    async def test_a_rename_with_new_content_is_a_delete_and_a_create(self, tree: Path) -> None:
        async with watching(tree) as w:
            old = w.node("src/db.py")
            (tree / "src" / "db.py").unlink()
            (tree / "src" / "store.py").write_text("class Store:\n    rows = {}\n")
            await w.until(lambda: bool(w.session.text_nodes("src/store.py")))
            assert w.node("src/store.py") is not old
            assert old.placeholder == "[file deleted]"

    async def test_a_renamed_directory_moves_its_files(self, tree: Path) -> None:
        async with watching(tree) as w:
            ids = {p: w.node(p).id for p in ("src/auth.py", "src/db.py")}
            (tree / "src").rename(tree / "core")
            await w.until(lambda: len(w.session.text_nodes("core/db.py")) == 1)
            assert not any(w.session.text_nodes(p) for p in ids)
            assert w.node("core/auth.py").id == ids["src/auth.py"]
            assert w.node("core/db.py").id == ids["src/db.py"]
            titles = {n.title for n in w.session.nodes() if isinstance(n, GroupNode)}
            assert "src/" not in titles

    async def test_a_deleted_directory_loses_its_nodes_and_group(self, tree: Path) -> None:
        async with watching(tree) as w:
            shutil.rmtree(tree / "src")
            await w.until(lambda: w.node("src/db.py").placeholder == "[file deleted]")
            (tree / "README.md").write_text("# Demo, edited\n")
            await w.until(lambda: not w.session.text_nodes("src/db.py"))
            titles = {n.title for n in w.session.nodes() if isinstance(n, GroupNode)}
            assert titles == {"repo/"}


class TestCoalescing:
    # These use a 200 ms quiet time (default 30 ms) so that a busy machine pausing the
    # test between two writes does not split what the test means as one burst.

    async def test_a_save_that_writes_three_times_is_one_change(self, tree: Path) -> None:
        async with watching(tree, step_ms=200) as w:
            node = w.node("src/auth.py")
            target = tree / "src" / "auth.py"
            for text in ("", "def login(user):\n", "def login(user):\n    return 3\n"):
                target.write_text(text)
            result = await w.next()
            assert described(result) == [(node.id, "content changed")]
            assert "return 3" in node.content

    async def test_one_batch_may_add_at_the_top_and_edit_deep_down(self, tree: Path) -> None:
        async with watching(tree) as w:
            auth = w.node("src/auth.py")
            (tree / "CHANGES.md").write_text("- new\n")
            (tree / "src" / "auth.py").write_text("def login(user):\n    return 4\n")
            await w.until(lambda: "return 4" in auth.content)
            await w.until(lambda: bool(w.session.text_nodes("CHANGES.md")))
            assert "- new" in w.session.project().text

    async def test_a_200_file_burst_is_at_most_two_ticks(self, tree: Path) -> None:
        async with watching(tree, step_ms=200) as w:
            for i in range(200):
                folder = tree / "gen" / f"d{i // 20}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"f{i:03}.py").write_text(f"VALUE = {i}\n")
            ticks = await w.until(lambda: len(w.session.text_nodes("gen/d9/f199.py")) == 1)
            generated = [p for p in (tree / "gen").rglob("*.py")]
            assert all(w.session.text_nodes(p.relative_to(tree).as_posix()) for p in generated)
            assert len(ticks) <= 2


class TestIgnoreRules:
    async def test_ignored_paths_make_no_tick_and_no_nodes(
        self, tree: Path, tmp_path: Path
    ) -> None:
        (tree / ".gitignore").write_text("*.log\nbuild/\n")
        # Made outside and moved in whole: a virtualenv or binary file caught half-made
        # (no pyvenv.cfg yet, no bytes yet) is rightly taken in; that is not tested here.
        venv = tmp_path / "venv"
        venv.mkdir()
        (venv / "pyvenv.cfg").write_text("home = /usr\n")
        (venv / "lib.py").write_text("ignored\n")
        (tmp_path / "bin.dat").write_bytes(b"\x00\x01binary")
        async with watching(tree) as w:
            turn = w.first.turn
            for rel in (".git/objects/ab", ".dagctx/session.db", "build/out.txt", "x.log"):
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_text("ignored\n")
            venv.rename(tree / ".venv")
            (tmp_path / "bin.dat").rename(tree / "bin.dat")
            await asyncio.sleep(SETTLE)
            (tree / "src" / "seen.py").write_text("SEEN = 1\n")
            result = await w.next()
            assert result.turn == turn + 1
            paths = {n.path for n in w.session.nodes() if isinstance(n, TextNode)}
            assert paths == {".gitignore", "README.md", "src/auth.py", "src/db.py", "src/seen.py"}

    async def test_a_gitignore_change_drops_and_restores_files(self, tree: Path) -> None:
        async with watching(tree) as w:
            (tree / ".gitignore").write_text("*.md\n")
            await w.until(lambda: not w.session.text_nodes("README.md"))
            (tree / ".gitignore").write_text("")
            await w.until(lambda: bool(w.session.text_nodes("README.md")))
            assert directory_group(w.node("README.md")) == "repo/"

    async def test_a_file_under_a_reincluded_path_appears_one_under_an_ignored_path_not(
        self, tree: Path
    ) -> None:
        (tree / ".gitignore").write_text("*.log\nbuild/\n")
        (tree / "src" / ".gitignore").write_text("!keep.log\n")
        async with watching(tree) as w:
            for rel in ("build/keep.log", "src/other.log", "debug.log"):
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_text("ignored\n")
            await asyncio.sleep(SETTLE)
            (tree / "src" / "keep.log").write_text("kept\n")
            await w.until(lambda: bool(w.session.text_nodes("src/keep.log")))
            for rel in ("build/keep.log", "src/other.log", "debug.log"):
                assert not w.session.text_nodes(rel)
            assert directory_group(w.node("src/keep.log")) == "src/"

    async def test_a_negation_in_a_nested_gitignore_re_includes_files(self, tree: Path) -> None:
        (tree / ".gitignore").write_text("*.log\n")
        (tree / "src" / "debug.log").write_text("log\n")
        (tree / "src" / "trace.log").write_text("log\n")
        async with watching(tree) as w:
            assert not w.session.text_nodes("src/debug.log")
            (tree / "src" / ".gitignore").write_text("!debug.log\n")
            await w.until(lambda: bool(w.session.text_nodes("src/debug.log")))
            assert not w.session.text_nodes("src/trace.log")
            (tree / "src" / ".gitignore").write_text("")
            await w.until(lambda: not w.session.text_nodes("src/debug.log"))

    @pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
    async def test_a_file_added_to_the_git_index_is_kept_although_ignored(self, tree: Path) -> None:
        (tree / ".gitignore").write_text("dist/\n")
        (tree / "dist").mkdir()
        (tree / "dist" / "app.py").write_text("APP = 1\n")
        (tree / "dist" / "bundle.js").write_text("bundle\n")
        env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tree.parent), "PATH": os.environ["PATH"]}
        subprocess.run(["git", "init", "-q"], cwd=tree, env=env, check=True)
        async with watching(tree) as w:
            assert not w.session.text_nodes("dist/app.py")
            subprocess.run(["git", "add", "-f", "dist/app.py"], cwd=tree, env=env, check=True)
            await w.until(lambda: bool(w.session.text_nodes("dist/app.py")))
            assert directory_group(w.node("dist/app.py")) == "dist/"
            assert not w.session.text_nodes("dist/bundle.js")
            subprocess.run(
                ["git", "rm", "-q", "--cached", "dist/app.py"], cwd=tree, env=env, check=True
            )
            await w.until(lambda: not w.session.text_nodes("dist/app.py"))
            titles = {n.title for n in w.session.nodes() if isinstance(n, GroupNode)}
            assert "dist/" not in titles

    async def test_a_new_virtualenv_inside_a_tracked_folder_is_dropped(self, tree: Path) -> None:
        async with watching(tree) as w:
            (tree / "env").mkdir()
            (tree / "env" / "tool.py").write_text("T = 1\n")
            await w.until(lambda: bool(w.session.text_nodes("env/tool.py")))
            (tree / "env" / "pyvenv.cfg").write_text("home = /usr\n")
            await w.until(lambda: not w.session.text_nodes("env/tool.py"))
            titles = {n.title for n in w.session.nodes() if isinstance(n, GroupNode)}
            assert "env/" not in titles

    async def test_files_named_in_ignore_and_their_temp_files_make_no_tick(
        self, tree: Path
    ) -> None:
        out = tree / "context.md"
        async with watching(tree, ignore=[out]) as w:
            turn = w.first.turn
            out.write_text("projection\n")
            (tree / ".context.md.x1y2.tmp").write_text("half\n")
            await asyncio.sleep(SETTLE)
            (tree / "README.md").write_text("# Demo, edited\n")
            result = await w.next()
            assert result.turn == turn + 1
            assert not w.session.text_nodes("context.md")


def _dagctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "dagctx.cli", *args]


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stdout lines, read by a thread (so waits can time out)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return lines


class TestCommand:
    def test_once_writes_both_files_and_exits(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["watch", str(tree), "--budget", "2000", "--once"]) == 0
        state = tree / ".dagctx"
        text = (state / "projection.md").read_text()
        account = json.loads((state / "projection.json").read_text())
        assert "def login(user):" in text
        assert account["text"] == text
        assert account["turn"] == 1 and account["budget"] == 2000
        assert {s["node_id"] for s in account["sections"]} >= {"text_1", "group_1"}
        assert account["explain"].splitlines()[0] == "by rendered state:"
        assert sorted(p.name for p in state.iterdir()) == OUTPUTS
        assert "projection.md" in capsys.readouterr().out

    def test_once_replaces_the_file_instead_of_rewriting_it(self, tree: Path) -> None:
        out = tree / "ctx" / "projection.md"
        out.parent.mkdir()  # --out makes no directory outside .dagctx
        assert main(["watch", str(tree), "--budget", "2000", "--once", "--out", str(out)]) == 0
        first = out.stat().st_ino
        (tree / "README.md").write_text("# Changed\n")
        assert main(["watch", str(tree), "--budget", "2000", "--once", "--out", str(out)]) == 0
        assert out.stat().st_ino != first  # a new file renamed over the old one
        assert "# Changed" in out.read_text()
        assert [p.name for p in out.parent.iterdir()] == ["projection.md"]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["missing-dir", "--budget", "100", "--once"], "missing-dir"),
            (["{tree}", "--budget", "100", "--once", "--encoding", "nope"], "nope"),
            (["{tree}", "--budget", "100", "--once", "--out", "{tree}/src"], "src"),
            (["{tree}", "--once", "--out", "{tree}/no/such/dir/p.md"], "does not exist"),
        ],
    )
    def test_bad_input_is_one_line_and_exit_1(
        self,
        tree: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        args: list[str],
        message: str,
    ) -> None:
        monkeypatch.chdir(tree.parent)
        assert main(["watch", *(a.format(tree=tree) for a in args)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("dagctx: error:") and message in err

    def test_out_makes_missing_directories_only_under_dagctx(self, tree: Path) -> None:
        out = tree / ".dagctx" / "views" / "p.md"
        assert main(["watch", str(tree), "--once", "--out", str(out)]) == 0
        assert "def login(user):" in out.read_text()
        assert not (tree / "no").exists()

    def test_an_unknown_encoding_fails_before_any_notice(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["watch", str(tree), "--once"]) == 0  # a session to resume
        capsys.readouterr()
        assert main(["watch", str(tree), "--once", "--encoding", "nope"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("dagctx: error:") and "nope" in err
        assert "resuming" not in err and err.count("\n") == 1

    def test_a_bad_budget_is_a_usage_error(self, tree: Path) -> None:
        with pytest.raises(SystemExit) as exit_info:
            main(["watch", str(tree), "--budget", "0"])
        assert exit_info.value.code == 2

    def test_ctrl_c_exits_0_and_leaves_no_temp_files(self, tree: Path, tmp_path: Path) -> None:
        errors = (tmp_path / "stderr.txt").open("w+")
        process = subprocess.Popen(
            _dagctx("watch", str(tree), "--budget", "2000"),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            # A background job may inherit an ignored SIGINT; Ctrl-C is what we test.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        lines = _lines(process)
        try:
            assert lines.get(timeout=STARTUP).startswith("dagctx watch: watching")
            assert lines.get(timeout=WAIT).startswith("turn 1:")
            (tree / "src" / "auth.py").write_text("def login(user):\n    return 2\n")
            line = lines.get(timeout=WAIT)
            assert line.startswith("turn 2: 1 change (src/auth.py: content changed)")
            assert "return 2" in (tree / ".dagctx" / "projection.md").read_text()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=WAIT) == 0
            assert lines.get(timeout=WAIT) == "dagctx watch: stopped"
        finally:
            if process.poll() is None:
                process.kill()
        errors.seek(0)
        assert "Traceback" not in errors.read()
        assert sorted(p.name for p in (tree / ".dagctx").iterdir()) == OUTPUTS


class TestResume:
    def test_a_second_run_resumes_ids_and_turns_and_sees_what_changed_meanwhile(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = ["watch", str(tree), "--budget", "2000", "--once"]
        assert main(args) == 0
        with Session.load(root=tree) as saved:
            ids = {p: saved.text_nodes(p)[0].id for p in ("src/auth.py", "src/db.py")}
        (tree / "src" / "db.py").unlink()
        (tree / "src" / "auth.py").write_text("def login(user):\n    return 5\n")
        (tree / "src" / "new.py").write_text("NEW = 1\n")
        assert main([*args[:2], "--budget", "3000", "--once"]) == 0
        assert "resuming after turn 1" in capsys.readouterr().err
        account = json.loads((tree / ".dagctx" / "projection.json").read_text())
        assert account["turn"] == 2 and account["budget"] == 3000
        assert "return 5" in account["text"]  # read again on resume
        assert f"### src/db.py (#{ids['src/db.py']})\n[file deleted]" in account["text"]
        with Session.load(root=tree) as resumed:
            assert resumed.turn == 2
            assert resumed.text_nodes("src/auth.py")[0].id == ids["src/auth.py"]
            (new,) = resumed.text_nodes("src/new.py")
        changes = {(c["node_id"], c["description"]) for c in account["changes"]}
        assert {(new.id, "file created"), (ids["src/db.py"], "file deleted")} <= changes
        assert main(args) == 0  # the next tick removes what the last one showed deleted
        with Session.load(root=tree) as third:
            assert third.turn == 3 and not third.text_nodes("src/db.py")
            assert third.text_nodes("src/auth.py")[0].id == ids["src/auth.py"]

    def test_a_session_file_that_does_not_load_is_set_aside(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tree / ".dagctx").mkdir()
        (tree / ".dagctx" / "session.db").write_bytes(b"not a database")
        assert main(["watch", str(tree), "--budget", "2000", "--once"]) == 0
        assert "not resuming from" in capsys.readouterr().err
        assert json.loads((tree / ".dagctx" / "projection.json").read_text())["turn"] == 1
        aside = tree / ".dagctx" / "session.db.unreadable"
        assert aside.read_bytes() == b"not a database"  # kept for inspection, not lost
        with Session.load(root=tree) as saved:  # a new, good save
            assert saved.turn == 1


class TestLiveView:
    def test_the_panel_shows_budget_sections_changes_and_latency(self, tree: Path) -> None:
        console = Console(file=StringIO(), force_terminal=True, width=120, record=True)
        with Session(tree, budget=4000) as session:
            scan_tree(session, ".")
            outputs = Outputs.for_session(session, None)
            view = LiveView(session, outputs, console)
            view.update(session.tick(), 0.001)
            (tree / "src" / "db.py").write_text("class Store:\n    rows = [2]\n")
            session.file_changed("src/db.py")
            view.update(session.tick(), 0.002)
            view.close()
        screen = console.export_text()
        assert "first scan: 3 files" in screen
        assert "src/db.py: content changed" in screen
        assert "/4,000 tokens" in screen and "0 left out" in screen
        assert "write 2.0 ms" in screen
