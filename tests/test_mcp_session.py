"""`dagctx mcp PATH` serves the tree's session as `dagctx watch` keeps it: scanned or
resumed, following file changes, telling subscribers, sharing the session file safely with
a running `dagctx watch`; arguments as real clients send them. Driven by the MCP SDK's
stdio client against a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from dagctx.mcp.arguments import client_schema, coerce_arguments
from dagctx.mcp.server import READ_LIMIT

SCENARIO_TIMEOUT = 60.0
SOURCE = "def greet(name):\n    return f'hello {name}'\n"
Scenario = Callable[[ClientSession, "Updates"], Awaitable[None]]


class Updates:
    """The ``resources/updated`` notifications a client received, with their times."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []
        self._event = anyio.Event()

    async def handle(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.seen.append((str(message.params.uri), time.monotonic()))
            self._event.set()

    async def next(self, timeout: float) -> float:
        """Wait for the next notification; return when it came."""
        with anyio.fail_after(timeout):
            await self._event.wait()
        self._event = anyio.Event()
        return self.seen[-1][1]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "greet.py").write_text(SOURCE)
    (project / "notes.md").write_text("# Notes\n\nThe deploy key lives in the vault.\n")
    (project / "README.md").write_text("# Project\n\nGreets people politely.\n")
    (project / "docs").mkdir()
    (project / "docs" / "deploy.md").write_text("# Deploy\n\nRun the zeppelin script.\n")
    (project / "docs" / "api").mkdir()
    (project / "docs" / "api" / "blueprints.rst").write_text(
        "Blueprints\n==========\n\nNested blueprints take their parent's url prefix.\n"
    )
    (project / "docs" / "faq.txt").write_text("Questions people ask.\n")
    (project / "docs" / "logo.svg").write_text("<svg/>\n")
    return project


@asynccontextmanager
async def served(root: Path, errlog: Path, updates: Updates) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dagctx.cli", "mcp", str(root), "--budget", "2000"],
        cwd=str(root),
        env=dict(os.environ),
    )
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write, message_handler=updates.handle) as client,
        ):
            await client.initialize()
            yield client


def drive(root: Path, scenario: Scenario) -> str:
    """Run `scenario` against `dagctx mcp root`; return the server's stderr."""
    errlog = root.parent / "mcp-stderr.log"
    updates = Updates()

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with served(root, errlog, updates) as client:
                await scenario(client, updates)

    try:
        anyio.run(main)
    except BaseException:
        print("server stderr:\n" + errlog.read_text(), file=sys.stderr)
        raise
    return errlog.read_text()


async def text_of(client: ClientSession, uri: str) -> str:
    result = await client.read_resource(uri)
    first = result.contents[0]
    assert isinstance(first, types.TextResourceContents)
    return first.text


