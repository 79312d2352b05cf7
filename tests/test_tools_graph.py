"""Specification of the graph tools: a model steering a real Session's DAG."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from dagctx.context import Context
from dagctx.errors import ToolError
from dagctx.nodes.base import NodeState
from dagctx.nodes.shell import ShellNode
from dagctx.nodes.text import TextNode
from dagctx.session import Session
from dagctx.tools import SessionTool, get_graph_tools
from dagctx.tools.base import Refusal
from dagctx.tools.graph import OPENED_PRIORITY

NAMES = [
    "list_nodes",
    "open_file",
    "set_node_state",
    "hide_node",
    "run_shell",
    "shell_output",
    "checkpoint",
    "restore",
    "set_budget",
    "set_focus",
    "show_projection_stats",
]


@pytest.fixture
def tools(session: Session) -> dict[str, SessionTool]:
    return {tool.name: tool.bind(session) for tool in get_graph_tools()}


def call(tool: SessionTool, **kwargs: Any) -> str:
    return asyncio.run(tool.execute(**kwargs))


def structure(session: Session) -> list[tuple[str, str, list[str]]]:
    return [(n.id, n.state.name, [c.id for c in n.children]) for n in session.nodes()]


class TestFactory:
    def test_ten_tools_in_order(self) -> None:
        assert [tool.name for tool in get_graph_tools()] == NAMES

    def test_each_call_returns_fresh_unbound_instances(self, session: Session) -> None:
        first = get_graph_tools()
        first[0].bind(session)
        second = get_graph_tools()
        assert all(a is not b for a, b in zip(first, second, strict=True))
        assert second[0].target is None

    def test_session_is_not_in_any_schema(self) -> None:
        for tool in get_graph_tools():
            schema = tool.to_schema()["function"]
            assert "session" not in schema["parameters"]["properties"]
            assert schema["description"]

    def test_schema_types_follow_the_signatures(self) -> None:
        tools = {t.name: t for t in get_graph_tools()}
        open_params = tools["open_file"].parameters
        assert open_params["required"] == ["path"]
        assert open_params["properties"]["start_line"]["type"] == ["integer", "null"]
        shell = tools["run_shell"].parameters["properties"]
        assert shell["timeout"] == {
            "type": "number",
            "description": "Seconds after which the command is killed.",
            "default": 30.0,
        }
        assert tools["show_projection_stats"].parameters["properties"] == {}

    def test_bind_accepts_only_a_session(self) -> None:
        tool = get_graph_tools()[0]
        with pytest.raises(ToolError, match="binds a Session, got Context"):
            tool.bind(Context("task"))  # type: ignore[arg-type]
        assert tool.target is None

    def test_unbound_execute_raises(self) -> None:
        with pytest.raises(ToolError, match="not bound"):
            call(get_graph_tools()[0])


class TestListNodes:
    def test_empty_graph_says_how_to_start(self, tools: dict[str, SessionTool]) -> None:
        assert "no nodes yet" in call(tools["list_nodes"])

    def test_lists_id_type_state_tokens_and_label(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        node = session.text("src/auth.py")
        session.text("README.md", state="hidden")
        lines = call(tools["list_nodes"]).splitlines()
        assert lines[0].startswith("nodes 1-2 of 2")
        tokens = session.cache.tokens(node, NodeState.DETAILS)
        assert lines[1].split() == ["text_1", "text", "DETAILS", str(tokens), "src/auth.py"]
        assert lines[2].split() == ["text_2", "text", "HIDDEN", "0", "README.md"]

    def test_pages_through_a_large_graph(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        for _ in range(5):
            session.text("README.md")
        page = call(tools["list_nodes"], offset=1, limit=2).splitlines()
        assert page[0].startswith("nodes 2-3 of 5")
        assert [line.split()[0] for line in page[1:3]] == ["text_2", "text_3"]
        assert page[-1] == "2 more; call list_nodes with offset=3."
        assert "graph has 5 nodes" in call(tools["list_nodes"], offset=5)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"offset": -1}, "offset must be 0 or more, got -1."),
            ({"limit": 0}, "limit must be between 1 and 500, got 0."),
            ({"limit": "ten"}, "argument 'limit' must be an integer"),
        ],
    )
    def test_bad_paging_is_a_message(
        self, tools: dict[str, SessionTool], kwargs: dict[str, Any], message: str
    ) -> None:
        assert message in call(tools["list_nodes"], **kwargs)


class TestOpenFile:
    def test_opens_a_file_as_a_text_node(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        reply = call(tools["open_file"], path="src/auth.py")
        (node,) = session.nodes()
        assert isinstance(node, TextNode)
        tokens = session.cache.tokens(node, NodeState.DETAILS)
        assert reply == f"Opened src/auth.py as text_1: 6 lines, {tokens} tokens at DETAILS."
        assert "def check(user):" in session.project().text

    def test_opens_a_line_range(self, session: Session, tools: dict[str, SessionTool]) -> None:
        assert call(tools["open_file"], path="src/auth.py", start_line=5, end_line=6).startswith(
            "Opened src/auth.py:5-6 as text_1: 2 lines"
        )
        assert session.get("text_1").lines == ["def check(user):", "    return True"]  # type: ignore[attr-defined]

    def test_open_ended_ranges(self, session: Session, tools: dict[str, SessionTool]) -> None:
        call(tools["open_file"], path="src/auth.py", start_line=5)
        call(tools["open_file"], path="src/auth.py", end_line=2)
        tail, head = session.nodes()
        assert tail.lines == ["def check(user):", "    return True"]  # type: ignore[attr-defined]
        assert head.lines == ["def login(user):", "    return check(user)"]  # type: ignore[attr-defined]

    def test_opening_again_reuses_the_node_and_unhides_it(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        call(tools["open_file"], path="README.md")
        again = call(tools["open_file"], path="./README.md", start_line=1)
        assert again == "README.md is already open as text_1 (DETAILS)."
        session.get("text_1").set_state("hidden")
        assert "visible again" in call(tools["open_file"], path="README.md")
        assert [n.state for n in session.nodes()] == [NodeState.DETAILS]

    def test_a_file_the_session_tracks_is_raised_not_opened_twice(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        tracked = session.text("src/auth.py")
        session.group(tracked, title="src")
        assert tracked.priority == TextNode.default_priority
        reply = call(tools["open_file"], path="src/auth.py")
        tokens = session.cache.tokens(tracked, NodeState.DETAILS)
        assert reply == (
            f"Opened src/auth.py as {tracked.id}, the node the context tracked it by:"
            f" {tokens} tokens at DETAILS, now ahead of the files not opened."
        )
        assert tracked.priority == OPENED_PRIORITY > TextNode.default_priority
        assert len(session.text_nodes("src/auth.py")) == 1
        assert call(tools["open_file"], path="src/auth.py") == (
            f"src/auth.py is already open as {tracked.id} (DETAILS)."
        )

    def test_a_new_node_gets_the_opened_priority(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        call(tools["open_file"], path="src/auth.py")
        assert session.get("text_1").priority == OPENED_PRIORITY

    def test_binary_file_opens_with_its_placeholder(
        self, project: Path, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        (project / "blob.bin").write_bytes(b"\x00\x01\x02")
        assert "shows only [binary file" in call(tools["open_file"], path="blob.bin")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"path": "../outside.txt"}, "Refused '../outside.txt': path '../outside.txt' is "),
            ({"path": "/etc/hostname"}, "is outside the session root"),
            ({"path": "src/../../x"}, "is outside the session root"),
            ({"path": "a\x00b"}, "Refused 'a\\x00b': invalid path"),
            ({"path": "missing.py"}, "File not found: 'missing.py'"),
            ({"path": "src"}, "Refused 'src': it is not a regular file."),
            ({"path": "README.md", "start_line": 0}, "start_line must be 1 or more, got 0."),
            ({"path": "README.md", "start_line": 3, "end_line": 2}, "end_line must be at least"),
            ({"path": "README.md", "start_line": 40}, "README.md has fewer than 40 lines"),
            ({"path": 7}, "argument 'path' must be a string"),
            ({}, "missing required argument 'path'"),
        ],
    )
    def test_refusals_are_messages_and_add_nothing(
        self,
        session: Session,
        tools: dict[str, SessionTool],
        kwargs: dict[str, Any],
        message: str,
    ) -> None:
        assert message in call(tools["open_file"], **kwargs)
        assert session.nodes() == []

    def test_a_range_deep_in_a_huge_file_opens(
        self, project: Path, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        lines = "".join(f"line {n:07d} " + "y" * 86 + "\n" for n in range(1, 20_001))
        (project / "huge.txt").write_text(lines)  # 2 MB, past a text node's 1 MB read cap
        reply = call(tools["open_file"], path="huge.txt", start_line=15_000, end_line=15_002)
        assert reply.startswith("Opened huge.txt:15000-15002 as text_1: 3 lines")
        node = session.get("text_1")
        assert [line[:12] for line in node.lines] == [
            "line 0015000",
            "line 0015001",
            "line 0015002",
        ]

    def test_a_line_longer_than_the_read_cap_is_refused(
        self, project: Path, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        (project / "wide.txt").write_text("short\n" + "z" * 1_200_000 + "\n")
        reply = call(tools["open_file"], path="wide.txt", start_line=2)
        assert reply == (
            "Nothing was opened: line 2 of wide.txt is longer than 1,000,000 bytes,"
            " the most a text node reads."
        )
        assert session.nodes() == []

    def test_symlink_leaving_the_root_is_refused(
        self, project: Path, tmp_path_factory: pytest.TempPathFactory, tools: dict[str, SessionTool]
    ) -> None:
        secret = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
        secret.write_text("password\n")
        (project / "link.txt").symlink_to(secret)
        assert "outside the session root" in call(tools["open_file"], path="link.txt")


class TestStates:
    def test_set_node_state_changes_what_renders(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        node = session.text("src/auth.py")
        reply = call(tools["set_node_state"], node_id=node.id, state="Collapsed")
        tokens = session.cache.tokens(node, NodeState.COLLAPSED)
        assert reply == f"text_1: DETAILS → COLLAPSED ({tokens} tokens at COLLAPSED)."
        assert "- src/auth.py (6 lines)" in session.project().text
        assert call(tools["set_node_state"], node_id="text_1", state="collapsed") == (
            "text_1 is already COLLAPSED."
        )

    def test_asking_for_the_state_a_node_has_says_what_the_projection_did(
        self, project: Path, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        (project / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(900)))
        big = session.text("big.txt")
        session.set_budget(120)
        shown = session.tick().projection
        assert shown.degraded[big.id] == (NodeState.DETAILS, NodeState.DETAILS)  # a cut
        cut = call(tools["set_node_state"], node_id=big.id, state="details")
        assert cut.startswith(f"{big.id} is already DETAILS, but the last projection showed it")
        assert "(cut to " in cut and cut.endswith("; read_file('big.txt') reads the rest.")
        for i in range(12):
            (project / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
            session.text(f"m{i}.py")
        shown = session.tick().projection
        assert shown.omitted == [big.id]
        assert call(tools["set_node_state"], node_id=big.id, state="details") == (
            f"{big.id} is already DETAILS, but the last projection left it out"
            f" ({shown.reasons[big.id].removeprefix('left out: ')});"
            " open_file('big.txt') puts it ahead of the files not opened."
        )
        small = next(n for n in session.text_nodes("m0.py"))
        assert shown.degraded[small.id] == (NodeState.DETAILS, NodeState.COLLAPSED)
        assert call(tools["set_node_state"], node_id=small.id, state="details").endswith(
            "open_file('m0.py') puts it ahead of the files not opened."
        )
        session.set_budget(30_000)
        session.tick()
        assert call(tools["set_node_state"], node_id=big.id, state="details") == (
            f"{big.id} is already DETAILS."
        )

    def test_hide_node_leaves_it_out(self, session: Session, tools: dict[str, SessionTool]) -> None:
        node = session.text("src/auth.py")
        assert call(tools["hide_node"], node_id="text_1").startswith("Hid text_1;")
        assert node.state == NodeState.HIDDEN
        assert "def login" not in session.project().text
        assert "def login" not in session.tick().projection.text
        assert call(tools["hide_node"], node_id="text_1") == "text_1 is already hidden."

    @pytest.mark.parametrize(
        ("tool", "kwargs", "message"),
        [
            ("set_node_state", {"node_id": "text_9", "state": "all"}, "No node 'text_9'"),
            ("set_node_state", {"node_id": "text_1", "state": "huge"}, "Unknown state 'huge'"),
            ("set_node_state", {"node_id": "text_1", "state": 3}, "must be a string"),
            ("hide_node", {"node_id": "nope"}, "No node 'nope'; list_nodes shows the ids."),
        ],
    )
    def test_bad_ids_and_states_are_messages(
        self,
        session: Session,
        tools: dict[str, SessionTool],
        tool: str,
        kwargs: dict[str, Any],
        message: str,
    ) -> None:
        node = session.text("README.md")
        version = node.version
        assert message in call(tools[tool], **kwargs)
        assert (node.state, node.version) == (NodeState.DETAILS, version)


class TestRunShell:
    def test_a_quick_command_reports_its_output(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        reply = call(tools["run_shell"], command=sys.executable, args=["-c", "print('hi there')"])
        (node,) = session.nodes()
        assert isinstance(node, ShellNode)
        assert reply.startswith("shell_1: $ ")
        assert "completed (exit 0" in reply
        assert reply.splitlines()[1:] == ["stdout (9 bytes):", "```", "hi there", "```"]
        assert node.status == "completed"

    def test_a_slow_command_is_reported_running(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        code = "import time; time.sleep(30)"
        reply = call(tools["run_shell"], command=sys.executable, args=["-c", code], timeout=0.5)
        assert "Still running after 0.5 s" in reply
        assert "shell_output('shell_1') waits for it" in reply
        node = session.wait(session.get("shell_1"), timeout=10)
        assert isinstance(node, ShellNode)
        assert node.status == "timeout"

    def test_a_failing_command_shows_its_exit_code(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        code = "import sys; sys.exit(3)"
        assert "failed (exit 3" in call(
            tools["run_shell"], command=sys.executable, args=["-c", code]
        )

    def test_a_command_line_in_command_gets_a_hint(self, tools: dict[str, SessionTool]) -> None:
        reply = call(tools["run_shell"], command="ls -la")
        assert "not found" in reply
        assert reply.endswith("put its arguments in args.")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"command": "echo", "timeout": 0}, "timeout must be a positive number"),
            ({"command": ""}, "cmd must be a non-empty string"),
            ({"command": "echo", "args": ["a\x00b"]}, "without NUL bytes"),
            ({"command": "echo", "args": "hello"}, "argument 'args' must be"),
        ],
    )
    def test_bad_arguments_are_messages_and_start_nothing(
        self,
        session: Session,
        tools: dict[str, SessionTool],
        kwargs: dict[str, Any],
        message: str,
    ) -> None:
        assert message in call(tools["run_shell"], **kwargs)
        assert session.nodes() == []


class TestShellOutput:
    def test_it_waits_for_a_command_run_shell_left_running(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        code = "import time; time.sleep(3); print('done at last')"
        started = call(tools["run_shell"], command=sys.executable, args=["-c", code])
        assert "Still running after 2 s" in started
        early = call(tools["shell_output"], node_id="shell_1", wait=0)
        assert early.startswith("shell_1: $ ") and "Still running after 0 s" in early
        reply = call(tools["shell_output"], node_id="shell_1", wait=30)
        assert "completed (exit 0" in reply
        assert reply.splitlines()[1:] == ["stdout (13 bytes):", "```", "done at last", "```"]
        assert call(tools["shell_output"], node_id="shell_1") == reply  # ended: at once

    def test_a_failing_command_reports_its_exit_and_stderr(
        self, tools: dict[str, SessionTool]
    ) -> None:
        code = "import sys, time; time.sleep(2.5); sys.exit('broken')"
        call(tools["run_shell"], command=sys.executable, args=["-c", code])
        reply = call(tools["shell_output"], node_id="shell_1", wait=30)
        assert "failed (exit 1" in reply.splitlines()[0]
        assert reply.splitlines()[1:] == ["stderr (7 bytes):", "```", "broken", "```"]

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"node_id": "shell_9"}, "No node 'shell_9'; list_nodes shows the ids."),
            ({"node_id": "text_1"}, "text_1 is a text node, not a command"),
            ({"node_id": "text_1", "wait": -1}, "text_1 is a text node"),
            ({"node_id": "shell_1", "wait": -1}, "wait must be between 0 and 600 seconds"),
            ({"node_id": "shell_1", "wait": 601}, "got 601"),
            ({"node_id": "shell_1", "wait": "soon"}, "argument 'wait' must be a number"),
        ],
    )
    def test_bad_ids_and_waits_are_messages(
        self,
        session: Session,
        tools: dict[str, SessionTool],
        kwargs: dict[str, Any],
        message: str,
    ) -> None:
        session.text("src/auth.py")
        call(tools["run_shell"], command=sys.executable, args=["-c", "pass"])
        reply = call(tools["shell_output"], **kwargs)
        assert isinstance(reply, Refusal) and message in reply


class TestCheckpoints:
    def test_restore_returns_to_the_checkpoint(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        session.text("src/auth.py")
        assert call(tools["checkpoint"], name="start") == (
            "Saved checkpoint 'start' (1 nodes); restore('start') returns to it."
        )
        saved = structure(session)
        call(tools["hide_node"], node_id="text_1")
        call(tools["open_file"], path="README.md")
        reply = call(tools["restore"], name="start")
        assert reply == "Restored checkpoint 'start'; nodes created since stay as roots: text_2."
        assert structure(session)[0] == saved[0]

    def test_saving_again_replaces(self, tools: dict[str, SessionTool]) -> None:
        call(tools["checkpoint"], name="a")
        assert call(tools["checkpoint"], name="a").startswith("Replaced checkpoint 'a'")

    def test_unknown_and_empty_names_are_messages(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        call(tools["checkpoint"], name="one")
        assert call(tools["restore"], name="two") == (
            "No checkpoint named 'two'. Saved checkpoints: 'one'."
        )
        assert call(tools["checkpoint"], name="  ") == "Give the checkpoint a non-empty name."
        assert session.checkpoints() == ["one"]


class TestBudget:
    def test_set_budget_changes_the_projection_budget(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        assert call(tools["set_budget"], tokens=1234) == "Budget: 4000 → 1234 tokens."
        assert session.project().budget == 1234

    @pytest.mark.parametrize(
        ("tokens", "message"),
        [
            (0, "The budget must be a positive number of tokens, got 0."),
            (-5, "got -5"),
            (12.5, "argument 'tokens' must be an integer"),
            (True, "argument 'tokens' must be an integer"),
        ],
    )
    def test_bad_budgets_are_messages(
        self, session: Session, tools: dict[str, SessionTool], tokens: Any, message: str
    ) -> None:
        assert message in call(tools["set_budget"], tokens=tokens)
        assert session.budget == 4000


class TestFocus:
    def test_the_focus_is_read_back_and_a_long_one_only_in_part(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        assert call(tools["set_focus"], text=" restore a checkpoint ") == (
            "Focus from the next turn: 'restore a checkpoint'."
        )
        issue = "The checkpoint is lost after a restore. " * 500
        reply = call(tools["set_focus"], text=issue)
        assert reply == (
            f"Focus from the next turn: {issue[:200]!r}… ({len(issue.strip()):,} characters)."
        )
        session.tick()
        assert session.cache.projector.relevance.focus == issue.strip()


class TestProjectionStats:
    def test_reports_tokens_of_budget_and_largest_sections(
        self, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        session.text("src/auth.py")
        session.text("README.md")
        projection = session.project()
        lines = call(tools["show_projection_stats"]).splitlines()
        assert lines[0] == (
            f"Projection: {projection.tokens}/4000 tokens ({projection.tokens / 4000:.1%});"
            f" {len(projection.sections)} sections, 0 degraded, 0 omitted."
        )
        assert lines[1] == "Largest sections:"
        assert lines[2].split()[:2] == ["text_1", "DETAILS"]
        assert lines[2].endswith("src/auth.py")

    def test_reports_degraded_and_omitted_nodes_under_pressure(
        self, project: Path, session: Session, tools: dict[str, SessionTool]
    ) -> None:
        (project / "big.txt").write_text("".join(f"line {i} of filler\n" for i in range(400)))
        for _ in range(3):
            session.add(TextNode("big.txt", root=project))
        call(tools["set_budget"], tokens=150)
        stats = call(tools["show_projection_stats"])
        projection = session.project()
        assert projection.degraded or projection.omitted
        assert f"{len(projection.degraded)} degraded" in stats
        assert f"{len(projection.omitted)} omitted" in stats
        if projection.omitted:
            assert "Omitted: " + projection.omitted[0] in stats
        if projection.degraded:
            assert "Degraded: " in stats


class TestSessionErrorsBecomeMessages:
    def test_a_closed_session_answers_with_a_message(self, project: Path) -> None:
        session = Session(project)
        tool = next(t for t in get_graph_tools() if t.name == "open_file").bind(session)
        session.close()
        assert call(tool, path="README.md") == "open_file failed: the session is closed"
