"""Text nodes saved as one block of columns (session schema 3; compact since schema 5),
and files of schemas 2 and 4.

A saved session keeps its text nodes (those with a snapshot) in ``session_columns``, one
JSON object of equal-length lists, and rebuilds them column by column
(:meth:`~dagctx.nodes.base.Node.from_columns`). The nodes must come back exactly as the
one-by-one path (:meth:`~dagctx.nodes.base.Node.from_dict`) rebuilds them; a tampered
block is refused with a :class:`~dagctx.errors.CheckpointError` naming the bad value,
or loads into nodes that render; a schema 2 file (every node one row) and a schema 4
file (every column a list, each stat key as three ints) still load, and the next save
upgrades them.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx.errors import CheckpointError, GraphError
from dagctx.nodes import base as base_module
from dagctx.nodes import text as text_module
from dagctx.nodes.base import COMMON_COLUMNS, Node, NodeState
from dagctx.nodes.group import GroupNode
from dagctx.nodes.text import TextNode, unpack_stat
from dagctx.session import Session
from dagctx.session import store as store_module
from dagctx.session.file import SESSION_SCHEMA, compact_column, expand_column
from dagctx.watch.tracker import TreeTracker


def _tree(root: Path) -> None:
    """Files of every kind a text node shows: code, an empty file, a binary one, one
    withheld as secret-bearing, one with a secret redacted."""
    (root / "pkg").mkdir(parents=True)
    for i in range(4):
        (root / "pkg" / f"mod{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n" * 3)
    (root / "empty.txt").write_text("")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 50)
    (root / ".env").write_text("TOKEN=abc\n")
    (root / "conf.py").write_text('KEY = "AKIAIOSFODNN7EXAMPLE"\n')


def _session(root: Path) -> Session:
    session = Session(root, budget=50_000)
    TreeTracker(session, ".").load()
    for name in ("empty.txt", "blob.bin", ".env"):
        session.text(name)
    session.text("pkg/mod1.py", lines=(2, 3), state="ALL", priority=7)
    session.tick()
    return session


def _slots(node: Node) -> dict[str, Any]:
    names = {n for cls in type(node).__mro__ for n in getattr(cls, "__slots__", ())}
    names -= {"__weakref__", "graph", "_tags"}
    return {"tags": node.tags} | {name: getattr(node, name) for name in sorted(names)}


def _sql(db: Path, statement: str, *params: object) -> list[Any]:
    """Run one statement on the file and close it (a connection left open keeps the
    write-ahead log the next copy of the file would not match)."""
    with closing(sqlite3.connect(db)) as con, con:
        return con.execute(statement, params).fetchall()


def _columns(db: Path, type_name: str = "text") -> dict[str, Any]:
    """The saved block of a type's columns, each column a list (as it is read)."""
    ((data,),) = _sql(db, "SELECT data FROM session_columns WHERE type = ?", type_name)
    block: dict[str, Any] = json.loads(data)
    return {key: expand_column(column, len(block["ref"])) for key, column in block.items()}


def _put_columns(db: Path, block: Any, type_name: str = "text") -> None:
    _sql(db, "UPDATE session_columns SET data = ? WHERE type = ?", json.dumps(block), type_name)


def _resumed_text(root: Path) -> str:
    """The first projection of the session saved under ``root``, resumed."""
    with Session.load(root=root) as session:
        TreeTracker(session, ".").load()
        return session.tick().projection.text


def _restore(good: Path, root: Path) -> Path:
    """Put the good session file back."""
    db = root / ".dagctx" / "session.db"
    shutil.copy(good, db)
    return db


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _tree(root)
    with _session(root) as session:
        session.save()
    return root


