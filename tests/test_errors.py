"""The error hierarchy: drawn in ``dagctx.errors``' docstring, exported from ``dagctx``,
every error carrying its offending value as a field (also across pickling)."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import pickle
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import watchfiles

import dagctx
from dagctx import dsl, errors
from dagctx.capability import CapabilityContext, ContextManager, ContextRegistry
from dagctx.checkpoint import Checkpoint, CheckpointStore, SQLiteCheckpointStore
from dagctx.context import Context, ContextState, make_config
from dagctx.graph import ContextGraph
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.mcp.client import MCPConnection
from dagctx.nodes import GroupNode, MessageNode, Node, ShellNode, TextNode, TopicNode
from dagctx.nodes.lock import LockNode
from dagctx.nodes.registry import resolve_node_type
from dagctx.session import Session
from dagctx.state import StateManager
from dagctx.tokens import TokenCounter
from dagctx.tools import get_graph_tools

ERROR_CLASSES = [getattr(errors, name) for name in errors.__all__]
_TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>\w+)(?: \[(?P<builtins>[\w, ]+)\])?")


def _tree() -> list[tuple[int, str, set[str], set[str]]]:
    """The docstring's drawing as (depth, class name, built-in bases, fields) rows."""
    doc = errors.__doc__ or ""
    drawing = doc.split("::", 1)[1]
    rows = []
    for line in drawing.splitlines():
        if not line.strip():
            continue
        match = _TREE_LINE.match(line.strip("\n")[4:])  # the block is indented by 4
        assert match, line
        depth = len(match["indent"]) // 4
        builtins = {b.strip() for b in (match["builtins"] or "").split(",") if b.strip()}
        fields = set(re.findall(r"\.(\w+)", line))
        rows.append((depth, match["name"], builtins, fields))
    return rows


class TestHierarchy:
    def test_every_error_class_has_a_docstring(self) -> None:
        for cls in ERROR_CLASSES:
            assert cls.__doc__ and cls.__doc__.strip(), cls.__name__

    def test_the_drawing_lists_every_error_class_once(self) -> None:
        names = [name for _, name, _, _ in _tree()]
        assert sorted(names) == sorted(errors.__all__)

    def test_the_drawing_matches_the_class_bases(self) -> None:
        parents: list[str] = []
        for depth, name, builtins, _ in _tree():
            del parents[depth:]
            cls = getattr(errors, name)
            bases = {b.__name__ for b in cls.__bases__ if not b.__name__.startswith("_")}
            expected = ({parents[-1]} if parents else {"Exception"}) | builtins
            assert bases == expected, name
            parents.append(name)

    def test_the_fields_drawn_are_attributes_of_a_bare_error(self) -> None:
        for _, name, _, fields in _tree():
            error = getattr(errors, name)("message")
            for field in fields:
                assert hasattr(error, field), f"{name}.{field}"

    def test_every_error_class_is_exported_from_dagctx(self) -> None:
        for name in errors.__all__:
            assert name in dagctx.__all__
            assert getattr(dagctx, name) is getattr(errors, name)

    def test_key_errors_read_as_their_message(self) -> None:
        for cls in ERROR_CLASSES:
            if issubclass(cls, KeyError):
                assert str(cls("no such thing")) == "no such thing"


