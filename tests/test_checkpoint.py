"""Checkpoints and checkpoint stores: the value type, serialization, and one interface
specification run against every backend (in memory, SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx.checkpoint import (
    BaseCheckpointStore,
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
)
from dagctx.errors import DagctxError

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
json_dicts = st.dictionaries(st.text(max_size=10), json_values, max_size=6)
usages = st.dictionaries(st.text(min_size=1, max_size=12), st.integers(0, 10**12), max_size=4)


def make_checkpoint(**changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "task_id": "task-1",
        "version": 1,
        "values": {"step": 1, "data": ["a", {"b": 2}]},
        "token_usage": {"input_tokens": 100},
        "metadata": {"description": "after step 1"},
        "created_at": datetime(2025, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
    }
    fields.update(changes)
    return Checkpoint(**fields)


StoreFactory = Callable[[str], BaseCheckpointStore]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Build stores of one backend; SQLite stores of one test share one file, PostgreSQL
    stores one schema of the test server."""
    opened: list[BaseCheckpointStore] = []
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else ""

    def make(task_id: str) -> BaseCheckpointStore:
        if request.param == "memory":
            store: BaseCheckpointStore = CheckpointStore(task_id)
        elif request.param == "sqlite":
            store = SQLiteCheckpointStore(tmp_path / "checkpoints.db", task_id)
        else:
            store = PostgresCheckpointStore(url, task_id)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> BaseCheckpointStore:
    return make_store("task-1")


class TestCheckpointValue:
    def test_defaults_are_empty_metadata_and_now_in_utc(self) -> None:
        before = datetime.now(UTC)
        cp = Checkpoint("t", 1, {}, {})
        assert cp.metadata == {}
        assert cp.created_at.utcoffset() == timedelta(0)
        assert before <= cp.created_at <= datetime.now(UTC)

    def test_is_frozen_and_slotted(self) -> None:
        cp = make_checkpoint()
        with pytest.raises(dataclasses.FrozenInstanceError):
            cp.version = 2  # type: ignore[misc]
        assert not hasattr(cp, "__dict__")
        assert "values" in Checkpoint.__slots__

    def test_equal_checkpoints_hash_equal(self) -> None:
        assert make_checkpoint() == make_checkpoint()
        assert hash(make_checkpoint()) == hash(make_checkpoint())
        assert len({make_checkpoint(), make_checkpoint(), make_checkpoint(version=2)}) == 2

    @pytest.mark.parametrize(
        ("changes", "named"),
        [
            ({"task_id": ""}, "''"),
            ({"task_id": 7}, "7"),
            ({"version": 0}, "0"),
            ({"version": True}, "True"),
            ({"version": "1"}, "'1'"),
            ({"values": [1]}, "list"),
            ({"values": {1: "a"}}, "1"),
            ({"token_usage": {"in": -1}}, "-1"),
            ({"token_usage": {"in": 1.5}}, "1.5"),
            ({"token_usage": {"in": True}}, "True"),
            ({"metadata": None}, "NoneType"),
            ({"created_at": "2025-01-01"}, "2025-01-01"),
            ({"created_at": datetime(2025, 1, 1)}, "2025-01-01T00:00:00"),
        ],
    )
    def test_bad_fields_raise_checkpoint_error_naming_the_value(
        self, changes: dict[str, Any], named: str
    ) -> None:
        with pytest.raises(CheckpointError, match=named.replace("(", r"\(")) as info:
            make_checkpoint(**changes)
        assert isinstance(info.value, DagctxError)


