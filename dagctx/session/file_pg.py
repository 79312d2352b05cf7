"""The session store on PostgreSQL: a whole saved session in one row.

The sibling of :mod:`dagctx.session.file` (the SQLite session file) for agents on
several machines: :func:`write_session_pg` and :func:`read_session_pg` move a
:class:`~dagctx.session.file.SessionData` to and from table ``dagctx_sessions``, one row
per session *name* (by default the repository id and the repository-relative session
root, so every checkout of one repository names its session alike; a ``#name`` fragment
on the URL chooses another).

- **One transaction per save**: the row is replaced whole, as strict JSON
  (:mod:`dagctx._json`), committed or not at all. The nodes saved as columns (text
  nodes with a snapshot, groups) are under ``"columns"``, as in the session file (each
  column a list; a text node's stat key one int, three before); a row saved before
  them has none, and its nodes are all under ``"nodes"``.
- **Compare-and-swap**: each save records a new random ``generation``. A save names the
  generation its session last read or wrote (None: it never did); the row is locked
  (``SELECT ... FOR UPDATE``) and the save goes on only if the row is missing or holds
  that very generation. Otherwise another writer (any process, any machine) saved
  since, and the loser gets :class:`~dagctx.errors.SessionConflictError` and nothing is
  written: stricter than the SQLite file, where a session that never read the file may
  replace it when no live process holds its writer lock. Two first saves racing on a
  missing row are told apart by the primary key: one of them conflicts.

Must not import :class:`~dagctx.session.Session` (:mod:`dagctx.session.store` maps
sessions to the data).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from dagctx import _postgres
from dagctx._json import decode_json, dump_json
from dagctx.errors import CheckpointError, SessionConflictError
from dagctx.session.file import SessionData, TraceRows, read_edges, read_traces, saved_ids

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 1
_TABLES = """
CREATE TABLE IF NOT EXISTS dagctx_sessions (
    name TEXT PRIMARY KEY,
    generation TEXT NOT NULL,
    saved_at TIMESTAMPTZ NOT NULL,
    data TEXT NOT NULL
)"""


def split_name(url: str) -> tuple[str, str | None]:
    """``url`` without its ``#fragment``, and the fragment (the session name) or None."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(fragment="")), parts.fragment or None


def _prepare(conn: psycopg.Connection[Any]) -> None:
    where = _postgres.redact(conn.info.dsn)
    _postgres.install(conn, "session", SCHEMA_VERSION, _TABLES, CheckpointError, where)


def _link(url: str) -> _postgres.Link:
    return _postgres.Link(url, CheckpointError, noun="session store", prepare=_prepare)


def _encode(data: SessionData) -> str:
    document = {
        "info": data.info,
        "nodes": [list(row) for row in data.nodes],
        "columns": data.columns,
        "edges": [list(row) for row in data.edges],
        "roots": data.roots,
        "checkpoints": [list(row) for row in data.checkpoints],
        "trace_start": data.traces.start,
        "traces": [
            [t.node_id, t.old_version, t.new_version, t.description, t.at, t.derived]
            for t in data.traces.traces
        ],
        "context_checkpoints": data.context_checkpoints,
    }
    try:
        return dump_json(document)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"the session cannot be saved as JSON: {exc}", value=exc) from exc


def write_session_pg(url: str, name: str, data: SessionData, expected: str | None) -> str:
    """Replace the session ``name`` at ``url`` with ``data`` in one transaction if it is
    missing or still holds generation ``expected``; return the new generation.

    Raises:
        SessionConflictError: another writer saved ``name`` since (nothing is written).
        CheckpointError: the data cannot be stored as JSON, or the database failed.
    """
    document = _encode(data)
    generation = uuid.uuid4().hex
    link = _link(url)
    where = f"session {name!r} in {link.where}"
    try:
        with link.transaction(f"save {where}") as conn:
            row = conn.execute(
                "SELECT generation FROM dagctx_sessions WHERE name = %s FOR UPDATE", (name,)
            ).fetchone()
            if row is None:
                done = conn.execute(
                    "INSERT INTO dagctx_sessions VALUES (%s, %s, now(), %s)"
                    " ON CONFLICT (name) DO NOTHING RETURNING 1",
                    (name, generation, document),
                ).fetchone()
            elif row[0] == expected:
                done = conn.execute(
                    "UPDATE dagctx_sessions SET generation = %s, saved_at = now(), data = %s"
                    " WHERE name = %s RETURNING 1",
                    (generation, document, name),
                ).fetchone()
            else:
                done = None
            if done is None:
                seen = "never loaded it" if expected is None else "last read or wrote it"
                raise SessionConflictError(
                    f"{where} was saved by another writer since this session {seen};"
                    " not overwriting it: load it to continue from it, or save this"
                    " session under another name (#name)",
                    value=name,
                )
    finally:
        link.close()
    return generation


def read_session_pg(url: str, name: str) -> SessionData:
    """Read the session ``name`` saved at ``url``.

    Raises:
        CheckpointError: no such session, the database failed, or the row is malformed.
    """
    link = _link(url)
    where = f"session {name!r} in {link.where}"
    try:
        with link.transaction(f"read {where}") as conn:
            row = conn.execute(
                "SELECT generation, data FROM dagctx_sessions WHERE name = %s", (name,)
            ).fetchone()
    finally:
        link.close()
    if row is None:
        raise CheckpointError(f"no saved {where}", value=name)
    try:
        doc = decode_json(row[1])
        nodes = [(ref, bool(g), seq, run, node) for ref, g, seq, run, node in doc["nodes"]]
        columns = doc.get("columns") or {}
        ids = saved_ids(nodes, columns if isinstance(columns, dict) else {})
        traces = TraceRows("", doc["trace_start"], read_traces(doc["traces"], ids))
        return SessionData(
            info=doc["info"],
            nodes=nodes,
            edges=read_edges(doc["edges"], ids),
            roots=doc["roots"],
            checkpoints=[(n, cp) for n, cp in doc["checkpoints"]],
            traces=traces,
            context_checkpoints=doc["context_checkpoints"],
            generation=str(row[0]),
            columns=dict(doc.get("columns", {})),  # none in a row saved before them
            counts_intact=True,  # the database's row is trusted, as its rows are
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{where} is malformed: {exc!r}", value=name) from exc


__all__ = ["read_session_pg", "split_name", "write_session_pg"]