def _sample_fields(cls: type[errors.DagctxError]) -> dict[str, Any]:
    params = inspect.signature(cls).parameters.values()
    return {
        p.name: (f"{p.name} of {cls.__name__}", 7)
        for p in params
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


class TestPickling:
    @pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
    def test_an_error_pickles_with_its_message_and_fields(self, cls: type) -> None:
        fields = _sample_fields(cls)
        error = cls(f"{cls.__name__} message", **fields)
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is cls
        assert str(copy) == str(error)
        assert copy.args == error.args
        assert vars(copy) == vars(error)
        for name, value in fields.items():
            assert getattr(copy, name) == value

    def test_mcp_client_error_keeps_stderr_tail_positional(self) -> None:
        error = errors.MCPClientError("boom", "last line", server="fs")
        copy = pickle.loads(pickle.dumps(error))
        assert (copy.stderr_tail, copy.server, copy.value) == ("last line", "fs", "fs")


class _Plan(CapabilityContext):
    CONTEXT_TYPE = "PLAN"
    CONTEXT_CATEGORY = "plan"
    goal: str = ""

    def get_summary(self) -> str:
        return self.goal

    def get_access_description(self) -> str:
        return "a plan"


def _bad_bind() -> None:
    get_graph_tools()[0].bind(42)  # type: ignore[arg-type]


def _missing_artifact() -> None:
    Workspace("w").revert_to_version("nothing-here", 0)


def _bad_step() -> None:
    ContextManager().extract_from_step({"inputs": []}, constraint_mode="medium")  # type: ignore[arg-type]


def _wrong_context_class() -> None:
    ContextRegistry().register(int)  # type: ignore[type-var]


# (call, error class, field, expected value): one real bad call per class, through the
# public API; each field must hold exactly the value the caller passed.
RAISES: list[tuple[Callable[[], object], type[errors.DagctxError], str, object]] = [
    (lambda: resolve_node_type("no-such-type"), errors.GraphError, "value", "no-such-type"),
    (lambda: TopicNode("  "), errors.NodeFieldError, "value", "  "),
    (lambda: TopicNode("t", status="paused"), errors.NodeFieldError, "field", "status"),
    (lambda: MessageNode("robot", "hi"), errors.NodeFieldError, "value", "robot"),
    (lambda: TextNode("x", priority="high"), errors.NodeFieldError, "value", "high"),
    (
        lambda: TokenCounter("no_such_encoding"),
        errors.EncodingError,
        "encoding",
        "no_such_encoding",
    ),
    (lambda: make_config("turbo"), errors.ContextError, "value", "turbo"),
    (lambda: ContextState().delete("k"), errors.ContextKeyError, "key", "k"),
    (lambda: StateManager.create_fresh_state(3), errors.StateError, "value", 3),  # type: ignore[arg-type]
    (_bad_step, errors.CapabilityError, "value", "medium"),
    (_wrong_context_class, errors.CapabilityTypeError, "value", int),
    (lambda: Checkpoint("t", 0, {}, {}), errors.CheckpointError, "value", 0),
    (lambda: CheckpointStore("t").get(3), errors.CheckpointError, "value", 3),
    (lambda: Context("t").restore({"v": 1}), errors.CheckpointError, "value", {"v": 1}),  # type: ignore[arg-type]
    (_bad_bind, errors.ToolError, "value", 42),
    (lambda: ShellNode("ls", timeout=-1), errors.ShellError, "value", -1),
    (lambda: LockNode("", lock_file="/l"), errors.LockError, "value", ""),
    (lambda: KnowledgeStore(chunk_size=0), errors.KnowledgeError, "value", 0),
    (_missing_artifact, errors.ArtifactNotFoundError, "name", "nothing-here"),
]


class TestFields:
    @pytest.mark.parametrize(
        ("call", "cls", "field", "expected"),
        RAISES,
        ids=[f"{cls.__name__}.{field}" for _, cls, field, _ in RAISES],
    )
    def test_the_field_holds_the_offending_value(
        self, call: Callable[[], object], cls: type, field: str, expected: object
    ) -> None:
        with pytest.raises(cls) as caught:
            call()
        assert type(caught.value) is cls
        assert getattr(caught.value, field) == expected

    def test_a_tool_error_names_its_tool(self) -> None:
        tool = get_graph_tools()[0]
        with pytest.raises(errors.ToolError) as caught:
            tool.bind(42)  # type: ignore[arg-type]
        assert caught.value.tool == tool.name

    def test_node_field_errors_are_graph_errors(self) -> None:
        with pytest.raises(errors.GraphError):
            TopicNode("")


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Session]:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    with Session(tmp_path, budget=1000) as session:
        yield session


