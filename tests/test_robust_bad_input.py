"""Bad input, table-driven: every case is refused with a typed DagctxError (or, from a tool,
a message the model can read), and leaves the graph, the task contexts, the checkpoint
store, the session file and the files on disk exactly as they were.

Each case runs against a fresh :class:`World` (a session with text, group, conversation
and artifact nodes, a structure checkpoint and a tick; a task context with todos, a
workspace and a knowledge store; a SQLite checkpoint store and a saved session file), and
compares :meth:`World.picture` before and after. Hostile files (binary, huge, not UTF-8,
vanished, unreadable) are not errors: they get a placeholder, checked at the end.
"""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from robust_support import context_picture, session_picture, sqlite_picture, tree_picture

from dagctx import (
    BudgetError,
    CheckpointError,
    ContextError,
    CycleError,
    DagctxError,
    EncodingError,
    GraphError,
    LockError,
    NodeNotFoundError,
    PathError,
    ShellError,
    TickFrequency,
)
from dagctx.checkpoint import Checkpoint, SQLiteCheckpointStore
from dagctx.context import Context, make_config
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.nodes.artifact import ArtifactNode
from dagctx.session import Session
from dagctx.tools import Tool, get_context_tools, get_graph_tools

MESSAGE = "message"  # the expected outcome of a tool case: a string, no exception
AUTH = "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n"


@dataclass
class World:
    """Everything a bad input could damage, built the same way for every case."""

    base: Path
    root: Path
    s: Session
    ctx: Context
    store: SQLiteCheckpointStore
    session_file: Path
    tools: dict[str, Tool[Any]]

    def picture(self) -> dict[str, Any]:
        workspace = self.ctx.state["workspace"]
        return {
            "session": session_picture(self.s),
            "ctx": context_picture(self.ctx),
            "workspace": {a.name: a.version for a in workspace.list()},
            "knowledge": self.ctx.state["knowledge_store"].names(),
            "store": sqlite_picture(self.store.path),
            "session_file": sqlite_picture(self.session_file),
            "root": tree_picture(self.root),
            "outside": tree_picture(self.base / "outside"),
        }

    def call(self, tool: str, **kwargs: Any) -> str:
        return asyncio.run(self.tools[tool].execute(**kwargs))

    def node(self, node_id: str) -> Any:
        return self.s.get(node_id)


def build_world(base: Path) -> World:
    root = base / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text(AUTH)
    (root / "src" / "db.py").write_text("class Store:\n    pass\n")
    (root / "notes.md").write_text("# Notes\n\nintro\n\n## Plan\n\n- one\n")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("top secret\n")
    (base / "proj2").mkdir()  # a sibling sharing the root's name as a prefix
    (base / "proj2" / "sib.txt").write_text("sibling\n")
    (root / "link_out").symlink_to(base / "outside" / "secret.txt")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    s = Session(root, budget=3000)
    auth, db = s.text("src/auth.py"), s.text("src/db.py")
    s.group(auth, db, title="src")
    s.topic("debugging")
    s.message("user", "why does login fail?")
    s.message("tool_call", '{"path": "src/auth.py"}', tool_call_id="c1", name="read")
    s.message("tool_result", "def login(user): ...", tool_call_id="c1", name="read")
    s.artifact("print('hi')", language="python", title="snippet")
    s.checkpoint("start")
    s.tick()
    s.context.state.update(goal="fix login", notes=["a", {"b": 1}])
    s.context.snapshot(metadata={"why": "test"})
    session_file = base / "stores" / "session.db"
    s.save(session_file)
    store = SQLiteCheckpointStore(base / "stores" / "cp.db", "task")
    store.save({"step": 1}, {"input_tokens": 3})
    store.save({"step": 2, "nested": {"a": [1, 2]}}, {"input_tokens": 5})
    knowledge = KnowledgeStore()
    workspace = Workspace("ws", knowledge_store=knowledge)
    workspace.write_sync("notes", "alpha beta\ngamma delta\n" * 5)
    ctx = Context("tools")
    ctx.state.update(working_dir=str(root), workspace=workspace, knowledge_store=knowledge)
    ctx.state["todos"] = [{"item": "read code", "done": False}]
    tools: dict[str, Tool[Any]] = {t.name: t.bind(s) for t in get_graph_tools()}
    tools.update({t.name: t.bind(ctx) for t in get_context_tools()})
    return World(base, root, s, ctx, store, session_file, tools)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("worlds")


