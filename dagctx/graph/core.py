"""ContextGraph: typed nodes in an ordered, multi-parent DAG, with the change cascade.

Edges run parent → child and are stored in a :class:`networkx.DiGraph`. The graph keeps
these invariants after every public call, and a call that would break one raises a
:class:`~dagctx.errors.GraphError` subclass before changing anything:

1. **Acyclic**: a link that would close a cycle (including a self-link) is refused
   (:class:`~dagctx.errors.CycleError`).
2. **Ordered children**: ``children(p)`` is the order of linking, or the position chosen
   with ``after=`` / ``index=``; an existing edge is never duplicated.
3. **Ordered roots**: a root is a node without parents; ``roots()`` lists them in the
   order they became roots (restore puts a checkpoint's order back exactly).
4. **Monotonic versions**: a node's version only grows, by one per recorded change.
5. **Glitch-free notification**: for each change (or, inside :meth:`batch`, for each batch
   of changes) every ancestor of a changed node gets ``on_child_changed`` exactly once,
   children before parents, however many paths (diamonds) lead to it.
6. **Unique ids**: ids are unique; unknown ids raise
   :class:`~dagctx.errors.NodeNotFoundError`.

Structure checkpoints save edges with child order, root order and node states; content is
not saved (nodes are live objects).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import compress, repeat
from operator import attrgetter, ne

import networkx as nx

from dagctx._validate import is_int
from dagctx.errors import CheckpointError, CycleError, GraphError, NodeNotFoundError
from dagctx.nodes.base import Node, NodeState, Trace

NodeRef = Node | str
_STATE = attrgetter("state")


class _NoAttributes(dict[str, object]):
    """The one attribute mapping of every node and edge of a :class:`_Dag`: always empty.

    dagctx stores nothing in networkx's attribute dicts; sharing one empty mapping saves
    two dicts per node and edge. Adding an attribute raises TypeError.
    """

    __slots__ = ()

    def update(self, *args: object, **kwargs: object) -> None:
        if any(args) or kwargs:
            raise TypeError("dagctx graphs keep no node or edge attributes")

    def __setitem__(self, key: object, value: object) -> None:
        raise TypeError("dagctx graphs keep no node or edge attributes")


_NO_ATTRIBUTES = _NoAttributes()


def _no_attributes() -> _NoAttributes:
    return _NO_ATTRIBUTES


class _Dag(nx.DiGraph):
    """A networkx DiGraph whose nodes and edges share one empty attribute mapping."""

    node_attr_dict_factory = staticmethod(_no_attributes)
    edge_attr_dict_factory = staticmethod(_no_attributes)


class StructureCheckpoint:
    """A saved structure: ordered children per parent, root order, node states, nodes.

    A checkpoint made by :meth:`ContextGraph.checkpoint` does not copy every node's
    children: while it is *live*, the graph hands it a parent's children the first time
    they change afterwards (copy on write), so taking it and restoring it cost what
    changed in between, not the size of the graph. :attr:`children` is assembled on first
    access, which ends the copy on write (the checkpoint then holds a plain copy). States
    are kept as one byte per node.
    """

    __slots__ = (
        "_added",
        "_children",
        "_codes",
        "_graph",
        "_mark",
        "_pre",
        "_removed",
        "name",
        "nodes",
        "roots",
    )

    def __init__(
        self,
        name: str,
        children: dict[str, tuple[str, ...]],
        roots: tuple[str, ...],
        states: dict[str, NodeState],
        nodes: dict[str, Node],
    ) -> None:
        self.name = name
        self.roots = roots
        self.nodes = nodes
        self._children: dict[str, tuple[str, ...]] | None = children
        self._codes = bytes(states.get(nid, nodes[nid].state) for nid in nodes)
        self._graph: ContextGraph | None = None
        self._pre: dict[str, tuple[str, ...]] = {}  # children before their first change
        self._added: dict[str, None] = {}  # nodes added since, in order
        self._removed: set[str] = set()  # nodes of the checkpoint removed since
        self._mark = 0  # length of the graph's traces when taken (live checkpoints)

    @classmethod
    def _live(cls, name: str, graph: ContextGraph) -> StructureCheckpoint:
        saved = cls.__new__(cls)
        saved.name = name
        saved.roots = tuple(graph._roots)
        saved.nodes = dict(graph._nodes)
        saved._codes = bytes(map(_STATE, saved.nodes.values()))
        saved._children = None
        saved._graph = graph
        saved._pre, saved._added, saved._removed = {}, {}, set()
        saved._mark = len(graph.traces)
        return saved

    @property
    def live(self) -> bool:
        """Whether the graph still reports changes to it (copy on write)."""
        return self._graph is not None

    @property
    def states(self) -> dict[str, NodeState]:
        """Node id → state at the checkpoint."""
        return dict(zip(self.nodes, map(NodeState, self._codes), strict=True))

    @property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Parent id → its children at the checkpoint, in order (parents only)."""
        if self._children is None:
            graph = self._graph
            assert graph is not None
            pre, added = self._pre, self._added
            succ = graph._dag._succ
            kids = {p: tuple(c) for p, c in succ.items() if c and p not in pre and p not in added}
            kids.update((p, c) for p, c in pre.items() if c)
            self._children = kids
            graph._watching.remove(self)
            self._graph, self._pre = None, {}
        return self._children

    def _changing(self, pid: str, kids: Iterable[str]) -> None:
        if pid not in self._pre and pid not in self._added:
            self._pre[pid] = tuple(kids)

    def __repr__(self) -> str:
        return f"<StructureCheckpoint {self.name!r}: {len(self.nodes)} nodes>"


