"""A whole session in one SQLite file: :meth:`Session.save` and :meth:`Session.load`.

:class:`ContextVerbs` gives :class:`~dagctx.session.Session` its task-context verbs
(``fork`` / ``merge`` on ``session.context``) and ``save`` / ``load``, which keep in one
file (default ``<root>/.dagctx/session.db``):

- every node with its type data (:meth:`~dagctx.nodes.base.Node.to_dict`), its recency
  (``seq``) and last recompute time, including nodes that only a structure checkpoint
  still holds (removed since the checkpoint);
- the structure: ordered children per node and the root order;
- the structure checkpoints, the traces, the turn count and where the next tick's
  changes start, the budget and the encoding;
- the root task context: task id, config, state, token usage and its checkpoints.

Nodes are rebuilt through the type registry (:meth:`Node.from_dict`), so a new node type
needs nothing here; a node whose content comes from a file re-reads it on load. What a
file cannot hold is not saved: live resources (running commands, held OS locks, MCP
connections: their nodes come back as records), custom group summarizers (callables), and
forked contexts not merged yet. A node whose data names the saved session root under
``"root"`` follows the session when it is loaded under another root.

Invariants:

- ``save`` serializes everything before touching the file, then writes it in one
  ``BEGIN IMMEDIATE`` transaction (WAL journal, ``synchronous=FULL``): after a kill at any
  instant the file holds the previous save or this one, whole; a save that raises leaves
  the file as it was.
- ``load`` reads in one transaction, checks the schema version and the data, and returns
  a complete session or raises :class:`~dagctx.errors.CheckpointError` (closing whatever
  it had built); it never writes to the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from graphlib import CycleError as GraphlibCycleError
from graphlib import TopologicalSorter
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import dagctx.nodes  # noqa: F401 - importing the package registers every node type
from dagctx.checkpoint import BaseCheckpointStore, Checkpoint, CheckpointStore
from dagctx.checkpoint_sqlite import encode_json
from dagctx.context import Context, ContextConfig, ContextState
from dagctx.errors import CheckpointError, DagctxError
from dagctx.graph import ContextGraph, StructureCheckpoint
from dagctx.nodes.base import Node, NodeState, Trace

if TYPE_CHECKING:
    from dagctx.session import Session

SESSION_SCHEMA = 1
"""Version of the session file layout written by :meth:`Session.save`."""

SESSION_FILE = Path(".dagctx") / "session.db"
"""Where a session is saved by default, relative to its root."""

_TABLES = """
CREATE TABLE IF NOT EXISTS dagctx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS session_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS session_nodes (
    ref INTEGER PRIMARY KEY, in_graph INTEGER NOT NULL, seq INTEGER NOT NULL,
    last_run REAL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_edges (
    parent TEXT NOT NULL, position INTEGER NOT NULL, child TEXT NOT NULL,
    PRIMARY KEY (parent, position)
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
    "session_traces",
    "session_context_checkpoints",
)


class ContextVerbs:
    """``session.fork`` / ``session.merge`` on the root task context, and ``save`` / ``load``."""

    if TYPE_CHECKING:  # provided by Session
        context: Context

    def fork(self, task_id: str, *, store: BaseCheckpointStore | None = None) -> Context:
        """Return a child of :attr:`context` for the sub-agent ``task_id``.

        Raises:
            ContextError: see :meth:`Context.fork`.
        """
        return self.context.fork(task_id, store=store)

    def merge(self, child: Context) -> None:
        """Fold a forked ``child`` back into :attr:`context` (state and net token usage).

        Raises:
            ContextError: ``child`` is not an unmerged child of :attr:`context`.
        """
        self.context.merge(child)

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Save the whole session to ``path`` (default ``<root>/.dagctx/session.db``).

        Returns the path written. The file is replaced as one transaction: a crash at any
        instant leaves the previous save or this one. See the module docstring for what
        is saved.

        Raises:
            CheckpointError: a node or context value cannot be stored as JSON, or ``path``
                cannot be written, is not a SQLite file, or holds another session schema;
                the file is left as it was.
        """
        session = cast("Session", self)  # a mixin of Session
        target = session.root / SESSION_FILE if path is None else Path(path)
        write_session_file(target, _dump(session))
        return target

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
    ) -> Session:
        """Load a session saved by :meth:`save`.

        Args:
            path: the session file (default ``<root>/.dagctx/session.db``).
            root: the root of the loaded session (default: the saved root when ``path`` is
                given, else the current directory).

        Raises:
            CheckpointError: no such file; the file is truncated, corrupt, not a session
                file or written by another session schema (the message names both
                versions); or its content cannot be rebuilt here (unknown node type,
                missing root directory, unavailable encoding). No session is returned.
        """
        if path is None:
            base = Path("." if root is None else root).expanduser().resolve()
            path, root = base / SESSION_FILE, base
        factory = cast("type[Session]", cls)  # a mixin of Session
        return _build(factory, read_session_file(Path(path)), root, Path(path))


# -- the file --------------------------------------------------------------------------------


@dataclass(slots=True)
class SessionData:
    """The rows of a session file, decoded from (or ready to encode into) JSON."""

    info: dict[str, Any]
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]]
    edges: list[tuple[str, int, str]]
    roots: list[str]
    checkpoints: list[tuple[str, dict[str, Any]]]
    traces: list[Trace]
    context_checkpoints: list[dict[str, Any]]


@contextmanager
def _open(path: Path, action: str, *, create: bool) -> Iterator[sqlite3.Connection]:
    where = repr(str(path))
    if not create and not path.is_file():
        raise CheckpointError(f"no saved session at {where}")
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"{path.resolve().as_uri()}?mode={'rwc' if create else 'rw'}"
        conn = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise CheckpointError(f"cannot {action} session file {where}: {exc}") from exc
    try:
        yield conn
    except sqlite3.Error as exc:
        raise CheckpointError(
            f"cannot {action} session file {where}: {exc} (is it a dagctx session file?)"
        ) from exc
    finally:
        conn.close()


def _schema_of(conn: sqlite3.Connection) -> str | None:
    tables = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'dagctx_meta'").fetchall()
    if not tables:
        return None
    row = conn.execute("SELECT value FROM dagctx_meta WHERE key = 'session_schema'").fetchone()
    return None if row is None else str(row[0])


def _schema_mismatch(path: Path, found: str) -> CheckpointError:
    return CheckpointError(
        f"{str(path)!r} holds session schema {found}; this dagctx reads and writes session"
        f" schema {SESSION_SCHEMA}"
    )


def write_session_file(path: Path, data: SessionData) -> None:
    """Replace the session saved in ``path`` with ``data`` in one transaction.

    Raises:
        CheckpointError: the file cannot be written, is not SQLite, or holds another
            session schema (nothing is written then).
    """
    rows = _encode(data)
    with _open(path, "write", create=True) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # a returned save survives any later crash
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = _schema_of(conn)
            if found is not None and found != str(SESSION_SCHEMA):
                raise _schema_mismatch(path, found)
            for statement in _TABLES.split(";")[:-1]:
                conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO dagctx_meta (key, value) VALUES ('session_schema', ?)",
                (str(SESSION_SCHEMA),),
            )
            for table in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table}")
            for table, table_rows in rows.items():
                if table_rows:
                    marks = ", ".join("?" * len(table_rows[0]))
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", table_rows)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


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
        "session_traces": [
            (i, t.node_id, t.old_version, t.new_version, t.description, t.at, int(t.derived))
            for i, t in enumerate(data.traces)
        ],
        "session_context_checkpoints": [
            (cp["version"], _json(cp, "context checkpoint")) for cp in data.context_checkpoints
        ],
    }


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{what} cannot be saved as JSON: {exc}") from exc


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
            found = _schema_of(conn)
            if found is None:
                raise CheckpointError(f"{where} is not a dagctx session file (no session schema)")
            if found != str(SESSION_SCHEMA):
                raise _schema_mismatch(path, found)
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise CheckpointError(f"{where} is corrupt: {check[0][0]}")
            return _decode(conn, where)
        finally:
            conn.execute("ROLLBACK")


def _decode(conn: sqlite3.Connection, where: str) -> SessionData:
    def load(text: Any, what: str) -> Any:
        try:
            return json.loads(text)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"{what} in {where} is not valid JSON: {exc}") from exc

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return conn.execute(sql).fetchall()

    info = {key: load(value, f"session_info {key!r}") for key, value in rows(
        "SELECT key, value FROM session_info")}  # fmt: skip
    nodes = [
        (ref, bool(in_graph), seq, last_run, load(data, f"node row {ref}"))
        for ref, in_graph, seq, last_run, data in rows(
            "SELECT ref, in_graph, seq, last_run, data FROM session_nodes ORDER BY ref"
        )
    ]
    traces = [
        Trace(node_id, old, new, description, at, bool(derived))
        for node_id, old, new, description, at, derived in rows(
            "SELECT node_id, old_version, new_version, description, at, derived"
            " FROM session_traces ORDER BY position"
        )
    ]
    return SessionData(
        info=info,
        nodes=nodes,
        edges=rows("SELECT parent, position, child FROM session_edges ORDER BY parent, position"),
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


# -- session → data --------------------------------------------------------------------------


def _dump(session: Session) -> SessionData:
    graph = session.graph
    refs: dict[int, int] = {}  # id(node) → ref; a node shared by checkpoints is stored once
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]] = []

    def ref_of(node: Node, in_graph: bool) -> int:
        if id(node) not in refs:
            refs[id(node)] = len(nodes)
            nodes.append((len(nodes), in_graph, node.seq, node.last_run, node.to_dict()))
        return refs[id(node)]

    for node in graph:
        ref_of(node, True)
    edges = [
        (node.id, position, child)
        for node in graph
        for position, child in enumerate(graph.child_ids(node.id))
    ]
    checkpoints = []
    for name in graph.checkpoints():
        saved = graph.get_checkpoint(name)
        checkpoints.append(
            (
                name,
                {
                    "children": {p: list(kids) for p, kids in saved.children.items()},
                    "roots": list(saved.roots),
                    "states": {n: state.name for n, state in saved.states.items()},
                    "nodes": {n: ref_of(node, False) for n, node in saved.nodes.items()},
                },
            )
        )
    return SessionData(
        info={
            "root": str(session.root),
            "budget": session.budget,
            "encoding": session.encoding,
            "turn": session.turn,
            "trace_mark": session._trace_mark,
            "clock": graph.clock,
            "context": _dump_context(session.context),
        },
        nodes=nodes,
        edges=edges,
        roots=[node.id for node in graph.roots()],
        checkpoints=checkpoints,
        traces=list(graph.traces),
        context_checkpoints=[
            session.context.checkpoints.get(v).to_dict()
            for v in session.context.checkpoints.list_versions()
        ],
    )


def _dump_context(context: Context) -> dict[str, Any]:
    state = context.state.to_dict()
    encode_json(state, "context state")  # values must come back unchanged (no tuples, NaN)
    return {
        "task_id": context.task_id,
        "config": context.config.model_dump(mode="json"),
        "state": state,
        "token_usage": context.token_usage,
    }


# -- data → session --------------------------------------------------------------------------


def _build(
    cls: type[Session], data: SessionData, root: str | os.PathLike[str] | None, path: Path
) -> Session:
    where = repr(str(path))
    info = data.info
    saved_root = _get(info, "root", str, where)
    try:
        session = cls(
            saved_root if root is None else root,
            budget=_get(info, "budget", int, where),
            encoding=_get(info, "encoding", str, where),
        )
    except DagctxError as exc:
        hint = "; pass root= to load it elsewhere" if root is None else ""
        raise CheckpointError(f"cannot load session {where}: {exc}{hint}") from exc
    try:
        _fill(session, data, saved_root, where)
    except BaseException as exc:
        session.close()
        if isinstance(exc, CheckpointError) or not isinstance(exc, Exception):
            raise
        raise CheckpointError(f"session file {where} cannot be loaded: {exc!r}") from exc
    return session


def _get(info: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = info.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CheckpointError(f"session file {where} has a bad {key!r}: {value!r}")
    return value


def _fill(session: Session, data: SessionData, saved_root: str, where: str) -> None:
    moved = str(session.root) != saved_root
    by_ref: dict[int, Node] = {}
    for ref, in_graph, seq, last_run, raw in data.nodes:
        if moved and isinstance(raw.get("data"), dict) and raw["data"].get("root") == saved_root:
            raw = {**raw, "data": {**raw["data"], "root": str(session.root)}}
        node = Node.from_dict(raw)
        node.last_run = last_run
        if in_graph:
            session.add(node)
        node.seq = seq
        by_ref[ref] = node
    graph = session.graph
    _install_structure(graph, data.edges, data.roots, where)
    graph.clock = _get(data.info, "clock", int, where)
    for name, raw_cp in data.checkpoints:
        graph.put_checkpoint(_structure_checkpoint(name, raw_cp, by_ref, where))
    graph.traces[:] = data.traces
    trace_mark = _get(data.info, "trace_mark", int, where)
    if not 0 <= trace_mark <= len(data.traces):
        raise CheckpointError(f"session file {where} has a bad 'trace_mark': {trace_mark}")
    _reserve_ids(graph, [n.id for n in by_ref.values()] + [t.node_id for t in data.traces])
    session.turn = _get(data.info, "turn", int, where)
    session._trace_mark = trace_mark
    session.context = _load_context(
        _get(data.info, "context", dict, where), data.context_checkpoints
    )


def _install_structure(
    graph: ContextGraph, edges: list[tuple[str, int, str]], roots: list[str], where: str
) -> None:
    """Put the saved edges (in child order) and the root order into a graph of parentless
    nodes. ``ContextGraph`` has no bulk-load call, and ``link`` would bump versions and
    record traces, so this writes the graph's edge store and root order directly, after
    checking that the result keeps the graph's invariants."""
    children: dict[str, list[str]] = {}
    parents: dict[str, list[str]] = {}
    for parent, _, child in edges:
        for nid in (parent, child):
            if nid not in graph:
                raise CheckpointError(f"session file {where} has an edge to unknown node {nid!r}")
        if child in children.setdefault(parent, []):
            raise CheckpointError(f"session file {where} repeats the edge {parent!r} → {child!r}")
        children[parent].append(child)
        parents.setdefault(child, []).append(parent)
    try:
        TopologicalSorter(parents).prepare()
    except GraphlibCycleError as exc:
        raise CheckpointError(f"session file {where} has a cycle: {exc.args[1]}") from exc
    parentless = [node.id for node in graph if node.id not in parents]
    if len(set(roots)) != len(roots) or set(roots) != set(parentless):
        raise CheckpointError(f"session file {where} has roots {roots} for nodes {parentless}")
    for parent, kids in children.items():
        graph._dag.add_edges_from((parent, child) for child in kids)
    graph._roots = dict.fromkeys(roots)


def _structure_checkpoint(
    name: str, raw: Any, by_ref: dict[int, Node], where: str
) -> StructureCheckpoint:
    what = f"structure checkpoint {name!r} in {where}"
    try:
        nodes = {nid: by_ref[ref] for nid, ref in raw["nodes"].items()}
        children = {p: tuple(kids) for p, kids in raw["children"].items()}
        roots = tuple(raw["roots"])
        states = {nid: NodeState.parse(state) for nid, state in raw["states"].items()}
    except (KeyError, TypeError, AttributeError, DagctxError) as exc:
        raise CheckpointError(f"{what} is malformed: {exc!r}") from exc
    named = {nid for kids in children.values() for nid in kids} | set(children) | set(roots)
    unknown = sorted((named | set(states)) - set(nodes))
    if unknown or any(nodes[nid].id != nid for nid in nodes):
        raise CheckpointError(f"{what} names nodes it does not hold: {unknown}")
    return StructureCheckpoint(name, children, roots, states, nodes)


def _reserve_ids(graph: ContextGraph, ids: list[str]) -> None:
    """Advance the graph's id counters past every id a checkpoint or a trace names, so a
    new node never takes the id of a removed one."""
    highest: dict[str, int] = {}
    for nid in ids:
        prefix, _, number = nid.rpartition("_")
        if prefix and number.isdigit() and nid not in graph:
            highest[prefix] = max(highest.get(prefix, 0), int(number))
    for prefix, top in highest.items():
        while int(graph.new_id(prefix).rpartition("_")[2]) < top:
            pass


def _load_context(raw: dict[str, Any], checkpoints: list[dict[str, Any]]) -> Context:
    try:
        task_id = raw["task_id"]
        config = ContextConfig.model_validate(raw["config"])
        store = CheckpointStore(task_id)
        for cp in map(Checkpoint.from_dict, checkpoints):
            stored = store._append(cp.values, cp.token_usage, cp.metadata, cp.created_at)
            if stored.version != cp.version or cp.task_id != task_id:
                raise CheckpointError(
                    f"context checkpoint {cp.task_id!r} v{cp.version} is out of sequence"
                )
        context = Context(task_id, config=config, state=ContextState(raw["state"]), store=store)
        context.add_tokens(raw["token_usage"])
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, DagctxError) as exc:
        raise CheckpointError(f"the saved task context is malformed: {exc}") from exc
    return context


__all__ = ["SESSION_FILE", "SESSION_SCHEMA", "ContextVerbs", "SessionData"]
