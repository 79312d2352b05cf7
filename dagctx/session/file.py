"""The session file: one SQLite file holding a whole saved session.

:func:`write_session_file` replaces the session a file holds with a :class:`SessionData`
in one transaction; :func:`read_session_file` reads it back. What the rows mean (and how a
:class:`~dagctx.session.Session` maps to them) is :mod:`dagctx.session.store`'s business;
this module owns the layout, the schema version and the atomicity:

- ``dagctx_meta`` (shared with :class:`~dagctx.checkpoint.SQLiteCheckpointStore`, which
  may use the same file; see :mod:`dagctx._sqlite`) holds ``session_schema``;
  ``session_info`` holds JSON values by key; ``session_nodes`` one row per node
  (``to_dict`` JSON, ``in_graph``, ``seq``, ``last_run``), except the nodes kept in
  ``session_columns``: one row per node type whose nodes are saved as columns
  (:meth:`~dagctx.nodes.base.Node.to_columns`: text nodes with a snapshot and, since
  schema 5, groups), a JSON
  object of equal-length lists, the type's fields beside ``ref``, ``in_graph``,
  ``seq``, ``last_run`` and ``tokens``; ``session_edges`` the edges with their
  position among the parent's children and among the child's parents;
  ``session_roots`` the root order; ``session_checkpoints`` the structure checkpoints;
  ``session_projection`` (at most one row) the projection a resume takes back while
  nothing changed (:mod:`dagctx.session.resume`): its head as text (a digest, then
  JSON: :mod:`dagctx.projection.saved`) and its account as a blob, both read back as
  bytes, as written (their checks are the reader's: a damaged one is not an error here);
  ``session_file_terms`` (at most one row) what the ranking read of the text nodes'
  content (:mod:`dagctx.projection.file_terms`), JSON read back as text (the block of
  text nodes names its digest; a file written before it has none);
  ``session_traces`` the traces the graph's trace log kept, by their absolute position
  in it; ``session_trace_span`` (one row) which trace log they come from (its
  ``log_id``) and their span of positions; ``session_context_checkpoints`` the root
  task context's checkpoints.
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
- **Compact columns** (schema 5): in ``session_columns``, a column holding few distinct
  values is saved as ``{"values": [...], "at": [...]}`` (each distinct value once, then
  each node's index into them) or, holding one, as ``{"repeat": value, "count": n}``
  (:func:`compact_column`); a read expands them back into lists
  (:func:`expand_column`), so decoding a block of 10,000 text nodes parses each
  repeated root, media type, frequency or time once, not once per node.
- **Schemas 2, 3 and 4** (2: before ``session_columns``, every node one row; 3: before
  ``session_projection``; 4: every column a list, groups one row each) are read as they
  are, and the next write upgrades the file to schema 5 (``upgrades`` of
  :class:`dagctx._sqlite.Layout`).
- **One writer at a time, never overwritten silently**: a write takes an exclusive OS
  lock (``flock``) on the file for the writing session, held until the session releases
  it (:func:`release_session_file`, when it closes); the sessions of one process share
  it. A write while another process holds it is refused with
  :class:`~dagctx.errors.SessionConflictError`, so a second live writer (two ``dagctx
  watch``, a watcher and a library ``Session``) is told, and the first one's saves go
  on. A lock dies with its process, so a killed writer never blocks the next one.
  Each write also records a new ``generation`` in ``session_info``: a random value
  prefixed with a token of the writing process. A session that read or wrote the file
  names the generation it saw, and a file that holds another one *written by another
  process* (which saved meanwhile, even if it has exited since) is refused the same
  way; within one process the program orders its own sessions' saves, and a later save
  replaces an earlier one. A session that never read or wrote the file replaces what it
  holds, as a save always has, when no live process holds the lock.
- **Damage or trouble**: a failure that is not the file's fault (the disk is full, an I/O
  error, a lock held past the timeout; see :func:`dagctx._sqlite.is_damage`) raises
  :class:`~dagctx.errors.SessionFileUnavailableError`, so that a caller never mistakes a
  good file for a bad one. A write that fails on a file it created removes it again
  (with its journal files): a failed first save leaves no empty file behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagctx import _sqlite
from dagctx._json import decode_json, dump_json
from dagctx.errors import CheckpointError, SessionConflictError, SessionFileUnavailableError
from dagctx.nodes.base import Trace

SESSION_SCHEMA = 5
"""Version of the session file layout written by :meth:`Session.save`."""
_UPGRADES = frozenset({2, 3, 4})  # earlier layouts read as they are and upgraded by a write

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
CREATE TABLE IF NOT EXISTS session_columns (type TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS session_projection (
    id INTEGER PRIMARY KEY CHECK (id = 0), head TEXT NOT NULL, account BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS session_file_terms (
    id INTEGER PRIMARY KEY CHECK (id = 0), data TEXT NOT NULL
);
"""
_SESSION_TABLES = (
    "session_info",
    "session_nodes",
    "session_columns",
    "session_edges",
    "session_roots",
    "session_checkpoints",
    "session_context_checkpoints",
    "session_projection",
    "session_file_terms",
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
    """The rows of a session file, decoded from (or ready to encode into) JSON.

    ``generation`` is the file's generation when read (``""`` for a file written before
    generations); it is not part of what a write writes.
    """

    info: dict[str, Any]
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]]
    edges: list[tuple[str, int, str, int]]  # parent, child position, child, parent rank
    roots: list[str]
    checkpoints: list[tuple[str, dict[str, Any]]]
    traces: TraceRows
    context_checkpoints: list[dict[str, Any]]
    generation: str = ""
    #: Node type name → its nodes saved as columns (each column a list, one per node).
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The saved projection's head and account as written (None: none saved), read
    #: without any check (:mod:`dagctx.session.resume` checks them).
    projection: tuple[Any, Any] | None = None
    #: Whether the node rows and column blocks read are the ones written with their token
    #: counts (:func:`nodes_digest`): only then does a load take the counts back.
    counts_intact: bool = False
    #: What the ranking read of the text nodes' content as JSON text (None: nothing
    #: saved), written and read as it is (:mod:`dagctx.projection.file_terms` checks it).
    file_terms: str | None = None


