"""Start-up rows of SPEC §11: ``dagctx --help`` / ``--version`` (≤ 0.3 s) and a
``dagctx mcp`` server answering ``initialize`` (≤ 1 s), each a fresh interpreter, beside
a bare ``python -c pass`` in the same run (the interpreter's own start); under the
``dagctx mcp`` row, the import of the MCP SDK's server parts alone, the floor of that
start.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.scenarios import Bench, Row, row

HELP_TARGET_S = 0.3
MCP_TARGET_S = 1.0
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "dagctx-bench", "version": "0"},
    },
}


#: What ``dagctx mcp`` cannot answer ``initialize`` without: the SDK's server parts.
_SDK_IMPORT = "import anyio, mcp.server, mcp.server.stdio"


def _seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, timeout=60)
    return time.perf_counter() - started


def _mcp_initialize(root: Path) -> float:
    """Seconds from starting ``dagctx mcp root`` to its answer to ``initialize``."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "dagctx.cli", "mcp", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(json.dumps(_INITIALIZE) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        elapsed = time.perf_counter() - started
        assert answer.get("id") == 1 and "result" in answer, answer
    finally:
        server.stdin.close()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return elapsed


def startup(b: Bench) -> list[Row]:
    """Median wall time of each start over a few runs, beside ``python -c pass``."""
    runs = 3 if b.quick else 7
    python = statistics.median(_seconds([sys.executable, "-c", "pass"]) for _ in range(runs))
    rows = []
    for flag in ("--help", "--version"):
        argv = [sys.executable, "-m", "dagctx.cli", flag]
        measured = statistics.median(_seconds(argv) for _ in range(runs))
        rows.append(row(f"`dagctx {flag}`", measured, "s", baseline=python, target=HELP_TARGET_S))
    root = b.tmp / "mcp-start"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text("def main() -> None:\n    print('hello')\n")
    measured = statistics.median(_mcp_initialize(root) for _ in range(runs))
    sdk = statistics.median(_seconds([sys.executable, "-c", _SDK_IMPORT]) for _ in range(runs))
    rows += [
        row(
            "`dagctx mcp` answering initialize (a one-file tree)",
            measured,
            "s",
            baseline=python,
            target=MCP_TARGET_S,
        ),
        row("  the MCP SDK's server import alone (its floor)", sdk, "s", baseline=python),
    ]
    return rows
