"""Steering without Python: ``--include`` / ``--exclude`` / ``--priority`` / ``--state`` (and
``--focus``, ``--budget``, ``--encoding``) on ``dagctx render``, ``watch`` and ``mcp``, and
the same settings from ``.dagctx/config.toml`` and ``[tool.dagctx]`` in ``pyproject.toml``.

Rendering runs ``dagctx`` as a real subprocess and reads what the projection shows; the
watcher runs on real file events (``tests/test_watch.py``'s helpers); ``dagctx mcp`` is
driven by the official MCP SDK client (``tests/test_mcp_session.py``'s helpers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_ignore import NAMES, git, lines, split
from test_mcp_session import SCENARIO_TIMEOUT, Updates, subscribe
from test_watch import WAIT, watching
from watchfiles import Change

from dagctx.cli import main
from dagctx.cli.settings import load_settings
from dagctx.errors import ArgumentError, SettingsError
from dagctx.nodes.base import NodeState
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode
from dagctx.session import Session
from dagctx.watch.ignore import Globs, TreeFilter
from dagctx.watch.patterns import Pattern, compile_line
from dagctx.watch.scan import scan_tree
from dagctx.watch.steering import PRIORITY_TAG, STATE_TAG, Steering
from dagctx.watch.tracker import TreeTracker

README = Path(__file__).resolve().parent.parent / "README.md"


def dagctx(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dagctx.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def render(root: Path, *args: str) -> dict[str, Any]:
    """``dagctx render ROOT ARGS --format json``, parsed."""
    result = dagctx("render", str(root), "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def shown(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each file section's label -> (requested state, rendered state)."""
    return {
        s["label"]: (s["requested_state"], s["rendered_state"])
        for s in data["sections"]
        if not s["label"].endswith("/")
    }