_TIMEOUT = 30.0  # seconds a save or load waits for another process's lock
_LAYOUT = _sqlite.Layout(
    component="session",
    version=SESSION_SCHEMA,
    tables=_TABLES,
    noun="session file",
    elsewhere="save the session to another path",
    error=CheckpointError,
    upgrades=_UPGRADES,
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
    try:
        conn = _sqlite.connect(path, _LAYOUT, timeout=_TIMEOUT, create=create, action=action)
    except CheckpointError as exc:
        cause = exc.__cause__
        # A file that is there but cannot be opened now (no descriptor left, no memory,
        # no permission) is not damaged.
        if isinstance(cause, sqlite3.Error) and not _sqlite.is_damage(cause):
            raise SessionFileUnavailableError(
                f"{exc}; the file was left as it was", value=path
            ) from cause
        raise
    try:
        yield conn
    # UnicodeDecodeError: bad text bytes in a damaged file; OverflowError: an int past
    # SQLite's 64 bits (only a tampered session counts that far).
    except sqlite3.Error as exc:
        message = f"cannot {action} session file {where}: {exc}"
        if _sqlite.is_damage(exc):
            raise CheckpointError(message, value=path) from exc
        raise SessionFileUnavailableError(
            f"{message}; the file was left as it was", value=path
        ) from exc
    except (UnicodeDecodeError, OverflowError) as exc:
        raise CheckpointError(f"cannot {action} session file {where}: {exc}", value=path) from exc
    finally:
        conn.close()


def write_session_file(
    path: Path, data: SessionData, expected: str | None, *, owner: object
) -> str:
    """Replace the session saved in ``path`` with ``data`` in one transaction, taking the
    file's writer lock for ``owner`` (a session); return the new generation.

    ``expected`` is the generation ``owner`` last read or wrote there (None: it never
    did); the file must hold no session, or one of that generation (module docstring).

    Raises:
        SessionConflictError: another process holds the writer lock, or the file holds a
            session of another generation than ``expected`` (nothing is written).
        SessionFileUnavailableError: the disk is full, an I/O error, ... (the file is as
            it was; a file this call created is removed).
        CheckpointError: the file cannot be written, is not SQLite, or holds another
            session schema (nothing is written then).
    """
    rows = _encode(data)
    generation = f"{_process_token}.{uuid.uuid4().hex}"
    rows["session_info"].append(("generation", _json(generation, "generation")))
    try:
        existed = path.exists()
    except (OSError, ValueError):  # _open reports it
        existed = True
    try:
        _write(path, rows, data.traces, expected, owner)
    except BaseException:
        if not existed:
            _remove_if_empty(path)
        raise
    return generation


def _remove_if_empty(path: Path) -> None:
    """Remove a database file (and its journal files) that holds nothing committed: an
    empty main file and an empty or missing write-ahead log. A file another process
    created and saved to meanwhile is never empty, so it stays."""
    for name in (path.name, f"{path.name}-wal"):
        try:
            if path.with_name(name).stat().st_size:
                return
        except FileNotFoundError:
            continue
        except (OSError, ValueError):  # ValueError: a NUL byte (no file was made)
            return
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        with suppress(OSError):
            os.unlink(path.with_name(name))


def _write(
    path: Path,
    rows: dict[str, list[tuple[Any, ...]]],
    traces: TraceRows,
    expected: str | None,
    owner: object,
) -> None:
    where = repr(str(path))
    with _open(path, "write", create=True) as conn:
        _hold(path, owner)
        _sqlite.check(conn, _LAYOUT, where)  # before the journal set-up, which writes
        _sqlite.make_durable(conn, _TIMEOUT)
        with _sqlite.transaction(conn):
            _sqlite.check(conn, _LAYOUT, where)  # again under the write lock
            _sqlite.install(conn, _LAYOUT)
            found = _generation(conn)
            if (
                found is not None
                and expected is not None
                and found != expected
                and not found.startswith(f"{_process_token}.")
            ):
                raise SessionConflictError(
                    f"session file {where} was saved by another process since this session"
                    " last read or wrote it;"
                    " not overwriting it: load it to continue from it, or save this"
                    " session to another path",
                    value=path,
                )
            for table in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table}")
            _write_traces(conn, traces)
            for table, table_rows in rows.items():
                if table_rows:
                    marks = ", ".join("?" * len(table_rows[0]))
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", table_rows)