class TestSerialization:
    def test_to_dict_has_the_six_keys_and_an_iso_date(self) -> None:
        data = make_checkpoint().to_dict()
        assert data == {
            "task_id": "task-1",
            "version": 1,
            "values": {"step": 1, "data": ["a", {"b": 2}]},
            "token_usage": {"input_tokens": 100},
            "metadata": {"description": "after step 1"},
            "created_at": "2025-03-01T12:30:05.123456+00:00",
        }
        json.dumps(data)  # ready for JSON as is

    def test_round_trip_is_equal(self) -> None:
        cp = make_checkpoint()
        assert Checkpoint.from_dict(cp.to_dict()) == cp
        assert Checkpoint.from_dict(json.loads(json.dumps(cp.to_dict()))) == cp

    def test_to_dict_and_from_dict_copy_nested_values(self) -> None:
        cp = make_checkpoint()
        data = cp.to_dict()
        data["values"]["data"].append("changed")
        assert cp.values["data"] == ["a", {"b": 2}]
        restored = Checkpoint.from_dict(data)
        data["values"]["data"].clear()
        assert restored.values["data"] == ["a", {"b": 2}, "changed"]

    def test_from_dict_accepts_z_suffix_other_offsets_and_missing_metadata(self) -> None:
        data = make_checkpoint().to_dict()
        del data["metadata"]
        data["created_at"] = "2025-03-01T14:30:05.123456+02:00"
        cp = Checkpoint.from_dict(data)
        assert cp.metadata == {}
        assert cp.created_at == make_checkpoint().created_at
        assert cp.created_at.utcoffset() == timedelta(hours=2)
        data["created_at"] = "2025-03-01T12:30:05Z"
        assert Checkpoint.from_dict(data).created_at.tzinfo is not None

    @pytest.mark.parametrize(
        "missing", ["task_id", "version", "values", "token_usage", "created_at"]
    )
    def test_from_dict_missing_key_raises_checkpoint_error(self, missing: str) -> None:
        data = make_checkpoint().to_dict()
        del data[missing]
        with pytest.raises(CheckpointError, match=missing):
            Checkpoint.from_dict(data)

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("task_id", None),
            ("version", "2"),
            ("version", 2.0),
            ("values", None),
            ("values", "text"),
            ("values", {3: "x"}),
            ("token_usage", [1, 2]),
            ("token_usage", {"in": "5"}),
            ("metadata", 5),
            ("created_at", "yesterday"),
            ("created_at", "2025-13-45T00:00:00+00:00"),
            ("created_at", "2025-03-01T12:00:00"),
            ("created_at", 1700000000),
            ("created_at", None),
        ],
    )
    def test_from_dict_wrong_type_raises_checkpoint_error_never_key_or_type_error(
        self, key: str, value: Any
    ) -> None:
        data = make_checkpoint().to_dict()
        data[key] = value
        with pytest.raises(CheckpointError) as info:
            Checkpoint.from_dict(data)
        assert not isinstance(info.value, KeyError | TypeError | ValueError)

    @pytest.mark.parametrize("data", [None, [], "checkpoint", 42])
    def test_from_dict_on_non_mapping_raises_checkpoint_error(self, data: Any) -> None:
        with pytest.raises(CheckpointError, match="mapping"):
            Checkpoint.from_dict(data)

    def test_from_dict_rejects_unknown_keys(self) -> None:
        data = make_checkpoint().to_dict()
        data["valeus"] = {}
        with pytest.raises(CheckpointError, match="valeus"):
            Checkpoint.from_dict(data)

    @given(values=json_dicts, usage=usages, metadata=json_dicts, version=st.integers(1, 10**9))
    def test_any_json_checkpoint_round_trips_through_json_text(
        self, values: dict[str, Any], usage: dict[str, int], metadata: dict[str, Any], version: int
    ) -> None:
        cp = Checkpoint("t", version, values, usage, metadata)
        assert Checkpoint.from_dict(json.loads(json.dumps(cp.to_dict()))) == cp


