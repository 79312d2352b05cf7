"""Ignore rules against git itself: on a fixture repository and on random small trees,
dagctx keeps exactly the files ``git ls-files --cached --others --exclude-standard`` lists
and enters exactly the directories git does not ignore (``git check-ignore``) or that hold
a kept file. Git runs with no user or system configuration (no global excludes file)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx.nodes.text import TextNode
from dagctx.session import Session
from dagctx.watch import ignore as ignore_module
from dagctx.watch.ignore import TreeFilter
from dagctx.watch.patterns import compile_line
from dagctx.watch.scan import scan_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    home = root.parent / "git-home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, input=stdin, capture_output=True, check=False
    )
    if done.returncode not in (0, 1):  # check-ignore exits 1 when nothing is ignored
        raise AssertionError(done.stderr.decode())
    return done.stdout


def split(output: bytes) -> set[str]:
    return {p for p in output.decode().split("\0") if p}


def all_dirs(root: Path) -> set[str]:
    found = set()
    for directory, names, _files in os.walk(root):
        names[:] = [n for n in names if n != ".git"]
        for name in names:
            found.add((Path(directory) / name).relative_to(root).as_posix())
    return found


def parents(paths: set[str]) -> set[str]:
    found = set()
    for path in paths:
        while "/" in path:
            path = path.rpartition("/")[0]
            found.add(path)
    return found


def git_view(root: Path) -> tuple[set[str], set[str]]:
    """(files git keeps, directories git does not ignore or that hold a kept file)."""
    files = split(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))
    dirs = all_dirs(root)
    ignored = split(git(root, "check-ignore", "-z", "--stdin", stdin="\0".join(dirs).encode()))
    return files, (dirs - ignored) | parents(files)


def dagctx_view(root: Path) -> tuple[set[str], set[str]]:
    files, dirs = set(), set()
    for rel, is_dir in TreeFilter(root).walk(root):
        (dirs if is_dir else files).add(rel)
    return files, dirs


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


FIXTURE = {
    ".gitignore": textwrap.dedent("""\
        # comment
        *.log
        !important.log
        build/
        !build/keep.txt
        /dist
        env/
        **/tmp/**
        docs/**/*.html
        secret*
        !/keep/secret.txt
        node_modules
        """)
    + "trailing\\ \n",  # an escaped trailing space is kept
    "app.log": "x",
    "important.log": "x",
    "tracked.log": "x",
    "trailing ": "x",
    "README.md": "x",
    "x.bak": "x",
    "src/main.py": "x",
    "src/debug.log": "x",
    "src/important.log": "x",
    "src/.gitignore": "!debug.log\n*.tmp\n!keep.tmp\n/local/\n",
    "src/a.tmp": "x",
    "src/keep.tmp": "x",
    "src/local/x.py": "x",
    "src/sub/local/x.py": "x",
    "src/sub/.gitignore": "debug.log\n!*.log\n",
    "src/sub/debug.log": "x",
    "src/sub/deeper/.gitignore": "*.log\n",
    "src/sub/deeper/debug.log": "x",
    "src/dist/bundle.js": "x",
    "build/out.txt": "x",
    "build/keep.txt": "x",
    "dist/bundle.js": "x",
    "dist/app.py": "x",
    "env/lib/real.py": "x",
    "env/lib/other.py": "x",
    "env/.gitignore": "!other.py\n",
    "a/tmp/x.txt": "x",
    "a/tmp/y/z.txt": "x",
    "a/b.txt": "x",
    "docs/page.html": "x",
    "docs/guide/page.html": "x",
    "docs/guide/page.md": "x",
    "secret.txt": "x",
    "keep/secret.txt": "x",
    "keep/secret.md": "x",
    "node_modules/pkg/index.js": "x",
    "node_modules/pkg/package.json": "x",
    "data/.gitignore": "*\n!.gitignore\n!*/\n!*.csv\n",
    "data/a.csv": "x",
    "data/a.json": "x",
    "data/sub/b.csv": "x",
    "data/sub/b.json": "x",
    "empty/.keep": "",
}
TRACKED_ALTHOUGH_IGNORED = [
    "tracked.log",
    "dist/app.py",
    "env/lib/real.py",
    "node_modules/pkg/package.json",
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root, FIXTURE)
    git(root, "init", "-q")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("*.bak\n")
    git(root, "add", "-f", *TRACKED_ALTHOUGH_IGNORED)
    return root


class TestAgainstGit:
    def test_kept_files_and_entered_directories_equal_gits(self, repo: Path) -> None:
        files, dirs = dagctx_view(repo)
        assert (files, dirs) == git_view(repo)
        # What the fixture is about, spelled out.
        assert {"src/debug.log", "src/sub/deeper/debug.log"} & files == {"src/debug.log"}
        assert "build/keep.txt" not in files  # under an excluded directory
        assert "env/lib/other.py" not in files  # env/.gitignore is not read
        assert set(TRACKED_ALTHOUGH_IGNORED) <= files
        assert {"data/a.csv", "data/sub/b.csv"} <= files and "data/a.json" not in files
        assert "x.bak" not in files  # .git/info/exclude

    def test_the_scan_takes_in_the_same_files(self, repo: Path) -> None:
        expected = git_view(repo)[0]
        with Session(repo, budget=4000) as session:
            scan_tree(session, ".")
            paths = {n.path for n in session.nodes() if isinstance(n, TextNode)}
        assert paths == expected

    def test_a_subdirectory_tree_sees_the_rules_above_it(self, repo: Path) -> None:
        files, _ = git_view(repo)
        below = {f.removeprefix("src/") for f in files if f.startswith("src/")}
        assert dagctx_view(repo / "src")[0] == below

    def test_without_a_repository_the_rules_alone_decide(self, repo: Path) -> None:
        shutil.rmtree(repo / ".git")
        files, _ = dagctx_view(repo)
        assert not set(TRACKED_ALTHOUGH_IGNORED) & files
        assert "x.bak" in files and "src/debug.log" in files

    def test_skipped_names_stay_skipped_even_if_tracked(self, repo: Path) -> None:
        write(
            repo,
            {"venv/pyvenv.cfg": "home = /usr\n", "venv/lib.py": "x", "p/__pycache__/m.py": "x"},
        )
        git(repo, "add", "-f", "venv/lib.py", "p/__pycache__/m.py")
        files, dirs = dagctx_view(repo)
        assert not {"venv/lib.py", "p/__pycache__/m.py"} & files
        assert "venv" not in dirs

    def test_a_worktree_or_submodule_git_file_is_not_content(self, repo: Path) -> None:
        write(repo, {"sub/.git": "gitdir: ../.git/modules/sub\n", "sub/m.py": "x"})
        files, _ = dagctx_view(repo)
        assert "sub/m.py" in files and "sub/.git" not in files
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tracked")
        worktree = repo.parent / "worktree"
        git(repo, "worktree", "add", "-q", "--detach", str(worktree))
        assert (worktree / ".git").is_file()
        files, _ = dagctx_view(worktree)
        assert set(TRACKED_ALTHOUGH_IGNORED) <= files and ".git" not in files


HOSTILE = [
    "**********",
    "a*a*a*a*a*a*a*a*a*b",
    "**/a*a*a*a*a*a*a*a*a*b/**",
    "*a*a*a*a*a*a*a*a*a*",
]


class TestPatternCost:
    @pytest.mark.parametrize("line", HOSTILE)
    def test_hostile_patterns_match_in_linear_time(self, line: str) -> None:
        pattern = compile_line(line)
        assert pattern is not None
        name = "a" * 200
        script = (
            "from dagctx.watch.patterns import compile_line\n"
            f"p = compile_line({line!r})\n"
            f"print(p.matches({(name + '/' + name)!r}, {name!r}, False))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, timeout=60, check=True
        )
        assert done.stdout.strip() in (b"True", b"False")

    def test_a_scan_with_hostile_patterns_finishes(self, tmp_path: Path) -> None:
        # Every name is ignored by the first line; directories are re-included, and the
        # patterns after that (checked first, as git does) never match a name of "a"s.
        lines = ["**********", "!*/", "a*a*a*a*a*a*a*a*a*b", "**/a*a*a*a*a*a*a*a*a*b/**"]
        write(tmp_path, {".gitignore": "\n".join([*lines, "*a*a*a*a*a*a*a*a*a*c"]) + "\n"})
        for depth in range(3):
            write(tmp_path, {"/".join(["a" * 120] * (depth + 1)) + "/" + "a" * 200: "x"})
        script = (
            "import sys\nfrom pathlib import Path\nfrom dagctx.watch.ignore import TreeFilter\n"
            "root = Path(sys.argv[1])\nprint(sum(1 for _ in TreeFilter(root).walk(root)))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            timeout=60,
            check=True,
        )
        assert int(done.stdout) == 3  # the three directories


# -- random trees ----------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "ab", "x.log", "a.py", "tmp"])
SEGMENTS = st.sampled_from(
    ["a", "b", "ab", "*", "**", "a*", "*.log", "?b", "[ab]", "[!a]*", "x.*", "tmp", "***"]
)


@st.composite
def lines(draw: st.DrawFn) -> str:
    body = "/".join(draw(st.lists(SEGMENTS, min_size=1, max_size=3)))
    lead = draw(st.sampled_from(["", "/", "**/"]))
    trail = draw(st.sampled_from(["", "/"]))
    return draw(st.sampled_from(["", "!"])) + lead + body + trail


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[int]]:
    paths = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
    dirs = ["", *draw(st.lists(paths, max_size=5, unique=True))]
    files = sorted(
        {
            f"{d}/{n}" if d else n
            for d, n in draw(st.lists(st.tuples(st.sampled_from(dirs), NAMES), max_size=12))
        }
    )
    ignores = {
        d: draw(st.lists(lines(), min_size=1, max_size=4))
        for d in draw(st.lists(st.sampled_from(dirs), max_size=3, unique=True))
    }
    tracked = draw(st.lists(st.integers(0, 20), max_size=3))
    return files, ignores, tracked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_random_trees_agree_with_git(
    tree: tuple[list[str], dict[str, list[str]], list[int]],
) -> None:
    files, ignores, tracked = tree
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        made = []
        for rel in files:
            path = root / rel
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("x")
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                continue  # a name used both as a file and as a directory
            made.append(rel)
        for directory, patterns in ignores.items():
            target = root / directory
            if target.is_dir():
                (target / ".gitignore").write_text("\n".join(patterns) + "\n")
        git(root, "init", "-q")
        chosen = sorted({made[i % len(made)] for i in tracked} if made else set())
        if chosen:
            git(root, "add", "-f", *chosen)
        assert dagctx_view(root) == git_view(root)


class TestPlainDirectories:
    def test_a_walk_asks_the_rules_only_where_a_rule_is_in_force(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for directory in ("a", "b"):
            (tmp_path / directory).mkdir()
            for name in ("keep.py", "skip.log", "__pycache__"):
                (tmp_path / directory / name).write_text("x\n")
        (tmp_path / "b" / ".gitignore").write_text("*.log\n")
        asked: list[str] = []
        original = TreeFilter._keeps_file_in

        def counting(self: TreeFilter, state: object, rel_dir: str, rel: str, name: str) -> bool:
            asked.append(rel)
            return original(self, state, rel_dir, rel, name)  # type: ignore[arg-type]

        monkeypatch.setattr(TreeFilter, "_keeps_file_in", counting)
        walked = {rel for rel, is_dir in TreeFilter(tmp_path).walk(tmp_path) if not is_dir}
        assert walked == {"a/keep.py", "a/skip.log", "b/.gitignore", "b/keep.py"}
        assert asked and all(rel.startswith("b/") for rel in asked)

    def test_a_walk_opens_only_the_ignore_files_its_listings_hold(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for directory in ("a", "a/deep", "b"):
            (tmp_path / directory).mkdir()
            (tmp_path / directory / "keep.py").write_text("x\n")
            (tmp_path / directory / "skip.log").write_text("x\n")
        (tmp_path / "b" / ".gitignore").write_text("*.log\n")
        read: list[str] = []
        original = ignore_module.read_patterns

        def counting(path: Path) -> object:
            read.append(path.relative_to(tmp_path).as_posix())
            return original(path)

        monkeypatch.setattr(ignore_module, "read_patterns", counting)
        walked = {rel for rel, is_dir in TreeFilter(tmp_path).walk(tmp_path) if not is_dir}
        assert walked == {"a/keep.py", "a/skip.log", "a/deep/keep.py", "a/deep/skip.log"} | {
            "b/.gitignore",
            "b/keep.py",
        }
        assert read == ["b/.gitignore"]  # not one failed open per directory

    def test_a_walk_with_stats_yields_the_directories_and_stats_each_file_it_takes(
        self, tmp_path: Path
    ) -> None:
        write(tmp_path, FIXTURE)
        (tmp_path / "gone").symlink_to(tmp_path / "nowhere")  # a symlink: taken by neither
        files, dirs = dagctx_view(tmp_path)
        stats: dict[str, os.stat_result | None] = {}
        yielded = list(TreeFilter(tmp_path).walk(tmp_path, stats))
        assert all(is_dir for _, is_dir in yielded)
        assert {rel for rel, _ in yielded} == dirs
        assert stats.keys() == files
        for rel, result in stats.items():
            assert result is not None
            assert (result.st_ino, result.st_size) == (
                os.lstat(tmp_path / rel).st_ino,
                os.lstat(tmp_path / rel).st_size,
            )

    def test_an_ignored_output_makes_only_its_own_directory_ask_the_rules(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for directory in ("a", "b", "b/deep"):
            (tmp_path / directory).mkdir()
            (tmp_path / directory / "keep.py").write_text("x\n")
        out = tmp_path / "b" / "out.md"
        out.write_text("the projection\n")
        (tmp_path / "b" / ".out.md.1234.tmp").write_text("being written\n")
        (tmp_path / "b" / ".other.md.1.tmp").write_text("someone else's\n")
        asked: list[str] = []
        original = TreeFilter._keeps_file_in

        def counting(self: TreeFilter, state: object, rel_dir: str, rel: str, name: str) -> bool:
            asked.append(rel)
            return original(self, state, rel_dir, rel, name)  # type: ignore[arg-type]

        monkeypatch.setattr(TreeFilter, "_keeps_file_in", counting)
        keep = TreeFilter(tmp_path, ignore=[out])
        walked = {rel for rel, is_dir in keep.walk(tmp_path) if not is_dir}
        assert walked == {"a/keep.py", "b/keep.py", "b/deep/keep.py", "b/.other.md.1.tmp"}
        assert asked and all(rel.startswith("b/") and rel.count("/") == 1 for rel in asked)
        assert not keep.keeps_file("b/out.md") and keep.keeps_file("a/keep.py")