@pytest.fixture
def world(worlds: Path) -> Iterator[World]:
    w = build_world(Path(tempfile.mkdtemp(dir=worlds)))  # cheaper than a tmp_path each
    yield w
    w.store.close()
    w.s.close()


@pytest.fixture(scope="module")
def shared_world(worlds: Path) -> Iterator[World]:
    """One world for the argument cases: each compares its own pictures, and a tool never
    runs on arguments that fail validation."""
    w = build_world(Path(tempfile.mkdtemp(dir=worlds)))
    yield w
    w.store.close()
    w.s.close()


@dataclass(frozen=True)
class Case:
    name: str
    action: Callable[[World], object]
    expect: type[DagctxError] | str
    match: str


def sqlite_file(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()
    return path


def truncated_copy(w: World, source: Path, name: str) -> Path:
    data = source.read_bytes()
    target = w.base / name
    target.write_bytes(data[: len(data) // 2])
    return target


def deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def cyclic() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


LONG_NAME = "n" * 300  # longer than any file system allows for one name

GRAPH_CASES = [
    Case("cycle", lambda w: w.s.link("text_1", "group_1"), CycleError, "cycle"),
    Case("self-link", lambda w: w.s.link("group_1", "group_1"), CycleError, "itself"),
    Case("link-unknown", lambda w: w.s.link("group_1", "ghost_9"), NodeNotFoundError, "ghost_9"),
    Case("unlink-no-edge", lambda w: w.s.unlink("topic_1", "text_1"), GraphError, "not a child"),
    Case(
        "duplicate-id",
        lambda w: w.s.add(ArtifactNode("x", id="text_1")),
        GraphError,
        "duplicate node id 'text_1'",
    ),
    Case("added-twice", lambda w: w.s.add(w.node("text_1")), GraphError, "already belongs"),
    Case(
        "after-and-index",
        lambda w: w.s.link("topic_1", "text_1", after="message_1", index=0),
        GraphError,
        "either",
    ),
    Case(
        "after-not-a-child",
        lambda w: w.s.link("topic_1", "text_1", after="text_2"),
        GraphError,
        "not a child",
    ),
    Case(
        "index-not-int",
        lambda w: w.s.link("topic_1", "text_1", index="0"),  # type: ignore[arg-type]
        GraphError,
        "index must be an int",
    ),
    Case(
        "group-under-its-member",
        lambda w: w.s.group("group_1", title="loop", parent="group_1"),
        CycleError,
        "cycle",
    ),
    Case(
        "group-unknown-member",
        lambda w: w.s.group("text_1", "ghost_2"),
        NodeNotFoundError,
        "ghost_2",
    ),
    Case("remove-unknown", lambda w: w.s.remove("ghost_3"), NodeNotFoundError, "ghost_3"),
    Case("restore-unknown-name", lambda w: w.s.restore("nope"), CheckpointError, "'nope'.*'start'"),
    Case("checkpoint-empty", lambda w: w.s.checkpoint(""), CheckpointError, "non-empty"),
    Case("checkpoint-not-str", lambda w: w.s.checkpoint(7), CheckpointError, "7"),  # type: ignore[arg-type]
    Case("state-unknown", lambda w: w.node("text_1").set_state("LOUD"), GraphError, "'LOUD'"),
    Case("state-number", lambda w: w.node("text_1").set_state(9), GraphError, "9"),
    Case("state-bool", lambda w: w.node("text_1").set_state(True), GraphError, "True"),
    Case(
        "priority-str",
        lambda w: setattr(w.node("text_1"), "priority", "high"),
        GraphError,
        "'high'",
    ),
    Case("period-zero", lambda w: TickFrequency.period(0), GraphError, "period"),
    Case("period-nan", lambda w: TickFrequency.period(math.nan), GraphError, "nan"),
]

BUDGET_CASES = [
    Case(f"session-budget-{b!r}", lambda w, b=b: Session(w.root, budget=b), BudgetError, "budget")
    for b in (0, -5, 2.5, "100", True, None)
] + [
    Case("set-budget-zero", lambda w: w.s.set_budget(0), BudgetError, "0"),
    Case("set-budget-float", lambda w: w.s.set_budget(10.0), BudgetError, "10.0"),  # type: ignore[arg-type]
    Case("project-negative", lambda w: w.s.project(budget=-1), BudgetError, "-1"),
    Case(
        "unknown-encoding",
        lambda w: Session(w.root, encoding="no_such_encoding"),
        EncodingError,
        "no_such_encoding",
    ),
    Case("empty-encoding", lambda w: Session(w.root, encoding=""), EncodingError, "''"),
    Case("root-is-a-file", lambda w: Session(w.root / "notes.md"), PathError, "notes.md"),
    Case("root-missing", lambda w: Session(w.root / "nope"), PathError, "nope"),
    Case("root-too-long", lambda w: Session(w.root / LONG_NAME), PathError, "nnnn"),
]

PATH_CASES = (
    [
        Case(f"text-{name}", lambda w, p=path: w.s.text(p(w)), PathError, match)
        for name, path, match in [
            ("dotdot", lambda w: "../outside/secret.txt", "outside the session root"),
            ("deep-dotdot", lambda w: "src/../../outside/secret.txt", "outside the session root"),
            ("absolute", lambda w: str(w.base / "outside" / "secret.txt"), "outside the session"),
            ("symlink-out", lambda w: "link_out", "outside the session root"),
            ("sibling-prefix", lambda w: "../proj2/sib.txt", "outside the session root"),
            ("nul", lambda w: "src/a\x00b.py", "invalid path"),
            ("empty", lambda w: "", "invalid path"),
            ("missing", lambda w: "src/none.py", "no such file"),
            ("directory", lambda w: "src", "not a regular file"),
            ("symlink-loop", lambda w: "loop_a", "loop_a"),
            ("name-too-long", lambda w: LONG_NAME, "nnnn"),
            ("long-path", lambda w: "/".join(["d"] * 3000), "d/d/d"),
        ]
    ]
    + [
        Case(
            f"lines-{lines!r}",
            lambda w, r=lines: w.s.text("src/auth.py", lines=r),
            PathError,
            "lines|line range",
        )
        for lines in [(0, 3), (5, 2), ("1", 3), (1.0, 2), 3, (1, 2, 3), (None, 4)]
    ]
    + [
        Case("markdown-outside", lambda w: w.s.markdown("../outside/x.md"), PathError, "outside"),
        Case("markdown-loop", lambda w: w.s.markdown("loop_b"), PathError, "loop_b"),
        Case("lock-outside", lambda w: w.s.lock("../outside/secret.txt"), PathError, "outside"),
        Case("shell-cwd-outside", lambda w: w.s.shell("true", cwd=".."), PathError, "outside"),
        Case(
            "file-changed-outside", lambda w: w.s.file_changed("/etc/hostname"), PathError, "outs"
        ),
    ]
)

JOB_CASES = [
    Case("shell-empty-cmd", lambda w: w.s.shell(""), ShellError, "cmd"),
    Case("shell-nul-cmd", lambda w: w.s.shell("ec\x00ho"), ShellError, "NUL"),
    Case("shell-args-str", lambda w: w.s.shell("echo", "hi"), ShellError, "args"),
    Case("shell-args-int", lambda w: w.s.shell("echo", [1]), ShellError, "1"),  # type: ignore[list-item]
    Case("shell-env-key", lambda w: w.s.shell("env", env={"A=B": "c"}), ShellError, "A=B"),
    Case("shell-env-value", lambda w: w.s.shell("env", env={"A": 1}), ShellError, "'A'"),  # type: ignore[dict-item]
    Case("shell-timeout-neg", lambda w: w.s.shell("true", timeout=-1), ShellError, "-1"),
    Case("shell-timeout-nan", lambda w: w.s.shell("true", timeout=math.nan), ShellError, "nan"),
    Case("shell-timeout-inf", lambda w: w.s.shell("true", timeout=math.inf), ShellError, "inf"),
    Case("shell-cap-zero", lambda w: w.s.shell("true", output_cap=0), ShellError, "output_cap"),
    Case("shell-parent", lambda w: w.s.shell("true", parent="ghost_4"), NodeNotFoundError, "ghost"),
    Case("lock-timeout-neg", lambda w: w.s.lock("src/db.py", timeout=-1), LockError, "-1"),
    Case("lock-timeout-nan", lambda w: w.s.lock("src/db.py", timeout=math.nan), LockError, "nan"),
]

CONVERSATION_CASES = [
    Case("role", lambda w: w.s.message("wizard", "hi"), DagctxError, "wizard"),
    Case("content", lambda w: w.s.message("user", b"hi"), DagctxError, "bytes"),  # type: ignore[arg-type]
    Case(
        "orphan-result",
        lambda w: w.s.message("tool_result", "x", tool_call_id="c9"),
        DagctxError,
        "c9",
    ),
    Case(
        "second-result",
        lambda w: w.s.message("tool_result", "x", tool_call_id="c1"),
        DagctxError,
        "already has its result",
    ),
    Case(
        "reused-call-id",
        lambda w: w.s.message("tool_call", "x", tool_call_id="c1"),
        DagctxError,
        "already used",
    ),
    Case(
        "topic-not-a-topic",
        lambda w: w.s.message("user", "x", topic="text_1"),
        DagctxError,
        "not a topic",
    ),
    Case("artifact-kind", lambda w: w.s.artifact("x", kind="poem"), DagctxError, "poem"),
    Case("update-not-artifact", lambda w: w.s.update_artifact("text_1", "x"), DagctxError, "text"),
]


def _merge_twice(w: World) -> None:
    child = w.s.context.fork("sub")
    w.s.context.merge(child)
    before = context_picture(w.s.context)
    try:
        w.s.context.merge(child)
    finally:
        assert context_picture(w.s.context) == before


CONTEXT_CASES = [
    Case("key-not-str", lambda w: w.ctx.state.set(1, "x"), ContextError, "1"),  # type: ignore[arg-type]
    Case("update-not-mapping", lambda w: w.ctx.state.update(5), ContextError, "int"),  # type: ignore[arg-type]
    Case("delete-missing", lambda w: w.ctx.state.delete("nope"), ContextError, "nope"),
    Case("pop-missing", lambda w: w.ctx.state.pop("nope"), ContextError, "nope"),
    Case("merge-stranger", lambda w: w.s.context.merge(Context("other")), ContextError, "other"),
    Case("merge-twice", _merge_twice, ContextError, "already merged"),
    Case("fork-empty-id", lambda w: w.s.context.fork(""), ContextError, "task_id"),
    Case("tokens-negative", lambda w: w.s.context.add_tokens({"x": -1}), ContextError, "-1"),
    Case("tokens-bool", lambda w: w.s.context.add_tokens({"x": True}), ContextError, "True"),
    Case("tokens-not-mapping", lambda w: w.s.context.add_tokens([1]), ContextError, "list"),  # type: ignore[arg-type]
    Case("config-mode", lambda w: make_config("autopilot"), ContextError, "autopilot"),
    Case(
        "config-thresholds",
        lambda w: make_config("pilot", summary_threshold=500, offload_threshold=5),
        ContextError,
        "summary_threshold|offload",
    ),
    Case("restore-a-dict", lambda w: Context.restore({}), CheckpointError, "dict"),  # type: ignore[arg-type]
]

GOOD_CHECKPOINT = {
    "task_id": "t",
    "version": 1,
    "values": {"a": 1},
    "token_usage": {"input_tokens": 2},
    "metadata": {},
    "created_at": "2024-01-01T00:00:00+00:00",
}

CHECKPOINT_DICT_CASES = [
    Case(
        f"from-dict-{name}",
        lambda w, p=patch: Checkpoint.from_dict(
            p if not isinstance(p, dict) else {**GOOD_CHECKPOINT, **p}
        ),
        CheckpointError,
        match,
    )
    for name, patch, match in [
        ("none", None, "NoneType"),
        ("list", [("task_id", "t")], "list"),
        ("unknown-key", {"extra": 1}, "extra"),
        ("version-zero", {"version": 0}, "0"),
        ("version-str", {"version": "1"}, "'1'"),
        ("version-bool", {"version": True}, "True"),
        ("task-empty", {"task_id": ""}, "task_id"),
        ("values-list", {"values": [1]}, "values"),
        ("values-int-key", {"values": {1: 2}}, "1"),
        ("usage-negative", {"token_usage": {"a": -1}}, "-1"),
        ("usage-float", {"token_usage": {"a": 1.5}}, "1.5"),
        ("date-garbage", {"created_at": "yesterday"}, "yesterday"),
        ("date-naive", {"created_at": "2024-01-01T00:00:00"}, "timezone"),
        ("date-int", {"created_at": 12}, "12"),
    ]
]

STORE_CASES = [
    Case(f"store-{name}", lambda w, v=value: w.store.save(v, {}), CheckpointError, match)
    for name, value, match in [
        ("tuple", {"t": (1, 2)}, "tuple"),
        ("set", {"s": {1}}, "set"),
        ("nan", {"f": math.nan}, "nan"),
        ("inf", {"f": [math.inf]}, "inf"),
        ("object", {"o": object()}, "object"),
        ("bytes", {"b": b"x"}, "bytes"),
        ("cycle", {"c": cyclic()}, "itself"),
        ("int-key", {"d": {1: "x"}}, "1"),
        ("too-deep", {"d": deep_list(100_000)}, "deep"),
        ("not-mapping", ["a"], "list"),
    ]
] + [
    Case("store-usage", lambda w: w.store.save({}, {"a": -1}), CheckpointError, "-1"),
    Case("store-metadata", lambda w: w.store.save({}, {}, metadata=[1]), CheckpointError, "list"),  # type: ignore[arg-type]
    Case("store-get-0", lambda w: w.store.get(0), CheckpointError, "0"),
    Case(
        "store-garbage-file",
        lambda w: SQLiteCheckpointStore(w.base / "outside" / "secret.txt", "t"),
        CheckpointError,
        "secret.txt",
    ),
    Case(
        "store-truncated-file",
        lambda w: SQLiteCheckpointStore(truncated_copy(w, w.session_file, "cut.db"), "t"),
        CheckpointError,
        "cut.db",
    ),
    Case(
        "store-other-schema",
        lambda w: SQLiteCheckpointStore(
            sqlite_file(
                w.base / "v99.db",
                "CREATE TABLE dagctx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "INSERT INTO dagctx_meta VALUES ('checkpoint_schema', '99')",
            ),
            "t",
        ),
        CheckpointError,
        "schema 99",
    ),
    Case(
        "store-foreign-sqlite",
        lambda w: _open_foreign_store(w),
        CheckpointError,
        "something else",
    ),
    Case("store-directory", lambda w: SQLiteCheckpointStore(w.base, "t"), CheckpointError, "open"),
    Case("store-nul-path", lambda w: SQLiteCheckpointStore("a\x00b.db", "t"), CheckpointError, "a"),
]


def _open_foreign_store(w: World) -> None:
    """A SQLite file of another application is refused and left byte for byte as it was."""
    path = sqlite_file(
        w.base / "app.db", "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('ada')"
    )
    before = path.read_bytes()
    try:
        SQLiteCheckpointStore(path, "t")
    finally:
        assert path.read_bytes() == before


SESSION_FILE_CASES = [
    Case("load-directory", lambda w: Session.load(w.base), CheckpointError, "no saved session"),
    Case("load-long-name", lambda w: Session.load(w.base / LONG_NAME), CheckpointError, "nnnn"),
    Case("load-nul", lambda w: Session.load("a\x00b.db"), CheckpointError, "a"),
    Case(
        "load-truncated",
        lambda w: Session.load(truncated_copy(w, w.session_file, "half.db")),
        CheckpointError,
        "half.db",
    ),
    Case(
        "load-store-file",
        lambda w: Session.load(w.store.path),
        CheckpointError,
        "not a dagctx session file",
    ),
    Case("save-directory", lambda w: w.s.save(w.base), CheckpointError, "cannot write"),
    Case("save-nul", lambda w: w.s.save(w.base / "a\x00b.db"), CheckpointError, "a"),
    Case("save-long-name", lambda w: w.s.save(w.base / LONG_NAME), CheckpointError, "nnnn"),
    Case("save-over-another-schema", lambda w: _save_over_schema_7(w), CheckpointError, "schema 7"),
]


def _save_over_schema_7(w: World) -> None:
    """Saving over a session file of another schema raises and leaves that file alone."""
    path = w.base / "v7.db"
    path.write_bytes(w.session_file.read_bytes())
    sqlite_file(path, "UPDATE dagctx_meta SET value = '7' WHERE key = 'session_schema'")
    before = path.read_bytes()
    try:
        w.s.save(path)
    finally:
        assert path.read_bytes() == before


def _set_unsavable(w: World) -> None:
    """A value JSON cannot hold: the save fails and the value is taken out again."""
    w.s.context.state["pair"] = {1, 2}
    try:
        w.s.save(w.session_file)
    finally:
        del w.s.context.state["pair"]


SESSION_FILE_CASES.append(Case("save-a-set", _set_unsavable, CheckpointError, "set"))


def tool_case(name: str, tool: str, kwargs: dict[str, Any], match: str) -> Case:
    return Case(name, lambda w: w.call(tool, **kwargs), MESSAGE, match)


TOOL_CASES = [
    tool_case("open-dotdot", "open_file", {"path": "../outside/secret.txt"}, "Refused"),
    tool_case("open-absolute", "open_file", {"path": "/etc/hostname"}, "outside the session"),
    tool_case("open-symlink-out", "open_file", {"path": "link_out"}, "outside the session"),
    tool_case("open-sibling", "open_file", {"path": "../proj2/sib.txt"}, "outside the session"),
    tool_case("open-nul", "open_file", {"path": "a\x00b"}, "invalid path"),
    tool_case("open-loop", "open_file", {"path": "loop_a"}, "Refused 'loop_a'"),
    tool_case("open-long-name", "open_file", {"path": LONG_NAME}, "Refused 'nnn"),
    tool_case("open-line-zero", "open_file", {"path": "notes.md", "start_line": 0}, "start_line"),
    tool_case(
        "open-end-first", "open_file", {"path": "notes.md", "start_line": 3, "end_line": 1}, "end"
    ),
    tool_case(
        "open-far-line", "open_file", {"path": "notes.md", "start_line": 10**30}, "fewer than"
    ),
    tool_case("state-unknown-id", "set_node_state", {"node_id": "x_1", "state": "all"}, "x_1"),
    tool_case("state-bad-name", "set_node_state", {"node_id": "text_1", "state": "big"}, "big"),
    tool_case("hide-unknown", "hide_node", {"node_id": "x_2"}, "No node 'x_2'"),
    tool_case("restore-tool-unknown", "restore", {"name": "nope"}, "No checkpoint named 'nope'"),
    tool_case("checkpoint-blank", "checkpoint", {"name": "  "}, "non-empty name"),
    tool_case("budget-zero", "set_budget", {"tokens": 0}, "positive"),
    tool_case("budget-negative", "set_budget", {"tokens": -5}, "positive"),
    tool_case("shell-nan", "run_shell", {"command": "true", "timeout": math.nan}, "nan"),
    tool_case("shell-negative", "run_shell", {"command": "true", "timeout": -1.0}, "-1"),
    tool_case("shell-empty", "run_shell", {"command": ""}, "cmd must be"),
    tool_case("list-offset", "list_nodes", {"offset": -1}, "offset"),
    tool_case("list-limit", "list_nodes", {"limit": 0}, "limit"),
    tool_case("read-dotdot", "read_file", {"path": "../outside/secret.txt"}, "outside"),
    tool_case("read-absolute", "read_file", {"path": "/etc/hostname"}, "absolute"),
    tool_case("read-symlink-out", "read_file", {"path": "link_out"}, "outside"),
    tool_case("read-sibling", "read_file", {"path": "../proj2/sib.txt"}, "outside"),
    tool_case("read-nul", "read_file", {"path": "a\x00b"}, "NUL"),
    tool_case("read-loop", "read_file", {"path": "loop_a"}, "loop_a"),
    tool_case("read-long-name", "read_file", {"path": LONG_NAME}, "nnnn"),
    tool_case("todo-index", "complete_todo", {"index": 5}, "Invalid index 5. Have 1 todos."),
    tool_case("todo-negative", "complete_todo", {"index": -1}, "Invalid index -1"),
    tool_case("todo-empty", "add_todo", {"item": "   "}, "empty todo"),
    tool_case("knowledge-unknown", "get_knowledge", {"name": "nope"}, "not found"),
    tool_case("search-top-k", "search_knowledge", {"query": "alpha", "top_k": 0}, "top_k"),
    tool_case("search-no-words", "search_knowledge", {"query": "?!"}, "no words"),
] + [
    tool_case(f"regex-{i}", "grep_knowledge", {"name": "notes", "pattern": p}, "Invalid regex")
    for i, p in enumerate(["(", "[a-", "(?P<x", "a{2,1}", "*a", "\\", "(?<", "a)", "[[:nope:]]"])
]

# Values of every JSON kind, wrong for a parameter of the given schema type.
WRONG_VALUES: dict[str, list[Any]] = {
    "string": [5, 1.5, True, None, ["x"], {"a": "b"}],
    "integer": ["5", 1.5, True, None, [1], {"n": 1}],
    "number": ["1.0", True, None, [1.0], {"x": 1}],
    "array": ["abc", 5, {"a": "b"}, [1], [None], [["x"]]],
    "boolean": ["true", 1, None],
}


def argument_cases() -> list[Case]:
    """For every parameter of every tool: each wrong kind of value; for every tool an
    unknown argument; for every tool with required parameters, none given."""
    tools: list[Tool[Any]] = [*get_graph_tools(), *get_context_tools()]
    cases = []
    for tool in tools:
        params = tool.parameters
        required = {name: _valid_value(schema) for name, schema in params["properties"].items()
                    if name in params["required"]}  # fmt: skip
        for name, schema in params["properties"].items():
            kind, nullable = _kind(schema)
            for value in WRONG_VALUES[kind]:
                if value is None and nullable:
                    continue
                kwargs = {**required, name: value}
                cases.append(
                    tool_case(f"{tool.name}-{name}-{value!r}", tool.name, kwargs, "Invalid arg")
                )
        cases.append(
            tool_case(f"{tool.name}-unknown", tool.name, {**required, "bogus": 1}, "'bogus'")
        )
        if required:
            cases.append(tool_case(f"{tool.name}-missing", tool.name, {}, "missing required"))
    return cases


def _kind(schema: dict[str, Any]) -> tuple[str, bool]:
    """The JSON type a parameter takes, and whether null is accepted too."""
    kinds = [m.get("type") for m in schema["anyOf"]] if "anyOf" in schema else schema["type"]
    if isinstance(kinds, str):
        return kinds, False
    return next(k for k in kinds if k != "null"), "null" in kinds


def _valid_value(schema: dict[str, Any]) -> Any:
    kind = _kind(schema)[0]
    return {"string": "notes", "integer": 1, "number": 1.0, "array": [], "boolean": False}[kind]


ALL_CASES = [
    *GRAPH_CASES,
    *BUDGET_CASES,
    *PATH_CASES,
    *JOB_CASES,
    *CONVERSATION_CASES,
    *CONTEXT_CASES,
    *CHECKPOINT_DICT_CASES,
    *STORE_CASES,
    *SESSION_FILE_CASES,
    *TOOL_CASES,
]
ARGUMENT_CASES = argument_cases()


def check_case(world: World, case: Case) -> None:
    before = world.picture()
    if isinstance(case.expect, str):
        reply = case.action(world)
        assert isinstance(reply, str), reply
        assert re.search(case.match, reply), reply
    else:
        with pytest.raises(case.expect, match=case.match) as caught:
            case.action(world)
        assert isinstance(caught.value, DagctxError)
    assert world.picture() == before


def test_the_corpus_is_large() -> None:
    assert len(ALL_CASES) >= 50
    assert len({c.name for c in ALL_CASES + ARGUMENT_CASES}) == len(ALL_CASES + ARGUMENT_CASES)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_bad_input_is_refused_and_changes_nothing(world: World, case: Case) -> None:
    check_case(world, case)


@pytest.mark.parametrize("case", ARGUMENT_CASES, ids=lambda c: c.name)
def test_bad_tool_arguments_are_messages_and_change_nothing(
    shared_world: World, case: Case
) -> None:
    check_case(shared_world, case)