class TestSessionFields:
    """Representative bad calls on a session: the error's fields hold what was passed."""

    def test_budget(self, tmp_path: Path) -> None:
        with pytest.raises(errors.BudgetError) as caught:
            Session(tmp_path, budget=0)
        assert caught.value.value == 0

    def test_path_outside_the_root(self, s: Session) -> None:
        with pytest.raises(errors.PathError) as caught:
            s.text("../outside.txt")
        assert caught.value.path == caught.value.value == "../outside.txt"

    def test_bad_line_range(self, s: Session) -> None:
        with pytest.raises(errors.PathError) as caught:
            s.text("a.txt", lines=(2, 1))
        assert caught.value.value == (2, 1)

    def test_bad_wait_timeout(self, s: Session) -> None:
        with pytest.raises(errors.ArgumentError) as caught:
            s.wait_all([], timeout=-1)
        assert (caught.value.name, caught.value.value) == ("timeout", -1)

    def test_bad_mcp_url(self, s: Session) -> None:
        with pytest.raises(errors.ArgumentError) as caught:
            s.mcp_connect_sync("web", url="ftp://example.org")
        assert (caught.value.name, caught.value.value) == ("url", "ftp://example.org")

    def test_no_current_session(self) -> None:
        with pytest.raises(errors.NoSessionError):
            dsl.checkpoint("start")

    def test_closed_session(self, tmp_path: Path) -> None:
        session = Session(tmp_path)
        session.close()
        with pytest.raises(errors.SessionClosedError) as caught:
            session.topic("late")
        assert caught.value.root == session.root

    def test_node_of_the_wrong_type(self, s: Session) -> None:
        group = s.group(title="g")
        with pytest.raises(errors.NodeTypeError) as caught:
            s.close_topic(group)
        assert (caught.value.node_id, caught.value.expected) == (group.id, "topic")

    def test_closed_topic(self, s: Session) -> None:
        topic = s.topic("done")
        s.close_topic(topic)
        with pytest.raises(errors.NodeClosedError) as caught:
            s.message("user", "hi", topic=topic)
        assert caught.value.node_id == topic.id

    def test_no_active_topic(self, s: Session) -> None:
        with pytest.raises(errors.NoActiveTopicError):
            s.message("user", "hi")

    def test_unanswerable_tool_result(self, s: Session) -> None:
        s.topic("t")
        with pytest.raises(errors.ToolCallIdError) as caught:
            s.message("tool_result", "42", tool_call_id="call_9")
        assert caught.value.tool_call_id == "call_9"

    def test_bad_coordination_store(self, s: Session) -> None:
        with pytest.raises(errors.CoordinationError) as caught:
            s.use_coordination(42)  # type: ignore[arg-type]
        assert caught.value.value == 42

    def test_a_failing_watcher(self, s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
        refused = OSError(28, "inotify watch limit reached")

        async def failing_awatch(*args: object, **kwargs: object) -> AsyncIterator[set[Any]]:
            raise refused
            yield set()  # an async generator, as watchfiles.awatch is

        monkeypatch.setattr(watchfiles, "awatch", failing_awatch)

        async def watch_two_ticks() -> None:
            async with contextlib.aclosing(s.watch()) as ticks:
                await anext(ticks)  # the tick after the scan
                await anext(ticks)  # the watcher's failure comes with the next batch

        with pytest.raises(errors.WatchError) as caught:
            asyncio.run(watch_two_ticks())
        assert caught.value.value is refused

    def test_a_work_node_of_no_agent_here(self, s: Session) -> None:
        data = s.work_on("fix", "a.txt").to_dict()
        data["id"] = "work_99"
        loaded = s.add(Node.from_dict(data))
        with pytest.raises(errors.ForeignWorkError) as caught:
            s.work_done(loaded)
        assert caught.value.node_id == "work_99"

    def test_unknown_mcp_server(self, s: Session) -> None:
        with pytest.raises(errors.MCPServerNotFoundError) as caught:
            s.mcp_server("nope")
        assert caught.value.name == "nope"

    def test_unconnected_mcp_server(self, s: Session) -> None:
        s.mcp_connect_sync("ghost", ["/no/such/mcp-server"])
        with pytest.raises(errors.MCPStateError) as caught:
            s.mcp_call_sync("ghost", "add")
        assert (caught.value.server, caught.value.status) == ("ghost", "error")


class TestGraphAndStoreFields:
    def test_a_cycle_names_the_refused_link(self) -> None:
        graph = ContextGraph()
        a, b = graph.add(GroupNode("a")), graph.add(GroupNode("b"))
        graph.link(a, b)
        with pytest.raises(errors.CycleError) as caught:
            graph.link(b, a)
        assert (caught.value.parent, caught.value.child) == (b.id, a.id)
        with pytest.raises(errors.CycleError) as caught:
            graph.link(a, a)
        assert caught.value.parent == caught.value.child == a.id

    def test_an_unknown_id_is_the_node_id(self) -> None:
        with pytest.raises(errors.NodeNotFoundError) as caught:
            ContextGraph().get("ghost")
        assert caught.value.node_id == caught.value.value == "ghost"

    def test_a_duplicate_id_is_the_value(self) -> None:
        graph = ContextGraph()
        graph.add(GroupNode("a", id="g"))
        with pytest.raises(errors.GraphError) as caught:
            graph.add(GroupNode("b", id="g"))
        assert caught.value.value == "g"

    def test_a_missing_session_file_is_the_value(self, tmp_path: Path) -> None:
        missing = tmp_path / "nowhere.db"
        with pytest.raises(errors.CheckpointError) as caught:
            Session.load(missing)
        assert caught.value.value == missing

    def test_a_foreign_sqlite_file_names_its_tables(self, tmp_path: Path) -> None:
        path = tmp_path / "other.db"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE photos (id INTEGER)")
        conn.close()
        with pytest.raises(errors.CheckpointError) as caught:
            SQLiteCheckpointStore(path, "t")
        assert caught.value.value == ["photos"]


class TestMCPClientFields:
    def test_an_unconnected_client_names_its_server(self) -> None:
        connection = MCPConnection("fs", command=["fs-server"])
        with pytest.raises(errors.MCPClientError) as caught:
            asyncio.run(connection.list_tools())
        assert caught.value.server == caught.value.value == "fs"


class TestNoBareRaises:
    def test_no_module_raises_the_base_class_itself(self) -> None:
        bare = []
        for path in Path(dagctx.__file__).parent.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    func = node.exc.func
                    if isinstance(func, ast.Name) and func.id == "DagctxError":
                        bare.append(f"{path.name}:{node.lineno}")
        assert bare == []
