"""The session file: one SQLite file holding a whole saved session.

:func:`write_session_file` replaces the session a file holds with a :class:`SessionData`
in one transaction; :func:`read_session_file` reads it back. What the rows mean (and how a
:class:`~dagctx.session.Session` maps to them) is :mod:`dagctx.session.store`'s business;
this module owns the layout, the schema version and the atomicity:

- ``dagctx_meta`` (shared with :class:`~dagctx.checkpoint.SQLiteCheckpointStore`, which
  may use the same file; see :mod:`dagctx._sqlite`) holds ``session_schema``;
  ``session_info`` holds JSON values by
  key; ``session_nodes`` one row per node (``to_dict`` JSON, ``in_graph``, ``seq``,
  ``last_run``); ``session_edges`` the edges with their position among the parent's
  children and among the child's parents; ``session_roots`` the root order;
  ``session_checkpoints`` the structure checkpoints; ``session_traces`` the traces the
  graph's trace log kept, by their absolute position in it; ``session_trace_span`` (one
  row) which trace log they come from (its ``log_id``) and their span of positions;
  ``session_context_checkpoints`` the root task context's checkpoints.
- A write serializes everything first, then runs one ``BEGIN IMMEDIATE`` transaction
  (WAL journal, ``synchronous=FULL``) that replaces every session row: after a kill at
  any instant the file holds the previous session or the new one, whole. A write that
  raises leaves the file as it was; a write never touches a SQLite file of another
  application or of another session schema.
- Traces are written incrementally: when the span row says the file holds traces of the
  same trace log, starting no later than the log's kept ones and ending no later than the
  log's end (and the rows agree with it), the write only deletes the rows the log dropped
  and appends the new ones. Any other file (a new one, one written by another session
  or by a loaded copy of this one, one replaced meanwhile by something else) gets all
  the kept traces. Either way it is the same single transaction.
- A read is one read transaction (a consistent snapshot while another process writes)
  after the schema version and ``PRAGMA quick_check``; it never changes the saved data.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagctx import _sqlite
from dagctx._json import decode_json, dump_json
from dagctx.errors import CheckpointError
from dagctx.nodes.base import Trace

SESSION_SCHEMA = 2
"""Version of the session file layout written by :meth:`Session.save`."""

_TABLES = """
CREATE TABLE IF NOT EXISTS session_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS session_nodes (
    ref INTEGER PRIMARY KEY, in_graph INTEGER NOT NULL, seq INTEGER NOT NULL,
    last_run REAL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_edges (
    parent TEXT NOT NULL, position INTEGER NOT NULL, child TEXT NOT NULL,
    parent_rank INTEGER NOT NULL, PRIMARY KEY (parent, position)
);
CREATE TABLE IF NOT EXISTS session_roots (position INTEGER PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS session_checkpoints (
    position INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_traces (
    position INTEGER PRIMARY KEY, node_id TEXT NOT NULL, old_version INTEGER NOT NULL,
    new_version INTEGER NOT NULL, description TEXT NOT NULL, at REAL NOT NULL,
    derived INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_trace_span (
    id INTEGER PRIMARY KEY CHECK (id = 0), log_id TEXT NOT NULL,
    first_position INTEGER NOT NULL, next_position INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_context_checkpoints (
    version INTEGER PRIMARY KEY, data TEXT NOT NULL
);
"""
_SESSION_TABLES = (
    "session_info",
    "session_nodes",
    "session_edges",
    "session_roots",
    "session_checkpoints",
    "session_context_checkpoints",
)  # rewritten whole at each save (traces are not: see the module docstring)


@dataclass(slots=True)
class TraceRows:
    """The traces a session file holds: ``traces[0]`` is at position ``start`` of the
    trace log named ``log_id`` (empty when read from a file)."""

    log_id: str
    start: int
    traces: list[Trace]

    @property
    def end(self) -> int:
        """The position after the last trace."""
        return self.start + len(self.traces)


@dataclass(slots=True)
class SessionData:
    """The rows of a session file, decoded from (or ready to encode into) JSON."""

    info: dict[str, Any]
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]]
    edges: list[tuple[str, int, str, int]]  # parent, child position, child, parent rank
    roots: list[str]
    checkpoints: list[tuple[str, dict[str, Any]]]
    traces: TraceRows
    context_checkpoints: list[dict[str, Any]]


_LAYOUT = _sqlite.Layout(
    component="session",
    version=SESSION_SCHEMA,
    tables=_TABLES,
    noun="session file",
    elsewhere="save the session to another path",
    error=CheckpointError,
)


@contextmanager
def _open(path: Path, action: str, *, create: bool) -> Iterator[sqlite3.Connection]:
    where = repr(str(path))
    try:
        missing = not create and not path.is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise CheckpointError(f"cannot {action} session file {where}: {exc}", value=path) from exc
    if missing:
        raise CheckpointError(f"no saved session at {where}", value=path)
    conn = _sqlite.connect(path, _LAYOUT, timeout=30.0, create=create, action=action)
    try:
        yield conn
    # UnicodeDecodeError: bad text bytes in a damaged file; OverflowError: an int past
    # SQLite's 64 bits (only a tampered session counts that far).
    except (sqlite3.Error, UnicodeDecodeError, OverflowError) as exc:
        raise CheckpointError(f"cannot {action} session file {where}: {exc}", value=path) from exc
    finally:
        conn.close()


def write_session_file(path: Path, data: SessionData) -> None:
    """Replace the session saved in ``path`` with ``data`` in one transaction.

    Raises:
        CheckpointError: the file cannot be written, is not SQLite, or holds another
            session schema (nothing is written then).
    """
    rows = _encode(data)
    where = repr(str(path))
    with _open(path, "write", create=True) as conn:
        _sqlite.check(conn, _LAYOUT, where)  # before the journal set-up, which writes
        _sqlite.make_durable(conn)
        with _sqlite.transaction(conn):
            _sqlite.check(conn, _LAYOUT, where)  # again under the write lock
            _sqlite.install(conn, _LAYOUT)
            for table in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table}")
            _write_traces(conn, data.traces)
            for table, table_rows in rows.items():
                if table_rows:
                    marks = ", ".join("?" * len(table_rows[0]))
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", table_rows)


def _encode(data: SessionData) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "session_info": [(key, _json(value, key)) for key, value in data.info.items()],
        "session_nodes": [
            (ref, int(in_graph), seq, last_run, _json(node, f"node {node.get('id')!r}"))
            for ref, in_graph, seq, last_run, node in data.nodes
        ],
        "session_edges": data.edges,
        "session_roots": list(enumerate(data.roots)),
        "session_checkpoints": [
            (i, name, _json(cp, f"checkpoint {name!r}"))
            for i, (name, cp) in enumerate(data.checkpoints)
        ],
        "session_context_checkpoints": [
            (cp["version"], _json(cp, "context checkpoint")) for cp in data.context_checkpoints
        ],
    }


def _write_traces(conn: sqlite3.Connection, rows: TraceRows) -> None:
    """Make the file's traces those of ``rows``: append and delete what changed when the
    file holds this trace log's traces, else replace them all (module docstring)."""
    span = conn.execute(
        "SELECT log_id, first_position, next_position FROM session_trace_span"
    ).fetchone()
    written = rows.start  # traces before this position are in the file (appending)
    if span is not None and span[0] == rows.log_id and span[1] <= rows.start:
        first, after = span[1], span[2]
        count, low, high = conn.execute(
            "SELECT COUNT(*), MIN(position), MAX(position) FROM session_traces"
        ).fetchone()
        agrees = count == after - first and (not count or (low, high) == (first, after - 1))
        appending = agrees and after <= rows.end
    else:
        appending = False
    if appending:
        conn.execute("DELETE FROM session_traces WHERE position < ?", (rows.start,))
        written = max(after, rows.start)
    else:
        conn.execute("DELETE FROM session_traces")
    conn.executemany(
        "INSERT INTO session_traces VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (position, t.node_id, t.old_version, t.new_version, t.description, t.at, int(t.derived))
            for position, t in enumerate(rows.traces[written - rows.start :], written)
        ),
    )
    conn.execute(
        "INSERT OR REPLACE INTO session_trace_span VALUES (0, ?, ?, ?)",
        (rows.log_id, rows.start, rows.end),
    )


def _json(value: Any, what: str) -> str:
    try:
        return dump_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{what} cannot be saved as JSON: {exc}", value=value) from exc


def read_session_file(path: Path) -> SessionData:
    """Read every row of the session saved in ``path`` (one consistent snapshot).

    Raises:
        CheckpointError: no such file, not SQLite, truncated or corrupt, not a session
            file, another session schema, or a row that is not valid JSON.
    """
    where = repr(str(path))
    with _open(path, "read", create=False) as conn:
        conn.execute("BEGIN")  # one snapshot, even while another process saves
        try:
            found = _sqlite.stored_version(conn, _LAYOUT)
            if found is None:
                raise CheckpointError(
                    f"{where} is not a dagctx session file (no session schema)", value=path
                )
            if found != str(SESSION_SCHEMA):
                raise _sqlite.schema_mismatch(_LAYOUT, where, found)
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise CheckpointError(f"{where} is corrupt: {check[0][0]}", value=path)
            return _decode(conn, where)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")


def _decode(conn: sqlite3.Connection, where: str) -> SessionData:
    def load(text: Any, what: str) -> Any:
        try:
            return decode_json(text)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(
                f"{what} in {where} is not valid JSON: {exc}", value=text
            ) from exc

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return conn.execute(sql).fetchall()

    info = {
        key: load(value, f"session_info {key!r}")
        for key, value in rows("SELECT key, value FROM session_info")
    }
    nodes = [
        (ref, bool(in_graph), seq, last_run, load(data, f"node row {ref}"))
        for ref, in_graph, seq, last_run, data in rows(
            "SELECT ref, in_graph, seq, last_run, data FROM session_nodes ORDER BY ref"
        )
    ]
    trace_rows = rows(
        "SELECT position, node_id, old_version, new_version, description, at, derived"
        " FROM session_traces ORDER BY position"
    )
    span = rows("SELECT first_position, next_position FROM session_trace_span")
    first, after = span[0] if span else (0, 0)
    spans = isinstance(first, int) and isinstance(after, int) and after - first == len(trace_rows)
    if not spans or any(row[0] != first + i for i, row in enumerate(trace_rows)):
        raise CheckpointError(
            f"{where} has traces out of their span {first!r}..{after!r}", value=(first, after)
        )
    traces = TraceRows(
        "",
        first,
        [
            Trace(node_id, old, new, description, at, bool(derived))
            for _, node_id, old, new, description, at, derived in trace_rows
        ],
    )
    return SessionData(
        info=info,
        nodes=nodes,
        edges=rows(
            "SELECT parent, position, child, parent_rank FROM session_edges"
            " ORDER BY parent, position"
        ),
        roots=[r[0] for r in rows("SELECT node_id FROM session_roots ORDER BY position")],
        checkpoints=[
            (name, load(data, f"checkpoint {name!r}"))
            for name, data in rows("SELECT name, data FROM session_checkpoints ORDER BY position")
        ],
        traces=traces,
        context_checkpoints=[
            load(data, f"context checkpoint {version}")
            for version, data in rows(
                "SELECT version, data FROM session_context_checkpoints ORDER BY version"
            )
        ],
    )


__all__ = ["SESSION_SCHEMA", "SessionData", "TraceRows", "read_session_file", "write_session_file"]
