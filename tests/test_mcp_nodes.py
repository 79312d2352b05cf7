"""MCP server and tool nodes against a real MCP server (tests/mcp_fixture_server.py).

The fixture server is started over stdio (and once over streamable HTTP) by the session,
through the official SDK; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dagctx import DagctxError, NodeState, Session
from dagctx.mcp import MCPClientError
from dagctx.mcp.client import STDERR_TAIL_BYTES
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import Node, Trace
from dagctx.nodes.mcp import MCPServerNode, MCPToolNode, ToolSpec

FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))
SERVER = [sys.executable, FIXTURE]
FIXTURE_TOOLS = [
    "add", "echo", "fail", "add_tool", "remove_tool", "describe", "add_tool_quietly", "env",
    "cwd", "slow", "crash",
]  # fmt: skip


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Session]:
    with Session(tmp_path, budget=20_000) as session:
        yield session


@pytest.fixture
def fx(s: Session) -> MCPServerNode:
    """A session connected to the fixture server as ``fx``."""
    node = s.mcp_connect_sync("fx", SERVER)
    assert node.status == "connected", node.error
    return node


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Session, MCPServerNode]]:
    """One connected session for the tests that leave the tool list and server alone."""
    with Session(tmp_path_factory.mktemp("shared"), budget=20_000) as session:
        node = session.mcp_connect_sync("fx", SERVER)
        assert node.status == "connected", node.error
        yield session, node


def tick_until(s: Session, done: Callable[[], bool], timeout: float = 10.0) -> list[Trace]:
    """Tick until ``done()``; return the traces of those ticks."""
    deadline = time.monotonic() + timeout
    changes: list[Trace] = []
    while True:
        changes += s.tick().changes
        if done():
            return changes
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def tool(server: MCPServerNode, name: str) -> MCPToolNode:
    return next(t for t in server.tools() if t.name == name)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


SPEC = ToolSpec(
    name="search",
    description="Search the docs.\nReturns matching paragraphs.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words to look for"},
            "limit": {"type": "integer", "default": 10},
            "mode": {"enum": ["any", "all"]},
        },
        "required": ["query"],
    },
)


class TestToolNodeRenders:
    def test_each_state_adds_detail(self) -> None:
        node = MCPToolNode("docs", SPEC, id="mcp_tool_1")
        collapsed = node.render(NodeState.COLLAPSED)
        summary = node.render(NodeState.SUMMARY)
        details = node.render(NodeState.DETAILS)
        full = node.render(NodeState.ALL)
        assert collapsed == "- search (#mcp_tool_1)"
        assert summary == "- search: Search the docs. (#mcp_tool_1)"
        assert "Returns matching paragraphs." in details
        assert "  - query: string, required — words to look for" in details
        assert "  - limit: integer, optional, default 10" in details
        assert '  - mode: one of "any", "all", optional' in details
        assert "input schema:" not in details
        assert '"required": [' in full and "input schema:" in full
        assert len({collapsed, summary, details, full}) == 4

    def test_default_state_is_collapsed(self) -> None:
        assert MCPToolNode("docs", SPEC).state == NodeState.COLLAPSED

    def test_update_bumps_only_on_a_real_change(self) -> None:
        node = MCPToolNode("docs", SPEC)
        assert node.update(ToolSpec.from_dict(SPEC.to_dict())) == []
        assert node.version == 0
        assert node.update(ToolSpec("search", "Other.", input_schema=SPEC.input_schema)) == [
            "description"
        ]
        assert node.version == 1
        assert node.render(NodeState.SUMMARY).startswith("- search: Other.")


class TestServerNodeRenders:
    def test_error_shows_message_and_stderr_tail(self) -> None:
        node = MCPServerNode("db", command=["db-mcp", "--port", "1"], id="mcp_server_1")
        node.set_status("error", error="failed to start", stderr_tail="line 1\nTraceback: boom")
        collapsed = node.render(NodeState.COLLAPSED)
        assert (
            collapsed == "- MCP server db (#mcp_server_1): error, 0 tools; error: failed to start"
        )
        for state in (NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL):
            text = node.render(state)
            assert "error: failed to start" in text
            assert "stderr (last 2 lines):" in text and "Traceback: boom" in text
        assert "stdio: db-mcp --port 1" in node.render(NodeState.DETAILS)
        assert "stdio:" not in node.render(NodeState.SUMMARY)

    def test_set_status_is_a_change_only_when_something_differs(self) -> None:
        node = MCPServerNode("db", url="http://localhost:1/mcp")
        assert node.set_status("connecting") is False
        assert node.set_status("connected", info={"name": "db"}) is True
        assert node.version == 1
        with pytest.raises(DagctxError, match="'sleeping'"):
            node.set_status("sleeping")  # type: ignore[arg-type]
        assert node.status == "connected"


class TestConnect:
    def test_tools_become_children(self, shared: tuple[Session, MCPServerNode]) -> None:
        s, fx = shared
        assert [t.name for t in fx.tools()] == FIXTURE_TOOLS
        assert all(t.state == NodeState.COLLAPSED and t.server == "fx" for t in fx.tools())
        assert fx.info["name"] == "fixture" and fx.info["version"] == "1.0"
        assert fx in s.graph.roots() and s.mcp_server("fx") is fx
        text = s.tick().projection.text
        assert "## MCP server fx (#mcp_server_1): connected" in text
        assert "- add (#mcp_tool_1)" in text
        assert "instructions: A fixture server for dagctx tests." in text

    def test_real_schema_renders_per_state(self, shared: tuple[Session, MCPServerNode]) -> None:
        _, fx = shared
        add = tool(fx, "add")
        assert add.render(NodeState.SUMMARY).startswith("- add: Add two integers.")
        details = add.render(NodeState.DETAILS)
        assert "  - a: integer, required" in details and "  - b: integer, required" in details
        full = add.render(NodeState.ALL)
        assert '"type": "object"' in full and "output schema:" in full
        echo = tool(fx, "echo")
        assert "  - repeat: integer, optional, default 1" in echo.render(NodeState.DETAILS)

    def test_server_node_renders_per_state(self, shared: tuple[Session, MCPServerNode]) -> None:
        _, fx = shared
        collapsed = fx.render(NodeState.COLLAPSED)
        assert collapsed == f"- MCP server fx (#{fx.id}): connected, {len(FIXTURE_TOOLS)} tools"
        assert "tools: add, echo, fail" in fx.render(NodeState.SUMMARY)
        details = fx.render(NodeState.DETAILS)
        assert f"server: fixture 1.0 · stdio: {sys.executable} {FIXTURE}" in details
        assert "protocol: " not in details
        assert "protocol: " in fx.render(NodeState.ALL)

    def test_environment_and_working_directory(self, s: Session, tmp_path: Path) -> None:
        node = s.mcp_connect_sync("fx", SERVER, env={"DAGCTX_SECRET": "hunter2"})
        assert s.mcp_call_sync("fx", "env", name="DAGCTX_SECRET").text == "hunter2"
        assert s.mcp_call_sync("fx", "cwd").text == str(tmp_path.resolve())
        full = node.render(NodeState.ALL)
        assert "environment: DAGCTX_SECRET (values not shown)" in full
        assert "hunter2" not in full and "hunter2" not in str(node.to_dict())

    def test_async_verbs_from_another_event_loop(self, s: Session) -> None:
        # Each asyncio.run is a new loop that ends; the MCP session lives on the
        # session's background loop and outlives them.
        node = asyncio.run(s.mcp_connect("fx", SERVER))
        assert node.status == "connected"
        result = asyncio.run(s.mcp_call("fx", "add", a=20, b=22))
        assert result.structured == {"result": 42}
        assert asyncio.run(s.mcp_disconnect("fx")).status == "disconnected"

    def test_streamable_http(self, s: Session) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = subprocess.Popen([*SERVER, "--http", str(port)], stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline and server.poll() is None
                    time.sleep(0.05)
            url = f"http://127.0.0.1:{port}/mcp"
            node = s.mcp_connect_sync("web", url=url)
            assert node.status == "connected", node.error
            assert [t.name for t in node.tools()] == FIXTURE_TOOLS
            assert f"streamable HTTP {url}" in node.render(NodeState.DETAILS)
            assert s.mcp_call_sync("web", "echo", text="hi", repeat=2).text == "hihi"
            s.mcp_call_sync("web", "add_tool", name="zap")
            tick_until(s, lambda: "zap" in [t.name for t in node.tools()])
            s.mcp_disconnect_sync("web")
        finally:
            server.terminate()
            server.wait(10)


class TestBadInput:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({}, "either command"),
            ({"command": SERVER, "url": "http://x/mcp"}, "either command"),
            ({"command": "python server.py"}, "list of strings"),
            ({"command": []}, "non-empty list"),
            ({"url": "ftp://x"}, "'ftp://x'"),
            ({"command": SERVER, "env": {"A": 1}}, "env must map"),
            ({"command": SERVER, "timeout": 0}, "timeout must be"),
            ({"command": SERVER, "cwd": "/no/such/dir"}, "'/no/such/dir'"),
        ],
    )
    def test_refused_before_anything_changes(
        self, s: Session, kwargs: dict[str, object], message: str
    ) -> None:
        with pytest.raises(DagctxError, match=message):
            s.mcp_connect_sync("fx", **kwargs)
        assert len(s.graph) == 0 and s.mcp_servers() == []

    def test_a_connected_name_is_not_reused(self, shared: tuple[Session, MCPServerNode]) -> None:
        s, fx = shared
        count = len(s.graph)
        with pytest.raises(DagctxError, match="'fx' is connected already"):
            s.mcp_connect_sync("fx", SERVER)
        assert len(s.graph) == count and fx.status == "connected"

    def test_unknown_server_and_tool(self, shared: tuple[Session, MCPServerNode]) -> None:
        s = shared[0]
        count = len(s.graph)
        with pytest.raises(DagctxError, match="no MCP server named 'nope'; known servers: fx"):
            s.mcp_call_sync("nope", "add")
        with pytest.raises(DagctxError, match="has no tool 'nope'; its tools: add, echo"):
            s.mcp_call_sync("fx", "nope")
        assert len(s.graph) == count


class TestCall:
    def test_result_becomes_an_output_artifact(self, shared: tuple[Session, MCPServerNode]) -> None:
        s = shared[0]
        result = s.mcp_call_sync("fx", "add", a=2, b=3)
        assert (result.text, result.structured, result.is_error) == ("5", {"result": 5}, False)
        artifact = result.artifact
        assert isinstance(artifact, ArtifactNode) and artifact in s.graph.roots()
        assert (artifact.kind, artifact.content) == ("output", "5")
        assert artifact.title == 'fx.add {"a": 2, "b": 3}'
        assert "5" in s.tick().projection.text

    def test_arguments_mapping_merges_with_keywords(
        self, shared: tuple[Session, MCPServerNode]
    ) -> None:
        s = shared[0]
        result = s.mcp_call_sync("fx", "echo", {"text": "ab"}, repeat=3)
        assert result.text == "ababab"

    def test_tool_error_becomes_an_error_artifact(
        self, shared: tuple[Session, MCPServerNode]
    ) -> None:
        s = shared[0]
        result = s.mcp_call_sync("fx", "fail", message="boom")
        assert result.is_error
        assert isinstance(result.artifact, ArtifactNode)
        assert result.artifact.kind == "error" and "boom" in result.artifact.content

    def test_a_slow_call_times_out(self, shared: tuple[Session, MCPServerNode]) -> None:
        s = shared[0]
        started = time.monotonic()
        with pytest.raises(MCPClientError, match="timed out"):
            s.mcp_call_sync("fx", "slow", seconds=30, timeout=0.5)
        assert time.monotonic() - started < 5
        assert s.mcp_call_sync("fx", "add", a=1, b=1).text == "2"  # still usable


class TestToolListChanges:
    def test_added_tool_appears_at_a_tick_with_a_trace(self, s: Session, fx: MCPServerNode) -> None:
        s.tick()
        versions = {t.name: t.version for t in fx.tools()}
        s.mcp_call_sync("fx", "add_tool", name="zap")
        changes = tick_until(s, lambda: "zap" in [t.name for t in fx.tools()])
        zap = tool(fx, "zap")
        assert zap.render(NodeState.SUMMARY) == f"- zap: Dynamic tool zap. (#{zap.id})"
        assert any(
            c.node_id == fx.id and c.description == "tools of fx: added zap" for c in changes
        )
        assert all(t.version == versions[t.name] for t in fx.tools() if t.name != "zap")
        assert s.mcp_call_sync("fx", "zap", suffix="!").text == "zap!"

    def test_changed_tool_updates_in_place(self, s: Session, fx: MCPServerNode) -> None:
        echo = tool(fx, "echo")
        before = echo.version
        s.mcp_call_sync("fx", "describe", name="echo", description="Say it again.")
        changes = tick_until(s, lambda: echo.version > before)
        assert tool(fx, "echo") is echo and echo.version == before + 1
        assert echo.render(NodeState.SUMMARY).startswith("- echo: Say it again.")
        assert any(c.description == "tool echo updated: description" for c in changes)

    def test_removed_tool_leaves_the_graph(self, s: Session, fx: MCPServerNode) -> None:
        cwd = tool(fx, "cwd")
        s.mcp_call_sync("fx", "remove_tool", name="cwd")
        changes = tick_until(s, lambda: cwd.graph is None)
        assert "cwd" not in [t.name for t in fx.tools()]
        assert any(c.description == "tools of fx: removed cwd" for c in changes)
        with pytest.raises(DagctxError, match="has no tool 'cwd'"):
            s.mcp_call_sync("fx", "cwd")

    def test_refresh_fetches_and_applies_now(self, s: Session, fx: MCPServerNode) -> None:
        s.mcp_call_sync("fx", "add_tool_quietly", name="hush")
        s.tick()
        assert "hush" not in [t.name for t in fx.tools()]  # the server did not tell
        assert s.mcp_refresh_sync("fx") == ["added hush"]
        assert tool(fx, "hush").server == "fx"
        assert s.mcp_refresh_sync("fx") == []


class TestFailure:
    def test_server_crashing_at_start(self, s: Session) -> None:
        started = time.monotonic()
        node = s.mcp_connect_sync("bad", [*SERVER, "--crash-at-start"])
        assert time.monotonic() - started < 10
        assert node.status == "error" and node.tools() == []
        assert "failed to start" in (node.error or "")
        assert "refusing to start (bad configuration)" in node.stderr_tail
        details = node.render(NodeState.DETAILS)
        assert "stderr (last line):" in details and "refusing to start" in details
        with pytest.raises(DagctxError, match="not connected \\(status: error\\)"):
            s.mcp_call_sync("bad", "add")

    def test_missing_executable(self, s: Session) -> None:
        node = s.mcp_connect_sync("ghost", ["/no/such/mcp-server"])
        assert node.status == "error"
        assert "No such file" in (node.error or "")

    def test_server_that_never_answers_times_out(self, s: Session) -> None:
        started = time.monotonic()
        node = s.mcp_connect_sync("mute", [*SERVER, "--hang"], timeout=1.0)
        assert time.monotonic() - started < 10
        assert node.status == "error" and "timed out" in (node.error or "")
        assert "fixture: hanging" in node.stderr_tail

    def test_server_dying_later(self, s: Session, fx: MCPServerNode) -> None:
        with pytest.raises(MCPClientError, match="closed the connection"):
            s.mcp_call_sync("fx", "crash", code=7)
        changes = tick_until(s, lambda: fx.status == "error")
        assert "closed the connection" in (fx.error or "")
        assert "crashing with code 7" in fx.stderr_tail
        assert fx.tools() == []
        assert any(c.description.startswith("status: connected → error") for c in changes)
        assert "crashing with code 7" in s.tick().projection.text

    def test_reconnect_reuses_the_node(self, s: Session) -> None:
        node = s.mcp_connect_sync("fx", [*SERVER, "--crash-at-start"])
        assert node.status == "error"
        again = s.mcp_connect_sync("fx", SERVER)
        assert again is node and node.status == "connected"
        assert node.error is None and node.stderr_tail == ""
        assert [t.name for t in node.tools()] == FIXTURE_TOOLS


class TestDisconnect:
    def test_disconnect_stops_the_server_and_drops_the_tools(
        self, s: Session, tmp_path: Path
    ) -> None:
        pid_file = tmp_path / "pid"
        node = s.mcp_connect_sync("fx", SERVER, env={"FIXTURE_PID_FILE": str(pid_file)})
        pid = int(pid_file.read_text())
        s.tick()
        tools = node.tools()
        assert s.mcp_disconnect_sync("fx") is node
        assert node.status == "disconnected" and node.tools() == []
        assert all(t.graph is None for t in tools)
        changes = s.tick().changes
        assert any(c.description == "status: connected → disconnected" for c in changes)
        assert any(c.description.startswith("tools of fx: removed add;") for c in changes)
        assert wait_dead(pid)
        with pytest.raises(DagctxError, match="not connected"):
            s.mcp_call_sync("fx", "add", a=1, b=2)
        assert s.mcp_disconnect_sync("fx") is node  # idempotent

    def test_closing_the_session_stops_every_server(self, tmp_path: Path) -> None:
        pids = []
        with Session(tmp_path) as session:
            for name in ("one", "two"):
                pid_file = tmp_path / f"{name}.pid"
                session.mcp_connect_sync(name, SERVER, env={"FIXTURE_PID_FILE": str(pid_file)})
                pids.append(int(pid_file.read_text()))
            assert all(alive(pid) for pid in pids)
        assert all(wait_dead(pid) for pid in pids)


class TestRoundTrip:
    def test_tool_node(self, shared: tuple[Session, MCPServerNode]) -> None:
        _, fx = shared
        for original in fx.tools():
            copy = Node.from_dict(original.to_dict())
            assert isinstance(copy, MCPToolNode)
            assert copy.to_dict() == original.to_dict()
            for state in (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL):
                assert copy.render(state) == original.render(state)

    def test_connected_server_comes_back_disconnected(
        self, shared: tuple[Session, MCPServerNode]
    ) -> None:
        _, fx = shared
        data = fx.to_dict()
        copy = Node.from_dict(data)
        assert isinstance(copy, MCPServerNode)
        assert (copy.id, copy.version, copy.name, copy.command) == (
            fx.id, fx.version, "fx", SERVER,
        )  # fmt: skip
        assert copy.info == fx.info and copy.status == "disconnected"
        assert copy.to_dict() == {**data, "data": {**data["data"], "status": "disconnected"}}

    def test_restored_server_is_reused_on_connect(self, s: Session, tmp_path: Path) -> None:
        with Session(tmp_path) as other:
            saved = other.mcp_connect_sync("fx", SERVER)
            data = [saved.to_dict(), *(t.to_dict() for t in saved.tools())]
        server, *tools = (Node.from_dict(d) for d in data)
        assert isinstance(server, MCPServerNode) and server.status == "disconnected"
        s.add(server)
        for t in tools:
            s.add(t, parent=server)
        ids = {t.name: t.id for t in server.tools()}
        assert s.mcp_connect_sync("fx", SERVER) is server
        assert server.status == "connected"
        assert {t.name: t.id for t in server.tools()} == ids  # matched by name, kept

    def test_failed_server_keeps_its_error(self, s: Session) -> None:
        node = s.mcp_connect_sync("bad", [*SERVER, "--crash-at-start"], env={"K": "v"})
        copy = Node.from_dict(node.to_dict())
        assert isinstance(copy, MCPServerNode)
        assert copy.to_dict() == node.to_dict()
        assert copy.env_keys == ["K"]
        for state in (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL):
            assert copy.render(state) == node.render(state)


class TestStderrFlood:
    def test_a_server_flooding_stderr_keeps_a_bounded_tail(self, s: Session) -> None:
        """300 MB of stderr: the capture keeps at most STDERR_CAP_BYTES in memory, writes
        nothing to disk, and the server's last words still reach its node."""
        logs = Path(tempfile.gettempdir())
        tracemalloc.start()
        try:
            node = s.mcp_connect_sync("loud", [*SERVER, "--flood-stderr", "300"])
            assert node.status == "connected", node.error
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            deadline = time.monotonic() + 60
            while int(s.mcp_call_sync("loud", "flooded").text) < 100 * 2**20:
                assert time.monotonic() < deadline, "the flood did not get through in time"
                assert s.mcp_call_sync("loud", "add", a=2, b=3).text == "5"  # still serving
                time.sleep(0.2)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak - base < 4 * 2**20  # 100 MB went through; memory held stays flat
        on_disk = sum(f.stat().st_size for f in logs.glob("dagctx-mcp-loud-*"))
        assert on_disk < 2**20
        with pytest.raises(MCPClientError):
            s.mcp_call_sync("loud", "crash", code=7)
        tick_until(s, lambda: node.status == "error")
        assert "crashing with code 7" in node.stderr_tail
        assert len(node.stderr_tail) <= STDERR_TAIL_BYTES
