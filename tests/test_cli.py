"""The `dagctx render` command, run as a real subprocess and through main()."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dagctx.cli import main
from dagctx.tokens import get_encoding


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dagctx.cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def tree(project: Path) -> Path:
    (project / ".gitignore").write_text("secret.txt\nbuild/\n")
    (project / "secret.txt").write_text("password\n")
    (project / "build").mkdir()
    (project / "build" / "out.py").write_text("compiled = 1\n")
    (project / "image.png").write_bytes(b"\x89PNG\x00\x00binary")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / "venv").mkdir()
    (project / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (project / "venv" / "lib.py").write_text("venv_code = 1\n")
    return project


class TestRender:
    def test_renders_the_tree_within_budget(self, tree: Path) -> None:
        result = run("render", str(tree), "--budget", "2000")
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "def login(user):" in out and "src/auth.py" in out
        for hidden in ("password", "compiled", "binary", "[core]", "venv_code"):
            assert hidden not in out
        assert len(get_encoding().encode_ordinary(out)) <= 2000

    def test_explain_goes_to_stderr(self, tree: Path) -> None:
        result = run("render", str(tree), "--budget", "60", "--explain")
        assert result.returncode == 0
        assert "total:" in result.stderr and "/60 tokens" in result.stderr
        assert len(get_encoding().encode_ordinary(result.stdout)) <= 60

    def test_json_format(self, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["render", str(tree), "--budget", "500", "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["tokens"] <= data["budget"] == 500
        assert {s["node_id"] for s in data["sections"]}

    def test_messages_format(self, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["render", str(tree), "--budget", "500", "--format", "messages"]) == 0
        messages = json.loads(capsys.readouterr().out)
        assert messages[0]["role"] == "system" and "README.md" not in messages[0]["content"]
        assert messages[1]["role"] == "user" and "README.md" in messages[1]["content"]


class TestSmallThings:
    def test_version(self) -> None:
        result = run("--version")
        assert result.returncode == 0 and result.stdout.startswith("dagctx ")

    @pytest.mark.parametrize("command", ["render", "watch", "mcp"])
    def test_one_budget_default_shown_in_help(self, command: str) -> None:
        assert "token budget (default 8000)" in run(command, "--help").stdout

    def test_render_without_budget_uses_the_default(self, tree: Path) -> None:
        result = run("render", str(tree), "--format", "json")
        assert result.returncode == 0 and json.loads(result.stdout)["budget"] == 8000

    def test_a_reader_that_stops_early_ends_it_quietly(self, tree: Path) -> None:
        for i in range(300):  # far more than a pipe holds
            (tree / f"mod_{i}.py").write_text(f"VALUE_{i} = {i}\n" * 60)
        command = f"{sys.executable} -m dagctx.cli render {tree} --budget 50000 | head -1"
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout.startswith("## ")


class TestErrors:
    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            (["render", ".", "--budget", "0"], "budget must be a positive integer, got '0'"),
            (["render", ".", "--budget", "lots"], "got 'lots'"),
            (["render", "/no/such/dir", "--budget", "10"], "'/no/such/dir' is not a directory"),
            (["render", ".", "--budget", "10", "--encoding", "klingon"], "'klingon'"),
            (["render", ".", "--budget", "10", "--format", "xml"], "invalid choice: 'xml'"),
            (["render", "--budget"], "--budget: expected one argument"),
            (["frobnicate"], "invalid choice"),
        ],
    )
    def test_one_clear_line_and_non_zero_exit(self, args: list[str], needle: str) -> None:
        result = run(*args)
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert needle in lines[0] and "Traceback" not in result.stderr