class ContextGraph:
    """The DAG of context nodes. See the module docstring for its invariants."""

    def __init__(self) -> None:
        self._dag = _Dag()
        self._nodes: dict[str, Node] = {}
        self._roots: dict[str, None] = {}
        self._id_counters: dict[str, itertools.count[int]] = {}
        self._checkpoints: dict[str, StructureCheckpoint] = {}
        self._watching: list[StructureCheckpoint] = []  # live checkpoints (copy on write)
        self._batch_depth = 0
        self._batch_origins: dict[str, Node] = {}
        self._batch_descriptions: list[str] = []
        self._notifying = False
        self.traces: list[Trace] = []
        self.scheduled: dict[str, Node] = {}
        self.clock = 0
        #: Bumped by every change of nodes, edges, child order or root order (caches of
        #: the walk compare it).
        self.structure_version = 0

    # -- nodes ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, ref: object) -> bool:
        if isinstance(ref, Node):
            return self._nodes.get(ref.id) is ref
        return isinstance(ref, str) and ref in self._nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes.values())

    def get(self, node_id: NodeRef) -> Node:
        """Return the node with ``node_id`` (a node of this graph is returned as is).

        Raises:
            NodeNotFoundError: no such node in this graph.
        """
        if isinstance(node_id, Node):
            if self._nodes.get(node_id.id) is not node_id:
                raise NodeNotFoundError(f"node {node_id!r} is not in this graph")
            return node_id
        node = self._nodes.get(node_id) if isinstance(node_id, str) else None
        if node is None:
            raise NodeNotFoundError(f"unknown node id {node_id!r}")
        return node

    def new_id(self, type_name: str) -> str:
        """Return the next free readable id for a node type (``text_1``, ``text_2``, ...)."""
        counter = self._id_counters.setdefault(type_name, itertools.count(1))
        while True:
            candidate = f"{type_name}_{next(counter)}"
            if candidate not in self._nodes:
                return candidate

    def add(self, node: Node) -> Node:
        """Add ``node`` as a new root, giving it an id if it has none; return it.

        Raises:
            GraphError: the node belongs to a graph already, or its id is taken.
        """
        if not isinstance(node, Node):
            raise GraphError(f"only Node instances can be added, got {type(node).__name__}")
        if node.graph is not None:
            raise GraphError(f"node {node.id!r} already belongs to a graph")
        if node.id and node.id in self._nodes:
            raise GraphError(f"duplicate node id {node.id!r}")
        if not node.id:
            node.id = self.new_id(node.type_name)
        node.graph = self
        self._nodes[node.id] = node
        self._dag.add_node(node.id)
        self._roots[node.id] = None
        self.structure_version += 1
        for saved in self._watching:
            if node.id not in saved.nodes:
                saved._added[node.id] = None
        self.clock += 1
        node.seq = self.clock
        self.schedule_changed(node)
        return node

    def remove(self, ref: NodeRef) -> Node:
        """Remove a node and its edges; children left without parents become roots.

        Raises:
            NodeNotFoundError: no such node.
        """
        node = self.get(ref)
        parents = self.parents(node)
        orphans = [c for c in self.children(node) if self._dag.in_degree(c.id) == 1]
        for parent in parents:
            self._children_changing(parent.id)
        self._children_changing(node.id)
        for saved in self._watching:
            if saved._added.pop(node.id, 0) is not None and node.id in saved.nodes:
                saved._removed.add(node.id)
        self._dag.remove_node(node.id)
        self.structure_version += 1
        del self._nodes[node.id]
        self._roots.pop(node.id, None)
        self.scheduled.pop(node.id, None)
        self._batch_origins.pop(node.id, None)
        node.graph = None
        for child in orphans:
            self._roots[child.id] = None
        for parent in parents:
            parent.mark_changed(f"removed child {node.id}")
        return node

    # -- structure --------------------------------------------------------------------

    def roots(self) -> list[Node]:
        """Nodes without parents, in root order."""
        return [self._nodes[i] for i in self._roots]

    # The accessors below read networkx's adjacency dicts directly (``_succ``/``_pred``):
    # its view objects cost a call and an allocation per access, and these are hot paths.

    def parents(self, ref: NodeRef) -> list[Node]:
        """The node's parents, in the order they were linked."""
        nodes = self._nodes
        return [nodes[i] for i in self._dag._pred[self.get(ref).id]]

    def children(self, ref: NodeRef) -> list[Node]:
        """The node's children, in order."""
        nodes = self._nodes
        return [nodes[i] for i in self._dag._succ[self.get(ref).id]]

    def child_count(self, ref: NodeRef) -> int:
        """How many children the node has."""
        return len(self._dag._succ[self.get(ref).id])

    def child_ids(self, node_id: str) -> list[str]:
        """Ids of a node's children in order (no existence check: hot path)."""
        return list(self._dag._succ[node_id])

    def child_nodes(self, node_id: str) -> list[Node]:
        """A node's children in order, by id (no existence check: hot path)."""
        nodes = self._nodes
        return [nodes[i] for i in self._dag._succ[node_id]]

    def has_parents(self, node_id: str) -> bool:
        return bool(self._dag._pred[node_id])

    def ancestors(self, ref: NodeRef) -> list[Node]:
        """All ancestors of a node, children before parents (topological order)."""
        order, _ = self._upward_order([self.get(ref).id])
        return [self._nodes[i] for i in order]

    def descendants(self, ref: NodeRef) -> list[Node]:
        """All descendants of a node, in depth-first preorder of the child order."""
        start = self.get(ref).id
        seen: set[str] = set()
        out: list[Node] = []
        stack = list(reversed(list(self._dag.succ[start])))
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(self._nodes[nid])
            stack.extend(reversed(list(self._dag.succ[nid])))
        return out

    def link(
        self,
        parent: NodeRef,
        child: NodeRef,
        *,
        after: NodeRef | None = None,
        index: int | None = None,
    ) -> None:
        """Make ``child`` a child of ``parent`` (appended, or after ``after`` / at ``index``).

        Linking an existing edge is a no-op.

        Raises:
            NodeNotFoundError: an id is unknown.
            CycleError: the link would close a cycle (a self-link included).
            GraphError: both ``after`` and ``index`` given, ``after`` is not a child of
                ``parent``, or ``index`` is not an int.
        """
        p, c = self.get(parent), self.get(child)
        if after is not None and index is not None:
            raise GraphError("give either after= or index=, not both")
        if p is c:
            raise CycleError(f"cannot link node {p.id!r} to itself")
        dag = self._dag
        if dag.has_edge(p.id, c.id):
            return
        # A child without children cannot reach the parent: skip the path search.
        if dag.succ[c.id] and nx.has_path(dag, c.id, p.id):
            raise CycleError(f"linking {p.id!r} → {c.id!r} would close a cycle")
        self._children_changing(p.id)
        if after is None and index is None:
            dag.add_edge(p.id, c.id)  # appended: no need to rebuild the sibling order
        else:
            siblings = list(dag.succ[p.id])
            position = self._position(p, siblings, after, index)
            tail = siblings[position:]
            for sibling in tail:
                dag.remove_edge(p.id, sibling)
            dag.add_edge(p.id, c.id)
            for sibling in tail:
                dag.add_edge(p.id, sibling)
        self.structure_version += 1
        self._roots.pop(c.id, None)
        p.mark_changed(f"linked child {c.id}")

    def _position(
        self, parent: Node, siblings: list[str], after: NodeRef | None, index: int | None
    ) -> int:
        if after is not None:
            after_id = self.get(after).id
            if after_id not in siblings:
                raise GraphError(f"{after_id!r} is not a child of {parent.id!r}")
            return siblings.index(after_id) + 1
        if index is None:
            return len(siblings)
        if not is_int(index):
            raise GraphError(f"index must be an int, got {index!r}")
        return max(0, min(len(siblings), index if index >= 0 else len(siblings) + index + 1))

    def extend(self, parent: NodeRef, children: Sequence[NodeRef]) -> None:
        """Append ``children`` to ``parent``'s children, in order, as one change of the
        parent (one version step and one trace, not one per child). Children already
        linked to ``parent`` are skipped.

        Raises:
            NodeNotFoundError: an id is unknown.
            CycleError: a child is ``parent`` or one of its ancestors (nothing is linked).
        """
        p = self.get(parent)
        dag = self._dag
        kids: list[Node] = []
        seen: set[str] = set()
        for ref in children:
            c = self.get(ref)
            if c.id in seen or dag.has_edge(p.id, c.id):
                continue
            if p is c:
                raise CycleError(f"cannot link node {p.id!r} to itself")
            if dag._succ[c.id] and nx.has_path(dag, c.id, p.id):
                raise CycleError(f"linking {p.id!r} → {c.id!r} would close a cycle")
            seen.add(c.id)
            kids.append(c)
        if not kids:
            return
        self._children_changing(p.id)
        for c in kids:
            dag.add_edge(p.id, c.id)
            self._roots.pop(c.id, None)
        self.structure_version += 1
        what = f"child {kids[0].id}" if len(kids) == 1 else f"{len(kids)} children"
        p.mark_changed(f"linked {what}")

    def unlink(self, parent: NodeRef, child: NodeRef) -> None:
        """Remove the edge ``parent → child``; a child left without parents becomes a root.

        Raises:
            NodeNotFoundError: an id is unknown.
            GraphError: there is no such edge.
        """
        p, c = self.get(parent), self.get(child)
        if not self._dag.has_edge(p.id, c.id):
            raise GraphError(f"{c.id!r} is not a child of {p.id!r}")
        self._children_changing(p.id)
        self._dag.remove_edge(p.id, c.id)
        self.structure_version += 1
        if not self._dag.pred[c.id]:
            self._roots[c.id] = None
        p.mark_changed(f"unlinked child {c.id}")

    # -- change cascade ---------------------------------------------------------------

    def record_change(self, node: Node, trace: Trace) -> None:
        """Record a node's change and notify its ancestors (deferred inside a batch)."""
        self.clock += 1
        node.seq = self.clock
        self.traces.append(trace)
        if self._notifying:
            return  # an ancestor reacting to a notification: its ancestors come next anyway
        if self._batch_depth:
            self._batch_origins.setdefault(node.id, node)
            self._batch_descriptions.append(trace.description)
        else:
            self._notify([node.id], trace.description)

    def notify_ancestors(self, node: Node, description: str) -> None:
        """Notify the ancestors of ``node`` of a change without recording one."""
        if self._batch_depth:
            self._batch_origins.setdefault(node.id, node)
            self._batch_descriptions.append(description)
        else:
            self._notify([node.id], description)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Defer notifications; on exit notify each affected ancestor exactly once."""
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if not self._batch_depth:
                self.flush()

    def flush(self) -> list[Node]:
        """Notify the ancestors of the changes collected in a batch; return them in order."""
        origins = [i for i in self._batch_origins if i in self._nodes]
        descriptions = self._batch_descriptions
        self._batch_origins, self._batch_descriptions = {}, []
        if not origins:
            return []
        summary = descriptions[0] if len(descriptions) == 1 else f"{len(descriptions)} changes"
        return self._notify(origins, summary)

    def _notify(self, origins: Sequence[str], description: str) -> list[Node]:
        order, via = self._upward_order(origins)
        notified: list[Node] = []
        self._notifying = True
        try:
            for nid in order:
                node = self._nodes[nid]
                node.on_child_changed(self._nodes[via[nid]], description)
                notified.append(node)
        finally:
            self._notifying = False
        return notified

    def _upward_order(self, origins: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """Ancestors of ``origins`` (excluding them), each once, children before parents.

        Also returns, per ancestor, the first child through which a change reached it.
        Costs O(edges among the ancestors), whatever the fan-out of the nodes involved.
        """
        pred = self._dag._pred  # the raw dicts: networkx views cost a call per access
        # An origin that is an ancestor of another origin is notified too (it is reached
        # as a parent below); only origins that are no one's ancestor stay out.
        seen: set[str] = set()
        found: list[str] = []
        frontier = list(origins)
        while frontier:
            upper: list[str] = []
            for nid in frontier:
                for parent in pred[nid]:
                    if parent not in seen:
                        seen.add(parent)
                        upper.append(parent)
            found += upper
            frontier = upper
        via: dict[str, str] = {}
        if not found:
            return found, via
        # Kahn's algorithm over the ancestors: a node is ready once every affected child of
        # it has been processed (origins that are no one's ancestor count as processed).
        pending = dict.fromkeys(found, 0)
        for nid in found:
            for parent in pred[nid]:
                pending[parent] += 1
        for origin in origins:
            for parent in pred[origin]:
                if parent not in via:
                    via[parent] = origin
        order = [nid for nid in found if not pending[nid]]
        i = 0
        while i < len(order):  # ``order`` is also the queue of ready nodes
            nid = order[i]
            i += 1
            for parent in pred[nid]:
                if parent not in via:
                    via[parent] = nid
                left = pending[parent] - 1
                pending[parent] = left
                if not left:
                    order.append(parent)
        return order, via

    # -- scheduling -------------------------------------------------------------------

    def schedule_changed(self, node: Node) -> None:
        """Keep :attr:`scheduled` (running nodes with a tick frequency) up to date."""
        if node.mode == "running" and node.frequency.kind != "never":
            self.scheduled[node.id] = node
        else:
            self.scheduled.pop(node.id, None)

    # -- structure checkpoints --------------------------------------------------------

    def checkpoint(self, name: str) -> StructureCheckpoint:
        """Save the structure (ordered edges, root order, node states) under ``name``.

        The checkpoint is copy on write (see :class:`StructureCheckpoint`): this costs a
        copy of the node table and one byte per node, not a copy of every edge.

        Raises:
            CheckpointError: ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name:
            raise CheckpointError(f"checkpoint name must be a non-empty string, got {name!r}")
        saved = StructureCheckpoint._live(name, self)
        self._forget(name)
        self._checkpoints[name] = saved
        self._watching.append(saved)
        return saved

    def _forget(self, name: str) -> None:
        old = self._checkpoints.pop(name, None)
        if old is not None and old._graph is self:
            self._watching.remove(old)
            old._graph = None

    def _children_changing(self, parent_id: str) -> None:
        """Hand the children of ``parent_id`` to the live checkpoints before they change."""
        if self._watching:
            kids = self._dag._succ[parent_id]
            for saved in self._watching:
                saved._changing(parent_id, kids)

    def checkpoints(self) -> list[str]:
        """Names of the saved structure checkpoints, oldest first."""
        return list(self._checkpoints)

    def get_checkpoint(self, name: str) -> StructureCheckpoint:
        """Return a saved checkpoint. Raises CheckpointError for unknown names."""
        try:
            return self._checkpoints[name]
        except (KeyError, TypeError):
            known = ", ".join(map(repr, self._checkpoints)) or "none"
            raise CheckpointError(f"unknown checkpoint {name!r}; saved: {known}") from None

    def put_checkpoint(self, checkpoint: StructureCheckpoint) -> None:
        """Store a checkpoint built elsewhere (used when loading a saved session)."""
        self._forget(checkpoint.name)
        self._checkpoints[checkpoint.name] = checkpoint

    def _restore_states(self, saved: StructureCheckpoint) -> None:
        """Set every node of ``saved`` back to its state there. A live checkpoint only
        looks at the nodes with a change recorded since (a state change is one) and the
        nodes removed meanwhile (whose changes were not recorded)."""
        nodes, kept, codes = self._nodes, saved.nodes, saved._codes
        if saved.live and saved._mark <= len(self.traces):
            look = {t.node_id for t in self.traces[saved._mark :]} | saved._removed
            position = dict(zip(kept, range(len(kept)), strict=True)) if look else {}
            for nid in look:
                i = position.get(nid)
                if i is not None and nodes[nid].state != codes[i]:
                    nodes[nid].set_state(NodeState(codes[i]))
            return
        now = bytes(map(_STATE, map(nodes.__getitem__, kept)))
        if now != codes:
            ids = list(kept)
            for i in list(compress(range(len(ids)), map(ne, now, codes))):
                nodes[ids[i]].set_state(NodeState(codes[i]))

    def restore(self, name: str) -> list[str]:
        """Put back the structure saved under ``name``; return ids of nodes created since.

        Nodes created after the checkpoint survive as roots (after the saved roots, those
        that were roots first, in root order);
        nodes removed since come back. Parents whose children differ and nodes whose
        state differs get a version bump, so caches stay valid. A live checkpoint only
        revisits the parents whose children changed since.

        Raises:
            CheckpointError: no checkpoint has that name (nothing changes).
        """
        saved = self.get_checkpoint(name)
        nodes, dag, kept = self._nodes, self._dag, saved.nodes
        succ = dag._succ
        # Nodes created since: current roots first (in root order), then the others.
        if saved.live:
            added = saved._added
            newer = [nid for nid in self._roots if nid in added]
            newer += [nid for nid in added if nid not in self._roots]
        else:
            newer = [nid for nid in self._roots if nid not in kept]
            if nodes.keys() - kept.keys():
                newer += [nid for nid in nodes if nid not in kept and nid not in self._roots]
        with self.batch():
            missing = saved._removed if saved.live else kept.keys() - nodes.keys()
            back = [nid for nid in kept if nid in missing and nid not in nodes] if missing else []
            for nid in back:
                node = kept[nid]
                node.graph = None
                self.add(node)
            if saved.live:
                targets = dict(saved._pre)
                targets.update((nid, ()) for nid in saved._added if succ[nid])
                changed_parents = [nid for nid, kids in targets.items() if tuple(succ[nid]) != kids]
            else:
                # Compare every parent, with the per-node loop in C (map/compress).
                targets = saved.children
                changed_parents = list(
                    compress(
                        succ,
                        map(ne, map(tuple, succ.values()), map(targets.get, succ, repeat(()))),
                    )
                )
            for nid in changed_parents:
                self._children_changing(nid)
                dag.remove_edges_from([(nid, c) for c in list(succ[nid])])
            for nid in changed_parents:
                dag.add_edges_from((nid, c) for c in targets.get(nid, ()))
            self._roots = dict.fromkeys(saved.roots)
            for nid in newer:
                if not dag._pred[nid]:
                    self._roots[nid] = None
            self.structure_version += 1
            if saved.live:
                saved._pre = {}
            for nid in changed_parents:
                nodes[nid].mark_changed(f"restored children from checkpoint {name!r}")
            self._restore_states(saved)
            if saved.live:
                saved._removed = set()
                saved._mark = len(self.traces)
        return newer