class TestStoreInterface:
    """The contract of every CheckpointStore backend (the fixture runs each test on each)."""

    def test_an_empty_store(self, store: BaseCheckpointStore) -> None:
        assert store.task_id == "task-1"
        assert store.version == 0
        assert store.latest is None
        assert len(store) == 0
        assert store.list_versions() == []

    def test_versions_are_one_based_and_monotonic(self, store: BaseCheckpointStore) -> None:
        saved = [store.save({"step": n}, {"input_tokens": n}) for n in range(1, 6)]
        assert [cp.version for cp in saved] == [1, 2, 3, 4, 5]
        assert store.version == 5
        assert len(store) == 5
        assert store.list_versions() == [1, 2, 3, 4, 5]
        assert store.latest == saved[-1]
        assert [store.get(n) for n in range(1, 6)] == saved

    def test_saved_checkpoint_carries_task_values_usage_metadata_and_time(
        self, store: BaseCheckpointStore
    ) -> None:
        before = datetime.now(UTC)
        cp = store.save({"a": [1, {"b": None}]}, {"in": 3}, metadata={"step": "one"})
        assert (cp.task_id, cp.values, cp.token_usage, cp.metadata) == (
            "task-1",
            {"a": [1, {"b": None}]},
            {"in": 3},
            {"step": "one"},
        )
        assert before <= cp.created_at <= datetime.now(UTC)
        assert store.save({}, {}).metadata == {}

    def test_later_changes_to_the_inputs_do_not_reach_the_store(
        self, store: BaseCheckpointStore
    ) -> None:
        values = {"items": [1, 2]}
        usage = {"in": 1}
        metadata = {"tags": ["x"]}
        store.save(values, usage, metadata=metadata)
        values["items"].append(3)
        usage["in"] = 99
        metadata["tags"].append("y")
        cp = store.get(1)
        assert (cp.values, cp.token_usage, cp.metadata) == (
            {"items": [1, 2]},
            {"in": 1},
            {"tags": ["x"]},
        )

    def test_changing_a_returned_checkpoint_does_not_reach_the_store(
        self, store: BaseCheckpointStore
    ) -> None:
        saved = store.save({"items": [1]}, {"in": 1})
        saved.values["items"].append(2)
        store.get(1).values["items"].append(3)
        assert store.latest is not None
        store.latest.token_usage["in"] = 50
        assert store.get(1).values == {"items": [1]}
        assert store.get(1).token_usage == {"in": 1}

    @pytest.mark.parametrize("version", [0, -1, 2, 10**6, True, "1", 1.0, None])
    def test_get_of_an_unknown_version_raises_naming_it(
        self, store: BaseCheckpointStore, version: Any
    ) -> None:
        store.save({}, {})
        with pytest.raises(CheckpointError, match=r"version .*1\.\.1") as info:
            store.get(version)
        assert repr(version) in str(info.value)

    @pytest.mark.parametrize(
        ("values", "usage", "metadata", "named"),
        [
            ({1: "x"}, {}, None, "1"),
            ("values", {}, None, "str"),
            ({}, {"in": -5}, None, "-5"),
            ({}, {"in": True}, None, "True"),
            ({}, {"in": 2.5}, None, "2.5"),
            ({}, {7: 1}, None, "7"),
            ({}, None, None, "NoneType"),
            ({}, {}, {("k",): 1}, "k"),
            ({}, {}, [1], "list"),
        ],
    )
    def test_bad_input_raises_and_stores_nothing(
        self, store: BaseCheckpointStore, values: Any, usage: Any, metadata: Any, named: str
    ) -> None:
        store.save({"ok": 1}, {})
        with pytest.raises(CheckpointError, match=named):
            store.save(values, usage, metadata=metadata)
        assert store.version == 1
        assert store.list_versions() == [1]
        assert store.save({}, {}).version == 2

    @pytest.mark.parametrize("task_id", ["", None, 5])
    def test_task_id_must_be_a_non_empty_string(
        self, make_store: StoreFactory, task_id: Any
    ) -> None:
        with pytest.raises(CheckpointError, match="task_id"):
            make_store(task_id)

    def test_stores_of_different_tasks_are_independent(self, make_store: StoreFactory) -> None:
        first, second = make_store("first"), make_store("second")
        first.save({"n": 1}, {})
        first.save({"n": 2}, {})
        assert second.version == 0
        assert second.save({"n": 10}, {}).version == 1
        assert first.list_versions() == [1, 2]
        assert second.get(1).values == {"n": 10}

    def test_repr_names_the_task_and_the_count(self, store: BaseCheckpointStore) -> None:
        for _ in range(3):
            store.save({}, {})
        assert "task_id='task-1'" in repr(store)
        assert "checkpoints=3" in repr(store)
        if isinstance(store, CheckpointStore):
            assert repr(store) == "CheckpointStore(task_id='task-1', checkpoints=3)"

    def test_works_as_a_context_manager(self, store: BaseCheckpointStore) -> None:
        with store as same:
            assert same is store

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(batches=st.lists(st.tuples(json_dicts, usages, json_dicts), min_size=1, max_size=4))
    def test_any_json_checkpoint_comes_back_equal(
        self,
        make_store: StoreFactory,
        batches: list[tuple[dict[str, Any], dict[str, int], dict[str, Any]]],
    ) -> None:
        store = make_store(f"task-{uuid.uuid4()}")  # a fresh task per example
        saved = [store.save(v, u, metadata=m) for v, u, m in batches]
        assert [store.get(cp.version) for cp in saved] == saved
        assert [(cp.values, cp.token_usage, cp.metadata) for cp in saved] == batches
        assert store.list_versions() == list(range(1, len(batches) + 1))


