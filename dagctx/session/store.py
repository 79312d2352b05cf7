"""A whole session in one SQLite file: :meth:`Session.save` and :meth:`Session.load`.

:func:`save` and :func:`load` (behind :meth:`Session.save` / :meth:`Session.load`) keep
a whole session in one file (default ``<root>/.dagctx/session.db``):

- every node with its type data (:meth:`~dagctx.nodes.base.Node.to_dict`), its recency
  (``seq``) and last recompute time, including nodes that only a structure checkpoint
  still holds (removed since the checkpoint);
- the structure: ordered children per node and the root order;
- the structure checkpoints, the traces the graph's trace log keeps (a save writes only
  what changed in them), the id counters, the turn count and where the next tick's
  changes start, the budget and the encoding;
- the root task context: task id, config, state, token usage and its checkpoints;
- what the ranking read of each text node's content (its term counts and names:
  :meth:`~dagctx.projection.relevance.Relevance.reads`, a reference graph still being
  read waited for), beside the block of text nodes, which names its digest; a load hands
  it to the projection (:attr:`~dagctx.projection.sections.SectionCache.file_terms`),
  which takes it back for the files that still show what it was read from (a file saved
  before it, or by other code, has none: every file is read again when a focus needs it);
- the projection a resume's first tick makes when nothing changed
  (:func:`dagctx.session.resume.plan_to_save`; a PostgreSQL row keeps none), which the
  load offers back to that tick (:func:`dagctx.session.resume.offer`).

Nodes are rebuilt through the type registry (:meth:`Node.from_dict`), so a new node type
needs nothing here. A node that offers a :meth:`~dagctx.nodes.base.Node.snapshot` of what
it read (a text node: the stat key, line count and a digest of the text; a group, which
reads nothing, an empty one) is saved with it and restored from it without reading its
file (the text is read on first use; comparing the snapshot with the disk is the watch's
business, :mod:`dagctx.watch.tracker`); when
its type has columns (:attr:`~dagctx.nodes.base.Node.column_keys`) the nodes of that
type are saved together as one block of columns and rebuilt by
:meth:`~dagctx.nodes.base.Node.from_columns`, which checks each field once per column
instead of once per node. Any other node whose content comes from a file re-reads it
on load. The section token counts
of each node (:meth:`~dagctx.projection.sections.SectionCache.saved`) are saved with it
and restored for its saved version, so a resumed session does not count unchanged
sections again (the projection still proves the budget on its final text). What a
file cannot hold is not saved: live resources (running commands, held OS locks, MCP
connections: their nodes come back as records), custom group summarizers (callables), and
forked contexts not merged yet. A node whose data names the saved session root under
``"root"`` follows the session when it is loaded under another root; a node naming any
other root is refused (only a tampered file has one, and it would read files there).

With a PostgreSQL store (``Session(..., store=URL)``, ``DAGCTX_STORE``, or a URL as the
path) the same data goes to one row of :mod:`dagctx.session.file_pg` instead, under a
compare-and-swap of its generation.

The file layout and its atomicity (one transaction per save, safe against a kill at any
instant; a save that raises leaves the file as it was) belong to :mod:`dagctx.session.file`.
``load`` checks the data as it rebuilds the session and returns a complete session or
raises :class:`~dagctx.errors.CheckpointError` (closing whatever it had built). While it
reads and rebuilds, Python's cyclic garbage collector is paused (:func:`_collector_paused`):
a load makes tens of thousands of objects that all stay alive, and each collection the
allocations would set off walks every one of them again (a fifth of a resume of 10k files);
then they go to the collector's oldest generation unwalked. A save to a file pauses it too:
its rows and what the ranking read of each file are as many objects, and the collections
they set off walked the whole session (half of a save of 10k files).
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagctx.nodes  # noqa: F401 - importing the package registers every node type
from dagctx import _postgres
from dagctx._fs import make_state_dir
from dagctx._json import encode_json
from dagctx._validate import is_finite
from dagctx.checkpoint import Checkpoint, CheckpointStore
from dagctx.context import Context, ContextConfig, ContextState
from dagctx.errors import (
    CheckpointError,
    DagctxError,
    GraphLoadError,
    SessionFileUnavailableError,
)
from dagctx.graph import GraphData, StructureCheckpoint
from dagctx.nodes.base import Node, NodeState, of_types
from dagctx.nodes.registry import resolve_node_type
from dagctx.nodes.text import TextNode
from dagctx.projection.file_terms import SavedReads, digest_of
from dagctx.projection.projector import Projector
from dagctx.projection.relevance import Relevance
from dagctx.runtime.coordination_pg import repository_identity
from dagctx.session.file import (
    SessionData,
    TraceRows,
    read_session_file,
    release_session_file,
    write_session_file,
)
from dagctx.session.file_pg import read_session_pg, split_name, write_session_pg
from dagctx.session.resume import made_by, made_here, offer, plan_to_save

if TYPE_CHECKING:
    from dagctx.session import Session

SESSION_FILE = Path(".dagctx") / "session.db"
"""Where a session is saved by default, relative to its root."""


def session_name(root: Path) -> str:
    """The default name of the session of ``root`` in a PostgreSQL session store: the
    repository id and the repository-relative root (the same in every checkout)."""
    repo_id, base = repository_identity(root)
    return f"{repo_id}:{root.relative_to(base).as_posix()}"


def _postgres_target(url: str, root: Path) -> tuple[str, str, str]:
    """``(url without fragment, session name, key)`` of a PostgreSQL session target;
    the key (the URL without its password, then ``#name``) is what the session records
    the generation under."""
    base, name = split_name(url)
    name = name or session_name(root)
    return base, name, f"{_postgres.redact(base)}#{name}"


def save(session: Session, path: str | os.PathLike[str] | None = None) -> Path | str:
    """Save ``session`` to ``path`` (default: the session's PostgreSQL ``store`` if it
    has one, else ``<root>/.dagctx/session.db``); return the path written, or for
    PostgreSQL the URL (without its password) and ``#name``. See :meth:`Session.save`.

    Raises:
        CheckpointError: see :meth:`Session.save`; the file is left as it was.
    """
    url = session.store if path is None else path if _postgres.is_url(path) else None
    if isinstance(url, str):
        base, name, row = _postgres_target(url, session.root)
        expected = session._file_generations.get(row)
        data = _dump(session, with_projection=False)  # a row keeps no saved projection
        session._file_generations[row] = write_session_pg(base, name, data, expected)
        return row
    target = session.root / SESSION_FILE if path is None else Path(path)
    if path is None:
        _make_state_dir(target.parent)
    key = _file_key(target)
    if not session._file_generations:  # a new session's first save (load registers it)
        _release_at_close(session)
    expected = session._file_generations.get(key)
    with _collector_paused():  # as a load: a save walks and makes as many objects
        generation = write_session_file(target, _dump(session), expected, owner=session)
    session._file_generations[key] = generation
    return target


def _make_state_dir(directory: Path) -> None:
    try:
        make_state_dir(directory)
    except OSError as exc:
        raise SessionFileUnavailableError(
            f"cannot make the state directory {str(directory)!r}: {exc}", value=directory
        ) from exc


def _file_key(path: Path) -> Path:
    """The session file's identity for generation checks: its resolved path."""
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # a loop, a NUL byte: the write reports it
        return path.absolute()


def load(
    cls: type[Session],
    path: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> Session:
    """Build a ``cls`` session from the file ``path``, or from a PostgreSQL session store
    when ``path`` is a ``postgresql://`` URL (or None while ``DAGCTX_STORE`` names one;
    the session is ``root``'s, default the current directory). See :meth:`Session.load`.

    Raises:
        CheckpointError: see :meth:`Session.load`; no session is returned.
    """
    url = _postgres.store_url(path)
    if url is not None:
        here = Path("." if root is None else root).expanduser().resolve()
        plain, name, row = _postgres_target(url, here)
        with _collector_paused():
            data = read_session_pg(plain, name)
            session = _build(cls, data, here, row, store=plain)
        session._file_generations[row] = data.generation
        return session
    if path is None:
        base = Path("." if root is None else root).expanduser().resolve()
        path, root = base / SESSION_FILE, base
    with _collector_paused():
        data = read_session_file(Path(path))
        session = _build(cls, data, root, Path(path))
    session._file_generations[_file_key(Path(path))] = data.generation
    _release_at_close(session)
    return session


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (it runs again after, as it was
    before: a program that had disabled it finds it disabled).

    While it is enabled and no object is frozen, the objects the block makes skip its
    young generations: a collection of those (0 and 1) first frees what was made before,
    as the block's allocations would have set it off, and once the block ends without an
    error every object the collector tracks goes to its oldest generation unwalked
    (``gc.freeze`` then ``gc.unfreeze``), where a full collection would leave those
    alive. The objects a load makes all stay alive, and the first young collection after
    it walked every one of them (3 ms of a resume of 10k files). A program keeping
    objects frozen would find them thawed by ``gc.unfreeze``: the block is only paused
    then."""
    enabled = gc.isenabled()
    settle = enabled and gc.get_freeze_count() == 0
    if settle:
        gc.collect(1)
    gc.disable()
    try:
        yield
        if settle:
            gc.freeze()
            gc.unfreeze()
    finally:
        if enabled:
            gc.enable()


def _release_at_close(session: Session) -> None:
    """Release the session's session-file writer locks when it closes."""
    session.on_close(lambda: release_session_file(session))


# -- session → data --------------------------------------------------------------------------


_SESSION_COLUMNS = ("ref", "in_graph", "seq", "last_run", "tokens")
"""What a session keeps of each node beside its type's columns (``tokens``: the
section token counts, :meth:`~dagctx.projection.sections.SectionCache.saved`)."""


def _dump(session: Session, *, with_projection: bool = True) -> SessionData:
    with_file_terms = with_projection  # a PostgreSQL row keeps neither
    file_terms = None
    state = session.graph.dump()
    refs: dict[int, int] = {}  # id(node) → ref; a node shared by checkpoints is stored once
    nodes: list[tuple[int, bool, int, float | None, dict[str, Any]]] = []
    # node type → (ref, in_graph, seq, last_run, tokens) and (node, snapshot) of each
    columnar: dict[type[Node], tuple[list[tuple[Any, ...]], list[tuple[Node, Any]]]] = {}
    rereads: list[Node] = []  # nodes of the graph that re-read their file at a load

    def ref_of(node: Node, in_graph: bool) -> int:
        if id(node) not in refs:
            ref = refs[id(node)] = len(refs)
            snapshot = node.snapshot()
            if snapshot is None and in_graph and node.watch_path() is not None:
                rereads.append(node)
            counts = session.cache.saved(node.id) if in_graph else None
            if snapshot is not None and type(node).column_keys:
                session_rows, saved = columnar.setdefault(type(node), ([], []))
                session_rows.append((ref, in_graph, node.seq, node.last_run, counts))
                saved.append((node, snapshot))
                return ref
            raw = node.to_dict()
            if snapshot is not None:
                raw["snapshot"] = snapshot
            if counts is not None:
                raw["tokens"] = counts
            nodes.append((ref, in_graph, node.seq, node.last_run, raw))
        return refs[id(node)]

    for node in state.nodes:
        ref_of(node, True)
    checkpoints = [
        (
            saved.name,
            {
                "children": {p: list(kids) for p, kids in saved.children.items()},
                "roots": list(saved.roots),
                "states": {n: state.name for n, state in saved.states.items()},
                "nodes": {n: ref_of(node, False) for n, node in saved.nodes.items()},
            },
        )
        for saved in state.checkpoints
    ]
    context = _dump_context(session.context)
    columns: dict[str, dict[str, Any]] = {}
    for kind, (session_rows, saved) in columnar.items():
        kept = [list(column) for column in zip(*session_rows, strict=True)]
        block: dict[str, Any] = dict(zip(_SESSION_COLUMNS, kept, strict=True))
        block.update(kind.to_columns(saved))
        if kind is TextNode and with_file_terms:
            files = [
                (node, bytes.fromhex(snapshot["digest"]))
                for node, snapshot in saved
                if isinstance(node, TextNode)
            ]
            file_terms = _pack_reads(session, files)
            block[FILE_TERMS] = [digest_of(file_terms)] * len(files)
        columns[kind.type_name] = block
    return SessionData(
        info={
            "root": str(session.root),
            "budget": session.budget,
            "encoding": session.encoding,
            "include_secrets": session.include_secrets,
            "turn": session.turn,
            "trace_mark": session._trace_mark.position,
            "clock": state.clock,
            "id_counters": state.id_counters,
            "context": context,
        },
        nodes=nodes,
        edges=state.edges,
        roots=state.roots,
        checkpoints=checkpoints,
        traces=TraceRows(state.trace_log_id, state.trace_start, state.traces),
        context_checkpoints=context.pop("checkpoints"),
        columns=columns,
        projection=plan_to_save(session, not rereads) if with_projection else None,
        file_terms=file_terms,
    )


FILE_TERMS = "file_terms"
"""The column of the text nodes' block naming the digest of what the ranking read of
them (saved beside them: :func:`dagctx.projection.file_terms.digest_of`)."""


def _pack_reads(session: Session, files: list[tuple[TextNode, bytes]]) -> str:
    """What the file keeps of what the ranking read of ``files`` (:meth:`Projector.
    pack_reads`; without a projector, what was taken back at the load and still fits)."""
    live = session.cache.projector
    if isinstance(live, Projector) and live.graph is session.graph:
        return live.pack_reads(files, made_by())
    return Relevance(session.cache.file_terms).pack(files, made_by())


def _dump_context(context: Context) -> dict[str, Any]:
    # Values must come back unchanged: no tuples, sets, NaN or objects (CheckpointError).
    state = context.state.to_dict()
    encode_json(state, "context state")
    encode_json(context.config.extra, "context config extra")
    checkpoints = []
    for version in context.checkpoints.list_versions():
        cp = context.checkpoints.get(version).to_dict()
        encode_json(cp["values"], f"context checkpoint {version} values")
        encode_json(cp["metadata"], f"context checkpoint {version} metadata")
        checkpoints.append(cp)
    return {
        "task_id": context.task_id,
        "config": context.config.model_dump(mode="json"),
        "state": state,
        "token_usage": context.token_usage,
        "checkpoints": checkpoints,
    }


# -- data → session --------------------------------------------------------------------------


def _build(
    cls: type[Session],
    data: SessionData,
    root: str | os.PathLike[str] | None,
    path: Path | str,
    *,
    store: str | None = None,
) -> Session:
    where = repr(str(path))
    info = data.info
    saved_root = _get(info, "root", str, where)
    try:
        session = cls(
            saved_root if root is None else root,
            budget=_get(info, "budget", int, where),
            encoding=_get(info, "encoding", str, where),
            include_secrets=info.get("include_secrets") is True,
            store=store,
        )
    except DagctxError as exc:
        hint = "; pass root= to load it elsewhere" if root is None else ""
        raise CheckpointError(f"cannot load session {where}: {exc}{hint}", value=path) from exc
    try:
        _fill(session, data, saved_root, where)
    except BaseException as exc:
        session.close()
        if isinstance(exc, CheckpointError) or not isinstance(exc, Exception):
            raise
        raise CheckpointError(
            f"session file {where} cannot be loaded: {type(exc).__name__}: {exc}", value=path
        ) from exc
    return session


def _get(info: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = info.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CheckpointError(f"session file {where} has a bad {key!r}: {value!r}", value=value)
    return value


def _fill(session: Session, data: SessionData, saved_root: str, where: str) -> None:
    moved = str(session.root) != saved_root
    # ref → (node, in_graph, seq, last_run, saved token counts or None)
    restored: dict[int, tuple[Node, Any, Any, Any, Any]] = {}
    for ref, in_graph, seq, last_run, raw in data.nodes:
        tokens = raw.get("tokens") if isinstance(raw, dict) else None
        fields = raw.get("data") if isinstance(raw, dict) else None
        if isinstance(fields, dict) and "root" in fields:
            _check_root(raw.get("id"), fields["root"], saved_root, where)
            if moved:
                raw = {**raw, "data": {**fields, "root": str(session.root)}}
        restored[ref] = (Node.from_dict(raw), in_graph, seq, last_run, tokens)
    for type_name, block in data.columns.items():
        for ref, entry in _from_columns(type_name, block, saved_root, session, where):
            if ref in restored:
                raise CheckpointError(f"session file {where} holds node {ref} twice", value=ref)
            restored[ref] = entry
        if type_name == TextNode.type_name and isinstance(block, dict) and data.counts_intact:
            # (else a file edited by hand: every file is read again when a focus needs it)
            digest = block.get(FILE_TERMS)
            digest = digest[0] if type(digest) is list and digest else None
            session.cache.file_terms = SavedReads(data.file_terms, digest, made_here)
    by_ref: dict[int, Node] = {ref: restored[ref][0] for ref in sorted(restored)}
    session._add_loaded([row[0] for row in map(restored.__getitem__, by_ref) if row[1]])
    if data.counts_intact:  # else every node is counted again (a file edited by hand)
        session.cache.restore_many(
            (node, tokens)
            for node, in_graph, _, _, tokens in restored.values()
            if in_graph and tokens is not None
        )
    for node, _, seq, last_run, _ in restored.values():
        node.last_run, node.seq = last_run, seq
    checkpoints = [
        _structure_checkpoint(name, raw_cp, by_ref, where) for name, raw_cp in data.checkpoints
    ]
    traces = data.traces
    trace_mark = _get(data.info, "trace_mark", int, where)
    if not traces.start <= trace_mark <= traces.end:
        raise CheckpointError(
            f"session file {where} has a bad 'trace_mark': {trace_mark}", value=trace_mark
        )
    counters = _get(data.info, "id_counters", dict, where)
    graph_data = GraphData(
        nodes=list(session.graph),
        edges=data.edges,
        roots=data.roots,
        checkpoints=checkpoints,
        clock=_get(data.info, "clock", int, where),
        id_counters=counters,
        traces=traces.traces,
        trace_start=traces.start,
    )
    try:
        session.graph.load(graph_data)
    except GraphLoadError as exc:
        raise CheckpointError(f"session file {where}: {exc}", value=exc.value) from exc
    session.turn = _get(data.info, "turn", int, where)
    session._trace_mark.position = trace_mark
    session.context = _load_context(data.info.get("context"), data.context_checkpoints, where)
    offer(session, data.projection)


def _check_root(node_id: Any, root: Any, saved_root: str, where: str) -> None:
    if root != saved_root:  # a tampered file: the node would read there
        raise CheckpointError(
            f"session file {where}: node {node_id!r} reads files under"
            f" {root!r}, not under the session root {saved_root!r}",
            value=root,
        )


def _from_columns(
    type_name: str, block: Any, saved_root: str, session: Session, where: str
) -> list[tuple[int, tuple[Node, Any, Any, Any, Any]]]:
    """The nodes of one type saved as columns, each with its ref and what the session
    keeps of it (as :func:`_fill` takes them); checked column by column.

    Raises:
        CheckpointError: a malformed block (naming the bad value), or a node reading
            files under another root than the session's.
        GraphError: an unknown type, or bad node fields (:meth:`Node.from_columns`).
    """
    what = f"session file {where}: the {type_name!r} nodes' columns"
    if not isinstance(block, dict):
        raise CheckpointError(f"{what} are not a JSON object: {block!r}", value=block)
    kind = resolve_node_type(type_name)
    kept: list[Any] = [block.get(key) for key in _SESSION_COLUMNS]
    refs, in_graph, seqs, last_runs, tokens = kept
    count = len(refs) if type(refs) is list else -1
    for key, column in zip(_SESSION_COLUMNS, kept, strict=True):
        if type(column) is not list or len(column) != count:
            raise CheckpointError(f"{what} lack a list {key!r} of {count} values", value=column)
        ok, whole = _KEPT_CHECKS[key]
        if whole(column):  # at C speed; else each value is asked, to name the bad one
            continue
        bad = next((value for value in column if not ok(value)), _GOOD)
        if bad is not _GOOD:
            raise CheckpointError(f"{what} hold a bad {key!r}: {bad!r}", value=bad)
    if len(set(refs)) != count:
        raise CheckpointError(f"{what} name a node ref twice", value=refs)
    if "root" in block:
        roots = block["root"]
        if type(roots) is list:
            for at, root in enumerate(roots):
                if root != saved_root:
                    node_id = block["id"][at] if type(block.get("id")) is list else None
                    _check_root(node_id, root, saved_root, where)
            if str(session.root) != saved_root:
                block = {**block, "root": [str(session.root)] * len(roots)}
    nodes = kind.from_columns(block)
    return list(zip(refs, zip(nodes, in_graph, seqs, last_runs, tokens, strict=True), strict=True))


_GOOD = object()
_TIMES = frozenset({float, type(None)})
_COUNTS = frozenset({int, type(None)})


def _times_or_none(column: list[Any]) -> bool:
    """Whether every value of a ``last_run`` column is None or a finite float."""
    return set(map(type, column)) <= _TIMES and all(map(math.isfinite, filter(None, column)))


def _counts_or_none(column: list[Any]) -> bool:
    """Whether every value of a ``tokens`` column is None or an int >= 0."""
    return set(map(type, column)) <= _COUNTS and min(filter(None, column), default=0) >= 0


#: Each kept column's test of one value, and a test of the whole column at once that is
#: true only when every value passes the first.
_KEPT_CHECKS: dict[str, tuple[Callable[[Any], bool], Callable[[list[Any]], bool]]] = {
    "ref": (lambda v: type(v) is int, of_types(int)),
    "in_graph": (lambda v: type(v) is bool, of_types(bool)),
    "seq": (lambda v: type(v) is int, of_types(int)),
    "last_run": (lambda v: v is None or is_finite(v), _times_or_none),
    "tokens": (lambda v: v is None or (type(v) is int and v >= 0), _counts_or_none),
}


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
        raise CheckpointError(f"{what} is malformed: {exc!r}", value=raw) from exc
    named = {nid for kids in children.values() for nid in kids} | set(children) | set(roots)
    unknown = sorted((named | set(states)) - set(nodes))
    if unknown or any(nodes[nid].id != nid for nid in nodes):
        raise CheckpointError(f"{what} names nodes it does not hold: {unknown}", value=unknown)
    return StructureCheckpoint(name, children, roots, states, nodes)


def _load_context(raw: Any, checkpoints: list[Any], where: str) -> Context:
    try:
        task_id = raw["task_id"]
        config = ContextConfig.model_validate(raw["config"])
        store = CheckpointStore(task_id)
        for cp in map(Checkpoint.from_dict, checkpoints):
            stored = store._append(cp.values, cp.token_usage, cp.metadata, cp.created_at)
            if stored.version != cp.version or cp.task_id != task_id:
                raise CheckpointError(
                    f"checkpoint {cp.task_id!r} v{cp.version} is out of place", value=cp.version
                )
        context = Context(task_id, config=config, state=ContextState(raw["state"]), store=store)
        context.add_tokens(raw["token_usage"])
    except (KeyError, TypeError, ValueError, DagctxError) as exc:
        raise CheckpointError(
            f"the task context saved in {where} is malformed: {exc}", value=raw
        ) from exc
    return context


__all__ = ["SESSION_FILE", "load", "save", "session_name"]
