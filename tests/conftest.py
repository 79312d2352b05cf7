"""Shared fixtures: a temporary project tree and sessions over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