class TestInMemoryStore:
    def test_holds_any_deep_copyable_value(self) -> None:
        store = CheckpointStore("t")
        cp = store.save({"pair": (1, 2), "tags": {"a"}, "nan": math.inf}, {})
        assert store.get(1).values == {"pair": (1, 2), "tags": {"a"}, "nan": math.inf}
        assert cp.values["pair"] == (1, 2)

    def test_a_value_that_cannot_be_copied_raises_naming_its_key(self) -> None:
        store = CheckpointStore("t")
        with pytest.raises(CheckpointError, match="'gen'"):
            store.save({"ok": 1, "gen": (n for n in range(3))}, {})
        assert len(store) == 0


def db_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class TestSQLiteStore:
    def test_survives_reopening_and_versions_continue(self, tmp_path: Path) -> None:
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            first = store.save({"n": 1}, {"in": 1}, metadata={"m": True})
            store.save({"n": 2}, {"in": 2})
        with SQLiteCheckpointStore(path, "t") as store:
            assert store.list_versions() == [1, 2]
            assert store.get(1) == first
            assert store.save({"n": 3}, {}).version == 3

    def test_one_row_per_checkpoint_with_json_columns(self, tmp_path: Path) -> None:
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            store.save({"a": [1, "x"]}, {"in": 5}, metadata={"d": "s"})
            store.save({"b": None}, {})
        rows = db_rows(
            path,
            "SELECT task_id, version, state_values, token_usage, metadata, created_at"
            " FROM context_checkpoints ORDER BY version",
        )
        assert len(rows) == 2
        assert rows[0][:2] == ("t", 1)
        assert [json.loads(text) for text in rows[0][2:5]] == [
            {"a": [1, "x"]},
            {"in": 5},
            {"d": "s"},
        ]
        assert datetime.fromisoformat(rows[0][5]).utcoffset() == timedelta(0)

    def test_uses_the_wal_journal(self, tmp_path: Path) -> None:
        path = tmp_path / "cp.db"
        SQLiteCheckpointStore(path, "t").close()
        assert db_rows(path, "PRAGMA journal_mode") == [("wal",)]

    @pytest.mark.parametrize(
        ("values", "named"),
        [
            ({"pair": (1, 2)}, r"values\['pair'\] is a tuple.*list"),
            ({"tags": {"a"}}, r"values\['tags'\] is a set"),
            ({"x": math.nan}, r"values\['x'\] is nan"),
            ({"x": [1, math.inf]}, r"values\['x'\]\[1\] is inf"),
            ({"when": datetime(2025, 1, 1)}, r"values\['when'\] is a datetime"),
            (
                {"nested": {"ok": [{"deep": object()}]}},
                r"values\['nested'\]\['ok'\]\[0\]\['deep'\]",
            ),
            ({"map": {1: "int key"}}, r"values\['map'\] has key 1"),
        ],
    )
    def test_a_value_json_cannot_hold_raises_and_stores_nothing(
        self, tmp_path: Path, values: dict[str, Any], named: str
    ) -> None:
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            store.save({"ok": 1}, {})
            with pytest.raises(CheckpointError, match=named):
                store.save({"fine": 1, **values}, {})
            assert store.list_versions() == [1]
        assert db_rows(path, "SELECT COUNT(*) FROM context_checkpoints") == [(1,)]

    def test_a_value_that_contains_itself_raises(self, tmp_path: Path) -> None:
        loop: list[Any] = [1]
        loop.append(loop)
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            with pytest.raises(CheckpointError, match="contains itself"):
                store.save({"loop": loop}, {})
            shared = [1, 2]
            assert store.save({"a": shared, "b": shared}, {}).values == {"a": [1, 2], "b": [1, 2]}

    def test_text_that_utf8_cannot_hold_round_trips(self, tmp_path: Path) -> None:
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            values = {"lone \ud800": "caf\u00e9 \udfff 漢字"}
            store.save(values, {})
            assert store.get(1).values == values

    def test_creates_missing_parent_directories(self, tmp_path: Path) -> None:
        path = tmp_path / "a" / "b" / "session.db"
        with SQLiteCheckpointStore(path, "t") as store:
            store.save({}, {})
        assert path.is_file()

    def test_a_file_that_is_not_a_database_raises(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.db"
        path.write_bytes(b"these are not the bytes of a database" * 200)
        with pytest.raises(CheckpointError, match=r"notes.db"):
            SQLiteCheckpointStore(path, "t")

    def test_a_directory_path_raises(self, tmp_path: Path) -> None:
        with pytest.raises(CheckpointError, match=str(tmp_path.name)):
            SQLiteCheckpointStore(tmp_path, "t")

    def test_another_schema_version_raises_naming_both(self, tmp_path: Path) -> None:
        path = tmp_path / "cp.db"
        SQLiteCheckpointStore(path, "t").close()
        conn = sqlite3.connect(path)
        conn.execute("UPDATE dagctx_meta SET value = '7' WHERE key = 'checkpoint_schema'")
        conn.commit()
        conn.close()
        with pytest.raises(CheckpointError, match=r"schema 7.*schema 1"):
            SQLiteCheckpointStore(path, "t")

    def test_a_corrupt_row_raises_checkpoint_error_naming_the_version(self, tmp_path: Path) -> None:
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t") as store:
            store.save({"n": 1}, {})
            store.save({"n": 2}, {})
            conn = sqlite3.connect(path)
            conn.execute(
                "UPDATE context_checkpoints SET state_values = '{broken' WHERE version = 2"
            )
            conn.execute("UPDATE context_checkpoints SET created_at = 'soon' WHERE version = 1")
            conn.commit()
            conn.close()
            with pytest.raises(CheckpointError, match=r"version 2 .*corrupt"):
                store.get(2)
            with pytest.raises(CheckpointError, match=r"version 1 .*corrupt.*soon"):
                store.get(1)

    def test_a_closed_store_raises(self, tmp_path: Path) -> None:
        store = SQLiteCheckpointStore(tmp_path / "cp.db", "t")
        store.close()
        store.close()
        assert "closed" in repr(store)
        with pytest.raises(CheckpointError, match="closed"):
            store.save({}, {})
        with pytest.raises(CheckpointError, match="closed"):
            store.list_versions()

    def test_a_writer_waits_for_another_writers_lock_up_to_the_timeout(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "cp.db"
        with SQLiteCheckpointStore(path, "t", timeout=0.05) as store:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(CheckpointError, match="locked"):
                store.save({"n": 1}, {})
            other.execute("ROLLBACK")
            other.close()
            assert store.list_versions() == []
            assert store.save({"n": 1}, {}).version == 1

    def test_a_task_id_utf8_cannot_hold_raises(self, tmp_path: Path) -> None:
        with pytest.raises(CheckpointError, match="UTF-8"):
            SQLiteCheckpointStore(tmp_path / "cp.db", "bad \ud800")

    def test_keeps_each_saved_timestamp_exactly(self, tmp_path: Path) -> None:
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            saved = store.save({}, {})
            assert store.get(1).created_at == saved.created_at
            assert store.get(1).created_at.tzinfo is UTC
