"""`dagctx mcp` through the official MCP Inspector's command line (``--cli``), which sends
what a form client sends: every ``--tool-arg`` as a string (or null when it cannot read a
value of the published type). Skipped only when npm is not installed; the Inspector is
installed once into a cache directory ($XDG_CACHE_HOME, default ~/.cache) and reused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's executable, installed on first use."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "dagctx-tests" / INSPECTOR.replace("/", "+")
    executable = prefix / "node_modules" / ".bin" / "mcp-inspector"
    if not executable.exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", INSPECTOR],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return executable


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "greet.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    return tmp_path


#: The Inspector's exit status when a tool answered with ``isError: true``.
TOOL_IS_ERROR = 5


def inspect(inspector: Path, root: Path, *method: str) -> dict[str, Any]:
    """Run one Inspector request against `dagctx mcp root`; its JSON answer (a tool's
    result with ``isError`` too, whose exit status is `TOOL_IS_ERROR`)."""
    env = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
    done = subprocess.run(
        [
            str(inspector),
            "--cli",
            *(arg for pair in env for arg in ("-e", pair)),
            sys.executable,
            "-m",
            "dagctx.cli",
            "mcp",
            str(root),
            *method,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    answer: dict[str, Any] = json.loads(done.stdout) if done.stdout else {}
    expected = TOOL_IS_ERROR if answer.get("isError") else 0
    assert done.returncode == expected, done.stderr
    return answer


def call(inspector: Path, root: Path, tool: str, *arguments: str) -> tuple[bool, str]:
    pairs = [arg for argument in arguments for arg in ("--tool-arg", argument)]
    answer = inspect(inspector, root, "--method", "tools/call", "--tool-name", tool, *pairs)
    (block,) = answer["content"]
    return answer["isError"], block["text"]


class TestInspector:
    def test_lists_tools_with_schemas_it_can_fill_in(self, inspector: Path, root: Path) -> None:
        tools = {t["name"]: t for t in inspect(inspector, root, "--method", "tools/list")["tools"]}
        assert {"open_file", "add_knowledge", "run_shell", "set_budget"} <= set(tools)
        start_line = tools["open_file"]["inputSchema"]["properties"]["start_line"]
        assert start_line["type"] == "integer"
        assert "null" not in json.dumps([t["inputSchema"] for t in tools.values()])

    def test_reads_the_projection_of_the_tree(self, inspector: Path, root: Path) -> None:
        answer = inspect(
            inspector, root, "--method", "resources/read", "--uri", "dagctx://projection"
        )
        assert "return f'hello {name}'" in answer["contents"][0]["text"]

    def test_calls_get_context_with_a_focus(self, inspector: Path, root: Path) -> None:
        error, text = call(inspector, root, "get_context", "focus=how does greet say hello")
        assert not error, text
        assert "return f'hello {name}'" in text
        assert "## Focus (#focus_1)\n```\nhow does greet say hello\n```" in text

    def test_string_arguments_are_read_and_failures_are_errors(
        self, inspector: Path, root: Path
    ) -> None:
        error, text = call(inspector, root, "open_file", "path=greet.py", "start_line=2")
        assert not error and text.startswith("Opened greet.py:2-"), text
        error, text = call(inspector, root, "run_shell", f"command={sys.executable}",
                           'args=["-c", "print(6 * 7)"]')  # fmt: skip
        assert not error and "42" in text, text
        error, text = call(inspector, root, "set_budget", "tokens=lots")
        assert error
        assert (
            text
            == "Invalid arguments for set_budget: argument 'tokens' must be an integer, got null."
        )
        error, text = call(inspector, root, "open_file", "path=../elsewhere.py")
        assert error and text.startswith("Refused '../elsewhere.py'"), text
