"""A whole session in one SQLite file: :meth:`Session.save` and :meth:`Session.load`.

:func:`save` and :func:`load` (behind :meth:`Session.save` / :meth:`Session.load`) keep
a whole session in one file (default ``<root>/.dagctx/session.db``):

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
``"root"`` follows the session when it is loaded under another root; a node naming any
other root is refused (only a tampered file has one, and it would read files there).

The file layout and its atomicity (one transaction per save, safe against a kill at any
instant; a save that raises leaves the file as it was) belong to :mod:`dagctx.session.file`.
``load`` checks the data as it rebuilds the session and returns a complete session or
raises :class:`~dagctx.errors.CheckpointError` (closing whatever it had built).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from graphlib import CycleError as GraphlibCycleError
from graphlib import TopologicalSorter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagctx.nodes  # noqa: F401 - importing the package registers every node type
from dagctx._json import encode_json
from dagctx.checkpoint import Checkpoint, CheckpointStore
from dagctx.context import Context, ContextConfig, ContextState
from dagctx.errors import CheckpointError, DagctxError
from dagctx.graph import ContextGraph, StructureCheckpoint
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.registry import node_types
from dagctx.session.file import SessionData, read_session_file, write_session_file

if TYPE_CHECKING:
    from dagctx.session import Session

SESSION_FILE = Path(".dagctx") / "session.db"
"""Where a session is saved by default, relative to its root."""


def save(session: Session, path: str | os.PathLike[str] | None = None) -> Path:
    """Save ``session`` to ``path`` (default ``<root>/.dagctx/session.db``); return the
    path written. See :meth:`Session.save`.

    Raises:
        CheckpointError: see :meth:`Session.save`; the file is left as it was.
    """
    target = session.root / SESSION_FILE if path is None else Path(path)
    write_session_file(target, _dump(session))
    return target


def load(
    cls: type[Session],
    path: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> Session:
    """Build a ``cls`` session from the file ``path``. See :meth:`Session.load`.

    Raises:
        CheckpointError: see :meth:`Session.load`; no session is returned.
    """
    if path is None:
        base = Path("." if root is None else root).expanduser().resolve()
        path, root = base / SESSION_FILE, base
    return _build(cls, read_session_file(Path(path)), root, Path(path))


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
        (node.id, position, child.id, graph.parents(child).index(node))
        for node in graph
        for position, child in enumerate(graph.children(node))
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
    context = _dump_context(session.context)
    return SessionData(
        info={
            "root": str(session.root),
            "budget": session.budget,
            "encoding": session.encoding,
            "turn": session.turn,
            "trace_mark": session._trace_mark,
            "clock": graph.clock,
            "context": context,
        },
        nodes=nodes,
        edges=edges,
        roots=[node.id for node in graph.roots()],
        checkpoints=checkpoints,
        traces=list(graph.traces),
        context_checkpoints=context.pop("checkpoints"),
    )


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
        raise CheckpointError(
            f"session file {where} cannot be loaded: {type(exc).__name__}: {exc}"
        ) from exc
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
        fields = raw.get("data") if isinstance(raw, dict) else None
        if isinstance(fields, dict) and "root" in fields:
            if fields["root"] != saved_root:  # a tampered file: the node would read there
                raise CheckpointError(
                    f"session file {where}: node {raw.get('id')!r} reads files under"
                    f" {fields['root']!r}, not under the session root {saved_root!r}"
                )
            if moved:
                raw = {**raw, "data": {**fields, "root": str(session.root)}}
        node = Node.from_dict(raw)
        node.last_run = last_run
        if in_graph:
            session.add(node)
        node.seq = seq
        by_ref[ref] = node
    graph = session.graph
    _install_structure(graph, data.edges, data.roots, where)
    graph.clock = _get(data.info, "clock", int, where)
    if not 0 <= graph.clock < 2**62:  # every later change adds one; SQLite stops at 2**63
        raise CheckpointError(f"session file {where} has a bad 'clock': {graph.clock}")
    for name, raw_cp in data.checkpoints:
        graph.put_checkpoint(_structure_checkpoint(name, raw_cp, by_ref, where))
    graph.traces[:] = data.traces
    trace_mark = _get(data.info, "trace_mark", int, where)
    if not 0 <= trace_mark <= len(data.traces):
        raise CheckpointError(f"session file {where} has a bad 'trace_mark': {trace_mark}")
    _restore_id_counters(graph, [n.id for n in by_ref.values()] + [t.node_id for t in data.traces])
    session.turn = _get(data.info, "turn", int, where)
    session._trace_mark = trace_mark
    session.context = _load_context(data.info.get("context"), data.context_checkpoints, where)


def _install_structure(
    graph: ContextGraph, edges: list[tuple[str, int, str, int]], roots: list[str], where: str
) -> None:
    """Put the saved edges and root order into a graph of parentless nodes.

    ``ContextGraph`` has no bulk-load call and ``link`` would bump versions and record
    traces, so this writes the graph's edge store and root order directly, after checking
    the graph's invariants (known ids, no repeated edge, acyclic, roots = parentless
    nodes). Edges go in in an order that gives every node both its saved children order
    and its saved parents order.
    """
    after: dict[tuple[str, str], list[tuple[str, str]]] = {}  # edge → edges inserted before
    parents: dict[str, dict[int, str]] = {}
    for parent, _, child, rank in edges:
        for nid in (parent, child):
            if nid not in graph:
                raise CheckpointError(f"session file {where} has an edge to unknown node {nid!r}")
        if (parent, child) in after or rank in parents.get(child, {}):
            raise CheckpointError(f"session file {where} repeats the edge {parent!r} → {child!r}")
        after[(parent, child)] = []
        parents.setdefault(child, {})[rank] = parent
    previous: dict[str, str] = {}
    for parent, _, child, _ in edges:  # ordered by parent, then child position
        if parent in previous:
            after[(parent, child)].append((parent, previous[parent]))
        previous[parent] = child
    for child, ranked in parents.items():
        ordered = [ranked[rank] for rank in sorted(ranked)]
        for earlier, later in itertools.pairwise(ordered):
            after[(later, child)].append((earlier, child))
    try:
        TopologicalSorter({c: list(ps.values()) for c, ps in parents.items()}).prepare()
        order = list(TopologicalSorter(after).static_order())
    except GraphlibCycleError as exc:
        raise CheckpointError(f"session file {where} has a cycle: {exc.args[1]}") from exc
    parentless = [node.id for node in graph if node.id not in parents]
    if len(set(roots)) != len(roots) or set(roots) != set(parentless):
        raise CheckpointError(f"session file {where} has roots {roots} for nodes {parentless}")
    graph._adj.add_edges(order)
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


def _restore_id_counters(graph: ContextGraph, ids: list[str]) -> None:
    """Set each node type's id counter past the highest id of that type the session names
    (in the graph, a checkpoint or a trace), as it was before the save: a new node never
    takes the id of a removed one. (``ContextGraph`` has no call for this either.)"""
    types = node_types()
    highest: dict[str, int] = {}
    for nid in ids:
        prefix, _, number = nid.rpartition("_")
        if prefix in types and number.isascii() and number.isdigit():
            highest[prefix] = max(highest.get(prefix, 0), int(number))
    for prefix, top in highest.items():
        graph._id_counters[prefix] = itertools.count(top + 1)


def _load_context(raw: Any, checkpoints: list[Any], where: str) -> Context:
    try:
        task_id = raw["task_id"]
        config = ContextConfig.model_validate(raw["config"])
        store = CheckpointStore(task_id)
        for cp in map(Checkpoint.from_dict, checkpoints):
            stored = store._append(cp.values, cp.token_usage, cp.metadata, cp.created_at)
            if stored.version != cp.version or cp.task_id != task_id:
                raise CheckpointError(f"checkpoint {cp.task_id!r} v{cp.version} is out of place")
        context = Context(task_id, config=config, state=ContextState(raw["state"]), store=store)
        context.add_tokens(raw["token_usage"])
    except (KeyError, TypeError, ValueError, DagctxError) as exc:
        raise CheckpointError(f"the task context saved in {where} is malformed: {exc}") from exc
    return context


__all__ = ["SESSION_FILE", "load", "save"]