async def call(client: ClientSession, tool: str, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(tool, arguments)


def reply(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def subscribe(client: ClientSession, uri: str) -> None:
    with warnings.catch_warnings():  # the SDK marks the 2025-era request as deprecated
        warnings.simplefilter("ignore")
        await client.subscribe_resource(uri)


class TestTheTreeIsServed:
    def test_the_projection_shows_the_tree_at_once(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            text = await text_of(client, "dagctx://projection")
            assert SOURCE.rstrip("\n") in text
            assert "greet.py" in reply(await call(client, "list_nodes"))

        drive(root, scenario)
        assert (root / ".dagctx" / "session.db").is_file()  # saved like dagctx watch

    def test_a_saved_session_is_resumed(self, root: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "dagctx.cli", "watch", str(root), "--once"],
            check=True,
            capture_output=True,
            timeout=60,
        )

        async def scenario(client: ClientSession, updates: Updates) -> None:
            assert SOURCE.rstrip("\n") in await text_of(client, "dagctx://projection")

        stderr = drive(root, scenario)
        assert "dagctx mcp: resuming after turn 1 from" in stderr

    def test_a_saved_file_is_followed_and_subscribers_are_told(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            await text_of(client, "dagctx://projection")
            await subscribe(client, "dagctx://projection")
            saved = time.monotonic()
            (root / "greet.py").write_text(SOURCE + "\nFAREWELL = 'bye'\n")
            told = await updates.next(timeout=10)
            assert told - saved < 5.0
            assert "FAREWELL = 'bye'" in await text_of(client, "dagctx://projection")
            (root / "new.py").write_text("ADDED = 1\n")
            await updates.next(timeout=10)
            assert "ADDED = 1" in await text_of(client, "dagctx://projection")

        drive(root, scenario)

    def test_a_tool_that_changes_the_projection_tells_subscribers(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            await subscribe(client, "dagctx://explain")
            await call(client, "set_budget", tokens=100)
            await updates.next(timeout=10)
            assert updates.seen[-1][0] == "dagctx://explain"

        drive(root, scenario)


class TestChangesSinceTheLastRead:
    """The watcher's ticks are not the client's turns: a client's next projection lists
    every change since the last one it got."""

    @staticmethod
    def changes(text: str) -> str:
        return text.partition("## Changes since last turn")[2]

    def test_changes_the_watcher_applied_are_listed_at_the_next_read(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            assert "## Changes since" not in reply(await call(client, "get_context"))
            await subscribe(client, "dagctx://projection")
            (root / "greet.py").write_text(SOURCE + "\nFAREWELL = 'bye'\n")
            await updates.next(timeout=10)  # one tick of the watcher
            (root / "new.py").write_text("ADDED = 1\n")
            await updates.next(timeout=10)  # and another
            (root / "notes.md").unlink()
            await updates.next(timeout=10)
            listed = self.changes(reply(await call(client, "get_context")))
            assert "greet.py: content changed" in listed
            assert "new.py: file created" in listed
            assert ": file deleted" in listed
            assert "removed child text_" in listed
            assert "(notes.md)" in listed  # named, though its node is gone
            again = reply(await call(client, "get_context"))
            assert "## Changes since" not in again
            (root / "greet.py").write_text(SOURCE)
            await updates.next(timeout=10)
            listed = self.changes(await text_of(client, "dagctx://projection"))
            assert "greet.py: content changed" in listed
            assert "new.py" not in listed

        drive(root, scenario)

    def test_what_changed_while_nobody_watched_is_listed_at_the_first_read(
        self, root: Path
    ) -> None:
        subprocess.run(
            [sys.executable, "-m", "dagctx.cli", "watch", str(root), "--once"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        (root / "greet.py").write_text(SOURCE + "\nFAREWELL = 'bye'\n")

        async def scenario(client: ClientSession, updates: Updates) -> None:
            listed = self.changes(await text_of(client, "dagctx://projection"))
            assert "file changed while not watched: 1 edited" in listed
            assert "greet.py: content changed" in listed

        drive(root, scenario)


class TestSharingWithWatch:
    def test_with_a_watch_running_mcp_serves_a_live_copy_and_does_not_save(
        self, root: Path
    ) -> None:
        watch = subprocess.Popen(
            [sys.executable, "-m", "dagctx.cli", "watch", str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not (root / ".dagctx" / "projection.md").exists():
                assert time.monotonic() < deadline and watch.poll() is None
                time.sleep(0.1)
            time.sleep(5.5)  # then a change: the watcher's first periodic save is due
            (root / "other.py").write_text("OTHER = 1\n")
            while not (root / ".dagctx" / "session.db").exists():
                assert time.monotonic() < deadline + 10 and watch.poll() is None
                time.sleep(0.1)

            async def scenario(client: ClientSession, updates: Updates) -> None:
                await text_of(client, "dagctx://projection")
                (root / "greet.py").write_text(SOURCE + "\nLIVE = True\n")
                deadline = anyio.current_time() + 10
                while "LIVE = True" not in await text_of(client, "dagctx://projection"):
                    assert anyio.current_time() < deadline
                    await anyio.sleep(0.2)

            stderr = drive(root, scenario)
        finally:
            watch.terminate()
            _, watch_err = watch.communicate(timeout=30)
        assert "dagctx mcp: the session is not saved" in stderr
        assert "being written by another process" in stderr
        assert "not saved" not in watch_err  # the watcher's saves went on


class TestFailuresAreErrors:
    def test_refusals_set_is_error_and_results_do_not(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            for tool, arguments, message in [
                ("set_budget", {"tokens": "lots"}, "argument 'tokens' must be an integer"),
                ("open_file", {"path": "../x"}, "Refused '../x'"),
                ("hide_node", {"node_id": "text_99"}, "No node 'text_99'"),
                ("read_file", {"path": "/etc/passwd"}, "absolute paths are not allowed"),
                ("run_shell", {"command": "no-such-program-here"}, "no-such-program-here"),
            ]:  # fmt: skip
                result = await call(client, tool, **arguments)
                assert result.is_error, (tool, reply(result))
                assert message in reply(result)
            assert not (await call(client, "get_todo")).is_error

        drive(root, scenario)


class TestClientArguments:
    def test_strings_that_spell_numbers_and_arrays_are_read(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            opened = await call(client, "open_file", path="greet.py", start_line="2", end_line="2")
            assert not opened.is_error and "greet.py:2-2" in reply(opened), reply(opened)
            ran = await call(
                client, "run_shell", command=sys.executable, args='["-c", "print(6*7)"]'
            )
            assert not ran.is_error and "42" in reply(ran)
            null = await call(client, "set_budget", tokens=None)
            assert null.is_error
            assert reply(null).endswith("argument 'tokens' must be an integer, got null.")
            listed = (await client.list_tools()).tools
            assert all('"null"' not in json.dumps(t.input_schema) for t in listed)

        drive(root, scenario)

    @pytest.mark.parametrize(
        ("schema", "given", "expected"),
        [
            ({"type": "integer"}, "12", 12),
            ({"type": "integer"}, "-3", -3),
            ({"type": "integer"}, "1.5", "1.5"),
            ({"type": "integer"}, "012", "012"),
            ({"type": "integer"}, "lots", "lots"),
            ({"type": "number"}, "1.5", 1.5),
            ({"type": "number"}, "nan", "nan"),
            ({"type": "boolean"}, "true", True),
            ({"type": ["array", "null"], "items": {"type": "string"}}, '["a"]', ["a"]),
            ({"type": "array"}, '{"a": 1}', '{"a": 1}'),
            ({"type": "string"}, "12", "12"),
            ({"type": ["integer", "string"]}, "12", "12"),
        ],
    )
    def test_coercion_is_lossless_or_nothing(
        self, schema: dict[str, Any], given: str, expected: Any
    ) -> None:
        parameters = {"type": "object", "properties": {"x": schema}, "required": []}
        assert coerce_arguments(parameters, {"x": given}) == {"x": expected}

    def test_optional_arguments_lose_their_null(self) -> None:
        parameters = {
            "type": "object",
            "properties": {
                "a": {"type": ["integer", "null"], "default": None},
                "b": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
                "c": {"type": ["string", "null"]},
            },
            "required": ["c"],
        }
        assert client_schema(parameters)["properties"] == {
            "a": {"type": "integer"},
            "b": {"type": "array", "items": {"type": "string"}},
            "c": {"type": ["string", "null"]},  # required: null is a real value there
        }


class TestKnowledge:
    def test_the_repository_docs_are_searchable_from_the_start(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            found = reply(await call(client, "search_knowledge", query="zeppelin"))
            assert found.startswith("1. docs/deploy.md")
            readme = await call(client, "get_knowledge", name="README.md")
            assert reply(readme) == "# Project\n\nGreets people politely.\n"
            assert (await call(client, "get_knowledge", name="notes.md")).is_error  # not a doc
            found = reply(await call(client, "search_knowledge", query="blueprints nested"))
            assert found.startswith("1. docs/api/blueprints.rst")
            missed = reply(await call(client, "search_knowledge", query="kubernetes"))
            assert missed == (
                "No results for 'kubernetes' in 4 artifacts:"
                " README.md, docs/deploy.md, docs/api/blueprints.rst, docs/faq.txt."
            )
            (root / "docs" / "deploy.md").write_text("# Deploy\n\nNow the blimp script.\n")
            deadline = anyio.current_time() + 10
            while "docs/deploy.md" not in reply(
                await call(client, "search_knowledge", query="blimp")
            ):
                assert anyio.current_time() < deadline
                await anyio.sleep(0.2)

        drive(root, scenario)

    def test_docs_beyond_those_indexed_are_counted_in_a_search(self, root: Path) -> None:
        """The server indexes at most 500 doc files; the rest were left out without a
        word (a search for a page past them found nothing, as if it did not exist). A
        search's answer now says how many were not indexed and what reads them."""
        for i in range(505):
            (root / "docs" / f"page_{i:03d}.md").write_text(f"# Page {i}\n\nOn topic {i}.\n")

        async def scenario(client: ClientSession, updates: Updates) -> None:
            note = "(9 more doc files of the repository were not indexed; read_file reads"
            found = reply(await call(client, "search_knowledge", query="zeppelin"))
            assert found.startswith("1. docs/deploy.md") and note in found
            missed = reply(await call(client, "search_knowledge", query="kubernetes"))
            assert missed.startswith("No results for 'kubernetes' in 500 artifacts:")
            assert note in missed

        drive(root, scenario)

    def test_a_long_doc_comes_back_within_the_read_limit(self, root: Path) -> None:
        (root / "docs" / "big.md").write_text(
            "".join(f"- item {i:05d} of the list\n" for i in range(3000))
        )

        async def scenario(client: ClientSession, updates: Updates) -> None:
            got = reply(await call(client, "get_knowledge", name="docs/big.md"))
            body, note = got.rsplit("\n[get_knowledge: ", 1)
            assert len(body) <= READ_LIMIT
            assert note.startswith(f"lines 1-{body.count(chr(10)) + 1} of 3000 of 'docs/big.md'")
            found = await call(client, "grep_knowledge", name="docs/big.md", pattern="02999")
            assert reply(found) == "3000: - item 02999 of the list"  # the rest, found

        drive(root, scenario)

    def test_add_knowledge_from_text_or_a_file(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            stored = await call(client, "add_knowledge", name="plan", text="Ship on Friday.\n")
            assert (
                reply(stored)
                == "Stored 'plan' (version 1, 1 line); the knowledge tools find it now."
            )
            assert "plan" in reply(await call(client, "search_knowledge", query="friday"))
            await call(client, "add_knowledge", name="code", path="greet.py")
            assert reply(await call(client, "get_knowledge", name="code")) == SOURCE
            for arguments, message in [
                ({"name": "x", "path": "../outside.txt"}, "outside the working directory"),
                ({"name": "x"}, "Give either text or path"),
                ({"name": "x", "text": "a", "path": "greet.py"}, "Give either text or path"),
                ({"name": "", "text": "a"}, "add_knowledge failed"),
            ]:
                result = await call(client, "add_knowledge", **arguments)
                assert result.is_error and message in reply(result), reply(result)

        drive(root, scenario)


class TestExplain:
    def test_explain_comes_as_a_table_and_as_json(self, root: Path) -> None:
        async def scenario(client: ClientSession, updates: Updates) -> None:
            contents = (await client.read_resource("dagctx://explain")).contents
            assert [c.mime_type for c in contents] == ["text/plain", "application/json"]
            table, data = contents
            assert isinstance(table, types.TextResourceContents)
            assert isinstance(data, types.TextResourceContents)
            explain = json.loads(data.text)
            assert explain["budget"] == 2000
            labels = {s["label"] for s in explain["sections"]}
            assert "greet.py" in labels
            assert sum(s["tokens"] for s in explain["sections"]) <= explain["tokens"]
            assert "greet.py" in table.text

        drive(root, scenario)
