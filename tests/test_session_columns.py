"""Text nodes saved as one block of columns (session schema 3), and schema 2 files.

A saved session keeps its text nodes (those with a snapshot) in ``session_columns``, one
JSON object of equal-length lists, and rebuilds them column by column
(:meth:`~dagctx.nodes.base.Node.from_columns`). The nodes must come back exactly as the
one-by-one path (:meth:`~dagctx.nodes.base.Node.from_dict`) rebuilds them; a tampered
block is refused with a :class:`~dagctx.errors.CheckpointError` naming the bad value,
or loads into nodes that render; a schema 2 file (every node one row) still loads, and
the next save upgrades it.
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
from dagctx.nodes.text import TextNode
from dagctx.session import Session
from dagctx.session.file import SESSION_SCHEMA
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


def _columns(db: Path) -> dict[str, Any]:
    ((data,),) = _sql(db, "SELECT data FROM session_columns WHERE type = 'text'")
    block: dict[str, Any] = json.loads(data)
    return block


def _put_columns(db: Path, block: Any) -> None:
    _sql(db, "UPDATE session_columns SET data = ? WHERE type = 'text'", json.dumps(block))


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
        assert "text" not in rows and "group" in rows
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
        saved_pairs = [(n, n.snapshot()) for n in originals]
        block = TextNode.to_columns(saved_pairs)  # type: ignore[arg-type]
        rebuilt = TextNode.from_columns(json.loads(json.dumps(block)))
        one_by_one = []
        for node, snapshot in saved_pairs:
            raw = node.to_dict()
            raw["snapshot"] = snapshot
            one_by_one.append(Node.from_dict(json.loads(json.dumps(raw))))
        assert len(rebuilt) == len(originals) > 5
        for a, b in zip(rebuilt, one_by_one, strict=True):
            assert _slots(a) == _slots(b)
            for state in NodeState:
                assert a.render(state) == b.render(state)

    def test_a_session_saved_again_before_its_files_are_read_renders_the_same(
        self, saved: Path
    ) -> None:
        with Session.load(root=saved) as session:
            TreeTracker(session, ".").load()
            expected = session.tick().projection.text
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
            con.execute("UPDATE session_columns SET type = 'markdown'")
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
            con.execute("UPDATE session_columns SET data = '{broken'")
        with pytest.raises(CheckpointError, match=r"'text' nodes' columns.*not valid JSON"):
            Session.load(root=saved)
        _put_columns(db, [1, 2])
        with pytest.raises(CheckpointError, match="not a JSON object"):
            Session.load(root=saved)

    def test_node_columns_of_a_type_without_columns_are_refused(self) -> None:
        from dagctx.nodes.group import GroupNode

        with pytest.raises(GraphError, match="group nodes are not saved as columns"):
            GroupNode.from_columns({"id": []})


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


def _to_schema_2(db: Path) -> None:
    """Rewrite a schema 3 file as a schema 2 one: every node one row, no columns table."""
    block = _columns(db)
    keep = ("ref", "in_graph", "seq", "last_run", "tokens")
    with sqlite3.connect(db) as con:
        for i, ref in enumerate(block["ref"]):
            raw: dict[str, Any] = {"type": "text"}
            raw.update({key: block[key][i] for key in COMMON_COLUMNS})
            snapshot_keys = TextNode.column_keys[-8:]  # stat ... digest; the rest is data
            raw["data"] = {key: block[key][i] for key in TextNode.column_keys[:-8]}
            raw["snapshot"] = {key: block[key][i] for key in snapshot_keys}
            if block["tokens"][i] is not None:
                raw["tokens"] = block["tokens"][i]
            _, in_graph, seq, last_run, _ = (block[key][i] for key in keep)
            con.execute(
                "INSERT INTO session_nodes VALUES (?, ?, ?, ?, ?)",
                (ref, int(in_graph), seq, last_run, json.dumps(raw)),
            )
        con.execute("DROP TABLE session_columns")
        con.execute("UPDATE dagctx_meta SET value = '2' WHERE key = 'session_schema'")


class TestSchema2:
    def test_a_schema_2_file_loads_and_its_next_save_upgrades_it(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with Session.load(root=saved) as session:
            TreeTracker(session, ".").load()
            expected = session.tick().projection.text
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
            assert con.execute("SELECT COUNT(*) FROM session_columns").fetchone() == (1,)
        with Session.load(root=saved) as upgraded:
            TreeTracker(upgraded, ".").load()
            assert upgraded.tick().projection.text == expected

    def test_a_schema_1_file_is_refused_naming_both_versions(self, saved: Path) -> None:
        db = saved / ".dagctx" / "session.db"
        with sqlite3.connect(db) as con:
            con.execute("UPDATE dagctx_meta SET value = '1' WHERE key = 'session_schema'")
        with pytest.raises(CheckpointError, match=f"schema 1.*schema {SESSION_SCHEMA}"):
            Session.load(root=saved)


class TestGroupRows:
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
        _sql(
            db,
            "UPDATE session_nodes SET data = json_set(data, ?, json(?))"
            " WHERE ref = (SELECT MAX(ref) FROM session_nodes)",
            f"$.data.{key}",
            json.dumps(value),
        )
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