def functions(prefix: str, count: int = 20) -> str:
    return "".join(
        f'def {prefix}_{k}(x):\n    """Step {k}."""\n    return x * {k} + {k}\n\n\n'
        for k in range(count)
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in {
        "src/app.py": "def main():\n    return 'app'\n",
        "src/util.py": "def helper():\n    return 'util'\n",
        "src/gen/parser.py": "TABLE = 'generated'\n",
        "tests/test_app.py": "def test_main():\n    assert True\n",
        "docs/guide.md": "# Guide\n\nHow to use it.\n",
        "README.md": "# Repo\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def twins(tmp_path: Path) -> Path:
    """Two files of the same size, too big to both fit in 400 tokens."""
    root = tmp_path / "twins"
    root.mkdir()
    (root / "a.py").write_text(functions("a"))
    (root / "b.py").write_text(functions("b"))
    return root


class TestRenderFlags:
    def test_exclude_removes_files_and_directories(self, tree: Path) -> None:
        data = render(tree, "--exclude", "tests/", "--exclude", "*.md", "--exclude", "src/gen")
        assert set(shown(data)) == {"src/app.py", "src/util.py"}
        assert "test_main" not in data["text"] and "Guide" not in data["text"]
        assert "tests/" not in data["text"] and "src/gen/" not in data["text"]

    def test_exclude_beats_what_git_tracks(self, tree: Path) -> None:
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], cwd=tree, check=True)
        (tree / ".gitignore").write_text("src/gen/\n")
        subprocess.run([*git, "add", "-f", "."], cwd=tree, check=True)
        assert "src/gen/parser.py" in shown(render(tree))  # tracked: kept despite .gitignore
        assert set(shown(render(tree, "--exclude", "src/"))) == {
            ".gitignore",
            "README.md",
            "docs/guide.md",
            "tests/test_app.py",
        }

    def test_a_negated_exclude_takes_a_file_back(self, tree: Path) -> None:
        data = render(tree, "--exclude", "src/*.py", "--exclude", "!src/app.py")
        assert "src/app.py" in shown(data) and "src/util.py" not in shown(data)

    def test_include_keeps_only_matching_files_and_their_directories(self, tree: Path) -> None:
        data = render(tree, "--include", "src/", "--include", "!src/gen/", "--include", "*.md")
        assert set(shown(data)) == {"src/app.py", "src/util.py", "README.md", "docs/guide.md"}
        groups = {s["label"] for s in data["sections"] if s["label"].endswith("/")}
        assert groups == {"repo/", "src/", "docs/"}  # no empty tests/ or src/gen/
        assert "## tests/" not in data["text"]

    def test_include_and_exclude_together(self, tree: Path) -> None:
        data = render(tree, "--include", "*.py", "--exclude", "tests/")
        assert set(shown(data)) == {"src/app.py", "src/util.py", "src/gen/parser.py"}

    def test_priority_decides_what_degrades_first(self, twins: Path) -> None:
        for kept, degraded in (("a.py", "b.py"), ("b.py", "a.py")):
            data = render(twins, "--budget", "400", "--priority", f"{kept}=90")
            states = shown(data)
            assert states[kept] == ("DETAILS", "DETAILS"), states
            assert NodeState[states[degraded][1]] < NodeState.DETAILS, states
            assert data["tokens"] <= 400

    def test_a_lower_priority_degrades_first(self, twins: Path) -> None:
        for low, high in (("a.py", "b.py"), ("b.py", "a.py")):
            states = shown(render(twins, "--budget", "400", "--priority", f"{low}=-5"))
            assert NodeState[states[low][1]] < NodeState[states[high][1]], states

    def test_state_pins_a_file(self, twins: Path) -> None:
        data = render(twins, "--state", "a.py=summary", "--state", "b.py=ALL")
        assert shown(data) == {"a.py": ("SUMMARY", "SUMMARY"), "b.py": ("ALL", "ALL")}
        a_section = data["text"].split("### b.py")[0]
        assert "def a_3(x):" in a_section and "return x * 3 + 3" not in a_section
        assert "(100 lines; outline)" in a_section
        data = render(twins, "--state", "*.py=hidden", "--state", "b.py=collapsed")
        assert shown(data) == {"b.py": ("COLLAPSED", "COLLAPSED")}

    def test_the_last_matching_rule_wins(self, tree: Path) -> None:
        data = render(tree, "--state", "src/=summary", "--state", "src/app.py=collapsed")
        states = shown(data)
        assert states["src/app.py"][0] == "COLLAPSED"
        assert states["src/util.py"][0] == states["src/gen/parser.py"][0] == "SUMMARY"
        assert states["README.md"][0] == "DETAILS"

    def test_help_shows_the_options(self) -> None:
        for command in ("render", "watch", "mcp", "viz"):
            out = dagctx(command, "--help").stdout
            for option in ("--include GLOB", "--exclude GLOB", "--priority GLOB=N"):
                assert option in out, (command, option)
            assert "--state GLOB=STATE" in out and "--focus" in out
            assert "[tool.dagctx]" in out and ".dagctx/config.toml" in out


def write_config(root: Path, text: str) -> None:
    (root / ".dagctx").mkdir(exist_ok=True)
    (root / ".dagctx" / "config.toml").write_text(text)