# -- the writer lock ----------------------------------------------------------------------


@dataclass(slots=True)
class _Hold:
    """This process's writer lock on one session file: the locked descriptor, the file's
    identity, and the sessions holding it."""

    fd: int
    identity: tuple[int, int]
    owners: set[int]


_process_token = uuid.uuid4().hex


def _after_fork() -> None:
    """A forked child is another writer: a token of its own, and none of the parent's
    locks (closing its copies of the descriptors leaves them with the parent)."""
    global _process_token, _holds_lock
    _process_token = uuid.uuid4().hex
    _holds_lock = threading.Lock()  # a thread of the parent may have held it
    for held in _holds.values():
        with suppress(OSError):
            os.close(held.fd)
    _holds.clear()


_holds: dict[Path, _Hold] = {}
_holds_lock = threading.Lock()
os.register_at_fork(after_in_child=_after_fork)


def _hold(path: Path, owner: object) -> None:
    """Take (or join) this process's writer lock on ``path`` for ``owner``.

    Raises:
        SessionConflictError: another process holds it.
        OSError: the file cannot be opened.
    """
    key = path.resolve()
    info = os.stat(key)
    identity = (info.st_dev, info.st_ino)
    with _holds_lock:
        held = _holds.get(key)
        if held is not None and held.identity == identity:
            held.owners.add(id(owner))
            return
        if held is not None:  # the file was replaced or removed and made again: lock anew
            os.close(held.fd)
            del _holds[key]
        fd = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionConflictError(
                f"session file {str(path)!r} is being written by another process (a running"
                " dagctx watch or a program's Session); not overwriting it: stop that one,"
                " or save this session to another path",
                value=path,
            ) from None
        except BaseException:
            os.close(fd)
            raise
        _holds[key] = _Hold(fd, identity, {id(owner)})


