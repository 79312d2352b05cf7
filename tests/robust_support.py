"""Pictures of state for the robustness tests (not a test module).

A picture is plain data (lists, dicts, strings, ints) of everything an operation could
change: comparing the picture taken before a refused operation with the one taken after
proves the operation left the state as it was.

- :func:`session_picture`: nodes (id, type, version, state, mode, priority, tags), ordered
  children, root order, structure checkpoints, trace count, budget, turn, the task
  context and the projection text;
- :func:`context_picture`: a task context's id, config, local and visible state, token
  usage, children and checkpoints;
- :func:`sqlite_picture`: every row of a SQLite file (its bytes when it is not one);
- :func:`tree_picture`: every entry under a directory with its kind and size.

:func:`examples` is the example count of a property test: its default in the suite, or
``DAGCTX_FUZZ_EXAMPLES`` to run it as a fuzzer, locally, for a few minutes.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from dagctx.context import Context
from dagctx.session import Session


def examples(default: int) -> int:
    """``DAGCTX_FUZZ_EXAMPLES`` if set (a long local fuzzing run), else ``default``."""
    return int(os.environ.get("DAGCTX_FUZZ_EXAMPLES", default))


def session_picture(s: Session, *, with_projection: bool = True) -> dict[str, Any]:
    """Everything a session call could change, as plain data."""
    g = s.graph
    checkpoints = {}
    for name in g.checkpoints():
        saved = g.get_checkpoint(name)
        checkpoints[name] = (
            {p: list(kids) for p, kids in saved.children.items()},
            list(saved.roots),
            {n: state.name for n, state in saved.states.items()},
            sorted(saved.nodes),
        )
    picture: dict[str, Any] = {
        "nodes": [
            (n.id, type(n).__name__, n.version, n.state.name, n.mode, n.priority, sorted(n.tags))
            for n in g
        ],
        "children": {n.id: [c.id for c in g.children(n)] for n in g},
        "roots": [n.id for n in g.roots()],
        "checkpoints": checkpoints,
        "traces": len(g.traces),
        "budget": s.budget,
        "turn": s.turn,
        "context": context_picture(s.context),
    }
    if with_projection:
        picture["projection"] = s.project().text
    return picture


def context_picture(ctx: Context) -> dict[str, Any]:
    """A task context as plain data (values that are objects show as their repr)."""
    store = ctx.checkpoints
    return {
        "task_id": ctx.task_id,
        "config": ctx.config.model_dump(mode="json"),
        "local": {k: _plain(v) for k, v in ctx.state.local_dict().items()},
        "visible": {k: _plain(v) for k, v in ctx.state.to_dict().items()},
        "usage": dict(ctx.token_usage),
        "children": [child.task_id for child in ctx.children],
        "checkpoints": [_plain(store.get(v).to_dict()) for v in store.list_versions()],
    }


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return f"<{type(value).__name__} at {id(value):#x}>"


def sqlite_picture(path: Path) -> Any:
    """Every row of every table of a SQLite file, or the file's bytes if it cannot be read
    as SQLite, or None if there is no file."""
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return list(conn.iterdump())
        finally:
            conn.close()
    except sqlite3.Error:
        return path.read_bytes()


def tree_picture(root: Path) -> list[tuple[str, str, int]]:
    """Every entry under ``root`` (symlinks not followed): (relative path, kind, size)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames) + sorted(filenames):
            path = Path(dirpath) / name
            info = path.lstat()
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            size = 0 if kind == "dir" else info.st_size
            out.append((path.relative_to(root).as_posix(), kind, size))
    return sorted(out)