class TestConfigFiles:
    def test_config_toml(self, tree: Path) -> None:
        write_config(
            tree,
            'exclude = ["tests/"]\ninclude = "*.py"\nbudget = 1234\n'
            '[state]\n"src/util.py" = "summary"\n',
        )
        data = render(tree)
        assert data["budget"] == 1234
        assert set(shown(data)) == {"src/app.py", "src/util.py", "src/gen/parser.py"}
        assert shown(data)["src/util.py"][0] == "SUMMARY"

    def test_pyproject(self, tree: Path) -> None:
        (tree / "pyproject.toml").write_text(
            '[project]\nname = "repo"\n\n[tool.dagctx]\nexclude = ["docs/", "tests/"]\n'
            'budget = 777\n[tool.dagctx.priority]\n"src/**" = 90\n'
        )
        data = render(tree)
        assert data["budget"] == 777
        assert set(shown(data)) == {"src/app.py", "src/util.py", "src/gen/parser.py",
                                    "README.md", "pyproject.toml"}  # fmt: skip

    def test_pyproject_without_a_dagctx_table_changes_nothing(self, tree: Path) -> None:
        (tree / "pyproject.toml").write_text('[project]\nname = "repo"\n')
        assert len(shown(render(tree))) == 7

    def test_precedence_command_line_over_config_over_pyproject(self, tree: Path) -> None:
        (tree / "pyproject.toml").write_text(
            '[tool.dagctx]\nbudget = 100\nfocus = "parser"\n'
            '[tool.dagctx.state]\n"src/app.py" = "summary"\n"README.md" = "collapsed"\n'
        )
        write_config(tree, 'budget = 2000\n[state]\n"src/app.py" = "hidden"\n')
        data = render(tree)
        assert data["budget"] == 2000  # config.toml over pyproject
        states = shown(data)
        assert "src/app.py" not in states  # config.toml's rule wins for the same file
        assert states["README.md"][0] == "COLLAPSED"  # pyproject's rule still applies
        data = render(tree, "--budget", "3000", "--state", "src/app.py=all")
        assert data["budget"] == 3000
        assert shown(data)["src/app.py"][0] == "ALL"

    def test_lists_merge_and_a_higher_place_takes_a_pattern_back(self, tree: Path) -> None:
        (tree / "pyproject.toml").write_text('[tool.dagctx]\nexclude = ["tests/", "*.md"]\n')
        write_config(tree, 'exclude = ["src/gen/"]\n')
        files = set(shown(render(tree)))
        assert files == {"src/app.py", "src/util.py", "pyproject.toml"}
        files = set(shown(render(tree, "--exclude", "!README.md", "--exclude", "src/util.py")))
        assert files == {"src/app.py", "README.md", "pyproject.toml"}

    def test_focus_from_a_config_file(self, tmp_path: Path) -> None:
        root = tmp_path / "focus"
        root.mkdir()
        for name in ("alpha", "beta", "gamma", "delta"):
            (root / f"{name}.py").write_text(functions(name, 12))
        focused = shown(render(root, "--budget", "700", "--focus", "gamma_3"))
        write_config(root, 'focus = "gamma_3"\n')
        assert shown(render(root, "--budget", "700")) == focused
        assert focused["gamma.py"][1] in ("DETAILS", "ALL")

    def test_the_settings_object(self, tree: Path) -> None:
        (tree / "pyproject.toml").write_text('[tool.dagctx]\nencoding = "cl100k_base"\n')
        settings = load_settings(args(tree, priority=["*.md=7"]))
        assert settings.encoding == "cl100k_base" and settings.budget == 8000
        assert settings.focus is None
        assert settings.steering.node_fields("docs/guide.md") == {
            "priority": 7,
            "tags": {PRIORITY_TAG},
        }
        assert settings.steering.node_fields("src/app.py") == {}


def args(root: Path, **given: object) -> argparse.Namespace:
    values: dict[str, object] = dict.fromkeys(
        ("budget", "encoding", "focus", "include", "exclude", "priority", "state")
    )
    values.update(given)
    return argparse.Namespace(path=str(root), **values)