def release_session_file(owner: object) -> None:
    """Give up ``owner``'s share of every writer lock; a lock no session of this process
    holds any more is released."""
    with _holds_lock:
        for key, held in list(_holds.items()):
            held.owners.discard(id(owner))
            if not held.owners:
                os.close(held.fd)
                del _holds[key]


def _generation(conn: sqlite3.Connection) -> str | None:
    """The generation of the session the file holds: None when it holds none (a new or
    empty file), ``""`` for one written before generations."""
    if conn.execute("SELECT 1 FROM session_info LIMIT 1").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM session_info WHERE key = 'generation'").fetchone()
    if row is None:
        return ""
    try:
        value = decode_json(row[0])
    except (TypeError, ValueError):
        return ""
    return value if isinstance(value, str) else ""


#: The ``session_info`` key of :func:`nodes_digest` of what a write wrote.
COUNTED_KEY = "counted"


def nodes_digest(nodes: Iterable[tuple[Any, Any]], blocks: Iterable[tuple[Any, Any]]) -> str:
    """A digest of the node rows' JSON (ref, text) and the column blocks' (type, text) as
    stored, in order of ref and type: the nodes the saved token counts were made from,
    and the counts. A file edited by hand (a message's text, a text node's line range, a
    count) reads another digest, and its nodes are counted again rather than trusted."""
    digest = hashlib.blake2b(digest_size=16)
    for key, text in [*sorted(nodes, key=_first), *sorted(blocks, key=_first)]:
        digest.update(f"{key!r}\0".encode())
        digest.update(text.encode() if isinstance(text, str) else repr(text).encode())
        digest.update(b"\1")
    return digest.hexdigest()


def _first(row: tuple[Any, Any]) -> str:
    return repr(row[0])


