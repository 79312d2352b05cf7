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


def _clone_pair(tmp_path: Path) -> tuple[Path, Path]:
    """One git repository, checked out twice at different paths (two "machines")."""
    import subprocess

    origin = tmp_path / "origin"
    (origin / "src").mkdir(parents=True)
    (origin / "src" / "auth.py").write_text("x = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "add", "."], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "one"], check=True)
    other = tmp_path / "laptop" / "checkout"
    subprocess.run(["git", "clone", "-q", str(origin), str(other)], check=True)
    return origin, other


class TestCoordinationAcrossMachines:
    def test_claims_are_keyed_by_repository_and_relative_path(
        self, pg_url: str, tmp_path: Path
    ) -> None:
        from dagctx.runtime.coordination_pg import PostgresCoordinationStore, repository_identity
        from dagctx.session import Session

        one, two = _clone_pair(tmp_path)
        assert repository_identity(one)[0] == repository_identity(two)[0]
        assert repository_identity(one)[0].startswith("git:")
        with Session(one, store=pg_url) as a, Session(two / "src", store=pg_url) as b:
            a.use_coordination(agent_name="ci")
            b.use_coordination(agent_name="laptop")
            a.work_on("fix", "src/auth.py")
            mine = b.work_on("also fix", "auth.py")
            b.tick()
            assert [c.other_path for c in mine.conflicts] == [(two / "src/auth.py").as_posix()]
            assert {c.files for c in b.work_list()} == {((two / "src/auth.py").as_posix(),)}
        with PostgresCoordinationStore(pg_url, root=one) as store:
            assert store.active() == []  # closing the sessions released both claims

    def test_leases_follow_the_database_clock(self, pg_url: str, tmp_path: Path) -> None:
        import psycopg

        from dagctx.runtime.coordination import Agent, WorkBoard
        from dagctx.runtime.coordination_pg import PostgresCoordinationStore

        store = PostgresCoordinationStore(pg_url, root=tmp_path, repo_id="r")
        board = WorkBoard(store, Agent.new("a"), stale_after=30)
        claim = board.new_claim("x", [(tmp_path / "f").as_posix()], "write")
        board.put(claim)
        with psycopg.connect(pg_url) as conn:
            server_now = conn.execute("SELECT EXTRACT(EPOCH FROM now())").fetchone()[0]
        (live,) = store.active()
        assert 29 < live.expires_at - float(server_now) <= 30.5
        with psycopg.connect(pg_url, autocommit=True) as conn:  # the server's time passes
            conn.execute("UPDATE dagctx_claims SET expires_at = now() - INTERVAL '1 second'")
        assert store.active() == []
        assert store.heartbeat(board.agent.id) == frozenset()  # an expired claim stays dead
        store.close()

    def test_a_conflicting_claim_is_pushed_to_the_waiting_agent(
        self, pg_url: str, tmp_path: Path
    ) -> None:
        import threading
        import time

        from dagctx.runtime.coordination import Agent, WorkBoard, find_conflicts
        from dagctx.runtime.coordination_pg import PostgresCoordinationStore

        stores = [PostgresCoordinationStore(pg_url, root=tmp_path, repo_id="r") for _ in "ab"]
        boards = [
            WorkBoard(s, Agent.new(n), stale_after=30) for s, n in zip(stores, "ab", strict=True)
        ]
        mine = boards[1].new_claim("b", [(tmp_path / "f").as_posix()], "write")
        boards[1].put(mine)
        assert stores[1].wait_for_change(0.05) is False  # listening from now on
        other = PostgresCoordinationStore(pg_url, root=tmp_path, repo_id="another repo")
        threading.Timer(0.2, lambda: other.put(mine, ttl=5)).start()
        assert stores[1].wait_for_change(1.0) is False  # another repository's write
        started = time.monotonic()
        threading.Timer(
            0.1, lambda: boards[0].put(boards[0].new_claim("a", mine.files, "write"))
        ).start()
        assert stores[1].wait_for_change(5.0) is True
        assert time.monotonic() - started < 2.0
        assert [c.agent_id for c in find_conflicts(mine, stores[1].active())] == [
            boards[0].agent.id
        ]
        for store in [*stores, other]:
            store.close()


def test_session_store_must_be_a_postgresql_url(tmp_path: Path) -> None:
    from dagctx.errors import ArgumentError
    from dagctx.session import Session

    with pytest.raises(ArgumentError, match="postgresql://") as info:
        Session(tmp_path, store="sqlite:///x.db")
    assert info.value.value == "sqlite:///x.db"


class TestAdvisoryLocks:
    def test_a_lock_is_keyed_by_repository_and_relative_path(
        self, pg_url: str, tmp_path: Path
    ) -> None:
        from dagctx.session import Session

        one, two = _clone_pair(tmp_path)
        with Session(one, store=pg_url) as a, Session(two / "src", store=pg_url) as b:
            held = a.wait(a.lock("src/auth.py"), timeout=10)
            assert held.status == "acquired" and held.service == "postgresql"
            assert "advisory lock" in held.render_state(held.state.ALL)
            assert b.wait(b.lock("auth.py", timeout=0.2), timeout=10).status == "timeout"
            assert b.wait(b.lock("db.py", timeout=0.2), timeout=10).status == "acquired"

    def test_a_broken_connection_shows_the_lock_lost_and_the_next_holder_gets_it(
        self, postgres_server: PostgresServer, pg_url: str, tmp_path: Path
    ) -> None:
        from dagctx.session import Session

        with Session(tmp_path, store=pg_url) as a:
            held = a.wait(a.lock("x"), timeout=10)
            assert held.status == "acquired"
            postgres_server.restart()  # every connection drops; the server forgets the lock
            a.tick()
            assert held.status == "lost"
            assert "connection to the lock service" in (held.error or "")
            assert "another process may hold it now" in held.render_state(held.state.SUMMARY)
            with Session(tmp_path, store=pg_url) as b:
                assert b.wait(b.lock("x", timeout=5), timeout=10).status == "acquired"
                again = a.wait(a.lock("x", timeout=0.2), timeout=10)
                assert again.status == "timeout"  # never two holders

    def test_an_unreachable_server_is_an_error_status(self, tmp_path: Path) -> None:
        from dagctx.session import Session

        with Session(tmp_path, store="postgresql://nobody:pw@127.0.0.1:1/none") as s:
            lock = s.wait(s.lock("x", timeout=1), timeout=20)
            assert lock.status == "error" and "cannot reach the lock service" in (lock.error or "")
            assert "pw" not in (lock.error or "")


class TestSessionStore:
    def test_save_and_load_round_trip(self, pg_url: str, project_tree: Path) -> None:
        from dagctx.session import Session

        with Session(project_tree, store=pg_url) as s:
            s.text("src/auth.py", priority=90)
            s.artifact("remember the login flow", title="notes")
            s.tick()
            where = s.save()
            assert isinstance(where, str) and where.endswith(f"#dir:{project_tree.name}:.")
            before = s.tick().projection.text
        with Session.load(pg_url, root=project_tree) as loaded:
            assert loaded.store == pg_url
            assert loaded.tick().projection.text == before
            loaded.save()  # it loaded the row, so it may replace it

    def test_the_second_writer_gets_a_clear_error_and_the_first_goes_on(
        self, pg_url: str, project_tree: Path
    ) -> None:
        from dagctx.errors import SessionConflictError
        from dagctx.session import Session

        with Session(project_tree, store=pg_url) as first:
            first.save()
            with Session.load(pg_url, root=project_tree) as second:
                first.artifact("first moves on")
                first.save()
                second.artifact("second would overwrite it")
                with pytest.raises(SessionConflictError, match="saved by another writer"):
                    second.save()
            first.save()
            stranger = Session(project_tree, store=pg_url)  # it never loaded the row
            with stranger, pytest.raises(SessionConflictError, match="never loaded it"):
                stranger.save()
        with Session.load(pg_url, root=project_tree) as loaded:
            texts = [n.render_state(n.state.ALL) for n in loaded.nodes()]
            assert any("first moves on" in t for t in texts)
            assert not any("second would" in t for t in texts)

    def test_a_name_on_the_url_and_the_environment_default(
        self, pg_url: str, project_tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from dagctx.session import Session

        with Session(project_tree) as s:
            assert s.save(f"{pg_url}#mine").endswith("#mine")
        monkeypatch.setenv("DAGCTX_STORE", pg_url)
        with Session.load(f"{pg_url}#mine", root=project_tree) as loaded:
            assert loaded.store == pg_url
        with pytest.raises(CheckpointError, match="no saved session"):
            Session.load(root=project_tree)  # the default name was never saved
        assert not (project_tree / ".dagctx" / "session.db").exists()


@pytest.fixture
def project_tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text("def login():\n    return True\n")
    return tmp_path


def test_watch_once_with_a_store_saves_there_and_resumes(pg_url: str, project_tree: Path) -> None:
    import subprocess
    import sys

    def watch(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "dagctx.cli", "watch", str(project_tree), "--once", *extra]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    first = watch("--store", pg_url)
    assert first.returncode == 0, first.stderr
    assert not (project_tree / ".dagctx" / "session.db").exists()
    second = watch("--store", pg_url)
    assert second.returncode == 0, second.stderr
    assert "resuming after turn 1 from postgresql://" in second.stderr
    bad = watch("--store", "sqlite:///x.db")
    assert bad.returncode == 2 and "--store must be a postgresql:// URL" in bad.stderr