class TestBadSettings:
    @pytest.mark.parametrize(
        ("flags", "names"),
        [
            (["--priority", "x"], ["--priority 'x'", "GLOB=N"]),
            (["--priority", "=5"], ["--priority '=5'", "GLOB=N"]),
            (["--priority", "src/**=high"], ["--priority 'src/**=high'", "'high'", "integer"]),
            (["--priority", "!a.py=3"], ["'!a.py'", "negated"]),
            (["--state", "a.py=loud"], ["--state 'a.py=loud'", "'loud'", "summary"]),
            (["--state", "a.py"], ["--state 'a.py'", "GLOB=STATE"]),
            (["--exclude", "#notes"], ["--exclude '#notes'", "not a glob"]),
            (["--include", "[z-"], ["--include '[z-'", "not a glob"]),
        ],
    )
    def test_a_bad_flag_is_one_line_and_exit_2(
        self, tree: Path, flags: list[str], names: list[str]
    ) -> None:
        result = dagctx("render", str(tree), *flags)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("dagctx: error: ")
        for name in names:
            assert name in result.stderr, result.stderr

    @pytest.mark.parametrize(
        ("config", "pyproject", "names"),
        [
            ('budget = 10\nexclude = ["a"\n', None, ["config.toml:2", "not valid TOML"]),
            ("budjet = 10\n", None, ["config.toml", "unknown key 'budjet'", "budget"]),
            ('[priority]\n"src/**" = "high"\n', None, ['config.toml priority."src/**"', "'high'"]),
            ("[priority]\nsrc = 1.5\n", None, ["config.toml priority.src", "1.5"]),
            ('[state]\n"*.md" = "loud"\n', None, ['config.toml state."*.md"', "'loud'"]),
            ("budget = 0\n", None, ["config.toml budget", "positive integer", "0"]),
            ("budget = true\n", None, ["config.toml budget", "True"]),
            ('encoding = "nope"\n', None, ["config.toml encoding", "nope"]),
            ("exclude = [1]\n", None, ["config.toml exclude", "[1]"]),
            ("priority = 3\n", None, ["config.toml priority", "table"]),
            (None, "[tool.dagctx]\ncolour = 1\n", ["pyproject.toml [tool.dagctx]", "'colour'"]),
            (None, "[tool.dagctx\n", ["pyproject.toml:1", "not valid TOML"]),
            (None, "[tool]\ndagctx = 3\n", ["pyproject.toml [tool.dagctx]", "table"]),
            (None, '[tool.dagctx.state]\n"a" = 3\n', ["pyproject.toml [tool.dagctx] state.a", "3"]),
            (b"\xff\xfe", None, ["config.toml", "UTF-8"]),
        ],
    )
    def test_a_bad_config_file_is_one_line_and_exit_2_and_nothing_starts(
        self,
        tree: Path,
        capsys: pytest.CaptureFixture[str],
        config: str | bytes | None,
        pyproject: str | None,
        names: list[str],
    ) -> None:
        if isinstance(config, bytes):
            (tree / ".dagctx").mkdir()
            (tree / ".dagctx" / "config.toml").write_bytes(config)
        elif config is not None:
            write_config(tree, config)
        if pyproject is not None:
            (tree / "pyproject.toml").write_text(pyproject)
        for command in (["render"], ["watch", "--once"]):
            assert main([*command, str(tree)]) == 2
            captured = capsys.readouterr()
            assert captured.out == "" and captured.err.count("\n") == 1, captured
            for name in names:
                assert name in captured.err, captured.err
        state = tree / ".dagctx"
        assert not state.exists() or [p.name for p in state.iterdir()] == ["config.toml"]

    def test_an_unreadable_config_file(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        write_config(tree, "budget = 10\n")
        (tree / ".dagctx" / "config.toml").chmod(0)
        try:
            if (tree / ".dagctx" / "config.toml").read_bytes():
                pytest.skip("running as root: the file stays readable")
        except PermissionError:
            pass
        try:
            assert main(["render", str(tree)]) == 2
        finally:
            (tree / ".dagctx" / "config.toml").chmod(0o644)
        err = capsys.readouterr().err
        assert "config.toml: cannot be read" in err and err.count("\n") == 1

    def test_mcp_refuses_before_serving(self, tree: Path) -> None:
        result = dagctx("mcp", str(tree), "--state", "*.py=loud")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == (
            "dagctx: error: --state '*.py=loud': unknown state 'loud'; expected one of"
            " hidden, collapsed, summary, details, all\n"
        )
        assert not (tree / ".dagctx").exists()

    def test_the_error_carries_the_value_and_where_it_came_from(self, tree: Path) -> None:
        with pytest.raises(SettingsError) as raised:
            load_settings(args(tree, priority=["a.py=1", "b.py=lots"]))
        error = raised.value
        assert isinstance(error, ArgumentError) and isinstance(error, ValueError)
        assert (error.value, error.name, error.source) == (
            "lots",
            "priority",
            "--priority 'b.py=lots'",
        )
        write_config(tree, '[state]\n"docs/**" = "big"\n')
        with pytest.raises(SettingsError) as raised:
            load_settings(args(tree))
        error = raised.value
        assert (error.value, error.name) == ("big", "state")
        assert error.source == f'{tree}/.dagctx/config.toml state."docs/**"'


class TestSteeringObject:
    def test_rules_apply_to_a_file_or_its_directories_last_wins(self) -> None:
        def glob(text: str) -> Any:
            pattern = compile_line(text)
            assert pattern is not None
            return pattern

        steering = Steering.of(
            priority=[(glob("src/"), 70), (glob("*.md"), 10), (glob("src/gen/**"), 5)],
            state=[(glob("/docs"), NodeState.SUMMARY)],
        )

        def rules(rel: str) -> dict[str, Any]:
            fields = steering.node_fields(rel)
            fields.pop("tags", None)
            return fields

        assert rules("src/a.py") == {"priority": 70}
        assert rules("src/gen/deep/p.py") == {"priority": 5}
        assert rules("src/README.md") == {"priority": 10}
        assert rules("docs/x/y.txt") == {"state": NodeState.SUMMARY}
        assert steering.node_fields("docs/x/y.txt")["tags"] == {STATE_TAG}
        assert rules("other/docs/y.txt") == {}  # anchored to the root


# -- random trees: exclude is git's ignore rule; the watcher agrees with the scan ---------


@st.composite
def random_files(draw: st.DrawFn) -> list[str]:
    paths = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
    dirs = ["", *draw(st.lists(paths, max_size=5, unique=True))]
    pairs = draw(st.lists(st.tuples(st.sampled_from(dirs), NAMES), max_size=12))
    return sorted({f"{d}/{n}" if d else n for d, n in pairs})


def make(root: Path, files: list[str]) -> list[str]:
    """Write the files that fit (a name used as a file and a directory is skipped)."""
    made = []
    for rel in files:
        try:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"text of {rel}\n")
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue
        made.append(rel)
    return made