def _encode(data: SessionData) -> dict[str, list[tuple[Any, ...]]]:
    nodes = [
        (ref, int(in_graph), seq, last_run, _json(node, f"node {node.get('id')!r}"))
        for ref, in_graph, seq, last_run, node in data.nodes
    ]
    blocks = [
        (name, _json({key: compact_column(c) for key, c in block.items()}, f"{name} nodes"))
        for name, block in data.columns.items()
    ]
    counted = nodes_digest(((row[0], row[4]) for row in nodes), blocks)
    return {
        "session_info": [
            *((key, _json(value, key)) for key, value in data.info.items()),
            (COUNTED_KEY, _json(counted, COUNTED_KEY)),
        ],
        "session_nodes": nodes,
        "session_columns": blocks,
        "session_edges": data.edges,
        "session_roots": list(enumerate(data.roots)),
        "session_checkpoints": [
            (i, name, _json(cp, f"checkpoint {name!r}"))
            for i, (name, cp) in enumerate(data.checkpoints)
        ],
        "session_context_checkpoints": [
            (cp["version"], _json(cp, "context checkpoint")) for cp in data.context_checkpoints
        ],
        "session_projection": [] if data.projection is None else [(0, *data.projection)],
        "session_file_terms": [] if data.file_terms is None else [(0, data.file_terms)],
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
            if found not in _LAYOUT.readable:
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
    generation = info.pop("generation", "")
    counted = info.pop(COUNTED_KEY, None)
    node_rows = rows("SELECT ref, in_graph, seq, last_run, data FROM session_nodes ORDER BY ref")
    nodes = [
        (ref, bool(in_graph), seq, last_run, load(data, f"node row {ref}"))
        for ref, in_graph, seq, last_run, data in node_rows
    ]
    tables = {name for (name,) in rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
    blocks = (
        rows("SELECT type, data FROM session_columns ORDER BY type")
        if "session_columns" in tables
        else []  # a schema 2 file
    )
    columns = {
        name: _expanded(load(data, f"the {name!r} nodes' columns"), f"{where}: the {name!r} nodes")
        for name, data in blocks
    }
    intact = counted == nodes_digest(((row[0], row[4]) for row in node_rows), blocks)
    saved = (  # none in a schema 2 or 3 file
        rows("SELECT CAST(head AS BLOB), account FROM session_projection")
        if "session_projection" in tables
        else []
    )
    file_terms = (  # none in a file written before them
        rows("SELECT data FROM session_file_terms") if "session_file_terms" in tables else []
    )
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
    ids = saved_ids(nodes, columns)
    traces = TraceRows("", first, read_traces((row[1:] for row in trace_rows), ids))
    edges = rows(
        "SELECT parent, position, child, parent_rank FROM session_edges ORDER BY parent, position"
    )
    return SessionData(
        info=info,
        nodes=nodes,
        edges=read_edges(edges, ids),
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
        generation=generation if isinstance(generation, str) else "",
        columns=columns,
        projection=saved[0] if saved else None,
        counts_intact=intact,
        file_terms=file_terms[0][0] if file_terms and type(file_terms[0][0]) is str else None,
    )


#: The types of the values of a column whose equal values are equal JSON (no two of
#: them compare equal across types, as 1, 1.0 and True do): such a column is compacted by
#: its values themselves; a column of lists or dicts by their reprs (exact for JSON values).
_EXACT = (frozenset({str, type(None)}), frozenset({int, type(None)}), frozenset({bool, type(None)}))
_NESTED = frozenset({list, dict})
_FEW = 4  # a column is compacted when it holds at most a _FEW-th as many distinct values


def compact_column(column: list[Any]) -> Any:
    """``column`` as :func:`expand_column` reads it back (module docstring): the list
    itself, unless it holds few distinct values (equal as JSON: ``0``, ``0.0`` and
    ``False`` are three values)."""
    if len(column) < 2 * _FEW:
        return column
    types = set(map(type, column))
    keys: list[Any]
    # floats: -0.0 == 0.0, so a column holding either is left as it is
    if any(types <= exact for exact in _EXACT) or (types == _FLOAT and 0.0 not in column):
        keys = column
    elif types <= _NESTED:
        keys = list(map(repr, column))
    else:
        return column
    by_key = dict(zip(keys, column, strict=True))  # each distinct value, by its key
    if len(by_key) * _FEW > len(column):
        return column
    if len(by_key) == 1:
        return {"repeat": column[0], "count": len(column)}
    at = {key: i for i, key in enumerate(by_key)}
    return {"values": list(by_key.values()), "at": list(map(at.__getitem__, keys))}


_FLOAT = frozenset({float})


def expand_column(saved: Any, count: int) -> Any:
    """The list a column saved by :func:`compact_column` stands for; ``count`` is the
    number of nodes of its block (a repeated value is expanded to that many, never
    more). Anything else but a list raises ValueError."""
    if type(saved) is list:
        return saved
    if type(saved) is dict and saved.keys() == {"repeat", "count"}:
        if saved["count"] != count or type(saved["count"]) is not int:
            raise ValueError(f"a repeated value for {saved['count']!r} nodes, not {count}")
        return [saved["repeat"]] * count
    if type(saved) is dict and saved.keys() == {"values", "at"}:
        values, at = saved["values"], saved["at"]
        if type(values) is not list or type(at) is not list:
            raise ValueError("its values and indexes are not lists")
        if at and not (set(map(type, at)) <= _INT and min(at) >= 0 and max(at) < len(values)):
            bad = next(i for i in at if type(i) is not int or not 0 <= i < len(values))
            raise ValueError(f"an index out of its {len(values)} values: {bad!r}")
        return list(map(values.__getitem__, at))
    raise ValueError("not a list of values, nor values with their indexes, nor a repeated value")


_INT = frozenset({int})


def _expanded(block: Any, what: str) -> Any:
    """A block of columns as read, each column expanded (:func:`expand_column`); its
    number of nodes is that of its ``ref`` column (a list). A block that is not an
    object is left to the caller.

    Raises:
        CheckpointError: a column that does not expand, named.
    """
    if type(block) is not dict:
        return block
    refs = block.get("ref")
    count = len(refs) if type(refs) is list else 0
    expanded = {}
    for key, saved in block.items():
        try:
            expanded[key] = expand_column(saved, count)
        except ValueError as exc:
            raise CheckpointError(
                f"{what}' column {key!r} is malformed: {exc}", value=saved
            ) from exc
    return expanded


def saved_ids(
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]],
    columns: dict[str, dict[str, Any]],
) -> dict[str, str]:
    """The ids of the saved nodes (in rows and in columns), each mapped to itself: the
    string object the rebuilt node will hold as its id."""
    ids: dict[str, str] = {}
    for block in columns.values():
        column = block.get("id") if isinstance(block, dict) else None
        if type(column) is list:
            strings = column if set(map(type, column)) <= _STR else list(filter(_is_str, column))
            ids.update(zip(strings, strings, strict=True))
    for *_, raw in nodes:
        nid = raw.get("id") if isinstance(raw, dict) else None
        if type(nid) is str:
            ids[nid] = nid
    return ids