class TestColumns:
    def test_text_nodes_are_saved_as_one_block_of_columns(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            rows = [json.loads(d)["type"] for (d,) in con.execute("SELECT data FROM session_nodes")]
            blocks = [t for (t,) in con.execute("SELECT type FROM session_columns ORDER BY type")]
        assert rows == [] and blocks == ["group", "text"]  # every node in a block
        block = _columns(db)
        assert set(block) >= {*COMMON_COLUMNS, *TextNode.column_keys, "ref", "tokens"}
        assert len({len(column) for column in block.values()}) == 1
        assert "pkg/mod0.py" in block["path"]

    def test_a_node_from_columns_is_the_node_from_its_dict(self, saved: Path) -> None:
        with _session(saved) as fresh:
            originals = [n for n in fresh.graph if isinstance(n, TextNode) and n.snapshot()]
        originals[0].tags = {"kept", "also"}  # the fields at their defaults in most nodes
        originals[1].edited = True
        originals[2].priority = -3
        originals[3].pause()
        saved_pairs = [(n, n.snapshot()) for n in originals]
        block = TextNode.to_columns(saved_pairs)  # type: ignore[arg-type]
        rebuilt = TextNode.from_columns(json.loads(json.dumps(block)))
        one_by_one = []
        for node, snapshot in saved_pairs:
            raw = node.to_dict()
            raw["snapshot"] = snapshot
            one_by_one.append(Node.from_dict(json.loads(json.dumps(raw))))
        assert len(rebuilt) == len(originals) > 5
        assert [n.mode for n in rebuilt][2:5] == ["running", "paused", "running"]
        for a, b in zip(rebuilt, one_by_one, strict=True):
            assert _slots(a) == _slots(b)
            for state in NodeState:
                assert a.render(state) == b.render(state)

    def test_a_media_type_or_byte_limit_left_out_is_the_default_and_specs_are_shared(
        self, saved: Path
    ) -> None:
        db = saved / ".dagctx" / "session.db"
        block = _columns(db)
        at = {path: i for i, path in enumerate(block["path"])}
        for path in ("pkg/mod2.py", "conf.py"):
            block["media_type"][at[path]] = None  # guessed from the path
            block["max_bytes"][at[path]] = None  # the default
        block["media_type"][at["pkg/mod3.py"]] = "text/x-own"
        _put_columns(db, block)
        with Session.load(root=saved) as session:
            (mod2,) = session.text_nodes("pkg/mod2.py")
            (mod0,) = session.text_nodes("pkg/mod0.py")
            (mod3,) = session.text_nodes("pkg/mod3.py")
            (conf,) = session.text_nodes("conf.py")
            assert (mod2.media_type, conf.media_type) == ("text/x-python", "text/x-python")
            assert mod2.max_bytes == conf.max_bytes == text_module.DEFAULT_MAX_BYTES
            assert mod2._spec is mod0._spec is conf._spec  # files read alike: one spec
            assert mod3.media_type == "text/x-own" and mod3._spec is not mod0._spec
            assert mod3.root is mod0.root  # one resolved root

    def test_a_session_saved_again_before_its_files_are_read_renders_the_same(
        self, saved: Path
    ) -> None:
        expected = _resumed_text(saved)
        with Session.load(root=saved) as again:
            again.save()  # columns written from restored nodes that read nothing yet
        with Session.load(root=saved) as resumed:
            TreeTracker(resumed, ".").load()
            assert resumed.tick().projection.text == expected
        assert "def f0(x)" in expected and "[withheld" in expected and "[binary file" in expected

    def test_a_restored_node_once_read_holds_what_a_node_read_at_creation_holds(
        self, saved: Path
    ) -> None:
        # nothing is left over from the snapshot (the length kept while it was unread)
        with Session.load(root=saved) as session:
            TreeTracker(session, ".").load()
            session.tick()
            restored = [n for n in session.graph if isinstance(n, TextNode) and n._n > 0]
            assert len(restored) > 3
            for node in restored:
                node.render(NodeState.DETAILS)
                lines = {"start_line": node.start_line, "end_line": node.end_line}
                fresh = TextNode(node.path, root=saved, **lines)
                own = TextNode.__slots__
                assert {k: getattr(node, k) for k in own} == {k: getattr(fresh, k) for k in own}

    def test_a_subclass_block_is_refused(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            con.execute("UPDATE session_columns SET type = 'markdown' WHERE type = 'text'")
        with pytest.raises(CheckpointError, match="markdown nodes are not saved as columns"):
            Session.load(root=saved)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda b: b.pop("lines"), "'lines' must be a list of"),
            (lambda b: b["path"].pop(), "'path' must be a list of"),
            (lambda b: b.__setitem__("ref", b["ref"][:1] * len(b["ref"])), "ref twice"),
            (lambda b: b["ref"].__setitem__(0, 0), "twice"),
            (lambda b: b["in_graph"].__setitem__(0, 1), "bad 'in_graph': 1"),
            (lambda b: b["tokens"].__setitem__(0, -5), "bad 'tokens': -5"),
            (lambda b: b["version"].__setitem__(0, -1), "'version'.*got -1"),
            (lambda b: b["state"].__setitem__(0, "HUGE"), "'state'.*got 'HUGE'"),
            (lambda b: b["digest"].__setitem__(0, "zz" * 16), "'digest'.*got 'zzzz"),
            (lambda b: b["digest"].__setitem__(0, "ab " * 10 + "ab"), "'digest'.*got 'ab ab"),
            (lambda b: b["frequency"].__setitem__(0, {"kind": "period"}), "'frequency'"),
            (lambda b: b["root"].__setitem__(0, "/elsewhere"), "not under the session root"),
        ],
    )
    def test_a_bad_column_is_refused_naming_it(
        self, saved: Path, change: Any, message: str
    ) -> None:
        db = saved / ".dagctx" / "session.db"
        block = _columns(db)
        change(block)
        _put_columns(db, block)
        with pytest.raises(CheckpointError, match=message):
            Session.load(root=saved)

    def test_columns_that_are_not_json_or_not_an_object_are_refused(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            con.execute("UPDATE session_columns SET data = '{broken' WHERE type = 'text'")
        with pytest.raises(CheckpointError, match=r"'text' nodes' columns.*not valid JSON"):
            Session.load(root=saved)
        _put_columns(db, [1, 2])
        with pytest.raises(CheckpointError, match="not a JSON object"):
            Session.load(root=saved)

    def test_node_columns_of_a_type_without_columns_are_refused(self) -> None:
        from dagctx.nodes.group import GroupNode
        from dagctx.nodes.topic import TopicNode

        with pytest.raises(GraphError, match="topic nodes are not saved as columns"):
            TopicNode.from_columns({"id": []})

        class Sub(GroupNode):  # a group of another kind (not registered)
            __slots__ = ()

        assert Sub("x").snapshot() is None  # saved one by one
        with pytest.raises(GraphError, match="group nodes are not saved as columns"):
            Sub._restore_columns([], {})


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


class TestTamperedColumns:
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        key=st.sampled_from(
            [*COMMON_COLUMNS, *TextNode.column_keys, "ref", "in_graph", "seq", "last_run", "tokens"]
        ),
        value=_json_values,
        at=st.integers(0, 3),
    )
    def test_any_value_in_any_column_is_refused_or_renders(
        self, tmp_path: Path, key: str, value: object, at: int
    ) -> None:
        root = tmp_path / "t"
        good = tmp_path / "good.db"
        if not good.exists():
            _tree(root)
            with _session(root) as session:
                session.save()
            shutil.copy(root / ".dagctx" / "session.db", good)
        db = _restore(good, root)
        block = _columns(db)
        block[key][at] = value
        _put_columns(db, block)
        try:
            session = Session.load(root=root)
        except CheckpointError:
            return
        with session:
            for node in session.graph:
                for state in NodeState:
                    assert isinstance(node.render(state), str)
            TreeTracker(session, ".").load()
            assert session.tick().projection.tokens <= session.budget


