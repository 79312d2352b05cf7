"""`dagctx mcp` as a real subprocess, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from dagctx.knowledge import Workspace
from dagctx.mcp.arguments import client_schema
from dagctx.mcp.server import (
    READ_LIMIT,
    TOOL_HINTS,
    SessionServer,
    bind_context_tools,
    get_context,
    reading_context,
)
from dagctx.session import Session
from dagctx.tokens import TokenCounter
from dagctx.tools import ContextTool, get_context_tools, get_graph_tools
from dagctx.tools.graph import SessionTool
from dagctx.tools.knowledge import add_knowledge

#: Seconds one scenario may take, server start and shutdown included.
SCENARIO_TIMEOUT = 30.0
SOURCE = "def greet(name):\n    return f'hello {name}'\n\n\nGREETING = greet('mcp')\n"
Scenario = Callable[[ClientSession], Awaitable[None]]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "greet.py").write_text(SOURCE)
    (tmp_path / "project" / "big.txt").write_text(
        "".join(f"filler line {i} with several words in it\n" for i in range(2000))
    )
    return tmp_path / "project"


@asynccontextmanager
async def served(root: Path, errlog: Path, *options: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dagctx.cli", "mcp", str(root), *options],
        cwd=str(root),
        env=dict(os.environ),  # stdio_client passes only a few variables: PYTHONPATH too
    )
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


def drive(root: Path, scenario: Scenario, *options: str) -> None:
    """Start `dagctx mcp root`, run `scenario` against it, stop it; bounded in time."""
    errlog = root.parent / "server-stderr.log"

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with served(root, errlog, *options) as client:
                await scenario(client)

    try:
        anyio.run(main)
    except BaseException:
        print("server stderr:\n" + errlog.read_text(), file=sys.stderr)
        raise


async def call(client: ClientSession, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def refused(client: ClientSession, tool: str, **arguments: Any) -> str:
    """The message of a call the tool refused (reported with ``isError``)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def read(client: ClientSession, uri: str) -> str:
    """The text of a resource (its first contents: the explain table for explain)."""
    result = await client.read_resource(uri)
    contents = result.contents[0]
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


async def node_id(client: ClientSession, label: str) -> str:
    """The id list_nodes shows for the node labelled `label` (the tree is scanned)."""
    for line in (await call(client, "list_nodes")).splitlines():
        if line.split()[-1] == label:
            return line.split()[0]
    raise AssertionError(f"no node {label!r}")