_STR = frozenset({str})


def _is_str(value: Any) -> bool:
    return type(value) is str


def _shared(value: Any, ids: dict[str, str]) -> Any:
    """``value`` as the string :func:`saved_ids` holds for it, if it is one."""
    return ids.get(value, value) if type(value) is str else value


def read_edges(rows: Iterable[Sequence[Any]], ids: dict[str, str]) -> list[tuple[Any, ...]]:
    """Edges from saved rows of (parent, child position, child, parent rank), each node
    id that :func:`saved_ids` holds as its string (the graph keeps them in its rows of
    children and parents: one string per node, as in a live session)."""
    rows = list(rows)
    if not rows:
        return []
    parents, positions, children, ranks = zip(*rows, strict=True)
    if set(map(type, parents)) | set(map(type, children)) <= _STR:  # as saved: at C speed
        shared = ids.get
        tops, kids = map(shared, parents, parents), map(shared, children, children)
        return list(zip(tops, positions, kids, ranks, strict=True))
    return [
        (_shared(parent, ids), position, _shared(child, ids), rank)
        for parent, position, child, rank in rows
    ]


def read_traces(rows: Iterable[Sequence[Any]], ids: dict[str, str]) -> list[Trace]:
    """Traces from saved rows of (node id, old version, new version, description, at,
    derived). A node id that :func:`saved_ids` holds is its string (not one more copy
    per trace), and equal descriptions are one string: a resumed session holds what a
    live one holds. The values are taken as they are (the trace log checks them)."""
    texts: dict[str, str] = {}
    traces = []
    for node_id, old, new, description, at, derived in rows:
        node_id = _shared(node_id, ids)
        if type(description) is str:
            description = texts.setdefault(description, description)
        traces.append(Trace(node_id, old, new, description, at, bool(derived)))
    return traces


__all__ = [
    "SESSION_SCHEMA",
    "SessionData",
    "TraceRows",
    "compact_column",
    "expand_column",
    "read_edges",
    "read_session_file",
    "read_traces",
    "release_session_file",
    "saved_ids",
    "write_session_file",
]
