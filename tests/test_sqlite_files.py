"""Every dagctx SQLite file is opened one way: WAL, FULL durability, foreign files refused,
one schema-version row per component in ``dagctx_meta`` (see ``dagctx._sqlite``)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import dagctx
from dagctx import Session, _sqlite
from dagctx.checkpoint import SQLiteCheckpointStore
from dagctx.errors import CheckpointError, CoordinationError
from dagctx.runtime.coordination import Claim, CoordinationStore
from dagctx.session.file import SESSION_SCHEMA


def run_sql(path: Path, *statements: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            rows = conn.execute(statement).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


def open_checkpoints(path: Path) -> None:
    with SQLiteCheckpointStore(path, "t") as store:
        store.save({"n": 1}, {})


def open_coordination(path: Path) -> None:
    store = CoordinationStore(path)
    try:
        now = time.time()
        store.put(Claim("c1", "a1", None, 1, "edit", "write", ("/x",), now, now + 60), ttl=60)
    finally:
        store.close()


def save_session(path: Path) -> None:
    with Session(path.parent) as s:
        s.save(path)


SCHEMAS = {"checkpoint": "1", "coordination": "1", "session": str(SESSION_SCHEMA)}
WRITERS: dict[str, tuple[Callable[[Path], None], type[Exception]]] = {
    "checkpoint": (open_checkpoints, CheckpointError),
    "coordination": (open_coordination, CoordinationError),
    "session": (save_session, CheckpointError),
}


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every SQL statement run on a connection opened through ``dagctx._sqlite``."""
    seen: list[str] = []
    real_connect = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(_sqlite.sqlite3, "connect", traced)
    yield seen


@pytest.mark.parametrize("component", sorted(WRITERS))
class TestOnePolicy:
    def test_wal_and_full_durability_before_the_first_write(
        self, component: str, tmp_path: Path, statements: list[str]
    ) -> None:
        WRITERS[component][0](tmp_path / "x.db")
        normalized = [s.replace(" ", "").upper() for s in statements]
        assert "PRAGMAJOURNAL_MODE=WAL" in normalized
        assert "PRAGMASYNCHRONOUS=FULL" in normalized
        assert normalized.index("PRAGMASYNCHRONOUS=FULL") < normalized.index("BEGINIMMEDIATE")
        assert run_sql(tmp_path / "x.db", "PRAGMA journal_mode") == [("wal",)]

    def test_the_version_is_a_row_in_dagctx_meta(self, component: str, tmp_path: Path) -> None:
        WRITERS[component][0](tmp_path / "x.db")
        rows = run_sql(tmp_path / "x.db", "SELECT key, value FROM dagctx_meta")
        assert (f"{component}_schema", SCHEMAS[component]) in rows

    def test_a_file_of_another_application_is_refused_untouched(
        self, component: str, tmp_path: Path
    ) -> None:
        path = tmp_path / "app.db"
        run_sql(path, "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('ada')")
        before = path.read_bytes()
        write, error = WRITERS[component]
        with pytest.raises(error, match="something else"):
            write(path)
        assert path.read_bytes() == before

    def test_another_schema_version_is_refused_naming_both(
        self, component: str, tmp_path: Path
    ) -> None:
        path = tmp_path / "x.db"
        write, error = WRITERS[component]
        write(path)
        run_sql(path, f"UPDATE dagctx_meta SET value = '9' WHERE key = '{component}_schema'")
        with pytest.raises(
            error, match=f"{component} schema 9.*{component} schema {SCHEMAS[component]}"
        ):
            write(path)
        assert run_sql(path, f"SELECT value FROM dagctx_meta WHERE key = '{component}_schema'") == [
            ("9",)
        ]


class TestSharing:
    def test_three_components_share_one_file(self, tmp_path: Path) -> None:
        path = tmp_path / "all.db"
        for write, _ in WRITERS.values():
            write(path)
            write(path)
        keys = run_sql(path, "SELECT key FROM dagctx_meta ORDER BY key")
        assert keys == [("checkpoint_schema",), ("coordination_schema",), ("session_schema",)]