_values = (
    _json_values
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.lists(st.integers(-(2**100), 2**100), min_size=2, max_size=4)
    | st.lists(st.text(max_size=3), max_size=3)
    | st.text(alphabet="0123456789abcdefABCDEF xy", min_size=31, max_size=33)
)
#: (name, whole-column test, the value test it stands for) as Node.from_columns and
#: TextNode._restore_columns pair them
_WHOLE = [
    ("id", base_module._is_string, lambda v: type(v) is str),
    ("version", base_module.all_counts, lambda v: type(v) is int and v >= 0),
    ("state", base_module._has_no_none, base_module._is_not_none),
    ("mode", base_module._all_modes, lambda v: type(v) is str and v in ("running", "paused")),
    ("priority", base_module._int_or_none, lambda v: v is None or type(v) is int),
    ("tags", base_module._all_strings, base_module._strings),
    ("created_at", base_module._all_finite, base_module._finite),
    ("path", text_module._STRINGS, text_module._is_str),
    ("start_line", text_module._INTS, text_module._int_or_none),
    ("notice", text_module._TEXTS, text_module._str_or_none),
    ("edited", text_module._BOOLS, text_module._is_bool),
    ("stat", text_module._stat_values, text_module._stat_value),
    ("lines", base_module.all_counts, text_module._count),
    ("digest", text_module._all_digests, text_module._is_digest),
]