def compiled(texts: list[str], *, positive: bool = False) -> list[Pattern]:
    patterns = (compile_line(t.lstrip("!") if positive else t) for t in texts)
    return [p for p in patterns if p is not None]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_files(), st.lists(lines(), min_size=1, max_size=4))
def test_exclude_is_an_ignore_rule_as_git_applies_it(files: list[str], excludes: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        make(root, files)
        git(root, "init", "-q")
        rules = Path(tmp) / "exclude"
        rules.write_text("\n".join(excludes) + "\n")
        expected = split(git(root, "ls-files", "-z", "--others", f"--exclude-from={rules}"))
        keep = TreeFilter(root, exclude=Globs(tuple(compiled(excludes))))
        assert {rel for rel, is_dir in keep.walk(root) if not is_dir} == expected


def fields_by_path(session: Session) -> dict[str, tuple[NodeState, int]]:
    return {
        n.path: (n.state, n.priority)
        for n in session.nodes()
        if isinstance(n, TextNode) and n.placeholder is None
    }


def group_titles(session: Session) -> list[str]:
    return sorted(n.title or "" for n in session.nodes() if isinstance(n, GroupNode))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    random_files(),
    st.lists(lines(), max_size=3),
    st.lists(lines(), max_size=3),
    st.lists(st.tuples(lines(), st.integers(-5, 99)), max_size=3),
    st.lists(st.tuples(lines(), st.sampled_from(list(NodeState))), max_size=3),
)
def test_files_that_appear_later_are_steered_as_the_scan_steers(
    files: list[str],
    include: list[str],
    exclude: list[str],
    priority: list[tuple[str, int]],
    state: list[tuple[str, NodeState]],
) -> None:
    steering = Steering.of(
        include=compiled(include),
        exclude=compiled(exclude),
        priority=[(p, n) for g, n in priority for p in compiled([g], positive=True)],
        state=[(p, v) for g, v in state for p in compiled([g], positive=True)],
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        with Session(root, budget=4000) as later:
            tracker = TreeTracker(later, ".", steering=steering)
            tracker.load()
            later.tick()
            made = make(root, files)
            top_dirs = {(root / rel.split("/")[0]) for rel in made}
            events = {(Change.added, str(p)) for p in top_dirs}
            plan = tracker.plan(events)
            later.queue_result(lambda: tracker.apply(plan))
            later.tick()
            with Session(root, budget=4000) as scanned:
                scan_tree(scanned, ".", steering=steering)
                assert fields_by_path(later) == fields_by_path(scanned)
                assert group_titles(later) == group_titles(scanned)  # no empty groups either


# -- watching: files that appear later get the same settings -----------------------------


def steering_for(tree: Path, **given: object) -> Steering:
    return load_settings(args(tree, **given)).steering


@pytest.mark.anyio
class TestWatch:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    async def test_a_file_created_after_the_start_gets_its_priority_and_state(
        self, tree: Path
    ) -> None:
        steering = steering_for(
            tree, priority=["src/**=80"], state=["*.md=summary", "notes/=collapsed"]
        )
        async with watching(tree, steering=steering) as w:
            assert w.node("src/app.py").priority == 80
            assert w.node("docs/guide.md").state is NodeState.SUMMARY
            (tree / "src" / "late.py").write_text("LATE = 1\n")
            (tree / "notes").mkdir()
            (tree / "notes" / "todo.txt").write_text("later\n")
            (tree / "NEWS.md").write_text("# News\n")
            await w.until(
                lambda: all(
                    w.session.text_nodes(p) for p in ("src/late.py", "notes/todo.txt", "NEWS.md")
                )
            )
            assert w.node("src/late.py").priority == 80
            assert w.node("notes/todo.txt").state is NodeState.COLLAPSED
            assert w.node("NEWS.md").state is NodeState.SUMMARY
            assert w.node("README.md").priority == 40  # no rule: the default

    async def test_new_files_are_filtered_like_the_scan(self, tree: Path) -> None:
        steering = steering_for(tree, include=["src/", "*.md"], exclude=["src/gen/"])
        async with watching(tree, steering=steering) as w:
            assert not w.session.text_nodes("tests/test_app.py")
            (tree / "tests" / "test_late.py").write_text("X = 1\n")
            (tree / "src" / "gen" / "more.py").write_text("Y = 1\n")
            await asyncio.sleep(0.4)  # let those events settle (they must make no tick)
            (tree / "src" / "late.py").write_text("LATE = 1\n")
            await w.until(lambda: bool(w.session.text_nodes("src/late.py")))
            assert not w.session.text_nodes("tests/test_late.py")
            assert not w.session.text_nodes("src/gen/more.py")

    async def test_a_file_renamed_onto_a_rule_gets_it(self, tree: Path) -> None:
        steering = steering_for(tree, state=["archive/=collapsed"])
        async with watching(tree, steering=steering) as w:
            node = w.node("src/util.py")
            (tree / "archive").mkdir()
            (tree / "src" / "util.py").rename(tree / "archive" / "util.py")
            await w.until(lambda: bool(w.session.text_nodes("archive/util.py")))
            assert w.node("archive/util.py") is node
            assert node.state is NodeState.COLLAPSED
            (tree / "archive" / "util.py").rename(tree / "util.py")  # and away from it
            await w.until(lambda: bool(w.session.text_nodes("util.py")))
            assert w.node("util.py") is node and node.state is NodeState.DETAILS


class TestWatchCommand:
    def test_once_applies_the_settings_and_a_resume_applies_new_ones(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        account = tree / ".dagctx" / "projection.json"
        assert main(["watch", str(tree), "--once", "--exclude", "tests/"]) == 0
        files = shown(json.loads(account.read_text()))
        assert "tests/test_app.py" not in files and files["src/app.py"][0] == "DETAILS"
        write_config(tree, '[state]\n"src/app.py" = "summary"\n')
        assert main(["watch", str(tree), "--once"]) == 0  # resumed, the rule applied
        assert "resuming" in capsys.readouterr().err
        files = shown(json.loads(account.read_text()))
        assert files["src/app.py"][0] == "SUMMARY"
        assert "tests/test_app.py" in files  # no longer excluded: surveyed back in
        (tree / ".dagctx" / "config.toml").unlink()
        assert main(["watch", str(tree), "--once", "--state", "docs/=collapsed"]) == 0
        files = shown(json.loads(account.read_text()))
        assert files["src/app.py"][0] == "DETAILS"  # the rule is gone: the default is back
        assert files["docs/guide.md"][0] == "COLLAPSED"

    def test_a_state_set_by_hand_survives_a_resume_without_rules(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["watch", str(tree), "--once"]) == 0
        with Session.load(tree / ".dagctx" / "session.db", root=tree) as session:
            (node,) = session.text_nodes("src/util.py")
            node.set_state("summary")  # as the set_node_state tool would
            node.priority = 70
            session.save()
        assert main(["watch", str(tree), "--once", "--state", "src/app.py=all"]) == 0
        files = shown(json.loads((tree / ".dagctx" / "projection.json").read_text()))
        assert files["src/util.py"][0] == "SUMMARY" and files["src/app.py"][0] == "ALL"

    def test_a_resume_without_rules_undoes_what_rules_set_and_keeps_the_rest(
        self, tree: Path
    ) -> None:
        rules = steering_for(tree, state=["src/app.py=all"], priority=["docs/=80"])
        with Session(tree) as session:
            TreeTracker(session, ".", steering=rules).load()
            session.tick()
            (util,) = session.text_nodes("src/util.py")
            util.tags.add("mine")  # a tag of its own: an extras record, no rule's tag
            util.set_state("summary")  # as the set_node_state tool would
            session.save()
        with Session.load(root=tree) as session:
            TreeTracker(session, ".").load()  # no rule at all
            session.tick()
            (app,) = session.text_nodes("src/app.py")
            (guide,) = session.text_nodes("docs/guide.md")
            (util,) = session.text_nodes("src/util.py")
            assert (app.state, app.tags) == (app.default_state, set())
            assert (guide.priority, guide.tags) == (guide.default_priority, set())
            assert (util.state, util.tags) == (NodeState.SUMMARY, {"mine"})

    def test_a_bad_setting_stops_watch_before_it_resumes(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["watch", str(tree), "--once"]) == 0
        capsys.readouterr()
        before = (tree / ".dagctx" / "projection.md").stat().st_mtime_ns
        assert main(["watch", str(tree), "--once", "--priority", "a.py"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "resuming" not in err and "'a.py'" in err
        assert (tree / ".dagctx" / "projection.md").stat().st_mtime_ns == before


# -- dagctx mcp ----------------------------------------------------------------------------


def test_mcp_serves_the_steered_tree_and_steers_new_files(tree: Path) -> None:
    write_config(tree, '[state]\n"docs/" = "summary"\n')  # the config file is read too
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dagctx.cli",
            "mcp",
            str(tree),
            "--exclude",
            "tests/",
            "--state",
            "src/late*.py=collapsed",
        ],
        cwd=str(tree),
        env=dict(os.environ),  # the SDK passes on only a few variables by default
    )

    async def explain(client: ClientSession) -> dict[str, tuple[str, str]]:
        result = await client.read_resource("dagctx://explain")
        (data,) = [
            c.text
            for c in result.contents
            if isinstance(c, types.TextResourceContents) and c.mime_type == "application/json"
        ]
        return shown(json.loads(data))

    async def scenario() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            await steered(Updates())

    async def steered(updates: Updates) -> None:
        with (tree.parent / "mcp-stderr.log").open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write, message_handler=updates.handle) as client,
            ):
                await client.initialize()
                projection = await client.read_resource("dagctx://projection")
                text = projection.contents[0]
                assert isinstance(text, types.TextResourceContents)
                assert "test_main" not in text.text and "def main():" in text.text
                files = await explain(client)
                assert "tests/test_app.py" not in files
                assert files["docs/guide.md"][0] == "SUMMARY"
                await subscribe(client, "dagctx://projection")
                (tree / "src" / "late_one.py").write_text("def late():\n    return 1\n")
                while "src/late_one.py" not in files:
                    await updates.next(WAIT)
                    files = await explain(client)
                assert files["src/late_one.py"][0] == "COLLAPSED"
                nodes = await client.call_tool("list_nodes", {})
                assert "late_one.py" in str(nodes.content)

    anyio.run(scenario)


# -- the README's example ------------------------------------------------------------------


def readme_section() -> str:
    text = README.read_text()
    start = text.index("### Steering from the command line and config files")
    return text[start : text.index("\n## ", start)]


def test_the_readme_example_runs(tmp_path: Path) -> None:
    section = readme_section()
    (config,) = re.findall(r"```toml\n(.*?)```", section, flags=re.DOTALL)
    (commands,) = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    root = tmp_path / "project"
    for rel, body in {
        "src/app.py": "def main():\n    return 'app'\n",
        "src/generated/table.py": "TABLE = 1\n",
        "tests/test_app.py": "def test_main():\n    pass\n",
        "docs/guide.md": "# Guide\n",
        "CHANGELOG.md": "# Changes\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    (root / "pyproject.toml").write_text(config)
    ran = 0
    for line in commands.splitlines():
        argv = shlex.split(line, comments=True)
        if argv[:2] != ["dagctx", "render"]:
            continue
        ran += 1
        result = dagctx(*argv[1:], "--format", "json", cwd=root)
        assert result.returncode == 0, (line, result.stderr)
        files = shown(json.loads(result.stdout))
        assert "src/generated/table.py" not in files and "src/app.py" in files, line
    assert ran >= 2
