"""The README's Python blocks run, in order, in one namespace, in an empty directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_a_tour() -> None:
    assert len(python_blocks()) >= 5


def test_readme_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for number, block in enumerate(python_blocks(), 1):
        try:
            exec(compile(block, f"README.md block {number}", "exec"), namespace)
        except Exception as exc:  # name the block that broke
            raise AssertionError(f"README block {number} failed: {exc!r}\n{block}") from exc
    session = namespace.get("s")
    close = getattr(session, "close", None)
    if close is not None:
        close()