class TestWholeColumnChecks:
    @given(
        which=st.sampled_from(_WHOLE),
        good=st.lists(_values, max_size=6),
        odd=st.lists(_values, max_size=2),
    )
    def test_a_column_passes_at_once_only_when_each_value_passes(
        self, which: tuple[str, Any, Any], good: list[Any], odd: list[Any]
    ) -> None:
        _, whole, ok = which
        column = [v for v in good if ok(v)] + odd
        if whole(column):
            assert all(map(ok, column))

    def test_a_saved_block_passes_each_check_at_once(self, saved: Path) -> None:
        block = _columns(saved / ".dagctx" / "session.db")
        for key, whole, ok in _WHOLE:
            column = block[key]
            assert all(map(ok, column)) and whole(column), key


class TestKeptColumnChecks:
    @given(
        key=st.sampled_from(sorted(store_module._KEPT_CHECKS)),
        good=st.lists(_values, max_size=6),
        odd=st.lists(_values, max_size=2),
    )
    def test_a_kept_column_passes_at_once_only_when_each_value_passes(
        self, key: str, good: list[Any], odd: list[Any]
    ) -> None:
        ok, whole = store_module._KEPT_CHECKS[key]
        column = [v for v in good if ok(v)] + odd
        if whole(column):
            assert all(map(ok, column))

    def test_a_saved_block_passes_each_kept_check_at_once(self, saved: Path) -> None:
        block = _columns(saved / ".dagctx" / "session.db")
        for key, (ok, whole) in store_module._KEPT_CHECKS.items():
            assert all(map(ok, block[key])) and whole(block[key]), key
        block["last_run"][0] = 2  # an int: asked value by value, and taken
        ok, whole = store_module._KEPT_CHECKS["last_run"]
        assert not whole(block["last_run"]) and all(map(ok, block["last_run"]))


def _old_block(block: dict[str, Any]) -> dict[str, Any]:
    """An expanded block as schemas 3 and 4 saved it: each stat key as its three fields."""
    stats = [None if key is None else list(unpack_stat(key)) for key in block["stat"]]
    return {**block, "stat": stats}


def _to_rows(con: sqlite3.Connection, type_name: str, block: dict[str, Any]) -> None:
    """Insert the nodes of an expanded block as rows of ``session_nodes`` (before schema
    5 for groups, before schema 3 for text nodes): the snapshot fields of text nodes
    under ``"snapshot"``, the rest of the type's under ``"data"``."""
    own = TextNode.column_keys if type_name == "text" else GroupNode.column_keys
    snapshot_keys = TextNode.column_keys[-8:] if type_name == "text" else ()  # stat ... digest
    for i, ref in enumerate(block["ref"]):
        raw: dict[str, Any] = {"type": type_name}
        raw.update({key: block[key][i] for key in COMMON_COLUMNS})
        raw["data"] = {key: block[key][i] for key in own if key not in snapshot_keys}
        if snapshot_keys:
            raw["snapshot"] = {key: block[key][i] for key in snapshot_keys}
        if block["tokens"][i] is not None:
            raw["tokens"] = block["tokens"][i]
        in_graph, seq, last_run = (block[key][i] for key in ("in_graph", "seq", "last_run"))
        con.execute(
            "INSERT INTO session_nodes VALUES (?, ?, ?, ?, ?)",
            (ref, int(in_graph), seq, last_run, json.dumps(raw)),
        )


