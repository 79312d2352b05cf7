"""The PostgreSQL backends' own behaviour: choosing a backend by URL or ``DAGCTX_STORE``,
passwords kept out of messages, and a store that carries on after the server restarted.
(The interface suites of each store run on PostgreSQL through their parametrized
fixtures.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from pg_server import PostgresServer

from dagctx import _postgres
from dagctx.checkpoint import (
    CheckpointError,
    CheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    open_checkpoint_store,
)


class TestChoosingTheBackend:
    def test_a_url_a_path_and_nothing(self, pg_url: str, tmp_path: Path) -> None:
        with open_checkpoint_store("t", pg_url) as store:
            assert isinstance(store, PostgresCheckpointStore)
        with open_checkpoint_store("t", tmp_path / "cp.db") as store:
            assert isinstance(store, SQLiteCheckpointStore)
        assert isinstance(open_checkpoint_store("t"), CheckpointStore)

    def test_the_environment_variable_names_the_default(
        self, pg_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("DAGCTX_STORE", pg_url)
        with open_checkpoint_store("t") as store:
            assert isinstance(store, PostgresCheckpointStore)
        monkeypatch.setenv("DAGCTX_STORE", "")
        assert isinstance(open_checkpoint_store("t"), CheckpointStore)

    def test_passwords_never_reach_messages(self) -> None:
        url = "postgresql://agent:s3cret@127.0.0.1:1/db"
        assert _postgres.redact(url) == "postgresql://agent:***@127.0.0.1:1/db"
        with pytest.raises(CheckpointError, match="cannot connect") as info:
            PostgresCheckpointStore(url, "t")
        assert "s3cret" not in str(info.value)
        assert "s3cret" not in str(info.value.value)

    def test_a_nul_in_the_task_id_is_refused(self, pg_url: str) -> None:
        with pytest.raises(CheckpointError, match="NUL"):
            PostgresCheckpointStore(pg_url, "a\x00b")

    def test_another_schema_version_is_refused(self, pg_url: str) -> None:
        PostgresCheckpointStore(pg_url, "t").close()
        import psycopg

        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE dagctx_meta SET value = '99' WHERE key = 'checkpoint_schema'")
        with pytest.raises(CheckpointError, match="checkpoint schema 99") as info:
            PostgresCheckpointStore(pg_url, "t")
        assert info.value.value == "99"


class TestServerRestart:
    def test_a_store_reconnects_and_confirmed_checkpoints_stay(
        self, postgres_server: PostgresServer, pg_url: str
    ) -> None:
        with PostgresCheckpointStore(pg_url, "t") as store:
            store.save({"n": 1}, {})
            postgres_server.restart()
            with pytest.raises(CheckpointError, match="cannot"):
                store.save({"n": 2}, {})  # the call that finds the connection broken
            assert store.save({"n": 3}, {}).version == 2
            assert [store.get(v).values for v in store.list_versions()] == [{"n": 1}, {"n": 3}]


def test_a_sqlite_only_run_never_imports_the_driver() -> None:
    import subprocess
    import sys

    code = "import sys, dagctx.cli, dagctx.checkpoint; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