class TestCoordinationStoreOfAnEarlierVersion:
    def test_a_store_marked_with_user_version_is_adopted_with_its_claims(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "coordination.db"
        now = time.time()
        run_sql(
            path,
            "CREATE TABLE claims (claim_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL,"
            " agent_name TEXT, pid INTEGER NOT NULL, intent TEXT NOT NULL, mode TEXT NOT NULL,"
            " files TEXT NOT NULL, created_at REAL NOT NULL, ttl REAL NOT NULL,"
            " expires_at REAL NOT NULL)",
            "CREATE INDEX claims_by_agent ON claims (agent_id)",
            "CREATE INDEX claims_by_expiry ON claims (expires_at)",
            "PRAGMA user_version = 1",
            "INSERT INTO claims VALUES ('c0', 'a0', NULL, 7, 'old', 'read', '[\"/y\"]',"
            f" {now}, 60, {now + 60})",
        )
        store = CoordinationStore(path)
        try:
            assert [c.claim_id for c in store.active()] == ["c0"]
        finally:
            store.close()
        assert ("coordination_schema", "1") in run_sql(path, "SELECT * FROM dagctx_meta")

    def test_the_same_tables_at_another_user_version_are_not_adopted(self, tmp_path: Path) -> None:
        path = tmp_path / "coordination.db"
        run_sql(path, "CREATE TABLE claims (claim_id TEXT)", "PRAGMA user_version = 2")
        with pytest.raises(CoordinationError, match="something else"):
            CoordinationStore(path)


def test_no_module_but_the_sqlite_helper_connects() -> None:
    package = Path(dagctx.__file__).parent
    connecting = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "sqlite3.connect(" in path.read_text(encoding="utf-8")
    )
    assert connecting == ["_sqlite.py"]


class _BusyOnSwitch:
    """A real connection whose first ``busy`` switches to WAL answer "database is locked"
    at once, as SQLite does when processes open one new file together (it does not wait
    out the busy timeout then; a race no test can schedule, so it is replayed here)."""

    def __init__(self, conn: sqlite3.Connection, busy: int, code: int) -> None:
        self.conn, self.busy, self.code, self.tries = conn, busy, code, 0

    def execute(self, sql: str) -> sqlite3.Cursor:
        if sql == "PRAGMA journal_mode=WAL":
            self.tries += 1
            if self.tries <= self.busy:
                exc = sqlite3.OperationalError("database is locked")
                exc.sqlite_errorcode = self.code  # type: ignore[attr-defined]
                raise exc
        return self.conn.execute(sql)


class TestJournalSwitchRace:
    def test_a_switch_held_up_by_another_process_is_tried_again(self, tmp_path: Path) -> None:
        conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
        flaky = _BusyOnSwitch(conn, busy=3, code=sqlite3.SQLITE_BUSY)
        _sqlite.make_durable(flaky, timeout=5.0)  # type: ignore[arg-type]
        assert flaky.tries == 4
        assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
        conn.close()

    def test_a_lock_held_past_the_timeout_is_reported(self, tmp_path: Path) -> None:
        conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
        flaky = _BusyOnSwitch(conn, busy=10**9, code=sqlite3.SQLITE_BUSY)
        start = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            _sqlite.make_durable(flaky, timeout=0.2)  # type: ignore[arg-type]
        assert 0.2 <= time.monotonic() - start < 5
        conn.close()

    def test_other_errors_are_not_tried_again(self, tmp_path: Path) -> None:
        conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
        flaky = _BusyOnSwitch(conn, busy=1, code=sqlite3.SQLITE_IOERR)
        with pytest.raises(sqlite3.OperationalError):
            _sqlite.make_durable(flaky, timeout=5.0)  # type: ignore[arg-type]
        assert flaky.tries == 1
        conn.close()

    def test_a_file_already_in_wal_is_not_switched(self, tmp_path: Path) -> None:
        run_sql(tmp_path / "x.db", "PRAGMA journal_mode=WAL")
        conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
        flaky = _BusyOnSwitch(conn, busy=10**9, code=sqlite3.SQLITE_BUSY)
        _sqlite.make_durable(flaky, timeout=0.0)  # type: ignore[arg-type]
        assert flaky.tries == 0
        conn.close()
