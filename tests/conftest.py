"""Shared fixtures: a temporary project tree and sessions over it, and a throwaway
PostgreSQL server (one per test session) with a fresh schema per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pg_server import PostgresServer

from dagctx.session import Session


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small source tree: two Python files, a README and a nested package."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text(
        "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n"
    )
    (tmp_path / "src" / "db.py").write_text("class Store:\n    pass\n")
    (tmp_path / "README.md").write_text("# Demo\n\nA demo project.\n")
    return tmp_path


@pytest.fixture
def session(project: Path) -> Iterator[Session]:
    with Session(project, budget=4000) as s:
        yield s


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the whole test session (see pg_server.py)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> str:
    """A URL of the test server whose tables live in a fresh schema of this test alone."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[call-overload]
    return f"{postgres_server.url}?options=-csearch_path%3D{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def any_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on each backend: PostgreSQL through ``DAGCTX_STORE`` (which sessions
    made in the test, and the processes it starts, pick up), SQLite by default. Use it
    with ``@pytest.mark.usefixtures("any_backend")``, so it is set before the sessions."""
    if request.param == "postgresql":
        monkeypatch.setenv("DAGCTX_STORE", request.getfixturevalue("pg_url"))
    else:
        monkeypatch.delenv("DAGCTX_STORE", raising=False)
    return str(request.param)