class TestTools:
    def test_every_context_and_graph_tool_with_the_generated_schema(self, root: Path) -> None:
        knowledge_input = ContextTool(add_knowledge)
        projection = SessionTool(get_context)
        expected = {
            tool.name: tool
            for tool in [projection, *get_context_tools(), knowledge_input, *get_graph_tools()]
        }

        async def scenario(client: ClientSession) -> None:
            listed = (await client.list_tools()).tools
            assert [tool.name for tool in listed] == list(expected)
            assert len(listed) == 20
            for tool in listed:
                assert tool.input_schema == client_schema(expected[tool.name].parameters)
                assert '"null"' not in json.dumps(tool.input_schema)
                assert tool.description == expected[tool.name].description
                assert {"ctx", "session"}.isdisjoint(tool.input_schema["properties"])

        drive(root, scenario)

    def test_every_tool_has_a_title_and_says_what_it_changes(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == set(TOOL_HINTS)
            for name, tool in listed.items():
                hints = TOOL_HINTS[name]
                assert tool.title == hints.title
                assert tool.annotations == types.ToolAnnotations(
                    title=hints.title,
                    read_only_hint=hints.read_only,
                    destructive_hint=hints.destructive,
                    idempotent_hint=hints.idempotent,
                    open_world_hint=hints.open_world,
                )
            hinted = {name: tool.annotations for name, tool in listed.items()}
            assert {n for n, a in hinted.items() if a and a.read_only_hint} == {
                "get_todo",
                "get_knowledge",
                "grep_knowledge",
                "search_knowledge",
                "read_file",
                "list_nodes",
                "shell_output",
                "show_projection_stats",
            }
            assert {n for n, a in hinted.items() if a and a.open_world_hint} == {"run_shell"}
            assert {n for n, a in hinted.items() if a and a.destructive_hint} == {
                "run_shell",
                "checkpoint",
                "restore",
            }

        drive(root, scenario)

    def test_todo_round_trip(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            assert await call(client, "get_todo") == "No todos."
            assert await call(client, "add_todo", item="Read greet.py") == (
                "Added todo 0: Read greet.py"
            )
            await call(client, "add_todo", item="Write the docstring")
            await call(client, "complete_todo", index=0)
            assert await call(client, "get_todo") == (
                "0. [x] Read greet.py\n1. [ ] Write the docstring"
            )

        drive(root, scenario)

    def test_context_tools_work_in_the_session_root(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            assert await call(client, "read_file", path="greet.py") == SOURCE
            assert "outside the working directory" in await refused(
                client, "read_file", path="../server-stderr.log"
            )
            assert "Artifact 'notes' not found" in await refused(
                client, "get_knowledge", name="notes"
            )

        drive(root, scenario)

    def test_a_long_file_is_read_in_parts_within_the_read_limit(self, root: Path) -> None:
        whole = (root / "big.txt").read_text()
        assert len(whole) > READ_LIMIT

        async def scenario(client: ClientSession) -> None:
            first = await call(client, "read_file", path="big.txt")
            body, note = first.rsplit("\n[read_file: ", 1)
            assert len(first) <= READ_LIMIT + 200
            shown = body.count("\n") + 1
            assert note == (
                f"lines 1-{shown} of 2000 of 'big.txt' shown (at most {READ_LIMIT:,} characters"
                f" a call); call read_file with start_line={shown + 1} to read on]"
            )
            rest = await call(client, "read_file", path="big.txt", start_line=shown + 1)
            assert body + "\n" + rest == whole

        drive(root, scenario)

    def test_run_shell_returns_the_whole_output(self, root: Path) -> None:
        code = "for i in range(40): print(f'match {i}')"

        async def scenario(client: ClientSession) -> None:
            reply = await call(client, "run_shell", command=sys.executable, args=["-c", code])
            lines = reply.splitlines()
            assert [f"match {i}" for i in range(40)] == [x for x in lines if x.startswith("match")]

        drive(root, scenario)

    def test_a_long_command_is_waited_for_with_shell_output(self, root: Path) -> None:
        code = "import time; time.sleep(3); print('\\n'.join(f'failure {i}' for i in range(30)))"

        async def scenario(client: ClientSession) -> None:
            started = await call(client, "run_shell", command=sys.executable, args=["-c", code])
            shell = started.split(":")[0]
            assert f"shell_output('{shell}') waits for it" in started
            reply = await call(client, "shell_output", node_id=shell, wait=20)
            assert "completed (exit 0" in reply
            assert [f"failure {i}" for i in range(30)] == [
                x for x in reply.splitlines() if x.startswith("failure")
            ]
            assert "is a text node, not a command" in await refused(
                client, "shell_output", node_id=await node_id(client, "greet.py")
            )

        drive(root, scenario)

    def test_model_mistakes_come_back_as_messages(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            assert "missing required argument 'item'" in await refused(client, "add_todo")
            assert "argument 'tokens' must be an integer" in await refused(
                client, "set_budget", tokens="lots"
            )
            assert "No node 'text_7'" in await refused(client, "hide_node", node_id="text_7")
            assert "outside the session root" in await refused(
                client, "open_file", path="/etc/hosts"
            )

        drive(root, scenario)


class TestResources:
    def test_projection_shows_an_opened_file_within_budget(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            resources = (await client.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["dagctx://projection", "dagctx://explain"]
            assert (await client.list_resource_templates()).resource_templates == []
            greet = await node_id(client, "greet.py")
            reply = await call(client, "open_file", path="greet.py")
            assert reply.startswith(f"Opened greet.py as {greet}, the node the context tracked")
            again = await call(client, "open_file", path="greet.py")
            assert again == f"greet.py is already open as {greet} (DETAILS)."
            text = await read(client, "dagctx://projection")
            assert SOURCE.rstrip("\n") in text
            assert TokenCounter("cl100k_base").count_exact(text) <= 2000
            explain = await read(client, "dagctx://explain")
            assert greet in explain
            assert "greet.py" in explain
            assert "/2000 tokens" in explain.splitlines()[-1]

        drive(root, scenario, "--budget", "2000")

    def test_a_tracked_file_the_model_opens_is_shown_in_full(self, root: Path) -> None:
        def module(i: int) -> str:
            return "".join(f"def step_{i}_{j}(x):\n    return x + {j}\n\n" for j in range(12))

        for i in range(20):
            (root / f"mod_{i:02d}.py").write_text(module(i))

        async def scenario(client: ClientSession) -> None:
            before = await call(client, "get_context")
            hidden = [i for i in range(20) if module(i).rstrip("\n") not in before]
            assert len(hidden) > 10  # most modules are outlines or names at this budget
            wanted = hidden[-1]
            reply = await call(client, "open_file", path=f"mod_{wanted:02d}.py")
            assert "now ahead of the files not opened" in reply
            after = await call(client, "get_context")
            assert module(wanted).rstrip("\n") in after
            assert TokenCounter("cl100k_base").count_exact(after) <= 1500

        drive(root, scenario, "--budget", "1500")

    def test_a_file_larger_than_the_budget_is_cut_to_fit(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            big = await node_id(client, "big.txt")
            await call(client, "set_node_state", node_id=big, state="details")
            text = await read(client, "dagctx://projection")
            tokens = TokenCounter("cl100k_base").count_exact(text)
            assert 250 <= tokens <= 300
            assert "filler line 0 with" in text
            assert "filler line 1999" not in text
            assert "more lines cut to fit the budget" in text
            assert "(-" in await read(client, "dagctx://explain")  # the cut, per node

        drive(root, scenario, "--budget", "300")

    def test_graph_tools_steer_the_projection(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            greet = await node_id(client, "greet.py")
            await call(client, "set_node_state", node_id=greet, state="collapsed")
            assert "- greet.py (5 lines)" in await read(client, "dagctx://projection")
            await call(client, "set_budget", tokens=500)
            stats = await call(client, "show_projection_stats")
            assert "/500 tokens" in stats.splitlines()[0]
            output = await call(
                client, "run_shell", command=sys.executable, args=["-c", "print(6 * 7)"]
            )
            assert "completed (exit 0" in output
            assert "42" in await read(client, "dagctx://projection")

        drive(root, scenario)


class TestGetContext:
    """``get_context``: the projection for the clients that call tools only."""

    def test_it_is_the_projection_and_its_focus_chooses_what_is_shown(self, root: Path) -> None:
        def body(name: str) -> str:
            return f"def {name}(x):\n    y = x * 2\n    return y + 1\n"

        for name, numbers in (("alpha", range(1000, 1150)), ("beta", range(150))):
            word = "bananas" if name == "beta" else "apples"
            (root / f"{name}.py").write_text("\n\n".join(body(f"{word}_{i}") for i in numbers))
        count = TokenCounter("cl100k_base").count_exact

        async def scenario(client: ClientSession) -> None:
            unfocused = await call(client, "get_context")
            assert unfocused == await read(client, "dagctx://projection")
            assert count(unfocused) <= 1200
            for wanted, other in (("bananas_120", "apples_1120"), ("apples_1120", "bananas_120")):
                text = await call(client, "get_context", focus=f"where is {wanted} defined")
                assert count(text) <= 1200
                assert body(wanted) in text
                assert body(other) not in text
                again = await call(client, "get_context")  # the focus stays
                assert body(wanted) in again
                assert f"## Focus (#focus_1)\n```\nwhere is {wanted} defined\n```" in again
            cleared = await call(client, "get_context", focus="  ")
            assert "## Focus" not in cleared.partition("## Changes since last turn")[0]
            assert "- #focus_1 focus: cleared (v" in cleared
            assert await call(client, "get_context") == unfocused

        drive(root, scenario, "--budget", "1200")

    def test_a_bad_focus_is_a_message(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            message = await refused(client, "get_context", focus=42)
            assert "focus" in message
            assert "greet.py" in await call(client, "get_context")

        drive(root, scenario)


class TestProtocolErrors:
    def test_unknown_tools_and_resources_are_errors_and_the_server_goes_on(
        self, root: Path
    ) -> None:
        async def scenario(client: ClientSession) -> None:
            with pytest.raises(MCPError, match="unknown tool 'rm_rf'"):
                await client.call_tool("rm_rf", {})
            with pytest.raises(MCPError, match="unknown resource 'dagctx://nothing'"):
                await client.read_resource("dagctx://nothing")
            assert await call(client, "get_todo") == "No todos."

        drive(root, scenario)


class TestConcurrency:
    def test_the_server_answers_while_a_tool_waits(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            replies: list[str] = []

            async def slow() -> None:
                code = "import time; time.sleep(30)"
                replies.append(
                    await call(
                        client, "run_shell", command=sys.executable, args=["-c", code], timeout=5
                    )
                )

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.sleep(0.5)  # run_shell is now in its 2 s wait
                started = anyio.current_time()
                await client.send_ping()
                assert anyio.current_time() - started < 1.0
            assert "Still running after 2 s" in replies[0]

        drive(root, scenario)

    def test_read_file_does_not_wait_for_a_command_being_waited_on(self, root: Path) -> None:
        async def scenario(client: ClientSession) -> None:
            with warnings.catch_warnings():  # the SDK marks the 2025-era request deprecated
                warnings.simplefilter("ignore")
                await client.subscribe_resource("dagctx://projection")  # told of no read
            code = "import time; time.sleep(4)"
            started = await call(client, "run_shell", command=sys.executable, args=["-c", code])
            shell = started.split(":")[0]
            waited: list[str] = []

            async def wait() -> None:
                waited.append(await call(client, "shell_output", node_id=shell, wait=20))

            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.sleep(0.5)  # shell_output now holds the session, waiting
                begun = anyio.current_time()
                assert await call(client, "read_file", path="greet.py") == SOURCE
                assert anyio.current_time() - begun < 1.0
                assert not waited  # the command still runs
            assert "completed (exit 0" in waited[0]

        drive(root, scenario)


class TestSessionServer:
    """The server object in-process: which context each tool acts on."""

    def test_todos_live_in_the_session_context(self, root: Path) -> None:
        with Session(root) as session:
            server = SessionServer(session)
            anyio.run(server.call_tool, "add_todo", {"item": "ship it"})
            assert session.context.state["todos"] == [{"item": "ship it", "done": False}]
            assert set(session.context.state.keys()) == {"todos"}  # plain JSON only

    def test_files_and_knowledge_read_through_a_layer(self, root: Path) -> None:
        with Session(root) as session:
            session.context.state.set("note", "from the session")
            layer = reading_context(session)
            assert layer.state["working_dir"] == str(root.resolve())
            assert isinstance(layer.state["workspace"], Workspace)
            assert layer.state["workspace"].knowledge_store is layer.state["knowledge_store"]
            assert layer.state["note"] == "from the session"
            assert "workspace" not in session.context.state

    def test_a_working_dir_set_on_the_session_context_wins(self, root: Path) -> None:
        (root / "docs").mkdir()
        (root / "docs" / "guide.md").write_text("# Guide\n")
        with Session(root) as session:
            session.context.state.set("working_dir", str(root / "docs"))
            tools = {tool.name: tool for tool in bind_context_tools(session)}
            assert [t.name for t in get_context_tools()] == list(tools)
            assert tools["add_todo"].target is session.context
            assert anyio.run(partial(tools["read_file"].execute, path="guide.md")) == "# Guide\n"


class TestCommandLine:
    @pytest.mark.parametrize(
        ("args", "status", "message"),
        [
            (["mcp", "{root}/missing"], 1, "is not a directory"),
            (["mcp", "{root}", "--budget", "0"], 2, "budget must be a positive integer"),
            (["mcp", "{root}", "--encoding", "no_such_encoding"], 1, "no_such_encoding"),
        ],
    )
    def test_bad_arguments_are_one_line_errors(
        self, root: Path, args: list[str], status: int, message: str
    ) -> None:
        argv = [a.format(root=root) for a in args]
        done = subprocess.run(
            [sys.executable, "-m", "dagctx.cli", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == status
        assert done.stdout == ""
        assert done.stderr.startswith("dagctx: error: ")
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


#: A server whose session opens only once the file named by argv[2] exists (or fails
#: to open, with argv[3] == "fail"): what the client sees while a session opens.
OPENING_SERVER = """
import sys, time
from functools import partial
from pathlib import Path

import anyio

from dagctx.errors import PathError
from dagctx.mcp.server import serve_stdio_while_opening

root, gate, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]


def open_session():
    while not gate.exists():
        time.sleep(0.02)
    if mode == "fail":
        raise PathError("the tree went away", path=root)
    from dagctx.session import Session

    return Session(root)


try:
    anyio.run(partial(serve_stdio_while_opening, open_session, root=root, budget=2000))
except PathError as exc:
    print(f"failed: {exc}", file=sys.stderr)
    sys.exit(3)
"""


@asynccontextmanager
async def opening(root: Path, gate: Path, mode: str) -> AsyncIterator[ClientSession]:
    script = root.parent / "opening_server.py"
    script.write_text(OPENING_SERVER)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(script), str(root), str(gate), mode],
        env=dict(os.environ),
    )
    with (root.parent / "opening-stderr.log").open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream) as client,
        ):
            yield client


class TestStart:
    """`dagctx mcp` answers ``initialize`` before its session is open."""

    def test_initialize_is_answered_while_the_session_opens_and_requests_wait(
        self, root: Path
    ) -> None:
        gate = root.parent / "gate"

        async def main() -> None:
            with anyio.fail_after(SCENARIO_TIMEOUT):
                async with opening(root, gate, "open") as client:
                    init = await client.initialize()  # the session is not open yet
                    assert str(root) in (init.instructions or "")
                    assert "2000 tokens" in (init.instructions or "")
                    assert "knowledge tools search the README, docs/" in (init.instructions or "")
                    listed: list[str] = []

                    async def list_tools() -> None:
                        listed.extend(t.name for t in (await client.list_tools()).tools)

                    async with anyio.create_task_group() as group:
                        group.start_soon(list_tools)
                        await anyio.sleep(0.5)
                        assert listed == []  # waiting for the session
                        gate.touch()
                    assert "list_nodes" in listed
                    assert "greet.py" in await read(client, "dagctx://projection")

        anyio.run(main)

    def test_a_session_that_cannot_open_is_an_error_for_each_request(self, root: Path) -> None:
        gate = root.parent / "gate"
        gate.touch()

        async def main() -> None:
            with anyio.fail_after(SCENARIO_TIMEOUT):
                async with opening(root, gate, "fail") as client:
                    await client.initialize()
                    with pytest.raises(MCPError, match="could not be opened: the tree went"):
                        await client.list_tools()

        anyio.run(main)
        assert "failed: the tree went away" in (root.parent / "opening-stderr.log").read_text()

    def test_the_server_module_imports_no_session_or_graph(self) -> None:
        code = (
            "import sys, dagctx.mcp.server\n"
            "print(sorted(m for m in ('dagctx.session', 'dagctx.tools', 'networkx')"
            " if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        assert done.stdout.strip() == "[]"