def _to_schema_4(db: Path) -> None:
    """Rewrite a schema 5 file as a schema 4 one: the groups as rows, every text column
    a plain list, the stat keys as their three fields."""
    groups = _columns(db, "group")
    _put_columns(db, _old_block(_columns(db)))
    with closing(sqlite3.connect(db)) as con, con:
        _to_rows(con, "group", groups)
        con.execute("DELETE FROM session_columns WHERE type = 'group'")
        con.execute("UPDATE dagctx_meta SET value = '4' WHERE key = 'session_schema'")


def _to_schema_2(db: Path) -> None:
    """Rewrite a schema 5 file as a schema 2 one: every node one row, no columns table."""
    blocks = {"text": _old_block(_columns(db)), "group": _columns(db, "group")}
    with closing(sqlite3.connect(db)) as con, con:
        for type_name, block in blocks.items():
            _to_rows(con, type_name, block)
        con.execute("DROP TABLE session_columns")
        con.execute("UPDATE dagctx_meta SET value = '2' WHERE key = 'session_schema'")


class TestSchema2:
    def test_a_schema_2_file_loads_and_its_next_save_upgrades_it(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        expected = _resumed_text(saved)
        _to_schema_2(db)
        with Session.load(root=saved) as old:
            assert old.text_nodes("pkg/mod0.py")[0].snapshot() is not None
            TreeTracker(old, ".").load()
            assert old.tick().projection.text == expected
            old.save()
        with sqlite3.connect(db) as con:
            schema = con.execute(
                "SELECT value FROM dagctx_meta WHERE key = 'session_schema'"
            ).fetchone()
            assert schema == (str(SESSION_SCHEMA),)
            assert con.execute("SELECT COUNT(*) FROM session_columns").fetchone() == (2,)
        assert _resumed_text(saved) == expected

    def test_a_schema_1_file_is_refused_naming_both_versions(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            con.execute("UPDATE dagctx_meta SET value = '1' WHERE key = 'session_schema'")
        with pytest.raises(CheckpointError, match=f"schema 1.*schema {SESSION_SCHEMA}"):
            Session.load(root=saved)


class TestSchema4:
    def test_a_schema_4_file_loads_and_its_next_save_compacts_it(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        expected = _resumed_text(saved)
        _to_schema_4(db)
        ((old_block,),) = _sql(db, "SELECT data FROM session_columns WHERE type = 'text'")
        assert all(type(column) is list for column in json.loads(old_block).values())
        with Session.load(root=saved) as old:
            TreeTracker(old, ".").load()
            assert old.tick().projection.text == expected
            old.save()
        assert _sql(db, "SELECT value FROM dagctx_meta WHERE key = 'session_schema'") == [
            (str(SESSION_SCHEMA),)
        ]
        ((data,),) = _sql(db, "SELECT data FROM session_columns WHERE type = 'text'")
        block = json.loads(data)
        assert block["root"] == {"repeat": str(saved), "count": len(block["ref"])}
        assert all(type(key) is int for key in block["stat"])
        assert _resumed_text(saved) == expected


_pool = st.sampled_from(
    [0, 0.0, -0.0, False, None, 1, 1.0, True, "", "0", "a", [], [0], [0.0], {}, {"k": 0},
     {"k": 0.0}, {"k": False}, 1795574342.4417605, 2**70]
)  # fmt: skip


class TestCompactColumns:
    @given(
        column=st.lists(_pool, max_size=40)
        | st.lists(st.sampled_from([1.5, 2.5, -3.25]), max_size=40)
        | st.lists(st.sampled_from(["x", "y", None]), min_size=8, max_size=40)
        | st.lists(_json_values, max_size=12)
    )
    def test_a_column_comes_back_exactly_through_json(self, column: list[Any]) -> None:
        saved = json.loads(json.dumps(compact_column(column)))
        back = expand_column(saved, len(column))
        assert json.dumps(back) == json.dumps(column)  # 0, 0.0, -0.0 and false told apart
        assert [type(v) for v in back] == [type(v) for v in column]

    def test_a_column_of_few_values_is_saved_once_per_value(self) -> None:
        column = ["text/x-python", "text/markdown"] * 10
        assert compact_column(column) == {"values": column[:2], "at": [0, 1] * 10}
        assert compact_column([None] * 8) == {"repeat": None, "count": 8}
        assert compact_column([0, 0.0] * 8) == [0, 0.0] * 8  # two types: as it is
        assert compact_column([1.0] * 7) == [1.0] * 7  # too short to gain
        distinct = [f"p{i}" for i in range(20)]
        assert compact_column(distinct) is distinct

    @pytest.mark.parametrize(
        ("column", "message"),
        [
            ({"repeat": "x", "count": 10**9}, "repeated value for 1000000000 nodes"),
            ({"repeat": "x", "count": True}, "repeated value"),
            ({"values": ["a"], "at": [0, 1]}, "index out of its 1 values"),
            ({"values": ["a"], "at": [0, -1]}, "index out of"),
            ({"values": ["a"], "at": [0, True]}, "index out of"),
            ({"values": "a", "at": [0]}, "not lists"),
            ({"values": ["a"], "at": [0], "more": 1}, "nor a repeated value"),
            ("a", "nor a repeated value"),
        ],
    )
    def test_a_malformed_compact_column_is_refused_naming_it(
        self, saved: Path, column: Any, message: str
    ) -> None:
        db = saved / ".dagctx" / "session.db"
        ((data,),) = _sql(db, "SELECT data FROM session_columns WHERE type = 'text'")
        _put_columns(db, {**json.loads(data), "media_type": column})
        with pytest.raises(CheckpointError, match=f"column 'media_type' is malformed: .*{message}"):
            Session.load(root=saved)


class TestGroupColumns:
    def test_a_group_from_columns_is_the_group_from_its_dict(self, saved: Path) -> None:
        with _session(saved) as fresh:
            originals = [n for n in fresh.graph if isinstance(n, GroupNode)]
            originals[0].notice = "[directory unreadable: Permission denied]"
            originals[-1].tags = {"kept"}
            pairs = [(n, n.snapshot()) for n in originals]
            block = GroupNode.to_columns(pairs)  # type: ignore[arg-type]
            rebuilt = GroupNode.from_columns(json.loads(json.dumps(block)))
            one_by_one = [Node.from_dict(json.loads(json.dumps(n.to_dict()))) for n in originals]
        assert len(rebuilt) == len(originals) > 1
        for a, b in zip(rebuilt, one_by_one, strict=True):
            assert _slots(a) == _slots(b)

    def test_a_saved_group_is_rebuilt_without_being_rendered(
        self, saved: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from dagctx.nodes.group import GroupNode

        renders: list[str] = []
        original = GroupNode.render_state

        def counting(self: GroupNode, state: NodeState) -> str:
            renders.append(self.id)
            return original(self, state)

        monkeypatch.setattr(GroupNode, "render_state", counting)
        with Session.load(root=saved) as session:
            assert any(isinstance(n, GroupNode) for n in session.graph)
            assert renders == []

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(key=st.sampled_from(["title", "summary", "notice"]), value=_json_values)
    def test_any_value_in_a_group_field_is_refused_or_renders(
        self, tmp_path: Path, key: str, value: object
    ) -> None:
        root = tmp_path / "g"
        good = tmp_path / "good.db"
        if not good.exists():
            _tree(root)
            with _session(root) as session:
                session.save()
            shutil.copy(root / ".dagctx" / "session.db", good)
        db = _restore(good, root)
        block = _columns(db, "group")
        block[key][-1] = value
        _put_columns(db, block, "group")
        try:
            session = Session.load(root=root)
        except CheckpointError as exc:
            assert key in str(exc)
            return
        with session:
            for node in session.graph:
                for state in NodeState:
                    assert isinstance(node.render(state), str)
                json.dumps(node.to_dict())
            TreeTracker(session, ".").load()
            assert session.tick().projection.tokens <= session.budget


class TestPathColumn:
    @given(
        st.lists(
            st.text(alphabet="ab./\\\0", max_size=6) | st.sampled_from(["", ".", "./", "a/."]),
            max_size=6,
        )
    )
    def test_a_column_of_paths_is_clean_at_once_only_when_each_path_is(
        self, paths: list[str]
    ) -> None:
        if text_module._all_posix(paths):
            assert [text_module._posix(p) for p in paths] == paths
